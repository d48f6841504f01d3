//! The container executor on a real NodeManager: containers run as their
//! mapped users (LinuxContainerExecutor, as root) or as the NodeManager's
//! user (default), refused users, processes that leave their process group
//! (`setsid`) killed on container stop, on NodeManager stop and, after the
//! NodeManager was killed with SIGKILL, by the next one started on the same
//! local dirs; signals a NodeManager was started with ignored still reach
//! its containers.
//!
//! The last three start real `spindle nodemanager` processes (the binary
//! next to this test's profile dir, or `$SPINDLE_BIN`) registered with an
//! in-process fake ResourceManager, and drive them over IPC with minted
//! NMTokens. Tests that need root say so and pass when not root, except
//! under CI (which runs as root), where they fail.

use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn::{
    ContainerLaunchContextProto, NodeActionProto, NodeHeartbeatRequestProto,
    NodeHeartbeatResponseProto, RegisterNodeManagerRequestProto, RegisterNodeManagerResponseProto,
    SignalContainerCommandProto, SignalContainerRequestProto, SignalContainerResponseProto,
    StartContainerRequestProto, StartContainersRequestProto, StartContainersResponseProto,
    UnRegisterNodeManagerRequestProto, UnRegisterNodeManagerResponseProto,
};
use spindle_common::conf::keys;
use spindle_common::security::secret;
use spindle_common::{
    ApplicationAttemptId, ApplicationId, Configuration, ContainerId, NodeId, Resource,
};
use spindle_ipc::client::ClientToken;
use spindle_ipc::{
    protocols, ClientOptions, IpcClient, RpcError, RpcServer, ServerConfig, Service,
};
use spindle_nm::executor::{keys as ekeys, CgroupRoot, CgroupSettings};
use spindle_nm::{
    exit_status, ContainerPhase, ContainerReport, ContainerTokenIdentifier, MasterKey, NmConfig,
    NmTokenCaller, NmTokenIdentifier, NodeManager, NodeManagerHandle,
};

const WAIT: Duration = Duration::from_secs(30);
const RM_IDENTIFIER: i64 = 1_795_326_004_599;
const LCE: &str = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor";

// ------------------------------------------------------------ the fake RM

#[derive(Clone, Default)]
struct FakeRm {
    registered: Arc<Mutex<Vec<NodeId>>>,
}

fn container_master_key() -> MasterKey {
    MasterKey::new(41, b"ctkey-01".to_vec())
}

fn nm_master_key() -> MasterKey {
    MasterKey::new(17, b"nmkey-01".to_vec())
}

fn sign(identifier: Vec<u8>, key: &MasterKey, kind: &str, service: &str) -> TokenProto {
    TokenProto {
        password: secret::password(&identifier, key),
        identifier,
        kind: kind.to_string(),
        service: service.to_string(),
    }
}

impl FakeRm {
    async fn start() -> (FakeRm, RpcServer) {
        let rm = FakeRm::default();
        let r = rm.clone();
        let service = Service::new(protocols::RESOURCE_TRACKER)
            .method(
                "registerNodeManager",
                move |_ctx, req: RegisterNodeManagerRequestProto| {
                    let rm = r.clone();
                    async move {
                        if let Some(n) = req.node_id.as_ref() {
                            rm.registered.lock().expect("rm").push(NodeId::new(
                                n.host.clone().unwrap_or_default(),
                                n.port.unwrap_or(0),
                            ));
                        }
                        Ok::<_, RpcError>(RegisterNodeManagerResponseProto {
                            container_token_master_key: Some(container_master_key().to_proto()),
                            nm_token_master_key: Some(nm_master_key().to_proto()),
                            node_action: Some(NodeActionProto::Normal as i32),
                            rm_identifier: Some(RM_IDENTIFIER),
                            ..Default::default()
                        })
                    }
                },
            )
            .method(
                "nodeHeartbeat",
                |_ctx, req: NodeHeartbeatRequestProto| async move {
                    let id = req
                        .node_status
                        .as_ref()
                        .and_then(|s| s.response_id)
                        .unwrap_or(0);
                    Ok::<_, RpcError>(NodeHeartbeatResponseProto {
                        response_id: Some(id + 1),
                        node_action: Some(NodeActionProto::Normal as i32),
                        next_heart_beat_interval: Some(100),
                        ..Default::default()
                    })
                },
            )
            .method(
                "unRegisterNodeManager",
                |_ctx, _req: UnRegisterNodeManagerRequestProto| async {
                    Ok::<_, RpcError>(UnRegisterNodeManagerResponseProto {})
                },
            );
        let server = RpcServer::bind(
            "127.0.0.1:0".parse().expect("addr"),
            vec![service],
            ServerConfig {
                name: "fake-rm".into(),
                ..ServerConfig::default()
            },
        )
        .await
        .expect("bind the fake RM");
        (rm, server)
    }

