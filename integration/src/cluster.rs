//! A Spindle cluster for one test: a ResourceManager and NodeManagers as real `spindle`
//! processes on loopback, each with its own configuration directory in a temp dir.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::clients::{HadoopClients, YarnCommand};
use crate::conf::{fast_failing_client_settings, HadoopConf};
use crate::process::{CliOutput, DaemonProcess};

/// How long [`ClusterBuilder::start`] waits for each daemon to open its ports.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The disk use above which a NodeManager's dirs turn bad (Hadoop's default 90 %): set
/// to 100 by the harnesses, because a test machine's disk often runs that full and a
/// node with no good dir takes no containers. The disk checker has its own tests.
pub const DISK_UTILIZATION_KEY: &str =
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage";
/// Lines of each daemon's stdout and stderr printed when a test fails.
const LOG_TAIL_LINES: usize = 200;

/// Where the `spindle` binary is: `$SPINDLE_BIN`, else `spindle` in the cargo profile
/// folder this test executable was built into (`target/debug/deps/x` → `target/debug`).
pub fn spindle_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("SPINDLE_BIN").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        if !bin.is_file() {
            bail!(
                "SPINDLE_BIN points at {}, which does not exist",
                bin.display()
            );
        }
        return Ok(bin);
    }
    let exe = std::env::current_exe().context("locating the running test executable")?;
    let mut dir = exe
        .parent()
        .context("the test executable has no parent folder")?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir
            .parent()
            .context("target/<profile>/deps has no parent")?;
    }
    let bin = dir.join(format!("spindle{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!(
            "the spindle binary is missing at {}: run `cargo build -p spindle` first (or set SPINDLE_BIN)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Ports handed out by this process, so two clusters in one test binary never get the
/// same port even before either daemon has bound it.
static HANDED_OUT: Mutex<Option<HashSet<SocketAddr>>> = Mutex::new(None);

/// The reservations of [`free_port`] across processes: an exclusive `flock` on one file
/// per address, held until this process exits (the kernel releases it then, however the
/// process ends). A test runner that runs each test in its own process (cargo-nextest)
/// runs two tests at once in two processes, which the in-process set above cannot see.
static RESERVED: Mutex<Vec<Flock<File>>> = Mutex::new(Vec::new());

/// The folder of the reservation files: `$TMPDIR/spindle-test-ports` (shared by every
/// test process of the machine's user; the files are empty and stay, since removing a
/// file another process may be locking would let a third lock a new one).
fn reservation_dir() -> PathBuf {
    std::env::temp_dir().join("spindle-test-ports")
}

/// Takes `addr` for this process unless another live process holds it. `Ok(false)` when
/// one does.
fn reserve_across_processes(addr: SocketAddr) -> anyhow::Result<bool> {
    let dir = reservation_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}-{}", addr.ip(), addr.port()));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening the port reservation {}", path.display()))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => {
            RESERVED
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(lock);
            Ok(true)
        }
        Err((_, Errno::EWOULDBLOCK)) => Ok(false),
        Err((_, e)) => {
            Err(e).with_context(|| format!("locking the port reservation {}", path.display()))
        }
    }
}

/// A port on `ip` that is free right now, was not handed out before by this process, and
/// is not held by another process's `free_port` (a `flock`ed file per address): tests that run at
/// the same time, in one process or in several, never get the same port.
pub fn free_port(ip: IpAddr) -> anyhow::Result<u16> {
    for _ in 0..100 {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .with_context(|| format!("binding an ephemeral port on {ip}"))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let mut guard = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.get_or_insert_with(HashSet::new).insert(addr) && reserve_across_processes(addr)? {
            return Ok(addr.port());
        }
    }
    bail!("could not find a free port on {ip} after 100 tries")
}

/// Polls `condition` every `poll` until it returns true or `timeout` passes. Returns
/// whether it became true. The condition is always evaluated at least once.
pub fn wait_until(timeout: Duration, poll: Duration, mut condition: impl FnMut() -> bool) -> bool {
    wait_for(timeout, poll, || condition().then_some(())).is_some()
}

/// Polls `probe` every `poll` until it returns `Some`, or `timeout` passes.
pub fn wait_for<T>(
    timeout: Duration,
    poll: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(poll);
    }
}

/// Polls `yarn application -status app` against the RM of `conf_dir` every 300 ms until
/// its state is one of `states`, for at most `timeout`; the report (`parse_report`'s pairs).
pub fn wait_app_state(
    clients: &HadoopClients,
    conf_dir: &Path,
    app: &str,
    states: &[&str],
    timeout: Duration,
) -> Option<Vec<(String, String)>> {
    wait_for(timeout, Duration::from_millis(300), || {
        let out = clients
            .yarn()
            .conf_dir(conf_dir)
            .run(["application", "-status", app])
            .ok()?;
        let report = crate::cli::parse_report(&out.stdout);
        crate::cli::report_value(&report, "State")
            .is_some_and(|s| states.contains(&s))
            .then_some(report)
    })
}

/// Resources and extra settings of one NodeManager.
#[derive(Debug, Clone)]
pub struct NodeManagerSpec {
    /// `yarn.nodemanager.resource.memory-mb`.
    pub memory_mb: u64,
    /// `yarn.nodemanager.resource.cpu-vcores`.
    pub vcores: u32,
    /// Extra properties for this NodeManager's `yarn-site.xml`.
    pub properties: HadoopConf,
}

impl Default for NodeManagerSpec {
    fn default() -> Self {
        Self {
            memory_mb: 4096,
            vcores: 4,
            properties: HadoopConf::new(),
        }
    }
}

impl NodeManagerSpec {
    /// A NodeManager offering `memory_mb` MB and `vcores` virtual cores.
    pub fn new(memory_mb: u64, vcores: u32) -> Self {
        Self {
            memory_mb,
            vcores,
            properties: HadoopConf::new(),
        }
    }
}

