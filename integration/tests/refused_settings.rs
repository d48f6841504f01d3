//! Settings that ask for a security or isolation property Spindle does not
//! provide (`spindle_common::conf::refuse::RULES`): every daemon that would act
//! on one exits non-zero at start with a line naming the file, the key and its
//! value, and nothing listens on its ports. And a stock `yarn` CLI configured
//! for Kerberos still gets Hadoop's own refusal from a Spindle RM on SIMPLE.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spindle_common::conf::refuse::{Daemon, RULES};
use spindle_integration::cluster::free_port;
use spindle_integration::conf::fast_failing_client_settings;
use spindle_integration::{spindle_binary, Cluster, HadoopClients, HadoopConf};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// A refused daemon stops before it binds anything: far less than this.
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A value each rule refuses (the unit tests of the rules check the same).
fn refused_value(key: &str) -> &'static str {
    match key {
        "hadoop.security.authentication" => "kerberos",
        "hadoop.rpc.protection" => "privacy",
        "yarn.http.policy" => "HTTPS_ONLY",
        "hadoop.http.authentication.type" => "kerberos",
        "hadoop.http.filter.initializers" => {
            "org.apache.hadoop.security.authentication.server.ProxyUserAuthenticationFilterInitializer"
        }
        "yarn.authorization-provider" => {
            "org.apache.ranger.authorization.yarn.authorizer.RangerYarnAuthorizer"
        }
        "hadoop.security.group.mapping" => "org.apache.hadoop.security.LdapGroupsMapping",
        "hadoop.zk.auth" => "digest:yarn:secret",
        "yarn.nodemanager.runtime.linux.allowed-runtimes" => "default,docker",
        "yarn.nodemanager.runtime.linux.type" => "docker",
        "yarn.nodemanager.runtime.linux.sandbox-mode" => "enforcing",
        "yarn.nodemanager.linux-container-executor.cgroups.strict-resource-usage" => "true",
        "yarn.nodemanager.resource-plugins" => "yarn.io/gpu",
        "mapreduce.shuffle.ssl.enabled" => "true",
        "yarn.nodemanager.resource.disk.enabled" => "true",
        "yarn.nodemanager.resource.network.enabled" => "true",
        other => panic!("no refused value for {other}: add one to this test"),
    }
}

/// The ports a daemon of this kind would listen on, set in `yarn`.
fn assign_ports(daemon: Daemon, yarn: &mut HadoopConf) -> Vec<SocketAddr> {
    let keys: &[&str] = match daemon {
        Daemon::ResourceManager => &[
            "yarn.resourcemanager.address",
            "yarn.resourcemanager.scheduler.address",
            "yarn.resourcemanager.resource-tracker.address",
            "yarn.resourcemanager.admin.address",
            "yarn.resourcemanager.webapp.address",
        ],
        Daemon::NodeManager => &[
            "yarn.nodemanager.address",
            "yarn.nodemanager.webapp.address",
            "yarn.nodemanager.localizer.address",
        ],
        Daemon::WebProxy => &["yarn.web-proxy.address"],
    };
    keys.iter()
        .map(|k| {
            let port = free_port(LOOPBACK).expect("a free port");
            yarn.set(*k, format!("127.0.0.1:{port}"));
            SocketAddr::new(LOOPBACK, port)
        })
        .collect()
}

fn subcommand(daemon: Daemon) -> &'static str {
    match daemon {
        Daemon::ResourceManager => "resourcemanager",
        Daemon::NodeManager => "nodemanager",
        Daemon::WebProxy => "proxyserver",
    }
}

