//! The ResourceManager under test as a child process: `spindle
//! resourcemanager` with a generated configuration directory, every port on
//! 127.0.0.1 chosen by the kernel and read back from what the RM prints.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use spindle_common::markup;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::BenchError;

/// Where the RM under test listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmAddresses {
    /// ApplicationClientProtocol (`yarn.resourcemanager.address`).
    pub client: String,
    /// ApplicationMasterProtocol (`yarn.resourcemanager.scheduler.address`).
    pub scheduler: String,
    /// ResourceTracker (`yarn.resourcemanager.resource-tracker.address`).
    pub tracker: String,
    /// The web server (`yarn.resourcemanager.webapp.address`), when known.
    pub web: Option<String>,
}

impl RmAddresses {
    /// An RM on `host` at Hadoop's default ports (8032, 8030, 8031, web 8088).
    pub fn hadoop_defaults(host: &str) -> RmAddresses {
        RmAddresses {
            client: format!("{host}:8032"),
            scheduler: format!("{host}:8030"),
            tracker: format!("{host}:8031"),
            web: Some(format!("{host}:8088")),
        }
    }
}

/// How to start the RM child.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// The `spindle` binary (the bench passes its own executable).
    pub exe: PathBuf,
    /// yarn-site.xml entries beyond the generated ones (they win).
    pub conf: Vec<(String, String)>,
    /// `SPINDLE_LOG` for the child (e.g. `warn`).
    pub log_filter: String,
    /// How long the RM may take to print its addresses.
    pub startup_timeout: Duration,
    /// A `capacity-scheduler.xml` to put next to the generated yarn-site.xml.
    pub capacity_scheduler_xml: Option<String>,
}

/// How to start Hadoop's own ResourceManager as the RM under test.
#[derive(Debug, Clone)]
pub struct HadoopSpawnOptions {
    /// A launcher run as `bash LAUNCHER resourcemanager --conf DIR` that ends
    /// by exec'ing the JVM (the repository's `integration/bin/hadoop-yarn`), so
    /// that the child's pid is the RM's.
    pub launcher: PathBuf,
    /// yarn-site.xml entries beyond the generated ones (they win).
    pub conf: Vec<(String, String)>,
    /// The `capacity-scheduler.xml` it runs with (the same file as the Spindle run).
    pub capacity_scheduler_xml: Option<String>,
    /// Extra JVM options (`HADOOP_YARN_OPTS` of the launcher), e.g. the heap size.
    pub jvm_opts: String,
    /// How long the JVM may take until it is active and serving.
    pub startup_timeout: Duration,
}

/// What Hadoop's RM logs once it serves.
const HADOOP_READY_LINE: &str = "Transitioned to active state";

/// A free TCP port on 127.0.0.1 (bound, read and released: another process may
/// take it before the RM does, as with any such choice).
fn free_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| BenchError::Setup(format!("cannot find a free port: {e}")))
}