/// Builds a [`Cluster`]. Defaults: no NodeManagers (add them with
/// [`ClusterBuilder::nodemanagers`] or [`ClusterBuilder::nodemanager`]), a 500 ms
/// NodeManager heartbeat, Hadoop's default liveness expiry.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    nodemanagers: Vec<NodeManagerSpec>,
    liveness_expiry_ms: Option<u64>,
    heartbeat_interval_ms: u64,
    include_hosts: Vec<String>,
    exclude_hosts: Vec<String>,
    rm_properties: HadoopConf,
    core_properties: HadoopConf,
    extra_files: Vec<(String, String)>,
    startup_timeout: Duration,
    /// `Some(automatic failover)`: an HA pair of ResourceManagers.
    ha_pair: Option<bool>,
    /// `hadoop.zk.address` of the ZooKeeper the RMs elect their leader on and
    /// keep their state in.
    zookeeper: Option<String>,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        Self {
            nodemanagers: Vec::new(),
            liveness_expiry_ms: None,
            heartbeat_interval_ms: 500,
            include_hosts: Vec::new(),
            exclude_hosts: Vec::new(),
            rm_properties: HadoopConf::new(),
            core_properties: HadoopConf::new(),
            extra_files: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            ha_pair: None,
            zookeeper: None,
        }
    }
}

impl ClusterBuilder {
    /// Adds `count` NodeManagers with the default resources (4096 MB, 4 vcores).
    pub fn nodemanagers(mut self, count: usize) -> Self {
        self.nodemanagers
            .extend(std::iter::repeat_with(NodeManagerSpec::default).take(count));
        self
    }

    /// Adds one NodeManager as described by `spec`.
    pub fn nodemanager(mut self, spec: NodeManagerSpec) -> Self {
        self.nodemanagers.push(spec);
        self
    }

    /// `yarn.nm.liveness-monitor.expiry-interval-ms`: how long the RM waits for a
    /// heartbeat before it declares a NodeManager LOST.
    pub fn liveness_expiry_ms(mut self, ms: u64) -> Self {
        self.liveness_expiry_ms = Some(ms);
        self
    }

    /// `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`.
    pub fn heartbeat_interval_ms(mut self, ms: u64) -> Self {
        self.heartbeat_interval_ms = ms;
        self
    }

    /// Initial content of the include file (`yarn.resourcemanager.nodes.include-path`);
    /// empty means every host may join.
    pub fn include_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.include_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Initial content of the exclude file (`yarn.resourcemanager.nodes.exclude-path`).
    pub fn exclude_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.exclude_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Sets a property in the ResourceManager's `yarn-site.xml` (which NodeManagers and
    /// CLIs read too).
    pub fn rm_property(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.rm_properties.set(key, value);
        self
    }

    /// Sets a `core-site.xml` property of every daemon and client (e.g. `fs.defaultFS`
    /// on a test HDFS); it wins over the harness's own.
    pub fn core_property(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.core_properties.set(key, value);
        self
    }

    /// Writes an extra file (e.g. `capacity-scheduler.xml`) into the ResourceManager's
    /// configuration directory.
    pub fn conf_file(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.extra_files.push((name.into(), contents.into()));
        self
    }

    /// Two ResourceManager processes, `rm1` and `rm2`, as an HA pair
    /// (`yarn.resourcemanager.ha.enabled`, `ha.rm-ids=rm1,rm2`, per-id
    /// addresses, `yarn.resourcemanager.ha.automatic-failover.enabled` as
    /// given) on one state store (set `yarn.resourcemanager.recovery.enabled`
    /// to share the applications). Both start standby. The shared
    /// configuration directory ([`Cluster::conf_dir`], the CLI's and the
    /// NodeManagers') names both; each RM reads its own copy with
    /// `yarn.resourcemanager.ha.id` (both are on 127.0.0.1, so the id cannot
    /// be found by the local address).
    pub fn ha_pair(mut self, automatic_failover: bool) -> Self {
        self.ha_pair = Some(automatic_failover);
        self
    }

    /// The RMs use the ZooKeeper server at `connect_string` (`hadoop.zk.address`,
    /// e.g. [`ZooKeeperServer::connect_string`](crate::ZooKeeperServer::connect_string)):
    /// with [`ha_pair`](Self::ha_pair)`(true)` they elect the active on it (under a
    /// `yarn.resourcemanager.cluster-id` of this cluster's own), and they keep their
    /// state in it (`yarn.resourcemanager.store.class` = Hadoop's `ZKRMStateStore`,
    /// recovery on). [`rm_property`](Self::rm_property) overrides any of these, e.g.
    /// `hadoop.zk.timeout-ms` (10 s by default).
    pub fn zookeeper(mut self, connect_string: impl Into<String>) -> Self {
        self.zookeeper = Some(connect_string.into());
        self
    }

    /// How long to wait for each daemon to open its ports.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Writes the configuration, starts the ResourceManager, waits for its ports, then
    /// starts each NodeManager and waits for its container-manager port. The cluster's
    /// `yarn` calls use `clients`.
    pub fn start(self, clients: &HadoopClients) -> anyhow::Result<Cluster> {
        self.start_with(Some(clients.clone()))
    }

    /// [`start`](Self::start) for tests that drive the cluster with Spindle's own
    /// clients only (`spindle distributed-shell`, `spindle dag`): no Hadoop jars are
    /// needed, and [`Cluster::yarn`] is not available.
    pub fn start_without_clients(self) -> anyhow::Result<Cluster> {
        self.start_with(None)
    }

