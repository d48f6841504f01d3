//! A real MIT Kerberos KDC for tests: a realm of its own in a temporary
//! directory, `krb5kdc` on a free loopback port, principals and keytabs made
//! with `kadmin.local`, tickets with `kinit`.
//!
//! The programs come from Debian's packages (`krb5-kdc`, `krb5-admin-server`,
//! `krb5-user`), installed by `integration/setup-kdc.sh` (run by `.ci/run`).
//! Every process the KDC starts or a test runs gets the realm through
//! [`Kdc::env`] (`KRB5_CONFIG`, `KRB5_KDC_PROFILE`, no replay cache):
//! nothing reads or changes the machine's `/etc/krb5.conf`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::cluster::{free_port, wait_until};

/// The realm every test KDC serves.
pub const REALM: &str = "SPINDLE.TEST";

/// The programs a KDC needs, in the order a missing one is named.
const PROGRAMS: [&str; 5] = [
    "/usr/sbin/krb5kdc",
    "/usr/sbin/kdb5_util",
    "/usr/sbin/kadmin.local",
    "/usr/bin/kinit",
    "/usr/bin/klist",
];

/// Why no KDC can run here, or `None` when one can.
pub fn missing() -> Option<String> {
    PROGRAMS
        .iter()
        .find(|p| !Path::new(p).exists())
        .map(|p| format!("{p} is missing: run integration/setup-kdc.sh (Debian's krb5-kdc)"))
}

/// A KDC for a test whose realm lives for the whole process (its
/// environment set in this process, for MIT's library and the daemons and
/// clients the test starts), with ticket lifetimes of an hour; `None` (the
/// test prints `SKIP:` and passes) when none can run here, except under
/// CI, which must have one.
pub fn for_test() -> Option<Kdc> {
    if let Some(why) = missing() {
        if std::env::var_os("CI").is_some() {
            panic!("CI must install the KDC: {why}");
        }
        println!("SKIP: {why}");
        return None;
    }
    let kdc = Kdc::start("1h").expect("the KDC starts");
    for (k, v) in kdc.env() {
        std::env::set_var(k, v);
    }
    Some(kdc)
}

/// The machine's host name, lower-cased: `_HOST` in a NodeManager's
/// principal, as Hadoop's `SecurityUtil.login` gives it.
pub fn machine_host() -> String {
    nix::unistd::gethostname()
        .expect("host name")
        .to_string_lossy()
        .to_ascii_lowercase()
}

/// A running KDC; stopped when dropped.
pub struct Kdc {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Kdc {
    /// Creates the realm's database and starts the KDC. Ticket lifetimes are
    /// `max_life` (MIT's `max_life`, e.g. "1h"; tests of expiry use minutes).
    pub fn start(max_life: &str) -> anyhow::Result<Kdc> {
        if let Some(why) = missing() {
            bail!(why);
        }
        let dir = tempfile::Builder::new().prefix("spindle-kdc-").tempdir()?;
        let port = free_port(IpAddr::V4(Ipv4Addr::LOCALHOST))?;
        let d = dir.path().display();
        std::fs::write(
            dir.path().join("krb5.conf"),
            format!(
                "[libdefaults]\n  default_realm = {REALM}\n  dns_lookup_kdc = false\n  \
                 dns_lookup_realm = false\n  rdns = false\n  dns_canonicalize_hostname = false\n  udp_preference_limit = 1\n  \
                 ticket_lifetime = {max_life}\n\n\
                 [realms]\n  {REALM} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n"
            ),
        )?;
        std::fs::write(
            dir.path().join("kdc.conf"),
            format!(
                "[kdcdefaults]\n  kdc_listen = 127.0.0.1:{port}\n  kdc_tcp_listen = 127.0.0.1:{port}\n\n\
                 [realms]\n  {REALM} = {{\n    database_name = {d}/principal\n    \
                 key_stash_file = {d}/stash\n    acl_file = {d}/kadm5.acl\n    \
                 kdc_listen = 127.0.0.1:{port}\n    kdc_tcp_listen = 127.0.0.1:{port}\n    \
                 max_life = {max_life}\n    max_renewable_life = 1d\n  }}\n\n\
                 [logging]\n  kdc = FILE:{d}/kdc.log\n"
            ),
        )?;
        let env = env_of(dir.path());
        run(
            Command::new("/usr/sbin/kdb5_util").envs(env.clone()).args([
                "create",
                "-s",
                "-r",
                REALM,
                "-P",
                "spindle-test-master",
            ]),
            "kdb5_util create",
        )?;
        let child = Command::new("/usr/sbin/krb5kdc")
            .envs(env)
            .args(["-n", "-r", REALM])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting krb5kdc")?;
        let kdc = Kdc { dir, port, child };
        let listening = wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        if !listening {
            bail!(
                "krb5kdc did not listen on 127.0.0.1:{port} within 20 s; its log:\n{}",
                std::fs::read_to_string(kdc.dir.path().join("kdc.log")).unwrap_or_default()
            );
        }
        Ok(kdc)
    }

