//! Hadoop 3.3.4's own ResourceManager and NodeManager, next to Spindle's, for mixed clusters
//! and side-by-side runs: the jars `integration/setup-maven.sh yarn-server` copies, started
//! through `integration/bin/hadoop-yarn` (the script people use) on free loopback ports,
//! each daemon with a configuration directory of its own.
//!
//! * [`HadoopRm::start`] runs Hadoop's RM with the capacity scheduler and the repository's
//!   `conf/capacity-scheduler.xml` (the file the Spindle runs use), the client settings of
//!   the Spindle harness, and waits until it is active and serves its four RPC ports.
//! * [`ExtraNodeManager::start`] runs one NodeManager, Hadoop's ([`NmKind::Hadoop`]) or
//!   Spindle's ([`NmKind::Spindle`]), against any RM whose `yarn-site.xml` properties it
//!   is given ([`HadoopRm::yarn_site`] or [`Cluster::yarn_site`](crate::Cluster::yarn_site)),
//!   with its own ports and dirs, and waits until it has registered (Hadoop's NM) or
//!   opened its container-manager port (Spindle's).
//!
//! Dropping either kills its process group (containers included) and removes its
//! directory; their log tails explain failures. [`YarnServerJars::for_tests`] is the skip
//! policy of [`MavenJars::for_tests`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::clients::integration_dir;
use crate::cluster::{free_port, wait_for, NodeManagerSpec, RmAddresses, DISK_UTILIZATION_KEY};
use crate::conf::{fast_failing_client_settings, HadoopConf};
use crate::maven::MavenJars;
use crate::process::DaemonProcess;

/// How long a Hadoop daemon may take to serve (a cold JVM, the web app, registering).
pub const HADOOP_STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// The file name prefix of the ResourceManager's jar.
const RM_JAR: &str = "hadoop-yarn-server-resourcemanager-";

/// What Hadoop's RM logs once it serves.
const RM_READY_LINE: &str = "Transitioned to active state";

/// What Hadoop's NM logs once the RM has accepted its registration.
const NM_READY_LINE: &str = "Registered with ResourceManager as";

/// The Hadoop daemons' jars (`integration/setup-maven.sh yarn-server`;
/// `$SPINDLE_YARN_SERVER_JARS` overrides the folder).
#[derive(Debug, Clone)]
pub struct YarnServerJars(MavenJars);

impl YarnServerJars {
    /// Finds the jars; fails with the command to run when they are missing.
    pub fn locate() -> anyhow::Result<Self> {
        MavenJars::locate("yarn-server", RM_JAR).map(Self)
    }

    /// The skip policy of [`MavenJars::for_tests`].
    #[track_caller]
    pub fn for_tests() -> Option<Self> {
        MavenJars::for_tests("yarn-server", RM_JAR).map(Self)
    }

    /// The folder holding the jars.
    pub fn dir(&self) -> &Path {
        self.0.dir()
    }

    /// Every jar of the folder, sorted.
    pub fn classpath_entries(&self) -> anyhow::Result<Vec<PathBuf>> {
        self.0.classpath_entries()
    }
}

/// The `integration/bin/hadoop-yarn` script.
pub fn launcher() -> PathBuf {
    integration_dir().join("bin").join("hadoop-yarn")
}

/// The repository's `conf/capacity-scheduler.xml`, the queues both RMs run with.
pub fn default_capacity_scheduler_xml() -> anyhow::Result<String> {
    let path = integration_dir()
        .parent()
        .context("the integration folder has no parent")?
        .join("conf")
        .join("capacity-scheduler.xml");
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

fn hadoop_command(jars: &YarnServerJars, daemon: &str, conf_dir: &Path) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(launcher())
        .arg(daemon)
        .arg("--conf")
        .arg(conf_dir)
        .env("SPINDLE_YARN_SERVER_JARS", jars.dir());
    command
}