    fn start_with(self, clients: Option<HadoopClients>) -> anyhow::Result<Cluster> {
        let binary = spindle_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("spindle-it-")
            .tempdir()
            .context("creating the cluster's temp dir")?;
        let root = dir.path().to_path_buf();
        let log_dir = root.join("logs");
        let conf_dir = root.join("conf");
        for d in [&log_dir, &conf_dir] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }

        let rm_ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let rm = RmAddresses::free(rm_ip)?;
        let rm2 = match self.ha_pair {
            Some(_) => Some(RmAddresses::free(rm_ip)?),
            None => None,
        };
        let include_path = conf_dir.join("nodes.include");
        let exclude_path = conf_dir.join("nodes.exclude");
        write_hosts_file(&include_path, &self.include_hosts)?;
        write_hosts_file(&exclude_path, &self.exclude_hosts)?;

        let max_memory = self
            .nodemanagers
            .iter()
            .map(|n| n.memory_mb)
            .max()
            .unwrap_or(8192);
        let max_vcores = self
            .nodemanagers
            .iter()
            .map(|n| n.vcores)
            .max()
            .unwrap_or(8);

        let mut yarn = fast_failing_client_settings();
        yarn.set("yarn.resourcemanager.hostname", rm_ip)
            .set("yarn.resourcemanager.address", rm.client)
            .set("yarn.resourcemanager.scheduler.address", rm.scheduler)
            .set(
                "yarn.resourcemanager.resource-tracker.address",
                rm.resource_tracker,
            )
            .set("yarn.resourcemanager.admin.address", rm.admin)
            .set("yarn.resourcemanager.webapp.address", rm.webapp)
            .set(
                "yarn.resourcemanager.nodes.include-path",
                include_path.display(),
            )
            .set(
                "yarn.resourcemanager.nodes.exclude-path",
                exclude_path.display(),
            )
            .set(
                "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
                self.heartbeat_interval_ms,
            )
            .set("yarn.resourcemanager.recovery.enabled", false)
            .set("yarn.resourcemanager.am.max-attempts", 1)
            .set("yarn.scheduler.minimum-allocation-mb", 128)
            .set("yarn.scheduler.maximum-allocation-mb", max_memory)
            .set("yarn.scheduler.minimum-allocation-vcores", 1)
            .set("yarn.scheduler.maximum-allocation-vcores", max_vcores)
            .set("yarn.acl.enable", false)
            .set("yarn.log-aggregation-enable", false)
            .set("yarn.nodemanager.vmem-check-enabled", false)
            .set("yarn.nodemanager.pmem-check-enabled", false)
            .set(DISK_UTILIZATION_KEY, 100);
        if let Some(ms) = self.liveness_expiry_ms {
            yarn.set("yarn.nm.liveness-monitor.expiry-interval-ms", ms);
        }
        if let (Some(automatic), Some(rm2)) = (self.ha_pair, rm2) {
            yarn.set("yarn.resourcemanager.ha.enabled", true)
                .set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2")
                .set(
                    "yarn.resourcemanager.ha.automatic-failover.enabled",
                    automatic,
                );
            for (id, a) in [("rm1", rm), ("rm2", rm2)] {
                yarn.set(format!("yarn.resourcemanager.hostname.{id}"), rm_ip)
                    .set(format!("yarn.resourcemanager.address.{id}"), a.client)
                    .set(
                        format!("yarn.resourcemanager.scheduler.address.{id}"),
                        a.scheduler,
                    )
                    .set(
                        format!("yarn.resourcemanager.resource-tracker.address.{id}"),
                        a.resource_tracker,
                    )
                    .set(format!("yarn.resourcemanager.admin.address.{id}"), a.admin)
                    .set(
                        format!("yarn.resourcemanager.webapp.address.{id}"),
                        a.webapp,
                    );
            }
        }
        if let Some(zookeeper) = &self.zookeeper {
            let cluster_id = root
                .file_name()
                .map(|n| n.to_string_lossy().replace('.', "-"))
                .unwrap_or_else(|| "spindle-it".into());
            yarn.set("hadoop.zk.address", zookeeper)
                .set("yarn.resourcemanager.cluster-id", cluster_id)
                .set("yarn.resourcemanager.recovery.enabled", true)
                .set(
                    "yarn.resourcemanager.store.class",
                    "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore",
                );
        }
        yarn.extend_from(&self.rm_properties);

        let mut core = HadoopConf::new();
        core.set("fs.defaultFS", "file:///")
            .set("hadoop.tmp.dir", root.join("hadoop-tmp").display())
            .set("hadoop.security.authentication", "simple");
        core.extend_from(&self.core_properties);

        yarn.write(&conf_dir.join("yarn-site.xml"))?;
        core.write(&conf_dir.join("core-site.xml"))?;
        for (name, contents) in &self.extra_files {
            let path = conf_dir.join(name);
            std::fs::write(&path, contents)
                .with_context(|| format!("writing {}", path.display()))?;
        }