/// Hadoop's RM names its version in its start-up banner
/// (`STARTUP_MSG:   version = 3.3.4`).
pub fn hadoop_version_in_log(log: &str) -> Option<String> {
    log.lines().find_map(|l| {
        let rest = l.split("STARTUP_MSG:").nth(1)?.trim();
        let v = rest
            .strip_prefix("version")?
            .trim_start()
            .strip_prefix('=')?;
        let v = v.trim();
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The yarn-site.xml of Hadoop's RM under test: fixed loopback ports (Hadoop's RM
/// does not print the ports it bound), the capacity scheduler, the NM heartbeat
/// interval, recovery off, then `extra` (which may override).
pub fn hadoop_yarn_site(
    addresses: &RmAddresses,
    admin: &str,
    heartbeat_interval_ms: u64,
    extra: &[(String, String)],
) -> String {
    let mut props: Vec<(String, String)> =
        vec![
        ("yarn.resourcemanager.hostname".into(), "127.0.0.1".into()),
        ("yarn.resourcemanager.address".into(), addresses.client.clone()),
        (
            "yarn.resourcemanager.scheduler.address".into(),
            addresses.scheduler.clone(),
        ),
        (
            "yarn.resourcemanager.resource-tracker.address".into(),
            addresses.tracker.clone(),
        ),
        ("yarn.resourcemanager.admin.address".into(), admin.into()),
        (
            "yarn.resourcemanager.webapp.address".into(),
            addresses.web.clone().unwrap_or_else(|| "127.0.0.1:0".into()),
        ),
        (
            "yarn.resourcemanager.scheduler.class".into(),
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
                .into(),
        ),
        (
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms".into(),
            heartbeat_interval_ms.to_string(),
        ),
        ("yarn.resourcemanager.recovery.enabled".into(), "false".into()),
        ("yarn.acl.enable".into(), "false".into()),
    ];
    for (k, v) in extra {
        props.retain(|(key, _)| key != k);
        props.push((k.clone(), v.clone()));
    }
    site_xml(props)
}

fn site_xml(props: Vec<(String, String)>) -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in props {
        xml.push_str(&format!(
            "  <property>\n    <name>{}</name>\n    <value>{}</value>\n  </property>\n",
            markup::escape_xml(&k),
            markup::escape_xml(&v)
        ));
    }
    xml.push_str("</configuration>\n");
    xml
}

/// A running RM child. Dropping it kills the process; [`RmChild::stop`] asks
/// it to stop first.
pub struct RmChild {
    child: Child,
    pid: u32,
    log_path: PathBuf,
    // Keeps the configuration directory and the log until the child is gone.
    _dir: tempfile::TempDir,
}

/// The yarn-site.xml of the RM under test: ephemeral ports on the loopback
/// interface, the NM heartbeat interval, no per-peer connection limit (every
/// simulated NM and AM connects from 127.0.0.1), then `extra` (which may
/// override).
pub fn yarn_site(heartbeat_interval_ms: u64, extra: &[(String, String)]) -> String {
    let mut props: Vec<(String, String)> = [
        "yarn.resourcemanager.address",
        "yarn.resourcemanager.scheduler.address",
        "yarn.resourcemanager.resource-tracker.address",
        "yarn.resourcemanager.admin.address",
        "yarn.resourcemanager.webapp.address",
    ]
    .iter()
    .map(|k| (k.to_string(), "127.0.0.1:0".to_string()))
    .collect();
    props.push((
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms".into(),
        heartbeat_interval_ms.to_string(),
    ));
    props.push((
        spindle_ipc::server::keys::MAX_CONNECTIONS_PER_PEER.into(),
        "0".into(),
    ));
    for (k, v) in extra {
        props.retain(|(key, _)| key != k);
        props.push((k.clone(), v.clone()));
    }
    site_xml(props)
}

/// Reads one address line the RM prints at start, e.g.
/// `ResourceManager client address (yarn.resourcemanager.address): 127.0.0.1:4242`.
fn address_line(line: &str) -> Option<(&str, &str)> {
    let open = line.find('(')?;
    let close = line[open..].find("): ")? + open;
    let key = &line[open + 1..close];
    let addr = line[close + 3..].trim();
    (!addr.is_empty()).then_some((key, addr))
}

/// The last `max_bytes` of a log file, for error messages.
fn tail(path: &Path, max_bytes: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let start = bytes.len().saturating_sub(max_bytes);
            String::from_utf8_lossy(&bytes[start..]).trim().to_string()
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

impl RmChild {
    /// Writes the configuration, starts `exe resourcemanager --conf DIR` and
    /// waits until it has printed the addresses it listens on.
    pub async fn start(
        opts: &SpawnOptions,
        heartbeat_interval_ms: u64,
    ) -> Result<(RmChild, RmAddresses), BenchError> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-bench-rm-")
            .tempdir()
            .map_err(|e| BenchError::Setup(format!("cannot create a temporary directory: {e}")))?;
        let conf_dir = dir.path().join("conf");
        std::fs::create_dir(&conf_dir)
            .and_then(|()| {
                std::fs::write(
                    conf_dir.join("yarn-site.xml"),
                    yarn_site(heartbeat_interval_ms, &opts.conf),
                )
            })
            .and_then(|()| match &opts.capacity_scheduler_xml {
                Some(xml) => std::fs::write(conf_dir.join("capacity-scheduler.xml"), xml),
                None => Ok(()),
            })
            .map_err(|e| {
                BenchError::Setup(format!(
                    "cannot write the RM configuration in {}: {e}",
                    conf_dir.display()
                ))
            })?;
        let log_path = dir.path().join("rm.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", log_path.display())))?;
        let mut child = Command::new(&opts.exe)
            .arg("resourcemanager")
            .arg("--conf")
            .arg(&conf_dir)
            .env("SPINDLE_LOG", &opts.log_filter)
            .env_remove("YARN_CONF_DIR")
            .env_remove("HADOOP_CONF_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                BenchError::Setup(format!(
                    "cannot start the ResourceManager ({} resourcemanager): {e}",
                    opts.exe.display()
                ))
            })?;
        let pid = child.id().ok_or_else(|| {
            BenchError::Setup("the ResourceManager exited as soon as it started".into())
        })?;
        let stdout = child.stdout.take().ok_or_else(|| {
            BenchError::Setup("the ResourceManager's standard output is not a pipe".into())
        })?;
        let mut lines = BufReader::new(stdout).lines();
        let wait_for_addresses = async {
            let (mut client, mut scheduler, mut tracker, mut web) = (None, None, None, None);
            while client.is_none() || scheduler.is_none() || tracker.is_none() || web.is_none() {
                let line = match lines.next_line().await {
                    Ok(Some(l)) => l,
                    Ok(None) => return None,
                    Err(_) => return None,
                };
                match address_line(&line) {
                    Some(("yarn.resourcemanager.address", a)) => client = Some(a.to_string()),
                    Some(("yarn.resourcemanager.scheduler.address", a)) => {
                        scheduler = Some(a.to_string())
                    }
                    Some(("yarn.resourcemanager.resource-tracker.address", a)) => {
                        tracker = Some(a.to_string())
                    }
                    Some(("yarn.resourcemanager.webapp.address", a)) => {
                        web = Some(
                            a.trim_start_matches("http://")
                                .trim_end_matches('/')
                                .to_string(),
                        )
                    }
                    _ => {}
                }
            }
            Some(RmAddresses {
                client: client?,
                scheduler: scheduler?,
                tracker: tracker?,
                web,
            })
        };
        let found = tokio::time::timeout(opts.startup_timeout, wait_for_addresses).await;
        let rm = RmChild {
            child,
            pid,
            log_path,
            _dir: dir,
        };
        let addresses = match found {
            Ok(Some(a)) => a,
            Ok(None) => {
                return Err(BenchError::Setup(format!(
                    "the ResourceManager stopped before printing its addresses; its log:\n{}",
                    rm.log_tail()
                )))
            }
            Err(_) => {
                return Err(BenchError::Setup(format!(
                    "the ResourceManager did not print its addresses within {} s; its log:\n{}",
                    opts.startup_timeout.as_secs(),
                    rm.log_tail()
                )))
            }
        };
        // Keep draining what it prints so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok((rm, addresses))
    }

    /// Writes a configuration on free loopback ports, starts Hadoop's RM with
    /// `bash LAUNCHER resourcemanager --conf DIR` and waits until it logs that it
    /// is active and its client, scheduler and tracker ports accept connections.
    /// Returns its version from its start-up banner too.
    pub async fn start_hadoop(
        opts: &HadoopSpawnOptions,
        heartbeat_interval_ms: u64,
    ) -> Result<(RmChild, RmAddresses, String), BenchError> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-bench-hadoop-rm-")
            .tempdir()
            .map_err(|e| BenchError::Setup(format!("cannot create a temporary directory: {e}")))?;
        let conf_dir = dir.path().join("conf");
        let addr = |p: u16| format!("127.0.0.1:{p}");
        let addresses = RmAddresses {
            client: addr(free_port()?),
            scheduler: addr(free_port()?),
            tracker: addr(free_port()?),
            web: Some(addr(free_port()?)),
        };
        let admin = addr(free_port()?);
        let core = site_xml(vec![
            ("fs.defaultFS".into(), "file:///".into()),
            (
                "hadoop.tmp.dir".into(),
                dir.path().join("hadoop-tmp").display().to_string(),
            ),
            ("hadoop.security.authentication".into(), "simple".into()),
        ]);
        std::fs::create_dir(&conf_dir)
            .and_then(|()| {
                std::fs::write(
                    conf_dir.join("yarn-site.xml"),
                    hadoop_yarn_site(&addresses, &admin, heartbeat_interval_ms, &opts.conf),
                )
            })
            .and_then(|()| std::fs::write(conf_dir.join("core-site.xml"), core))
            .and_then(|()| match &opts.capacity_scheduler_xml {
                Some(xml) => std::fs::write(conf_dir.join("capacity-scheduler.xml"), xml),
                None => Ok(()),
            })
            .map_err(|e| {
                BenchError::Setup(format!(
                    "cannot write the Hadoop RM configuration in {}: {e}",
                    conf_dir.display()
                ))
            })?;
        let log_path = dir.path().join("rm.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", log_path.display())))?;
        let out = log
            .try_clone()
            .map_err(|e| BenchError::Setup(format!("cannot share {}: {e}", log_path.display())))?;
        let child = Command::new("bash")
            .arg(&opts.launcher)
            .arg("resourcemanager")
            .arg("--conf")
            .arg(&conf_dir)
            .env("HADOOP_YARN_OPTS", &opts.jvm_opts)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                BenchError::Setup(format!(
                    "cannot start Hadoop's ResourceManager (bash {} resourcemanager): {e}",
                    opts.launcher.display()
                ))
            })?;
        let pid = child.id().ok_or_else(|| {
            BenchError::Setup("Hadoop's ResourceManager exited as soon as it started".into())
        })?;
        let mut rm = RmChild {
            child,
            pid,
            log_path,
            _dir: dir,
        };
        let deadline = tokio::time::Instant::now() + opts.startup_timeout;
        loop {
            rm.check_alive().map_err(BenchError::Setup)?;
            let log = std::fs::read(&rm.log_path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            if log.contains(HADOOP_READY_LINE) {
                let mut serving = true;
                for a in [&addresses.client, &addresses.scheduler, &addresses.tracker] {
                    serving &= tokio::net::TcpStream::connect(a.as_str()).await.is_ok();
                }
                if serving {
                    let version = hadoop_version_in_log(&log).map_or_else(
                        || "Hadoop (version unknown)".into(),
                        |v| format!("Hadoop {v}"),
                    );
                    return Ok((rm, addresses, version));
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BenchError::Setup(format!(
                    "Hadoop's ResourceManager did not serve within {} s; its log:\n{}",
                    opts.startup_timeout.as_secs(),
                    rm.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The end of the RM's log (its standard error).
    pub fn log_tail(&self) -> String {
        tail(&self.log_path, 4000)
    }

    /// Whether the RM is still running; `Err` carries how it ended.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "the ResourceManager exited ({status}); its log:\n{}",
                self.log_tail()
            )),
            Err(e) => Err(format!("cannot check on the ResourceManager: {e}")),
        }
    }

    /// Asks the RM to stop (SIGTERM), waits up to `grace`, then kills it.
    pub async fn stop(mut self, grace: Duration) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hadoops_site_file_names_every_port_and_the_capacity_scheduler() {
        let a = RmAddresses {
            client: "127.0.0.1:1".into(),
            scheduler: "127.0.0.1:2".into(),
            tracker: "127.0.0.1:3".into(),
            web: Some("127.0.0.1:4".into()),
        };
        let xml = hadoop_yarn_site(
            &a,
            "127.0.0.1:5",
            250,
            &[("yarn.acl.enable".into(), "true".into())],
        );
        for (k, v) in [
            ("yarn.resourcemanager.address", "127.0.0.1:1"),
            ("yarn.resourcemanager.scheduler.address", "127.0.0.1:2"),
            (
                "yarn.resourcemanager.resource-tracker.address",
                "127.0.0.1:3",
            ),
            ("yarn.resourcemanager.webapp.address", "127.0.0.1:4"),
            ("yarn.resourcemanager.admin.address", "127.0.0.1:5"),
            (
                "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
                "250",
            ),
            ("yarn.acl.enable", "true"),
        ] {
            let want = format!("<name>{k}</name>\n    <value>{v}</value>");
            assert!(xml.contains(&want), "{want} in {xml}");
        }
        assert!(xml.contains("scheduler.capacity.CapacityScheduler"));
        assert_eq!(xml.matches("<name>yarn.acl.enable</name>").count(), 1);
    }

    #[test]
    fn address_lines_are_read_by_key() {
        assert_eq!(
            address_line(
                "ResourceManager client address (yarn.resourcemanager.address): 127.0.0.1:4242"
            ),
            Some(("yarn.resourcemanager.address", "127.0.0.1:4242"))
        );
        assert_eq!(
            address_line("ResourceManager resource-tracker address (yarn.resourcemanager.resource-tracker.address): 10.0.0.1:1"),
            Some(("yarn.resourcemanager.resource-tracker.address", "10.0.0.1:1"))
        );
        assert_eq!(address_line("Spindle (something) else"), None);
        assert_eq!(address_line("no address (k): "), None);
    }

    #[test]
    fn the_site_file_has_loopback_ports_and_overrides() {
        let xml = yarn_site(
            250,
            &[
                ("yarn.resourcemanager.address".into(), "127.0.0.1:9".into()),
                ("x.y".into(), "a<b&c".into()),
            ],
        );
        assert!(xml.contains(
            "<name>yarn.resourcemanager.nodemanagers.heartbeat-interval-ms</name>\n    <value>250</value>"
        ));
        assert!(xml
            .contains("<name>yarn.resourcemanager.address</name>\n    <value>127.0.0.1:9</value>"));
        assert!(!xml
            .contains("<name>yarn.resourcemanager.address</name>\n    <value>127.0.0.1:0</value>"));
        assert!(xml.contains(
            "<name>yarn.resourcemanager.scheduler.address</name>\n    <value>127.0.0.1:0</value>"
        ));
        assert!(xml.contains("<value>a&lt;b&amp;c</value>"));
        assert_eq!(
            RmAddresses::hadoop_defaults("rm").scheduler,
            "rm:8030".to_string()
        );
    }
}