/// Waits until `process` has printed `line` (stdout or stderr) and every address in
/// `ports` accepts connections, failing early when it exits.
fn wait_serving(
    process: &mut DaemonProcess,
    what: &str,
    line: Option<&str>,
    ports: &[SocketAddr],
    timeout: Duration,
) -> anyhow::Result<()> {
    let stdout = process.stdout_path().to_path_buf();
    let stderr = process.stderr_path().to_path_buf();
    let ready = wait_for(timeout, Duration::from_millis(200), || {
        let printed = match line {
            None => true,
            Some(line) => [&stdout, &stderr].iter().any(|p| {
                std::fs::read(p)
                    .map(|b| String::from_utf8_lossy(&b).contains(line))
                    .unwrap_or(false)
            }),
        };
        if printed
            && ports
                .iter()
                .all(|a| TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok())
        {
            return Some(Ok(()));
        }
        match process.try_exit_status() {
            Ok(Some(status)) => Some(Err(format!("{what} exited ({status})"))),
            Err(e) => Some(Err(format!("{e:#}"))),
            Ok(None) => None,
        }
    });
    match ready {
        Some(Ok(())) => Ok(()),
        Some(Err(why)) => bail!("{why} during startup:\n{}", process.log_tail(80)),
        None => bail!(
            "{what} did not serve within {timeout:?}:\n{}",
            process.log_tail(80)
        ),
    }
}

/// A running Hadoop ResourceManager. Dropping it kills the process and removes its
/// directory (`SPINDLE_TEST_KEEP=1` keeps it).
#[derive(Debug)]
pub struct HadoopRm {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    conf_dir: PathBuf,
    addresses: RmAddresses,
    yarn: HadoopConf,
    core: HadoopConf,
    jars: YarnServerJars,
    process: DaemonProcess,
    starts: u32,
}

impl HadoopRm {
    /// Starts Hadoop's RM on free 127.0.0.1 ports with the capacity scheduler and the
    /// repository's `capacity-scheduler.xml`, the settings of the Spindle harness
    /// (recovery off, one AM attempt, 128 MB minimum allocation, ACLs off), then
    /// `properties` on top; waits until it is active and serving.
    pub fn start(jars: &YarnServerJars, properties: &HadoopConf) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("spindle-hadoop-rm-")
            .tempdir()
            .context("creating the Hadoop RM's directory")?;
        let root = dir.path().to_path_buf();
        let conf_dir = root.join("conf");
        std::fs::create_dir_all(&conf_dir)
            .with_context(|| format!("creating {}", conf_dir.display()))?;
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let addresses = RmAddresses {
            client: SocketAddr::new(ip, free_port(ip)?),
            scheduler: SocketAddr::new(ip, free_port(ip)?),
            resource_tracker: SocketAddr::new(ip, free_port(ip)?),
            admin: SocketAddr::new(ip, free_port(ip)?),
            webapp: SocketAddr::new(ip, free_port(ip)?),
        };
        let mut yarn = fast_failing_client_settings();
        yarn.set("yarn.resourcemanager.hostname", ip)
            .set("yarn.resourcemanager.address", addresses.client)
            .set("yarn.resourcemanager.scheduler.address", addresses.scheduler)
            .set(
                "yarn.resourcemanager.resource-tracker.address",
                addresses.resource_tracker,
            )
            .set("yarn.resourcemanager.admin.address", addresses.admin)
            .set("yarn.resourcemanager.webapp.address", addresses.webapp)
            .set(
                "yarn.resourcemanager.scheduler.class",
                "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
            )
            .set("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", 500)
            .set("yarn.resourcemanager.recovery.enabled", false)
            .set("yarn.resourcemanager.am.max-attempts", 1)
            .set("yarn.scheduler.minimum-allocation-mb", 128)
            .set("yarn.scheduler.maximum-allocation-mb", 8192)
            .set("yarn.scheduler.minimum-allocation-vcores", 1)
            .set("yarn.scheduler.maximum-allocation-vcores", 8)
            .set("yarn.acl.enable", false)
            .set("yarn.log-aggregation-enable", false)
            .set("yarn.nodemanager.vmem-check-enabled", false)
            .set("yarn.nodemanager.pmem-check-enabled", false)
            .set(DISK_UTILIZATION_KEY, 100);
        let exclude_path = conf_dir.join("nodes.exclude");
        std::fs::write(&exclude_path, "")
            .with_context(|| format!("writing {}", exclude_path.display()))?;
        yarn.set(
            "yarn.resourcemanager.nodes.exclude-path",
            exclude_path.display(),
        );
        yarn.extend_from(properties);
        let mut core = HadoopConf::new();
        core.set("fs.defaultFS", "file:///")
            .set("hadoop.tmp.dir", root.join("hadoop-tmp").display())
            .set("hadoop.security.authentication", "simple");
        yarn.write(&conf_dir.join("yarn-site.xml"))?;
        core.write(&conf_dir.join("core-site.xml"))?;
        let capacity = conf_dir.join("capacity-scheduler.xml");
        std::fs::write(&capacity, default_capacity_scheduler_xml()?)
            .with_context(|| format!("writing {}", capacity.display()))?;

