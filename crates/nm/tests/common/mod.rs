//! A real NodeManager against an in-process fake ResourceManager, for the
//! tests that start containers: the fake RM registers the node with fixed
//! master keys (so the tests can sign container tokens and NMTokens as the
//! RM does), records registrations and heartbeats, sends the cleanup orders
//! a test queues in its next heartbeat answer, and answers a heartbeat with
//! RESYNC when asked to. Also the ids, tokens and NMToken logins of an
//! ApplicationMaster, and waits on files and processes.

#![allow(dead_code)]

pub mod process;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn::{
    ApplicationIdProto, ContainerIdProto, ContainerLaunchContextProto, LocalResourceProto,
    LocalResourceTypeProto, LocalResourceVisibilityProto, NodeActionProto,
    NodeHeartbeatRequestProto, NodeHeartbeatResponseProto, RegisterNodeManagerRequestProto,
    RegisterNodeManagerResponseProto, StartContainerRequestProto, StartContainersRequestProto,
    StartContainersResponseProto, StringLocalResourceMapProto, UnRegisterNodeManagerRequestProto,
    UnRegisterNodeManagerResponseProto, UrlProto,
};
use spindle_common::conf::keys;
use spindle_common::security::secret;
use spindle_common::security::Token;
use spindle_common::{
    ApplicationAttemptId, ApplicationId, Configuration, ContainerId, NodeId, Resource,
};
use spindle_ipc::methods::resource_tracker::{
    NODE_HEARTBEAT, REGISTER_NODE_MANAGER, UN_REGISTER_NODE_MANAGER,
};
use spindle_ipc::{protocols, ClientOptions, RpcError, RpcServer, ServerConfig, Service};
use spindle_nm::{
    ContainerPhase, ContainerReport, ContainerTokenIdentifier, MasterKey, NmConfig, NmTokenCaller,
    NmTokenIdentifier, NodeManager, NodeManagerHandle,
};

pub const WAIT: Duration = Duration::from_secs(20);
/// The RM identifier of the first registration; each registration after a
/// RESYNC (a restarted RM) adds 1.
pub const FIRST_RM_IDENTIFIER: i64 = 1_795_326_004_599;
/// The fake RM's `next_heart_beat_interval` unless a test sets another.
pub const HEARTBEAT_INTERVAL_MS: i64 = 50;

pub fn container_master_key() -> MasterKey {
    MasterKey::new(41, b"ctkey-01".to_vec())
}

pub fn nm_master_key() -> MasterKey {
    MasterKey::new(17, b"nmkey-01".to_vec())
}

// ------------------------------------------------------------ the fake RM

/// A call the fake RM received.
#[derive(Debug, Clone)]
pub enum Call {
    Register(RegisterNodeManagerRequestProto),
    Heartbeat(NodeHeartbeatRequestProto),
}

/// Checked by the fake RM when a registration arrives (after the first).
pub type OnRegister = Arc<dyn Fn(&RegisterNodeManagerRequestProto) -> String + Send + Sync>;

/// What a fake RM answers besides its fixed keys, and how long the waits on
/// it and on its node last.
#[derive(Clone)]
pub struct Setup {
    /// Checked at each registration after the first.
    pub on_register: Option<OnRegister>,
    /// The `next_heart_beat_interval` of every heartbeat answer.
    pub heartbeat_interval_ms: i64,
    /// How long a node may take to register, a container to reach a phase
    /// and the fake RM to see what a test waits for.
    pub wait: Duration,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            on_register: None,
            heartbeat_interval_ms: HEARTBEAT_INTERVAL_MS,
            wait: WAIT,
        }
    }
}

#[derive(Default)]
pub struct RmState {
    pub calls: Vec<Call>,
    pub registrations: i64,
    last_response_id: i32,
    resync_next: bool,
    /// RESYNC answers sent: each plays an RM that restarted, so the node's
    /// next registration gets a new RM identifier. (Registrations without a
    /// RESYNC before them, as of a NodeManager process started again against
    /// the same fake, keep the identifier, as one RM does.)
    restarts: i64,
    /// The diagnostics of the RESYNC answer.
    pub resync_diagnostics: Option<String>,
    /// What `on_register` said at each registration after the first.
    pub observed_at_reregistration: Vec<String>,
    /// Sent (and emptied) in the next heartbeat answer that is not RESYNC.
    pub to_cleanup: Vec<ContainerIdProto>,
    pub apps_to_cleanup: Vec<ApplicationIdProto>,
    pub to_remove: Vec<ContainerIdProto>,
}