        // Each RM of an HA pair reads its own copy naming its id.
        let rm_conf_dir = |id: &str| -> anyhow::Result<PathBuf> {
            let dir = root.join(format!("conf-{id}"));
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut own = yarn.clone();
            own.set("yarn.resourcemanager.ha.id", id);
            own.write(&dir.join("yarn-site.xml"))?;
            core.write(&dir.join("core-site.xml"))?;
            for (name, contents) in &self.extra_files {
                let path = dir.join(name);
                std::fs::write(&path, contents)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(dir)
        };
        let (rm_name, rm_conf) = match rm2 {
            Some(_) => ("rm1", rm_conf_dir("rm1")?),
            None => ("rm", conf_dir.clone()),
        };
        let mut rm_cmd = spindle_command(&binary);
        rm_cmd.arg("resourcemanager").arg("--conf").arg(&rm_conf);
        let rm_process = DaemonProcess::spawn(rm_name, rm_cmd, &log_dir)?;
        let second = match rm2 {
            Some(addresses) => {
                let dir = rm_conf_dir("rm2")?;
                let mut cmd = spindle_command(&binary);
                cmd.arg("resourcemanager").arg("--conf").arg(&dir);
                Some(SecondRm {
                    addresses,
                    process: DaemonProcess::spawn("rm2", cmd, &log_dir)?,
                    conf_dir: dir,
                })
            }
            None => None,
        };

        let mut cluster = Cluster {
            clients,
            root,
            binary,
            conf_dir,
            log_dir,
            include_path,
            exclude_path,
            rm,
            rm_conf_dir: rm_conf,
            rm_process,
            rm2: second,
            rm_starts: 1,
            nodemanagers: Vec::new(),
            yarn_site: yarn.clone(),
            core_site: core.clone(),
            dir: Some(dir),
        };
        let started = (|| {
            for (what, addr) in [
                ("client", rm.client),
                ("resource-tracker", rm.resource_tracker),
                ("scheduler", rm.scheduler),
                ("admin", rm.admin),
            ] {
                wait_for_port(&mut cluster.rm_process, what, addr, self.startup_timeout)?;
            }
            if let Some(rm2) = &mut cluster.rm2 {
                for (what, addr) in rm2.addresses.ports() {
                    wait_for_port(&mut rm2.process, what, addr, self.startup_timeout)?;
                }
            }
            for (index, spec) in self.nodemanagers.iter().enumerate() {
                cluster.start_nodemanager(index, spec, &yarn, &core, self.startup_timeout)?;
            }
            anyhow::Ok(())
        })();
        if let Err(e) = started {
            // The caller gets the error; the logs explain it.
            eprintln!("{}", cluster.log_report());
            return Err(e);
        }
        Ok(cluster)
    }
}

fn spindle_command(binary: &Path) -> Command {
    let mut cmd = Command::new(binary);
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "info");
    }
    cmd.env("RUST_BACKTRACE", "1");
    cmd
}

fn write_hosts_file(path: &Path, hosts: &[String]) -> anyhow::Result<()> {
    let mut text = hosts.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("writing hosts file {}", path.display()))
}