        let process = Self::launch(jars, &conf_dir, &root, "hadoop-rm", &addresses)?;
        Ok(Self {
            dir: Some(dir),
            root,
            conf_dir,
            addresses,
            yarn,
            core,
            jars: jars.clone(),
            process,
            starts: 1,
        })
    }

    fn launch(
        jars: &YarnServerJars,
        conf_dir: &Path,
        root: &Path,
        name: &str,
        addresses: &RmAddresses,
    ) -> anyhow::Result<DaemonProcess> {
        let mut process = DaemonProcess::spawn(
            name,
            hadoop_command(jars, "resourcemanager", conf_dir),
            root,
        )?;
        wait_serving(
            &mut process,
            "Hadoop's ResourceManager",
            Some(RM_READY_LINE),
            &[
                addresses.client,
                addresses.scheduler,
                addresses.resource_tracker,
                addresses.admin,
            ],
            HADOOP_STARTUP_TIMEOUT,
        )?;
        Ok(process)
    }

    /// Kills the RM with SIGKILL and starts it again on the same configuration and
    /// ports (its output in `hadoop-rm-<n>.std{out,err}`); waits until it serves.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.process.kill()?;
        self.starts += 1;
        let name = format!("hadoop-rm-{}", self.starts);
        self.process = Self::launch(
            &self.jars,
            &self.conf_dir,
            &self.root,
            &name,
            &self.addresses,
        )?;
        Ok(())
    }

    /// The RM's (and its clients') configuration directory.
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// The RM's directory (`conf/`, its logs `hadoop-rm.std{out,err}`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its addresses.
    pub fn addresses(&self) -> &RmAddresses {
        &self.addresses
    }

    /// The properties of its `yarn-site.xml`, for NodeManagers and clients.
    pub fn yarn_site(&self) -> &HadoopConf {
        &self.yarn
    }

    /// The properties of its `core-site.xml`.
    pub fn core_site(&self) -> &HadoopConf {
        &self.core
    }

    /// The daemon process.
    pub fn process(&mut self) -> &mut DaemonProcess {
        &mut self.process
    }

    /// The last lines of its output, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        self.process.log_tail(max_lines)
    }

    /// Replaces the exclude file's content (`yarn.resourcemanager.nodes.exclude-path`;
    /// takes effect on `yarn rmadmin -refreshNodes`).
    pub fn set_exclude_hosts<S: AsRef<str>>(&self, hosts: &[S]) -> anyhow::Result<()> {
        let path = self.conf_dir.join("nodes.exclude");
        let mut text = String::new();
        for host in hosts {
            text.push_str(host.as_ref());
            text.push('\n');
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    }
}

impl Drop for HadoopRm {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.log_tail(200));
        }
        let _ = self.process.kill();
        keep_if_asked(&mut self.dir);
    }
}

fn keep_if_asked(dir: &mut Option<tempfile::TempDir>) {
    if std::env::var_os("SPINDLE_TEST_KEEP").is_some_and(|v| !v.is_empty() && v != "0") {
        if let Some(dir) = dir.take() {
            eprintln!("SPINDLE_TEST_KEEP: files kept in {}", dir.keep().display());
        }
    }
}

/// Whose NodeManager an [`ExtraNodeManager`] runs.
#[derive(Debug, Clone)]
pub enum NmKind {
    /// Hadoop's `NodeManager` (DefaultContainerExecutor, as the current user).
    Hadoop(YarnServerJars),
    /// `spindle nodemanager` of this binary.
    Spindle(PathBuf),
}

/// One NodeManager started on its own next to an RM (Hadoop's or Spindle's), with its
/// own loopback host, ports, configuration and dirs. Dropping it kills its process group
/// (its containers too) and removes its directory.
#[derive(Debug)]
pub struct ExtraNodeManager {
    dir: Option<tempfile::TempDir>,
    host: IpAddr,
    port: u16,
    web_port: u16,
    conf_dir: PathBuf,
    process: DaemonProcess,
}