/// Runs `spindle <args> --conf <dir>` to its end; the exit code and stderr.
fn run_to_exit(args: &[&str], conf_dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(spindle_binary().expect("the spindle binary"))
        .args(args)
        .arg("--conf")
        .arg(conf_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn spindle");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            use std::io::Read as _;
            if let Some(mut e) = child.stderr.take() {
                e.read_to_string(&mut err).expect("stderr");
            }
            return (status.code(), err);
        }
        if started.elapsed() > EXIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("spindle {args:?} did not stop within {EXIT_TIMEOUT:?}: it started");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn nothing_listens(ports: &[SocketAddr]) {
    for addr in ports {
        assert!(
            TcpStream::connect_timeout(addr, Duration::from_secs(2)).is_err(),
            "something listens on {addr}"
        );
    }
}

#[test]
fn every_refused_setting_stops_each_daemon_that_acts_on_it() {
    let lce = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor";
    for rule in RULES {
        let value = refused_value(rule.key);
        for daemon in Daemon::ALL {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut core = HadoopConf::new();
            let mut yarn = HadoopConf::new();
            let ports = assign_ports(daemon, &mut yarn);
            // Runtimes matter to the LinuxContainerExecutor only (as in Hadoop).
            yarn.set("yarn.nodemanager.container-executor.class", lce);
            // Each key in the file an operator keeps it in: the shuffle's in
            // mapred-site.xml, which the NodeManager reads as Hadoop's does.
            let mut mapred = HadoopConf::new();
            let file = if rule.key.starts_with("mapreduce.") {
                mapred.set(rule.key, value);
                "mapred-site.xml"
            } else if rule.key.starts_with("yarn.") {
                yarn.set(rule.key, value);
                "yarn-site.xml"
            } else {
                core.set(rule.key, value);
                "core-site.xml"
            };
            core.write(&dir.path().join("core-site.xml"))
                .expect("core-site");
            yarn.write(&dir.path().join("yarn-site.xml"))
                .expect("yarn-site");
            mapred
                .write(&dir.path().join("mapred-site.xml"))
                .expect("mapred-site");
            if !rule.applies_to(daemon) {
                continue;
            }
            let (code, stderr) = run_to_exit(&[subcommand(daemon)], dir.path());
            assert!(
                code.is_some_and(|c| c != 0),
                "{daemon} with {}={value}: exit {code:?}\n{stderr}",
                rule.key
            );
            let line = stderr
                .lines()
                .find(|l| l.contains(&format!("{} = {value:?} is refused", rule.key)))
                .unwrap_or_else(|| panic!("no line names {}:\n{stderr}", rule.key));
            let path = dir.path().join(file).display().to_string();
            assert!(line.trim_start().starts_with(&path), "{line}");
            assert!(line.contains("Spindle supports"), "{line}");
            assert!(
                stderr.contains(&format!("the {daemon} does not start")),
                "{stderr}"
            );
            nothing_listens(&ports);
        }
    }
}

/// Kerberos is served (integration/tests/kerberos_cluster.rs), but a keytab
/// that is not there stops `spindle standalone` at start with the key named,
/// before either daemon listens.
#[test]
fn standalone_with_kerberos_and_a_missing_keytab_stops_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut core = HadoopConf::new();
    core.set("hadoop.security.authentication", "kerberos");
    let mut yarn = HadoopConf::new();
    let mut ports = assign_ports(Daemon::ResourceManager, &mut yarn);
    ports.extend(assign_ports(Daemon::NodeManager, &mut yarn));
    yarn.set("yarn.resourcemanager.principal", "rm/_HOST@EXAMPLE.COM");
    let keytab = dir.path().join("rm.service.keytab");
    yarn.set("yarn.resourcemanager.keytab", keytab.display());
    core.write(&dir.path().join("core-site.xml"))
        .expect("core-site");
    yarn.write(&dir.path().join("yarn-site.xml"))
        .expect("yarn-site");
    let (code, stderr) = run_to_exit(&["standalone"], dir.path());
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "yarn.resourcemanager.keytab: the keytab {} does not exist",
            keytab.display()
        )),
        "{stderr}"
    );
    nothing_listens(&ports);
}

/// Kerberos without the RM's principal stops the RM with the key named.
#[test]
fn kerberos_without_the_rm_principal_stops_the_rm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut core = HadoopConf::new();
    core.set("hadoop.security.authentication", "kerberos");
    let mut yarn = HadoopConf::new();
    let ports = assign_ports(Daemon::ResourceManager, &mut yarn);
    core.write(&dir.path().join("core-site.xml"))
        .expect("core-site");
    yarn.write(&dir.path().join("yarn-site.xml"))
        .expect("yarn-site");
    let (code, stderr) = run_to_exit(&["resourcemanager"], dir.path());
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}\n{stderr}");
    assert!(
        stderr.contains("yarn.resourcemanager.principal is not set"),
        "{stderr}"
    );
    nothing_listens(&ports);
}

/// A Kerberized client against an RM on SIMPLE: Hadoop's client refuses the
/// server's offer to fall back to SIMPLE, exactly as against Hadoop's RM.
#[test]
fn a_kerberos_client_is_refused_by_its_own_rule_against_a_simple_spindle() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = match Cluster::builder().start(&clients) {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let client_dir = tempfile::tempdir().expect("tempdir");
    let mut yarn = cluster.yarn_site().clone();
    yarn.extend_from(&fast_failing_client_settings());
    yarn.set("yarn.resourcemanager.principal", "rm/_HOST@EXAMPLE.COM");
    yarn.write(&client_dir.path().join("yarn-site.xml"))
        .expect("yarn-site");
    let mut core = cluster.core_site().clone();
    core.set("hadoop.security.authentication", "kerberos");
    core.write(&client_dir.path().join("core-site.xml"))
        .expect("core-site");
    // A realm for the client's Kerberos login to name (no KDC is asked: the
    // server answers before any ticket is needed).
    let out = clients
        .yarn()
        .conf_dir(client_dir.path())
        .env(
            "YARN_OPTS",
            "-Djava.security.krb5.realm=EXAMPLE.COM -Djava.security.krb5.kdc=127.0.0.1",
        )
        .run(["application", "-list"])
        .expect("the CLI runs");
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains(
            "Server asks us to fall back to SIMPLE auth, but this client is configured to \
             only allow secure connections"
        ),
        "{out}"
    );
}