    /// The node registered after `before` registrations.
    async fn registration(&self, before: usize) -> NodeId {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(n) = self.registered.lock().expect("rm").get(before) {
                return n.clone();
            }
            assert!(Instant::now() < deadline, "no NodeManager registered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

// ------------------------------------------------------------ helpers

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether a test that needs root can run; CI runs as root, so there a
/// missing root is a failure, not a skip.
fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs root, and CI runs as root"
    );
    eprintln!("SKIP {test}: running containers as other users needs root");
    false
}

fn app(n: i32) -> ApplicationId {
    ApplicationId::new(RM_IDENTIFIER, n)
}

fn attempt(n: i32) -> ApplicationAttemptId {
    ApplicationAttemptId::new(app(n), 1)
}

fn container(app_n: i32, seq: i64) -> ContainerId {
    ContainerId::new(attempt(app_n), seq)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn clc(command: &str) -> ContainerLaunchContextProto {
    ContainerLaunchContextProto {
        command: vec![command.to_string()],
        ..Default::default()
    }
}

fn container_token(node: &NodeId, id: ContainerId, user: &str) -> TokenProto {
    let identifier = ContainerTokenIdentifier::new(
        id,
        node.to_string(),
        user.to_string(),
        Resource::new(256, 1),
        now_ms() + 600_000,
        container_master_key().key_id,
        RM_IDENTIFIER,
        0,
        now_ms(),
        hadoop_protos::yarn::ContainerTypeProto::Task,
    );
    sign(
        identifier.encode(),
        &container_master_key(),
        "ContainerToken",
        &node.to_string(),
    )
}

fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Process group and session of a live process.
fn pgrp_and_session(pid: i32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat")
        .1
        .split_whitespace()
        .collect();
    (
        rest[2].parse().expect("pgrp"),
        rest[3].parse().expect("session"),
    )
}

async fn wait_file(path: &Path) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_dead(pid: i32, what: &str) {
    let deadline = Instant::now() + WAIT;
    while process_alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still alive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A temporary dir container users can traverse (as a node's local dirs'
/// parents must be).
fn node_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    tmp
}

/// The cgroup v2 hierarchy the NodeManager would use with the default
/// settings, or why there is none.
fn cgroups_here() -> Result<CgroupRoot, String> {
    let conf = Configuration::with_defaults();
    let cfg = spindle_nm::executor::ExecutorConfig::from_conf(&conf).expect("defaults");
    CgroupRoot::detect(&CgroupSettings {
        memory: false,
        cpu: false,
        ..cfg.cgroups
    })
    .map(|(root, _)| root)
}

// ------------------------------------------------------------ in-process nodes

struct Node {
    nm: NodeManagerHandle,
    _rm_server: RpcServer,
    dir: PathBuf,
}

fn config(dir: &Path, rm: SocketAddr, tune: &[(&str, &str)]) -> NmConfig {
    let mut conf = Configuration::with_defaults();
    conf.set(keys::NM_ADDRESS, "127.0.0.1:0");
    conf.set(keys::RM_RESOURCE_TRACKER_ADDRESS, rm.to_string());
    conf.set(keys::NM_RESOURCE_MEMORY_MB, "4096");
    conf.set(keys::NM_RESOURCE_CPU_VCORES, "4");
    conf.set(keys::NM_LOCAL_DIRS, dir.join("local").display().to_string());
    conf.set(keys::NM_LOG_DIRS, dir.join("logs").display().to_string());
    conf.set(keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, "250");
    conf.set(keys::NM_DISK_HEALTH_CHECKER_ENABLE, "false");
    for (k, v) in tune {
        conf.set(k, *v);
    }
    let mut cfg = NmConfig::from_conf(&conf).expect("valid NodeManager configuration");
    cfg.heartbeat_interval = Duration::from_millis(50);
    cfg.unregister_timeout = Duration::from_secs(2);
    cfg
}

async fn start_node(tune: &[(&str, &str)]) -> (Node, tempfile::TempDir) {
    let tmp = node_dir();
    let (_rm, server) = FakeRm::start().await;
    let cfg = config(tmp.path(), server.local_addr(), tune);
    let nm = NodeManager::start_with_config(cfg).await.expect("start");
    tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("registers in time")
        .expect("registered");
    let node = Node {
        nm,
        _rm_server: server,
        dir: tmp.path().to_path_buf(),
    };
    (node, tmp)
}

impl Node {
    fn start(&self, id: ContainerId, user: &str, command: &str) {
        let node_id = self.nm.node_id().clone();
        let caller = NmTokenCaller::new(NmTokenIdentifier::new(
            id.attempt,
            node_id.clone(),
            user.to_string(),
            nm_master_key().key_id,
        ));
        let resp = self
            .nm
            .containers()
            .start_containers(
                &caller,
                StartContainersRequestProto {
                    start_container_request: vec![StartContainerRequestProto {
                        container_launch_context: Some(clc(command)),
                        container_token: Some(container_token(&node_id, id, user)),
                    }],
                },
            )
            .expect("the call is accepted");
        assert!(resp.failed_requests.is_empty(), "{resp:?}");
    }

    async fn wait_running(&self, id: &ContainerId) -> ContainerReport {
        self.nm
            .containers()
            .wait_for(id, WAIT, |r| r.phase >= ContainerPhase::Running)
            .await
            .unwrap_or_else(|| panic!("{id} did not run"))
    }

    async fn wait_done(&self, id: &ContainerId) -> ContainerReport {
        self.nm
            .containers()
            .wait_done(id, WAIT)
            .await
            .unwrap_or_else(|| panic!("{id} did not end"))
    }
}

fn owner_and_mode(path: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(path).expect("stat");
    (m.uid(), m.mode() & 0o7777)
}

// ------------------------------------------------------------ users

#[tokio::test]
async fn the_linux_container_executor_runs_containers_as_the_mapped_user() {
    if !root_or_skip("the_linux_container_executor_runs_containers_as_the_mapped_user") {
        return;
    }
    let nobody = nix::unistd::User::from_name("nobody")
        .expect("lookup")
        .expect("the nobody user exists");
    let nobody_uid = nobody.uid.as_raw();
    let (node, _tmp) = start_node(&[(keys::NM_CONTAINER_EXECUTOR_CLASS, LCE)]).await;

    // limit-users (the default): alice's container runs as nobody, in dirs
    // nobody owns, and can write where a container writes.
    let id = container(101, 2);
    node.start(
        id,
        "alice",
        "id -u > {{PWD}}/uid && id -g > {{PWD}}/gid && touch {{PWD}}/tmp/t && \
         mkdir {{LOCAL_DIRS}}/scratch-{{CONTAINER_ID}} && echo out > <LOG_DIR>/stdout",
    );
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let paths = done.paths.expect("paths");
    let read = |name: &str| {
        std::fs::read_to_string(paths.work_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert_eq!(read("uid").trim(), nobody_uid.to_string());
    assert_eq!(read("gid").trim(), nobody.gid.as_raw().to_string());
    assert!(paths
        .work_dir
        .starts_with(node.dir.join("local/usercache/alice")));
    assert_eq!(owner_and_mode(&paths.work_dir), (nobody_uid, 0o710));
    assert_eq!(
        owner_and_mode(&paths.work_dir.join("tmp")),
        (nobody_uid, 0o710)
    );
    assert_eq!(owner_and_mode(&paths.script()), (nobody_uid, 0o700));
    assert_eq!(owner_and_mode(&paths.tokens_file()), (nobody_uid, 0o600));
    assert_eq!(owner_and_mode(&paths.log_dir), (nobody_uid, 0o2750));
    assert_eq!(owner_and_mode(&paths.log_dir.join("stdout")).0, nobody_uid);
    // The dirs above are root's: a container cannot replace what the
    // NodeManager (root) writes into later.
    assert_eq!(owner_and_mode(&paths.app_dirs[0]), (0, 0o1770));
    assert_eq!(
        owner_and_mode(&paths.app_dirs[0].join("filecache")),
        (0, 0o755)
    );
    assert_eq!(owner_and_mode(&paths.user_dirs[0]), (0, 0o750));
    assert_eq!(
        std::fs::metadata(&paths.user_dirs[0]).expect("stat").gid(),
        nobody.gid.as_raw()
    );
    node.nm.stop().await;
}

#[tokio::test]
async fn refused_users_get_hadoops_messages_and_no_process() {
    if !root_or_skip("refused_users_get_hadoops_messages_and_no_process") {
        return;
    }
    // Banned: the local user itself.
    let (node, _tmp) = start_node(&[
        (keys::NM_CONTAINER_EXECUTOR_CLASS, LCE),
        (ekeys::BANNED_USERS, "yarn,nobody"),
    ])
    .await;
    let id = container(102, 2);
    node.start(id, "alice", "touch {{PWD}}/ran");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, exit_status::INVALID);
    assert!(
        done.diagnostics.starts_with(&format!(
            "Application {} initialization failed (exitCode=255) with output: main : command \
             provided 0\nmain : run as user is nobody\nmain : requested yarn user is alice\n",
            app(102)
        )),
        "{}",
        done.diagnostics
    );
    assert!(
        done.diagnostics.contains("Requested user nobody is banned"),
        "{}",
        done.diagnostics
    );
    assert!(done.pid.is_none(), "a refused container started a process");
    node.nm.stop().await;

    // Without limit-users: root, a system user and an unknown user.
    let (node, _tmp) = start_node(&[
        (keys::NM_CONTAINER_EXECUTOR_CLASS, LCE),
        (ekeys::LIMIT_USERS, "false"),
    ])
    .await;
    for (n, user, expected) in [
        (103, "root", "Running as root is not allowed".to_string()),
        (
            104,
            "daemon",
            "Requested user daemon is not whitelisted and has id 1,which is below the minimum \
             allowed 1000"
                .to_string(),
        ),
        (
            105,
            "no-such-user",
            "User no-such-user not found".to_string(),
        ),
    ] {
        let id = container(n, 2);
        node.start(id, user, "touch {{PWD}}/ran");
        let done = node.wait_done(&id).await;
        assert_eq!(done.exit_status, exit_status::INVALID, "{user}");
        assert!(
            done.diagnostics.contains(&expected),
            "{user}: {}",
            done.diagnostics
        );
        assert!(done.pid.is_none());
    }
    // A user that passes runs as itself.
    let id = container(106, 2);
    node.start(id, "nobody", "id -un > {{PWD}}/who");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let who =
        std::fs::read_to_string(done.paths.expect("paths").work_dir.join("who")).expect("who");
    assert_eq!(who.trim(), "nobody");
    node.nm.stop().await;
}

#[tokio::test]
async fn the_default_executor_runs_containers_as_the_node_managers_user() {
    let (node, _tmp) = start_node(&[]).await;
    let id = container(107, 2);
    node.start(id, "alice", "id -u > {{PWD}}/uid");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{}", done.diagnostics);
    let uid =
        std::fs::read_to_string(done.paths.expect("paths").work_dir.join("uid")).expect("uid");
    assert_eq!(uid.trim(), nix::unistd::geteuid().to_string());
    node.nm.stop().await;
}

// ------------------------------------------------------------ escaped processes

/// A container whose command starts a process in a session of its own
/// (which leaves the container's process group) and then waits.
/// (The command runs inside double quotes, as Hadoop's launch script has
/// it: `\$` keeps a `$` for the inner shell.)
const ESCAPING: &str = "setsid sh -c 'echo \\$\\$ > {{PWD}}/escaped.pid; exec sleep 1000' & \
                        echo $$ > {{PWD}}/main.pid; wait";

/// Starts an escaping container and returns the escaped process's pid,
/// checked to have left the container's process group.
async fn start_escaping(node: &Node, id: ContainerId) -> i32 {
    node.start(id, "alice", ESCAPING);
    let running = node.wait_running(&id).await;
    let work = running.paths.expect("paths").work_dir;
    let escaped: i32 = wait_file(&work.join("escaped.pid"))
        .await
        .trim()
        .parse()
        .expect("pid");
    let group = running.pid.expect("pid");
    let (pgrp, session) = pgrp_and_session(escaped);
    assert_ne!(
        pgrp, group,
        "the process did not leave the container's group"
    );
    assert_eq!(session, escaped, "setsid made a session");
    escaped
}

/// Runs `check` with cgroups as this machine has them, then without.
async fn with_and_without_cgroups(
    check: impl Fn(
        Vec<(&'static str, &'static str)>,
        i32,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
) {
    match cgroups_here() {
        Ok(root) => {
            eprintln!("cgroup v2 at {}: testing with it", root.dir.display());
            check(vec![], 0).await;
        }
        Err(why) => eprintln!(
            "cgroup v2 is not available here ({why}): only the tracking without cgroups is tested"
        ),
    }
    check(vec![(ekeys::CGROUPS_ENABLED, "false")], 50).await;
}

#[tokio::test]
async fn a_process_that_calls_setsid_dies_with_its_container() {
    with_and_without_cgroups(|tune, offset| {
        Box::pin(async move {
            let (node, _tmp) = start_node(&tune).await;
            let id = container(110 + offset, 2);
            let escaped = start_escaping(&node, id).await;
            if tune.is_empty() {
                let cgroup =
                    std::fs::read_to_string(format!("/proc/{escaped}/cgroup")).expect("cgroup");
                assert!(
                    cgroup.contains(&format!("/hadoop-yarn/{id}")),
                    "not in the container's cgroup: {cgroup}"
                );
            }
            node.nm
                .containers()
                .kill(id, spindle_nm::KillReason::by_app_master());
            let done = node.wait_done(&id).await;
            assert_eq!(done.exit_status, exit_status::KILLED_BY_APPMASTER);
            assert!(
                !process_alive(escaped),
                "the setsid process outlived its container"
            );
            node.nm.stop().await;
        })
    })
    .await;
}

#[tokio::test]
async fn a_process_that_calls_setsid_dies_with_the_node_manager() {
    with_and_without_cgroups(|tune, offset| {
        Box::pin(async move {
            let (node, _tmp) = start_node(&tune).await;
            let id = container(120 + offset, 2);
            let escaped = start_escaping(&node, id).await;
            let exit = node.nm.stop().await;
            assert!(exit.is_clean(), "{exit}");
            assert!(
                !process_alive(escaped),
                "the setsid process outlived the NodeManager"
            );
        })
    })
    .await;
}

// ------------------------------------------------------------ real NodeManager processes

/// The `spindle` binary: `$SPINDLE_BIN`, else next to this test's profile
/// dir (`target/debug/deps/x` → `target/debug/spindle`).
fn spindle_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SPINDLE_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent()?;
    }
    Some(dir.join("spindle")).filter(|b| b.is_file())
}

fn binary_or_skip(test: &str) -> Option<PathBuf> {
    let bin = spindle_binary();
    if bin.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: the spindle binary is missing (cargo build -p spindle)"
        );
        eprintln!("SKIP {test}: the spindle binary is missing; run `cargo build -p spindle`");
    }
    bin
}

/// A configuration dir for a `spindle nodemanager` on `dir`.
fn write_conf(dir: &Path, rm: SocketAddr, extra: &[(&str, &str)]) -> PathBuf {
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).expect("conf dir");
    let mut props = vec![
        (keys::NM_ADDRESS.to_string(), "127.0.0.1:0".to_string()),
        (
            keys::RM_RESOURCE_TRACKER_ADDRESS.to_string(),
            rm.to_string(),
        ),
        (keys::NM_RESOURCE_MEMORY_MB.to_string(), "4096".to_string()),
        (keys::NM_RESOURCE_CPU_VCORES.to_string(), "4".to_string()),
        (
            keys::NM_LOCAL_DIRS.to_string(),
            dir.join("local").display().to_string(),
        ),
        (
            keys::NM_LOG_DIRS.to_string(),
            dir.join("logs").display().to_string(),
        ),
        (
            keys::NM_DISK_HEALTH_CHECKER_ENABLE.to_string(),
            "false".to_string(),
        ),
        (
            keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS.to_string(),
            "250".to_string(),
        ),
    ];
    props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in props {
        xml.push_str(&format!(
            "  <property><name>{k}</name><value>{v}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    std::fs::write(conf.join("yarn-site.xml"), xml).expect("yarn-site.xml");
    conf
}

/// A `spindle nodemanager` process, killed (SIGKILL) when dropped.
struct NmProcess {
    child: std::process::Child,
    log: PathBuf,
}

impl NmProcess {
    /// Starts `spindle nodemanager --conf conf`, through `sh` with
    /// `ignore` (e.g. `trap '' QUIT INT`) run first when given.
    fn start(bin: &Path, conf: &Path, log: PathBuf, ignore: Option<&str>) -> NmProcess {
        let out = std::fs::File::create(&log).expect("log");
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!(
                "{} exec \"$0\" nodemanager --conf \"$1\"",
                ignore.unwrap_or("")
            ))
            .arg(bin)
            .arg(conf)
            .env("SPINDLE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        NmProcess {
            child: cmd.spawn().expect("spawn spindle nodemanager"),
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then the exit status.
    fn stop(&mut self) -> std::process::ExitStatus {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        self.child.wait().expect("wait")
    }
}

impl Drop for NmProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// An IPC connection to a node's container manager with an NMToken for
/// application `app_n`.
async fn nm_client(node: &NodeId, app_n: i32, user: &str) -> IpcClient {
    let addr = format!("127.0.0.1:{}", node.port);
    let identity = NmTokenIdentifier::new(
        attempt(app_n),
        node.clone(),
        user.to_string(),
        nm_master_key().key_id,
    );
    let token = sign(identity.encode(), &nm_master_key(), "NMToken", &addr);
    IpcClient::connect(
        &addr,
        ClientOptions::new(attempt(app_n).to_string(), protocols::CONTAINER_MANAGEMENT).with_token(
            ClientToken {
                identifier: token.identifier.clone(),
                password: token.password.clone(),
                kind: token.kind.clone(),
                service: token.service.clone(),
            },
        ),
    )
    .await
    .expect("NMToken login")
}

async fn start_over_ipc(client: &IpcClient, node: &NodeId, id: ContainerId, command: &str) {
    let resp: StartContainersResponseProto = client
        .call(
            "startContainers",
            &StartContainersRequestProto {
                start_container_request: vec![StartContainerRequestProto {
                    container_launch_context: Some(clc(command)),
                    container_token: Some(container_token(node, id, "alice")),
                }],
            },
        )
        .await
        .expect("startContainers");
    assert!(resp.failed_requests.is_empty(), "{resp:?}");
}

fn work_dir(dir: &Path, id: &ContainerId) -> PathBuf {
    dir.join("local/usercache/alice/appcache")
        .join(id.app().to_string())
        .join(id.to_string())
}

#[tokio::test]
async fn the_next_node_manager_kills_what_a_sigkilled_one_left_running() {
    let Some(bin) = binary_or_skip("the_next_node_manager_kills_what_a_sigkilled_one_left_running")
    else {
        return;
    };
    let cgroups = cgroups_here();
    if let Err(why) = &cgroups {
        eprintln!("cgroup v2 is not available here ({why}): testing the tracking without it");
    }
    let modes: Vec<(i32, Vec<(&str, &str)>)> = match cgroups {
        Ok(_) => vec![
            (130, vec![]),
            (131, vec![(ekeys::CGROUPS_ENABLED, "false")]),
        ],
        Err(_) => vec![(131, vec![(ekeys::CGROUPS_ENABLED, "false")])],
    };
    for (app_n, extra) in modes {
        let tmp = node_dir();
        let (rm, _server) = FakeRm::start().await;
        let conf = write_conf(tmp.path(), _server.local_addr(), &extra);
        let mut first = NmProcess::start(&bin, &conf, tmp.path().join("nm1.log"), None);
        let node = rm.registration(0).await;
        let client = nm_client(&node, app_n, "alice").await;
        let id = container(app_n, 2);
        start_over_ipc(&client, &node, id, ESCAPING).await;
        let work = work_dir(tmp.path(), &id);
        let escaped: i32 = wait_file(&work.join("escaped.pid"))
            .await
            .trim()
            .parse()
            .expect("pid");
        let main: i32 = wait_file(&work.join("main.pid"))
            .await
            .trim()
            .parse()
            .expect("pid");
        let pid_file = tmp
            .path()
            .join("local/nmPrivate")
            .join(id.app().to_string())
            .join(id.to_string())
            .join(format!("{id}.pid"));

        // SIGKILL: nothing of the NodeManager runs its cleanup.
        first.kill9();
        assert!(
            process_alive(escaped) && process_alive(main),
            "the container should be orphaned, not killed, by the NodeManager's SIGKILL"
        );

        // The next NodeManager on the same local dirs kills both before it
        // serves anything.
        let mut second = NmProcess::start(&bin, &conf, tmp.path().join("nm2.log"), None);
        rm.registration(1).await;
        wait_dead(escaped, "the setsid process of the previous run").await;
        wait_dead(main, "the container of the previous run").await;
        assert!(!pid_file.exists(), "the pid file was left");
        let log = second.log();
        assert!(
            log.contains("killed what was left of a container of a previous run"),
            "{log}"
        );
        assert!(second.stop().success(), "{}", second.log());
    }
}

#[tokio::test]
async fn a_node_manager_started_with_sigquit_ignored_still_signals_its_containers() {
    let Some(bin) =
        binary_or_skip("a_node_manager_started_with_sigquit_ignored_still_signals_its_containers")
    else {
        return;
    };
    let tmp = node_dir();
    let (rm, server) = FakeRm::start().await;
    let conf = write_conf(tmp.path(), server.local_addr(), &[]);
    // As a non-interactive shell starts a background job.
    let mut nm = NmProcess::start(
        &bin,
        &conf,
        tmp.path().join("nm.log"),
        Some("trap '' QUIT INT;"),
    );
    let node = rm.registration(0).await;
    let ignored = std::fs::read_to_string(format!("/proc/{}/status", nm.child.id()))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:").map(|v| v.trim().to_string()))
        .expect("SigIgn");
    let mask = u64::from_str_radix(&ignored, 16).expect("hex");
    assert!(
        mask & (1 << (libc::SIGQUIT - 1)) != 0,
        "the NodeManager does not ignore SIGQUIT"
    );

    let client = nm_client(&node, 140, "alice").await;
    let id = container(140, 2);
    start_over_ipc(
        &client,
        &node,
        id,
        "trap 'echo dump >> {{PWD}}/quit' QUIT; echo ready > {{PWD}}/ready; \
         while true; do sleep 0.05; done",
    )
    .await;
    let work = work_dir(tmp.path(), &id);
    wait_file(&work.join("ready")).await;
    let _: SignalContainerResponseProto = client
        .call(
            "signalToContainer",
            &SignalContainerRequestProto {
                container_id: spindle_nm::wire::container_id_proto(&id),
                command: SignalContainerCommandProto::OutputThreadDump as i32,
            },
        )
        .await
        .expect("signalToContainer");
    assert_eq!(
        wait_file(&work.join("quit")).await,
        "dump\n",
        "{}",
        nm.log()
    );
    assert!(nm.stop().success(), "{}", nm.log());
}

#[test]
fn the_linux_container_executor_needs_root() {
    let Some(bin) = binary_or_skip("the_linux_container_executor_needs_root") else {
        return;
    };
    if !is_root() {
        eprintln!("SKIP the_linux_container_executor_needs_root: it drops from root to nobody");
        return;
    }
    let tmp = node_dir();
    let conf = write_conf(
        tmp.path(),
        "127.0.0.1:9".parse().expect("addr"),
        &[(keys::NM_CONTAINER_EXECUTOR_CLASS, LCE)],
    );
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(&bin)
        .arg("nodemanager")
        .arg("--conf")
        .arg(&conf)
        .output()
        .expect("run setpriv");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(keys::NM_CONTAINER_EXECUTOR_CLASS)
            && text.contains("needs the NodeManager to run as root"),
        "{text}"
    );
}