/// Waits until something accepts TCP connections on `addr`, failing early if `process`
/// exits first.
fn wait_for_port(
    process: &mut DaemonProcess,
    what: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process.try_exit_status()? {
            bail!(
                "{} exited ({status}) before opening its {what} port {addr}",
                process.name()
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not open its {what} port {addr} within {timeout:?}",
                process.name()
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// The ResourceManager's listening addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmAddresses {
    /// `yarn.resourcemanager.address` (ApplicationClientProtocol).
    pub client: SocketAddr,
    /// `yarn.resourcemanager.scheduler.address` (ApplicationMasterProtocol).
    pub scheduler: SocketAddr,
    /// `yarn.resourcemanager.resource-tracker.address` (ResourceTracker).
    pub resource_tracker: SocketAddr,
    /// `yarn.resourcemanager.admin.address` (ResourceManagerAdministrationProtocol).
    pub admin: SocketAddr,
    /// `yarn.resourcemanager.webapp.address`.
    pub webapp: SocketAddr,
}

impl RmAddresses {
    /// Free ports on `ip`.
    fn free(ip: IpAddr) -> anyhow::Result<RmAddresses> {
        Ok(RmAddresses {
            client: SocketAddr::new(ip, free_port(ip)?),
            scheduler: SocketAddr::new(ip, free_port(ip)?),
            resource_tracker: SocketAddr::new(ip, free_port(ip)?),
            admin: SocketAddr::new(ip, free_port(ip)?),
            webapp: SocketAddr::new(ip, free_port(ip)?),
        })
    }

    /// The four RPC ports, named.
    fn ports(&self) -> [(&'static str, SocketAddr); 4] {
        [
            ("client", self.client),
            ("resource-tracker", self.resource_tracker),
            ("scheduler", self.scheduler),
            ("admin", self.admin),
        ]
    }
}

/// The second ResourceManager (`rm2`) of an HA pair.
#[derive(Debug)]
struct SecondRm {
    addresses: RmAddresses,
    process: DaemonProcess,
    /// Its own configuration directory (`yarn.resourcemanager.ha.id=rm2`).
    conf_dir: PathBuf,
}

/// One running (or stopped) NodeManager of a [`Cluster`].
#[derive(Debug)]
pub struct NodeManager {
    index: usize,
    host: IpAddr,
    port: u16,
    web_port: u16,
    memory_mb: u64,
    vcores: u32,
    conf_dir: PathBuf,
    process: DaemonProcess,
    /// How often [`Cluster::restart_nodemanager`] started it again.
    restarts: usize,
}

impl NodeManager {
    /// Position in the builder's list.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The loopback address this NodeManager binds and names itself by
    /// (`yarn.nodemanager.hostname`); every NodeManager gets its own, 127.0.0.2 and up,
    /// so include/exclude files can name a single node.
    pub fn host(&self) -> IpAddr {
        self.host
    }

    /// The container-management port (`yarn.nodemanager.address`), the port part of
    /// the node id.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port` as configured in `yarn.nodemanager.address`.
    pub fn address(&self) -> String {
        SocketAddr::new(self.host, self.port).to_string()
    }

    /// The web port (`yarn.nodemanager.webapp.address`).
    pub fn web_port(&self) -> u16 {
        self.web_port
    }

    /// Configured memory in MB.
    pub fn memory_mb(&self) -> u64 {
        self.memory_mb
    }

    /// Configured virtual cores.
    pub fn vcores(&self) -> u32 {
        self.vcores
    }

    /// This NodeManager's configuration directory.
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// True when `node_id` (as printed by the CLI, `host:port`) names this NodeManager.
    /// Only the port is compared: the host part is whatever name the RM reports for
    /// the NodeManager's address, and ports are unique on this machine.
    pub fn is_node_id(&self, node_id: &str) -> bool {
        node_id
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>() == Ok(self.port))
    }

    /// The daemon process.
    pub fn process(&mut self) -> &mut DaemonProcess {
        &mut self.process
    }
}

/// A running Spindle cluster. Dropping it kills every daemon; if the thread is
/// panicking (a failed test), the daemons' logs are printed first. Set
/// `SPINDLE_TEST_KEEP=1` to keep the temp dir (its path is printed).
#[derive(Debug)]
pub struct Cluster {
    clients: Option<HadoopClients>,
    root: PathBuf,
    binary: PathBuf,
    conf_dir: PathBuf,
    log_dir: PathBuf,
    include_path: PathBuf,
    exclude_path: PathBuf,
    rm: RmAddresses,
    /// The ResourceManager's configuration directory (an HA pair's rm1: its own).
    rm_conf_dir: PathBuf,
    rm_process: DaemonProcess,
    /// An HA pair's rm2.
    rm2: Option<SecondRm>,
    /// How many ResourceManager processes this cluster has started.
    rm_starts: usize,
    nodemanagers: Vec<NodeManager>,
    /// The properties of the shared `yarn-site.xml` and `core-site.xml`.
    yarn_site: HadoopConf,
    core_site: HadoopConf,
    dir: Option<tempfile::TempDir>,
}

impl Cluster {
    /// A builder with the defaults described on [`ClusterBuilder`].
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// The Hadoop clients this cluster's CLI calls use (`None` when started with
    /// [`ClusterBuilder::start_without_clients`]).
    pub fn clients(&self) -> Option<&HadoopClients> {
        self.clients.as_ref()
    }

    #[track_caller]
    fn hadoop_clients(&self) -> &HadoopClients {
        match &self.clients {
            Some(c) => c,
            None => panic!(
                "this cluster was started without the Hadoop clients: use ClusterBuilder::start"
            ),
        }
    }

    /// The `spindle` binary the daemons run.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The cluster's temp dir: `conf/`, `logs/`, `nm-<i>/{conf,local,logs}`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The ResourceManager's (and the CLI's) configuration directory.
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// The folder holding `rm.stdout`, `rm.stderr`, `nm-<i>.stdout`, ...
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    /// The properties of the shared `yarn-site.xml` (the RM's, the CLI's, the base of
    /// every NodeManager's), e.g. for a NodeManager started outside the cluster.
    pub fn yarn_site(&self) -> &HadoopConf {
        &self.yarn_site
    }

    /// The properties of the shared `core-site.xml`.
    pub fn core_site(&self) -> &HadoopConf {
        &self.core_site
    }

    /// The ResourceManager's addresses.
    pub fn rm(&self) -> &RmAddresses {
        &self.rm
    }

    /// The ResourceManager daemon (an HA pair's rm1).
    pub fn rm_process(&mut self) -> &mut DaemonProcess {
        &mut self.rm_process
    }

    /// An HA pair's rm2 addresses (`None` without [`ClusterBuilder::ha_pair`]).
    pub fn rm2(&self) -> Option<&RmAddresses> {
        self.rm2.as_ref().map(|r| &r.addresses)
    }

    /// An HA pair's rm2 daemon.
    pub fn rm2_process(&mut self) -> Option<&mut DaemonProcess> {
        self.rm2.as_mut().map(|r| &mut r.process)
    }

    /// Kills the ResourceManager with SIGKILL: no shutdown step of any kind.
    pub fn kill_rm(&mut self) -> anyhow::Result<()> {
        self.rm_process.kill()?;
        Ok(())
    }

    /// Starts a new ResourceManager process on the same configuration (so the
    /// same ports and state store), logged as `rm-<n>`, and waits until it
    /// serves its ports.
    pub fn restart_rm(&mut self, timeout: Duration) -> anyhow::Result<()> {
        self.rm_starts += 1;
        let mut cmd = spindle_command(&self.binary);
        cmd.arg("resourcemanager")
            .arg("--conf")
            .arg(&self.rm_conf_dir);
        self.rm_process =
            DaemonProcess::spawn(&format!("rm-{}", self.rm_starts), cmd, &self.log_dir)?;
        let rm = self.rm;
        for (what, addr) in [
            ("client", rm.client),
            ("resource-tracker", rm.resource_tracker),
            ("scheduler", rm.scheduler),
            ("admin", rm.admin),
        ] {
            wait_for_port(&mut self.rm_process, what, addr, timeout)?;
        }
        Ok(())
    }

    /// The addresses of RM `id` of an HA pair (`rm1` or `rm2`; without a pair `rm1`
    /// names the one RM).
    pub fn rm_addresses(&self, id: &str) -> Option<&RmAddresses> {
        match id {
            "rm1" => Some(&self.rm),
            "rm2" => self.rm2(),
            _ => None,
        }
    }

    /// Kills RM `id` (`rm1` or `rm2`) of an HA pair with SIGKILL.
    pub fn kill_rm_id(&mut self, id: &str) -> anyhow::Result<()> {
        match id {
            "rm1" => self.kill_rm(),
            "rm2" => {
                let rm2 = self.rm2.as_mut().context("this cluster has no rm2")?;
                rm2.process.kill()?;
                Ok(())
            }
            other => bail!("no RM {other:?}: an HA pair has rm1 and rm2"),
        }
    }

    /// Starts RM `id` (`rm1` or `rm2`) of an HA pair again on its configuration (so
    /// the same ports, store and election), logged as `<id>-<n>`, and waits until its
    /// four ports are open. It starts standby and joins the election, if any.
    pub fn restart_rm_id(&mut self, id: &str, timeout: Duration) -> anyhow::Result<()> {
        if self.rm2.is_none() {
            bail!("restart_rm_id is for an HA pair: use restart_rm");
        }
        self.rm_starts += 1;
        let name = format!("{id}-{}", self.rm_starts);
        match id {
            "rm1" => {
                let mut cmd = spindle_command(&self.binary);
                cmd.arg("resourcemanager")
                    .arg("--conf")
                    .arg(&self.rm_conf_dir);
                self.rm_process = DaemonProcess::spawn(&name, cmd, &self.log_dir)?;
                for (what, addr) in self.rm.ports() {
                    wait_for_port(&mut self.rm_process, what, addr, timeout)?;
                }
            }
            "rm2" => {
                let rm2 = self.rm2.as_mut().context("this cluster has no rm2")?;
                let mut cmd = spindle_command(&self.binary);
                cmd.arg("resourcemanager").arg("--conf").arg(&rm2.conf_dir);
                rm2.process = DaemonProcess::spawn(&name, cmd, &self.log_dir)?;
                for (what, addr) in rm2.addresses.ports() {
                    wait_for_port(&mut rm2.process, what, addr, timeout)?;
                }
            }
            other => bail!("no RM {other:?}: an HA pair has rm1 and rm2"),
        }
        Ok(())
    }

    /// `yarn rmadmin -getAllServiceState` of an HA pair, as `(id, state)` per RM
    /// (`active`, `standby`, or the first word of what the CLI printed instead, e.g.
    /// `Failed` for an RM that does not answer), with the CLI's output. An error when
    /// the CLI itself fails.
    pub fn service_states(&self) -> anyhow::Result<(Vec<(String, String)>, CliOutput)> {
        let out = self
            .yarn_command()
            .run(["rmadmin", "-getAllServiceState"])?;
        if !out.success() {
            bail!("rmadmin -getAllServiceState failed:\n{out}");
        }
        let ids: Vec<(u16, &str)> = [("rm1", Some(&self.rm)), ("rm2", self.rm2())]
            .into_iter()
            .filter_map(|(id, a)| a.map(|a| (a.admin.port(), id)))
            .collect();
        let states = out
            .stdout
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let port: u16 = words.next()?.rsplit_once(':')?.1.parse().ok()?;
                let state = words.next()?;
                let id = ids.iter().find(|(p, _)| *p == port)?.1;
                Some((id.to_owned(), state.to_owned()))
            })
            .collect();
        Ok((states, out))
    }

    /// The ids of the RMs `-getAllServiceState` reports active (none, one, or — a split
    /// brain — both); `None` when the CLI fails.
    pub fn active_rms(&self) -> Option<Vec<String>> {
        let (states, _) = self.service_states().ok()?;
        Some(
            states
                .into_iter()
                .filter(|(_, s)| s == "active")
                .map(|(id, _)| id)
                .collect(),
        )
    }

    /// Waits until exactly one RM of the pair is active (and the other answers
    /// standby) and returns its id.
    pub fn wait_for_one_active(&self, timeout: Duration) -> Option<String> {
        wait_for(timeout, Duration::from_millis(500), || {
            let (states, _) = self.service_states().ok()?;
            let active: Vec<&(String, String)> =
                states.iter().filter(|(_, s)| s == "active").collect();
            let standby = states.iter().filter(|(_, s)| s == "standby").count();
            match active.as_slice() {
                [(id, _)] if standby + 1 == states.len() && states.len() == 2 => Some(id.clone()),
                _ => None,
            }
        })
    }

    /// All NodeManagers, in builder order.
    pub fn nodemanagers(&self) -> &[NodeManager] {
        &self.nodemanagers
    }

    /// NodeManager `index`. Panics if there is no such NodeManager (a test bug).
    #[track_caller]
    pub fn nodemanager(&self, index: usize) -> &NodeManager {
        match self.nodemanagers.get(index) {
            Some(nm) => nm,
            None => panic!(
                "no NodeManager {index}: the cluster has {}",
                self.nodemanagers.len()
            ),
        }
    }

    #[track_caller]
    fn nodemanager_mut(&mut self, index: usize) -> &mut NodeManager {
        let count = self.nodemanagers.len();
        match self.nodemanagers.get_mut(index) {
            Some(nm) => nm,
            None => panic!("no NodeManager {index}: the cluster has {count}"),
        }
    }

    /// Kills NodeManager `index` with SIGKILL: it cannot unregister, so the RM only
    /// notices through the liveness expiry (the node becomes LOST).
    pub fn kill_nodemanager(&mut self, index: usize) -> anyhow::Result<()> {
        self.nodemanager_mut(index).process.kill()?;
        Ok(())
    }

    /// Starts NodeManager `index` again on its configuration (the same ports and dirs),
    /// after [`kill_nodemanager`](Self::kill_nodemanager) or a stop, and waits for its
    /// container-manager port. Its log is `nm-<index>-<n>.log`.
    pub fn restart_nodemanager(&mut self, index: usize, timeout: Duration) -> anyhow::Result<()> {
        let binary = self.binary.clone();
        let log_dir = self.log_dir.clone();
        let nm = self.nodemanager_mut(index);
        nm.restarts += 1;
        let mut cmd = spindle_command(&binary);
        cmd.arg("nodemanager").arg("--conf").arg(&nm.conf_dir);
        let name = format!("nm-{index}-{}", nm.restarts);
        nm.process = DaemonProcess::spawn(&name, cmd, &log_dir)?;
        let addr = SocketAddr::new(nm.host, nm.port);
        wait_for_port(&mut nm.process, "container-manager", addr, timeout)
    }

    /// Stops NodeManager `index` with SIGTERM (a clean shutdown), killing it if it has
    /// not exited after `grace`. Returns whether it stopped by itself.
    pub fn stop_nodemanager(&mut self, index: usize, grace: Duration) -> anyhow::Result<bool> {
        let (_, clean) = self.nodemanager_mut(index).process.terminate(grace)?;
        Ok(clean)
    }

    /// True while NodeManager `index`'s process runs.
    pub fn nodemanager_running(&mut self, index: usize) -> anyhow::Result<bool> {
        self.nodemanager_mut(index).process.is_running()
    }

    /// Replaces the exclude file's content (takes effect on `rmadmin -refreshNodes`).
    pub fn set_exclude_hosts<S: AsRef<str>>(&self, hosts: &[S]) -> anyhow::Result<()> {
        let hosts: Vec<String> = hosts.iter().map(|h| h.as_ref().to_owned()).collect();
        write_hosts_file(&self.exclude_path, &hosts)
    }

    /// Replaces the include file's content (takes effect on `rmadmin -refreshNodes`).
    pub fn set_include_hosts<S: AsRef<str>>(&self, hosts: &[S]) -> anyhow::Result<()> {
        let hosts: Vec<String> = hosts.iter().map(|h| h.as_ref().to_owned()).collect();
        write_hosts_file(&self.include_path, &hosts)
    }

    /// A `yarn` invocation against this cluster, to customise before running.
    #[track_caller]
    pub fn yarn_command(&self) -> YarnCommand {
        self.hadoop_clients().yarn().conf_dir(&self.conf_dir)
    }

    /// Runs `yarn <args...>` against this cluster. Panics (after printing the daemon
    /// logs) only if the launcher itself cannot be started; the CLI's own failures are
    /// in the returned output.
    #[track_caller]
    pub fn yarn<I, S>(&self, args: I) -> CliOutput
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        match self.yarn_command().run(args) {
            Ok(out) => out,
            Err(e) => panic!("cannot run the yarn launcher: {e:#}"),
        }
    }

    /// Submits an application through Hadoop's own YarnClient
    /// (`integration/java/SubmitApp.java`) and returns its id once the RM has accepted it.
    pub fn submit_app(&self, app: &AppSubmission) -> anyhow::Result<String> {
        submit_app_with(self.hadoop_clients(), &self.conf_dir, app)
    }

    /// Every daemon's recent output, for failure reports.
    pub fn log_report(&self) -> String {
        let mut out = format!(
            "===== spindle cluster logs ({}) =====\n",
            self.log_dir.display()
        );
        out.push_str(&self.rm_process.log_tail(LOG_TAIL_LINES));
        if let Some(rm2) = &self.rm2 {
            out.push_str(&rm2.process.log_tail(LOG_TAIL_LINES));
        }
        for nm in &self.nodemanagers {
            out.push_str(&nm.process.log_tail(LOG_TAIL_LINES));
        }
        out.push_str("===== end of spindle cluster logs =====\n");
        out
    }

    fn start_nodemanager(
        &mut self,
        index: usize,
        spec: &NodeManagerSpec,
        base_yarn: &HadoopConf,
        core: &HadoopConf,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let octet = u8::try_from(index + 2)
            .ok()
            .filter(|o| *o < 255)
            .context("at most 252 NodeManagers fit on 127.0.0.2..127.0.0.254")?;
        let host = IpAddr::V4(Ipv4Addr::new(127, 0, 0, octet));
        let port = free_port(host)?;
        let web_port = free_port(host)?;
        let localizer_port = free_port(host)?;
        let nm_dir = self.root.join(format!("nm-{index}"));
        let conf_dir = nm_dir.join("conf");
        let local_dir = nm_dir.join("local");
        let nm_log_dir = nm_dir.join("logs");
        for d in [&conf_dir, &local_dir, &nm_log_dir] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let mut yarn = base_yarn.clone();
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
            .set("yarn.nodemanager.log-dirs", nm_log_dir.display())
            .set("yarn.nodemanager.resource.memory-mb", spec.memory_mb)
            .set("yarn.nodemanager.resource.cpu-vcores", spec.vcores);
        yarn.extend_from(&spec.properties);
        yarn.write(&conf_dir.join("yarn-site.xml"))?;
        core.write(&conf_dir.join("core-site.xml"))?;

        let mut cmd = spindle_command(&self.binary);
        cmd.arg("nodemanager").arg("--conf").arg(&conf_dir);
        let mut process = DaemonProcess::spawn(&format!("nm-{index}"), cmd, &self.log_dir)?;
        let started = wait_for_port(
            &mut process,
            "container-manager",
            SocketAddr::new(host, port),
            timeout,
        );
        self.nodemanagers.push(NodeManager {
            index,
            host,
            port,
            web_port,
            memory_mb: spec.memory_mb,
            vcores: spec.vcores,
            conf_dir,
            process,
            restarts: 0,
        });
        started
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!("{}", self.log_report());
        }
        for nm in &mut self.nodemanagers {
            let _ = nm.process.kill();
        }
        let _ = self.rm_process.kill();
        if let Some(rm2) = &mut self.rm2 {
            let _ = rm2.process.kill();
        }
        if std::env::var_os("SPINDLE_TEST_KEEP").is_some_and(|v| !v.is_empty() && v != "0") {
            if let Some(dir) = self.dir.take() {
                eprintln!(
                    "SPINDLE_TEST_KEEP: cluster files kept in {}",
                    dir.keep().display()
                );
            }
        }
    }
}