    /// The environment that points MIT's library and tools at this realm.
    pub fn env(&self) -> Vec<(String, String)> {
        env_of(self.dir.path())
    }

    /// The realm's `krb5.conf`.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.path().join("krb5.conf")
    }

    /// The JVM options that point a Java client at this realm (the JVM
    /// reads a krb5.conf of its own, not `KRB5_CONFIG`): for `YARN_OPTS`.
    pub fn java_opts(&self) -> String {
        format!(
            "-Djava.security.krb5.conf={} -Dsun.security.krb5.disableReferrals=true",
            self.krb5_conf().display()
        )
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Adds `principal` (without the realm) with a random key, and writes its
    /// keytab; returns the keytab's path.
    pub fn keytab_for(&self, principal: &str) -> anyhow::Result<PathBuf> {
        let keytab = self
            .dir
            .path()
            .join(format!("{}.keytab", principal.replace('/', "_")));
        self.kadmin(&format!("addprinc -randkey {principal}@{REALM}"))?;
        self.kadmin(&format!(
            "ktadd -k {} {principal}@{REALM}",
            keytab.display()
        ))?;
        Ok(keytab)
    }

    /// Adds `principal` with `password` (a user who runs `kinit`).
    pub fn add_user(&self, principal: &str, password: &str) -> anyhow::Result<()> {
        self.kadmin(&format!("addprinc -pw {password} {principal}@{REALM}"))
    }

    /// `kinit` with a keytab into the cache file `cache`.
    pub fn kinit(&self, principal: &str, keytab: &Path, cache: &Path) -> anyhow::Result<()> {
        self.kinit_for(principal, keytab, cache, None)
    }

    /// `kinit` with a ticket lifetime (`kinit -l`, e.g. `5s`).
    pub fn kinit_for(
        &self,
        principal: &str,
        keytab: &Path,
        cache: &Path,
        lifetime: Option<&str>,
    ) -> anyhow::Result<()> {
        let mut command = Command::new("/usr/bin/kinit");
        command
            .envs(self.env())
            .env("KRB5CCNAME", format!("FILE:{}", cache.display()));
        if let Some(lifetime) = lifetime {
            command.args(["-l", lifetime]);
        }
        run(
            command
                .args(["-k", "-t"])
                .arg(keytab)
                .arg(format!("{principal}@{REALM}")),
            "kinit",
        )
    }

    fn kadmin(&self, query: &str) -> anyhow::Result<()> {
        run(
            Command::new("/usr/sbin/kadmin.local")
                .envs(self.env())
                .args(["-r", REALM, "-q", query]),
            &format!("kadmin.local -q '{query}'"),
        )
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn env_of(dir: &Path) -> Vec<(String, String)> {
    vec![
        (
            "KRB5_CONFIG".into(),
            dir.join("krb5.conf").display().to_string(),
        ),
        (
            "KRB5_KDC_PROFILE".into(),
            dir.join("kdc.conf").display().to_string(),
        ),
        // Servers of several tests at once accept as the same service
        // names (rm/localhost) in different realms; MIT's replay cache is a
        // file per service name under /var/tmp, shared by them all. Tests
        // keep none (a daemon in production keeps its replay cache).
        ("KRB5RCACHETYPE".into(), "none".into()),
    ]
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    let out = cmd.output().with_context(|| format!("running {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