impl ExtraNodeManager {
    /// Starts a NodeManager of `kind` on `host` (a loopback address of its own, e.g.
    /// 127.0.0.20) with `spec`'s resources, the RM's `yarn-site.xml` properties `rm_yarn`
    /// and `core-site.xml` properties `core`, no auxiliary services, recovery off; waits
    /// until Hadoop's NM has registered or Spindle's opened its container-manager port.
    pub fn start(
        kind: &NmKind,
        host: IpAddr,
        rm_yarn: &HadoopConf,
        core: &HadoopConf,
        spec: &NodeManagerSpec,
    ) -> anyhow::Result<Self> {
        let (prefix, name) = match kind {
            NmKind::Hadoop(_) => ("spindle-hadoop-nm-", "hadoop-nm"),
            NmKind::Spindle(_) => ("spindle-extra-nm-", "spindle-nm"),
        };
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .context("creating the NodeManager's directory")?;
        let root = dir.path().to_path_buf();
        let conf_dir = root.join("conf");
        let local_dir = root.join("local");
        let log_dir = root.join("logs");
        for d in [&conf_dir, &local_dir, &log_dir] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let port = free_port(host)?;
        let web_port = free_port(host)?;
        let localizer_port = free_port(host)?;
        let mut yarn = rm_yarn.clone();
        yarn.set("yarn.nodemanager.hostname", host)
            .set("yarn.nodemanager.address", SocketAddr::new(host, port))
            .set(
                "yarn.nodemanager.webapp.address",
                SocketAddr::new(host, web_port),
            )
            .set(
                "yarn.nodemanager.localizer.address",
                SocketAddr::new(host, localizer_port),
            )
            .set("yarn.nodemanager.local-dirs", local_dir.display())
            .set("yarn.nodemanager.log-dirs", log_dir.display())
            .set("yarn.nodemanager.resource.memory-mb", spec.memory_mb)
            .set("yarn.nodemanager.resource.cpu-vcores", spec.vcores)
            .set("yarn.nodemanager.recovery.enabled", false)
            .set("yarn.nodemanager.aux-services", "")
            .set("yarn.nodemanager.vmem-check-enabled", false)
            .set("yarn.nodemanager.pmem-check-enabled", false)
            .set(DISK_UTILIZATION_KEY, 100);
        yarn.extend_from(&spec.properties);
        yarn.write(&conf_dir.join("yarn-site.xml"))?;
        core.write(&conf_dir.join("core-site.xml"))?;

        let (command, line) = match kind {
            NmKind::Hadoop(jars) => (
                hadoop_command(jars, "nodemanager", &conf_dir),
                Some(NM_READY_LINE),
            ),
            NmKind::Spindle(binary) => {
                let mut cmd = Command::new(binary);
                if std::env::var_os("RUST_LOG").is_none() {
                    cmd.env("RUST_LOG", "info");
                }
                cmd.env("RUST_BACKTRACE", "1")
                    .arg("nodemanager")
                    .arg("--conf")
                    .arg(&conf_dir);
                (cmd, None)
            }
        };
        let mut process = DaemonProcess::spawn(name, command, &root)?;
        wait_serving(
            &mut process,
            name,
            line,
            &[SocketAddr::new(host, port)],
            HADOOP_STARTUP_TIMEOUT,
        )?;
        Ok(Self {
            dir: Some(dir),
            host,
            port,
            web_port,
            conf_dir,
            process,
        })
    }

    /// The loopback address it binds and names itself by.
    pub fn host(&self) -> IpAddr {
        self.host
    }

    /// `host:port` of its container manager, the node id.
    pub fn address(&self) -> String {
        SocketAddr::new(self.host, self.port).to_string()
    }

    /// Its container-manager port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its web port.
    pub fn web_port(&self) -> u16 {
        self.web_port
    }

    /// True when `node_id` (`host:port` as the CLI prints it) names this NodeManager.
    pub fn is_node_id(&self, node_id: &str) -> bool {
        node_id
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>() == Ok(self.port))
    }

    /// Its configuration directory.
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// The daemon process.
    pub fn process(&mut self) -> &mut DaemonProcess {
        &mut self.process
    }

    /// Whether it has printed `needle` so far (see [`DaemonProcess::printed`]).
    pub fn printed(&self, needle: &str) -> bool {
        self.process.printed(needle)
    }

    /// The last lines of its output, for failure reports.
    pub fn log_tail(&self, max_lines: usize) -> String {
        self.process.log_tail(max_lines)
    }
}

impl Drop for ExtraNodeManager {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.log_tail(200));
        }
        let _ = self.process.kill();
        keep_if_asked(&mut self.dir);
    }
}