/// The fake ResourceTracker. Response ids count from 0 at each
/// registration, so a node (one at a time), which sends 0 first and then
/// the id of the last answer, gets that id plus one, as from a real RM.
#[derive(Clone, Default)]
pub struct FakeRm {
    pub state: Arc<Mutex<RmState>>,
    setup: Setup,
}

/// Serves `service`, a fake ResourceTracker, on `addr`.
pub async fn bind_tracker(addr: SocketAddr, service: Service) -> RpcServer {
    RpcServer::bind(
        addr,
        vec![service],
        ServerConfig {
            name: "fake-rm".into(),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("bind the fake RM")
}

impl FakeRm {
    pub async fn start(setup: Setup) -> (FakeRm, RpcServer) {
        let rm = FakeRm {
            state: Arc::default(),
            setup,
        };
        let (r1, r2) = (rm.clone(), rm.clone());
        let service = Service::new(protocols::RESOURCE_TRACKER)
            .handle(
                &REGISTER_NODE_MANAGER,
                move |_ctx, req: RegisterNodeManagerRequestProto| {
                    let rm = r1.clone();
                    async move { Ok::<_, RpcError>(rm.register(req)) }
                },
            )
            .handle(
                &NODE_HEARTBEAT,
                move |_ctx, req: NodeHeartbeatRequestProto| {
                    let rm = r2.clone();
                    async move { Ok::<_, RpcError>(rm.heartbeat(req)) }
                },
            )
            .handle(
                &UN_REGISTER_NODE_MANAGER,
                |_ctx, _req: UnRegisterNodeManagerRequestProto| async {
                    Ok::<_, RpcError>(UnRegisterNodeManagerResponseProto {})
                },
            );
        let server = bind_tracker("127.0.0.1:0".parse().expect("addr"), service).await;
        (rm, server)
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, RmState> {
        self.state.lock().expect("fake RM state")
    }

    fn register(&self, req: RegisterNodeManagerRequestProto) -> RegisterNodeManagerResponseProto {
        let observed = match &self.setup.on_register {
            Some(f) if self.lock().registrations > 0 => Some(f(&req)),
            _ => None,
        };
        let mut st = self.lock();
        if let Some(o) = observed {
            st.observed_at_reregistration.push(o);
        }
        st.calls.push(Call::Register(req));
        let rm_identifier = FIRST_RM_IDENTIFIER + st.restarts;
        st.registrations += 1;
        st.last_response_id = 0;
        RegisterNodeManagerResponseProto {
            container_token_master_key: Some(container_master_key().to_proto()),
            nm_token_master_key: Some(nm_master_key().to_proto()),
            node_action: Some(NodeActionProto::Normal as i32),
            rm_identifier: Some(rm_identifier),
            ..Default::default()
        }
    }

    fn heartbeat(&self, req: NodeHeartbeatRequestProto) -> NodeHeartbeatResponseProto {
        let mut st = self.lock();
        st.calls.push(Call::Heartbeat(req));
        if std::mem::take(&mut st.resync_next) {
            st.restarts += 1;
            return NodeHeartbeatResponseProto {
                node_action: Some(NodeActionProto::Resync as i32),
                diagnostics_message: Some(
                    st.resync_diagnostics
                        .clone()
                        .unwrap_or_else(|| "the ResourceManager restarted".into()),
                ),
                next_heart_beat_interval: Some(self.setup.heartbeat_interval_ms),
                ..Default::default()
            };
        }
        st.last_response_id += 1;
        NodeHeartbeatResponseProto {
            response_id: Some(st.last_response_id),
            node_action: Some(NodeActionProto::Normal as i32),
            next_heart_beat_interval: Some(self.setup.heartbeat_interval_ms),
            containers_to_cleanup: std::mem::take(&mut st.to_cleanup),
            applications_to_cleanup: std::mem::take(&mut st.apps_to_cleanup),
            containers_to_be_removed_from_nm: std::mem::take(&mut st.to_remove),
            ..Default::default()
        }
    }

    /// Answers the next heartbeat with RESYNC.
    pub fn resync_next(&self) {
        self.lock().resync_next = true;
    }

    pub fn registrations(&self) -> Vec<RegisterNodeManagerRequestProto> {
        self.lock()
            .calls
            .iter()
            .filter_map(|c| match c {
                Call::Register(r) => Some(r.clone()),
                Call::Heartbeat(_) => None,
            })
            .collect()
    }

    /// The node of the registration after `before` others (of those that
    /// name their node), once it is there.
    pub async fn registered_node(&self, before: usize) -> NodeId {
        let deadline = Instant::now() + self.setup.wait;
        loop {
            let node = self
                .registrations()
                .iter()
                .filter_map(|r| r.node_id.as_ref())
                .nth(before)
                .map(|n| NodeId::new(n.host.clone().unwrap_or_default(), n.port.unwrap_or(0)));
            if let Some(n) = node {
                return n;
            }
            assert!(Instant::now() < deadline, "no NodeManager registered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn heartbeat_count(&self) -> usize {
        self.lock()
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Heartbeat(_)))
            .count()
    }

    /// Heartbeats received after the `n`-th registration (1-based).
    pub fn heartbeats_after_registration(&self, n: usize) -> usize {
        let st = self.lock();
        let mut regs = 0;
        let mut count = 0;
        for c in &st.calls {
            match c {
                Call::Register(_) => regs += 1,
                Call::Heartbeat(_) if regs >= n => count += 1,
                Call::Heartbeat(_) => {}
            }
        }
        count
    }

    /// The state and exit status of `id` in the latest heartbeat, if there.
    pub fn last_reported(&self, id: &ContainerId) -> Option<(i32, i32)> {
        let st = self.lock();
        let hb = st.calls.iter().rev().find_map(|c| match c {
            Call::Heartbeat(h) => Some(h),
            Call::Register(_) => None,
        })?;
        hb.node_status
            .as_ref()?
            .containers_statuses
            .iter()
            .find(|s| {
                s.container_id
                    .as_ref()
                    .and_then(spindle_nm::wire::container_id_from_proto)
                    == Some(*id)
            })
            .map(|s| (s.state.unwrap_or(0), s.exit_status.unwrap_or(0)))
    }

    pub async fn wait_until(&self, what: &str, pred: impl Fn(&FakeRm) -> bool) {
        let deadline = Instant::now() + self.setup.wait;
        while !pred(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

// ------------------------------------------------------------ nodes

pub struct Node {
    pub nm: NodeManagerHandle,
    pub rm: FakeRm,
    pub dir: PathBuf,
    /// How long the node's waits last (its `Setup::wait`).
    pub wait: Duration,
    _rm_server: RpcServer,
}

/// What every test node is configured with, in-process or as a
/// `spindle nodemanager` process: its address, its RM, 4 GB and 4 vcores,
/// local and log dirs under `dir`, 250 ms from SIGTERM to SIGKILL and no
/// disk health checker.
pub fn node_settings(dir: &Path, rm: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        (keys::NM_ADDRESS, "127.0.0.1:0".to_string()),
        (keys::NM_WEBAPP_ADDRESS, "127.0.0.1:0".to_string()),
        (keys::RM_RESOURCE_TRACKER_ADDRESS, rm.to_string()),
        (keys::NM_RESOURCE_MEMORY_MB, "4096".to_string()),
        (keys::NM_RESOURCE_CPU_VCORES, "4".to_string()),
        (keys::NM_LOCAL_DIRS, dir.join("local").display().to_string()),
        (keys::NM_LOG_DIRS, dir.join("logs").display().to_string()),
        (keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, "250".to_string()),
        (keys::NM_DISK_HEALTH_CHECKER_ENABLE, "false".to_string()),
    ]
}

pub fn config(dir: &Path, rm: SocketAddr, tune: impl FnOnce(&mut Configuration)) -> NmConfig {
    let mut conf = Configuration::with_defaults();
    for (key, value) in node_settings(dir, rm) {
        conf.set(key, value);
    }
    tune(&mut conf);
    let mut cfg = NmConfig::from_conf(&conf).expect("valid NodeManager configuration");
    cfg.heartbeat_interval = Duration::from_millis(50);
    cfg.unregister_timeout = Duration::from_secs(2);
    cfg
}

pub async fn start_node(
    tune: impl FnOnce(&mut Configuration),
    on_register: Option<OnRegister>,
) -> (Node, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let setup = Setup {
        on_register,
        ..Setup::default()
    };
    start_node_in(tmp, tune, setup).await
}

/// A registered node on `tmp`, its fake RM set up with `setup`.
pub async fn start_node_in(
    tmp: tempfile::TempDir,
    tune: impl FnOnce(&mut Configuration),
    setup: Setup,
) -> (Node, tempfile::TempDir) {
    let wait = setup.wait;
    let (rm, server) = FakeRm::start(setup).await;
    let cfg = config(tmp.path(), server.local_addr(), tune);
    let nm = NodeManager::start_with_config(cfg).await.expect("start");
    tokio::time::timeout(wait, nm.wait_registered())
        .await
        .expect("registers in time")
        .expect("registered");
    let node = Node {
        nm,
        rm,
        dir: tmp.path().to_path_buf(),
        wait,
        _rm_server: server,
    };
    (node, tmp)
}

// ------------------------------------------------------------ ids and tokens

pub fn app(n: i32) -> ApplicationId {
    ApplicationId::new(FIRST_RM_IDENTIFIER, n)
}

pub fn attempt(n: i32) -> ApplicationAttemptId {
    ApplicationAttemptId::new(app(n), 1)
}

pub fn container(app_n: i32, seq: i64) -> ContainerId {
    ContainerId::new(attempt(app_n), seq)
}

pub fn user() -> String {
    spindle_common::current_user()
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A token as the ResourceManager signs it.
pub fn sign(identifier: Vec<u8>, key: &MasterKey, kind: &str, service: &str) -> TokenProto {
    TokenProto {
        password: secret::password(&identifier, key),
        identifier,
        kind: kind.to_string(),
        service: service.to_string(),
    }
}

/// A container token for `id` on `node` as the RM issues it: `memory_mb`
/// and one vcore for `submitter`, from the RM `rm_identifier`.
pub fn container_token(
    node: &NodeId,
    id: ContainerId,
    submitter: &str,
    memory_mb: i64,
    rm_identifier: i64,
) -> TokenProto {
    let identifier = ContainerTokenIdentifier::new(
        id,
        node.to_string(),
        submitter.to_string(),
        Resource::new(memory_mb, 1),
        now_ms() + 600_000,
        container_master_key().key_id,
        rm_identifier,
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

/// The identifier of an NMToken for `attempt` on `node`, issued to `user`.
pub fn nm_token_identifier(
    attempt: ApplicationAttemptId,
    node: &NodeId,
    user: &str,
) -> NmTokenIdentifier {
    NmTokenIdentifier::new(
        attempt,
        node.clone(),
        user.to_string(),
        nm_master_key().key_id,
    )
}

/// An IPC client logged in with `token` (SASL TOKEN / DIGEST-MD5), as a
/// Java `NMClient` or the ResourceManager's AM launcher connects.
pub fn token_client(attempt: &str, token: &TokenProto) -> ClientOptions {
    ClientOptions::new(attempt, protocols::CONTAINER_MANAGEMENT).with_token(Token {
        identifier: token.identifier.clone(),
        password: token.password.clone(),
        kind: token.kind.clone(),
        service: token.service.clone(),
    })
}

impl Node {
    pub fn node_id(&self) -> NodeId {
        self.nm.node_id().clone()
    }

    /// The NMToken identity of application `app_n`'s first attempt, issued
    /// to this process's user.
    pub fn nm_identity(&self, app_n: i32) -> NmTokenIdentifier {
        nm_token_identifier(attempt(app_n), &self.node_id(), &user())
    }

    /// What the IPC layer derives from a DIGEST-MD5 NMToken login.
    pub fn caller(&self, app_n: i32) -> NmTokenCaller {
        NmTokenCaller::new(self.nm_identity(app_n))
    }

    /// A container token for `id` submitted by this process's user.
    pub fn token(&self, id: ContainerId, memory_mb: i64) -> TokenProto {
        self.token_as(id, memory_mb, &user())
    }

    /// A container token for `id` from the node's current registration.
    pub fn token_as(&self, id: ContainerId, memory_mb: i64, submitter: &str) -> TokenProto {
        let rm_identifier = self.nm.session().rm_identifier.expect("registered");
        container_token(&self.node_id(), id, submitter, memory_mb, rm_identifier)
    }

    /// One `startContainers` for `id`, as an ApplicationMaster calls it:
    /// with an NMToken of `id`'s attempt issued to `nm_user`, and a container
    /// token of `memory_mb` for `submitter`.
    pub fn start_request(
        &self,
        id: ContainerId,
        clc: ContainerLaunchContextProto,
        memory_mb: i64,
        submitter: &str,
        nm_user: &str,
    ) -> Result<StartContainersResponseProto, RpcError> {
        let caller = NmTokenCaller::new(nm_token_identifier(id.attempt, &self.node_id(), nm_user));
        self.nm.containers().start_containers(
            &caller,
            StartContainersRequestProto {
                start_container_request: vec![StartContainerRequestProto {
                    container_launch_context: Some(clc),
                    container_token: Some(self.token_as(id, memory_mb, submitter)),
                }],
            },
        )
    }

    /// Starts one container of 128 MB; `Err` carries the refusal's message,
    /// of the call or of the container.
    pub fn start(&self, id: ContainerId, clc: ContainerLaunchContextProto) -> Result<(), String> {
        self.start_as(id, clc, &user())
    }

    /// Starts one container of 128 MB submitted by `submitter`.
    pub fn start_as(
        &self,
        id: ContainerId,
        clc: ContainerLaunchContextProto,
        submitter: &str,
    ) -> Result<(), String> {
        let resp = self
            .start_request(id, clc, 128, submitter, &user())
            .map_err(|e| e.message)?;
        match resp.failed_requests.first() {
            Some(f) => Err(f
                .exception
                .as_ref()
                .and_then(|e| e.message.clone())
                .unwrap_or_default()),
            None => Ok(()),
        }
    }

    /// Starts one container of `memory_mb` in a call that must be accepted
    /// and answer for that one container; `Err` carries the class and the
    /// message of its refusal.
    pub fn start_sized(
        &self,
        id: ContainerId,
        memory_mb: i64,
        clc: ContainerLaunchContextProto,
    ) -> Result<(), (String, String)> {
        let resp = self
            .start_request(id, clc, memory_mb, &user(), &user())
            .expect("the call is accepted");
        match resp.failed_requests.first() {
            Some(f) => {
                let e = f.exception.clone().unwrap_or_default();
                Err((
                    e.class_name.unwrap_or_default(),
                    e.message.unwrap_or_default(),
                ))
            }
            None => {
                assert_eq!(resp.succeeded_requests.len(), 1);
                Ok(())
            }
        }
    }

    /// Starts `command` as a container of 256 MB of `user`'s application
    /// (the NMToken's user too), which must be accepted.
    pub fn start_command(&self, id: ContainerId, user: &str, command: &str) {
        let resp = self
            .start_request(id, clc(&[command]), 256, user, user)
            .expect("the call is accepted");
        assert!(resp.failed_requests.is_empty(), "{resp:?}");
    }

    pub async fn wait_phase(&self, id: &ContainerId, phase: ContainerPhase) -> ContainerReport {
        self.nm
            .containers()
            .wait_for(id, self.wait, |r| r.phase >= phase)
            .await
            .unwrap_or_else(|| {
                panic!(
                    "{id} did not reach {phase:?}: {:?}",
                    self.nm.containers().report(id)
                )
            })
    }

    /// The text of `path` once it ends with a line break.
    pub async fn wait_file(&self, path: &Path) -> String {
        wait_file(path, self.wait).await
    }

    pub async fn wait_done(&self, id: &ContainerId) -> ContainerReport {
        self.nm
            .containers()
            .wait_done(id, self.wait)
            .await
            .unwrap_or_else(|| panic!("{id} did not end"))
    }
}

// ------------------------------------------------------------ launch contexts

pub fn clc(commands: &[&str]) -> ContainerLaunchContextProto {
    ContainerLaunchContextProto {
        command: commands.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    }
}

/// A `file:` resource of `path` as a client states it.
pub fn file_resource(
    link: &str,
    path: &Path,
    kind: LocalResourceTypeProto,
    visibility: LocalResourceVisibilityProto,
) -> StringLocalResourceMapProto {
    let meta = std::fs::metadata(path).expect("stat");
    let mtime = meta
        .modified()
        .expect("mtime")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis() as i64;
    StringLocalResourceMapProto {
        key: Some(link.into()),
        value: Some(LocalResourceProto {
            resource: Some(UrlProto {
                scheme: Some("file".into()),
                host: None,
                port: Some(-1),
                file: Some(path.display().to_string()),
                user_info: None,
            }),
            size: Some(meta.len() as i64),
            timestamp: Some(mtime),
            r#type: Some(kind as i32),
            visibility: Some(visibility as i32),
            pattern: None,
            should_be_uploaded_to_shared_cache: None,
        }),
    }
}

// ------------------------------------------------------------ the log

/// What the test binary's tracing subscriber wrote (see [`capture`]).
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// The log of this test binary, INFO and above (a global subscriber: a
/// thread's own one misses events whose call sites other tests' threads
/// registered first), installed on first use.
pub fn capture() -> Capture {
    static CAPTURE: std::sync::OnceLock<Capture> = std::sync::OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let capture = Capture::default();
            let writer = capture.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_ansi(false)
                .with_max_level(tracing::Level::INFO)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
            capture
        })
        .clone()
}

// ------------------------------------------------------------ files and processes

/// The text of `path` once it ends with a line break, waiting up to `within`.
pub async fn wait_file(path: &Path, within: Duration) -> String {
    let deadline = Instant::now() + within;
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

pub fn process_alive(pid: i32) -> bool {
    // A zombie has been killed; only a running process counts.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// The live (not zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // After the command name: state, ppid, pgrp, ...
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first().is_some_and(|s| *s != "Z")
                && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
        .collect()
}