/// Submits an application through Hadoop's own YarnClient
/// (`integration/java/SubmitApp.java`) to the RM that the configuration in `conf_dir`
/// names (Spindle's or Hadoop's) and returns its id once the RM has accepted it.
pub fn submit_app_with(
    clients: &HadoopClients,
    conf_dir: &Path,
    app: &AppSubmission,
) -> anyhow::Result<String> {
    let classes = clients.compile_java("SubmitApp")?;
    let mut cmd = clients.yarn().conf_dir(conf_dir).classpath(classes);
    if let Some(user) = &app.user {
        cmd = cmd.env("HADOOP_USER_NAME", user);
    }
    let memory = app.memory_mb.to_string();
    let vcores = app.vcores.to_string();
    let mut args: Vec<String> = [
        "SubmitApp",
        "--name",
        &app.name,
        "--queue",
        &app.queue,
        "--command",
        &app.command,
        "--memory-mb",
        &memory,
        "--vcores",
        &vcores,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    for (link, path) in &app.public_files {
        args.push("--public-file".into());
        args.push(format!("{link}={}", path.display()));
    }
    for (link, uri) in &app.private_files {
        args.push("--private-file".into());
        args.push(format!("{link}={uri}"));
    }
    args.push("--max-attempts".into());
    args.push(app.max_attempts.to_string());
    if let Some(file) = &app.tokens_file {
        args.push("--tokens".into());
        args.push(file.display().to_string());
    }
    let out = cmd.run(args)?;
    if !out.success() {
        bail!("submitting application {:?} failed:\n{out}", app.name);
    }
    let id = out.stdout.trim();
    if !is_application_id(id) {
        bail!("SubmitApp printed {id:?}, which is not an application id:\n{out}");
    }
    Ok(id.to_owned())
}

/// An application for [`Cluster::submit_app`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSubmission {
    /// Application name.
    pub name: String,
    /// The AM container's command line (run by the NodeManager's launch script).
    pub command: String,
    /// Queue; `default` unless set.
    pub queue: String,
    /// The submitting user (`HADOOP_USER_NAME`); the OS user when `None`.
    pub user: Option<String>,
    /// AM container memory in MB.
    pub memory_mb: u64,
    /// AM container virtual cores.
    pub vcores: u32,
    /// PUBLIC FILE resources of the AM container: (link name, local file).
    pub public_files: Vec<(String, PathBuf)>,
    /// PRIVATE FILE resources of the AM container: (link name, URI on any file system
    /// the client can read, e.g. `hdfs://…`).
    pub private_files: Vec<(String, String)>,
    /// `maxAppAttempts` of the submission context.
    pub max_attempts: u32,
    /// A file of credentials (Hadoop's token storage format) given to the AM container.
    pub tokens_file: Option<PathBuf>,
}

impl AppSubmission {
    /// An application named `name` whose AM runs `command`, in queue `default`, with a
    /// 256 MB, 1 vcore AM container.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            queue: "default".to_owned(),
            user: None,
            memory_mb: 256,
            vcores: 1,
            public_files: Vec::new(),
            private_files: Vec::new(),
            max_attempts: 1,
            tokens_file: None,
        }
    }

    /// Gives the AM container the credentials in `file` (Hadoop's token storage format).
    pub fn tokens_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.tokens_file = Some(file.into());
        self
    }

    /// Gives the AM container the file at `uri` (any file system the client reads:
    /// `hdfs://…`) as a PRIVATE resource linked as `link`.
    pub fn private_file(mut self, link: impl Into<String>, uri: impl Into<String>) -> Self {
        self.private_files.push((link.into(), uri.into()));
        self
    }

    /// Asks for an AM container of `mb` MB.
    pub fn memory_mb(mut self, mb: u64) -> Self {
        self.memory_mb = mb;
        self
    }

    /// Lets the RM start up to `n` attempts.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Gives the AM container the local file `path` as a PUBLIC resource
    /// linked as `link` (its size and modification time as Hadoop's local
    /// FileSystem states them).
    pub fn public_file(mut self, link: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.public_files.push((link.into(), path.into()));
        self
    }

    /// Submits as `user` (through `HADOOP_USER_NAME`, as Hadoop's clients allow).
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Submits to `queue`.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }
}

/// True for `application_<cluster timestamp>_<sequence>`.
pub fn is_application_id(s: &str) -> bool {
    let mut parts = s.split('_');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("application"), Some(ts), Some(seq), None)
            if !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit())
                && seq.len() >= 4 && seq.bytes().all(|b| b.is_ascii_digit())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_not_repeated() -> anyhow::Result<()> {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut seen = HashSet::new();
        for _ in 0..50 {
            assert!(seen.insert(free_port(ip)?));
        }
        Ok(())
    }

    #[test]
    fn a_port_reserved_by_another_process_is_not_handed_out() -> anyhow::Result<()> {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let port = free_port(ip)?;
        // A second open file description of the reservation conflicts with this
        // process's lock exactly as another process's would.
        let path = reservation_dir().join(format!("{ip}-{port}"));
        let file = OpenOptions::new().write(true).open(&path)?;
        assert!(
            Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err(),
            "{} is not locked",
            path.display()
        );
        Ok(())
    }

    #[test]
    fn wait_until_polls_until_true_or_timeout() {
        let mut calls = 0;
        assert!(wait_until(
            Duration::from_secs(5),
            Duration::from_millis(1),
            || {
                calls += 1;
                calls == 3
            }
        ));
        assert_eq!(calls, 3);
        let started = Instant::now();
        assert!(!wait_until(
            Duration::from_millis(50),
            Duration::from_millis(10),
            || false
        ));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn application_ids() {
        assert!(is_application_id("application_1700000000000_0001"));
        assert!(is_application_id("application_1_12345"));
        assert!(!is_application_id("application_1_001"));
        assert!(!is_application_id("application_x_0001"));
        assert!(!is_application_id("appattempt_1_0001_000001"));
        assert!(!is_application_id("application_1_0001_2"));
    }
}
