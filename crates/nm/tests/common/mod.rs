//! A real NodeManager against an in-process fake ResourceManager, for the
//! tests that start containers: the fake RM registers the node with fixed
//! master keys (so the tests can sign container tokens and NMTokens as the
//! RM does), records registrations and heartbeats, and answers a heartbeat
//! with RESYNC when asked to.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn::{
    ContainerLaunchContextProto, LocalResourceProto, LocalResourceTypeProto,
    LocalResourceVisibilityProto, NodeActionProto, NodeHeartbeatRequestProto,
    NodeHeartbeatResponseProto, RegisterNodeManagerRequestProto, RegisterNodeManagerResponseProto,
    StartContainerRequestProto, StartContainersRequestProto, StringLocalResourceMapProto,
    UnRegisterNodeManagerRequestProto, UnRegisterNodeManagerResponseProto, UrlProto,
};
use spindle_common::conf::keys;
use spindle_common::security::secret;
use spindle_common::{
    ApplicationAttemptId, ApplicationId, Configuration, ContainerId, NodeId, Resource,
};
use spindle_ipc::{protocols, RpcError, RpcServer, ServerConfig, Service};
use spindle_nm::{
    ContainerPhase, ContainerReport, ContainerTokenIdentifier, MasterKey, NmConfig, NmTokenCaller,
    NmTokenIdentifier, NodeManager, NodeManagerHandle,
};

pub const WAIT: Duration = Duration::from_secs(20);
/// The RM identifier of the first registration; each later one adds 1.
pub const FIRST_RM_IDENTIFIER: i64 = 1_795_326_004_599;

pub fn container_master_key() -> MasterKey {
    MasterKey::new(41, b"ctkey-01".to_vec())
}

pub fn nm_master_key() -> MasterKey {
    MasterKey::new(17, b"nmkey-01".to_vec())
}

/// A call the fake RM received.
#[derive(Debug, Clone)]
pub enum Call {
    Register(RegisterNodeManagerRequestProto),
    Heartbeat(NodeHeartbeatRequestProto),
}

/// Checked by the fake RM when a registration arrives (after the first).
pub type OnRegister = Arc<dyn Fn(&RegisterNodeManagerRequestProto) -> String + Send + Sync>;

#[derive(Default)]
pub struct RmState {
    pub calls: Vec<Call>,
    pub registrations: i64,
    last_response_id: i32,
    resync_next: bool,
    /// The diagnostics of the RESYNC answer.
    pub resync_diagnostics: Option<String>,
    /// What `on_register` said at each registration after the first.
    pub observed_at_reregistration: Vec<String>,
}

#[derive(Clone, Default)]
pub struct FakeRm {
    pub state: Arc<Mutex<RmState>>,
    on_register: Option<OnRegister>,
}

impl FakeRm {
    pub async fn start(on_register: Option<OnRegister>) -> (FakeRm, RpcServer) {
        let rm = FakeRm {
            state: Arc::default(),
            on_register,
        };
        let (r1, r2) = (rm.clone(), rm.clone());
        let service = Service::new(protocols::RESOURCE_TRACKER)
            .method(
                "registerNodeManager",
                move |_ctx, req: RegisterNodeManagerRequestProto| {
                    let rm = r1.clone();
                    async move { Ok::<_, RpcError>(rm.register(req)) }
                },
            )
            .method(
                "nodeHeartbeat",
                move |_ctx, req: NodeHeartbeatRequestProto| {
                    let rm = r2.clone();
                    async move { Ok::<_, RpcError>(rm.heartbeat(req)) }
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

    pub fn lock(&self) -> std::sync::MutexGuard<'_, RmState> {
        self.state.lock().expect("fake RM state")
    }

    fn register(&self, req: RegisterNodeManagerRequestProto) -> RegisterNodeManagerResponseProto {
        let observed = match &self.on_register {
            Some(f) if self.lock().registrations > 0 => Some(f(&req)),
            _ => None,
        };
        let mut st = self.lock();
        if let Some(o) = observed {
            st.observed_at_reregistration.push(o);
        }
        st.calls.push(Call::Register(req));
        let rm_identifier = FIRST_RM_IDENTIFIER + st.registrations;
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
            return NodeHeartbeatResponseProto {
                node_action: Some(NodeActionProto::Resync as i32),
                diagnostics_message: Some(
                    st.resync_diagnostics
                        .clone()
                        .unwrap_or_else(|| "the ResourceManager restarted".into()),
                ),
                next_heart_beat_interval: Some(50),
                ..Default::default()
            };
        }
        st.last_response_id += 1;
        NodeHeartbeatResponseProto {
            response_id: Some(st.last_response_id),
            node_action: Some(NodeActionProto::Normal as i32),
            next_heart_beat_interval: Some(50),
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

    pub async fn wait_until(&self, what: &str, pred: impl Fn(&FakeRm) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !pred(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub struct Node {
    pub nm: NodeManagerHandle,
    pub rm: FakeRm,
    pub dir: PathBuf,
    _rm_server: RpcServer,
}

pub fn config(dir: &Path, rm: SocketAddr, tune: impl FnOnce(&mut Configuration)) -> NmConfig {
    let mut conf = Configuration::with_defaults();
    conf.set(keys::NM_ADDRESS, "127.0.0.1:0");
    conf.set(keys::RM_RESOURCE_TRACKER_ADDRESS, rm.to_string());
    conf.set(keys::NM_RESOURCE_MEMORY_MB, "4096");
    conf.set(keys::NM_RESOURCE_CPU_VCORES, "4");
    conf.set(keys::NM_LOCAL_DIRS, dir.join("local").display().to_string());
    conf.set(keys::NM_LOG_DIRS, dir.join("logs").display().to_string());
    conf.set(keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, "250");
    conf.set(keys::NM_DISK_HEALTH_CHECKER_ENABLE, "false");
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
    let (rm, server) = FakeRm::start(on_register).await;
    let cfg = config(tmp.path(), server.local_addr(), tune);
    let nm = NodeManager::start_with_config(cfg).await.expect("start");
    tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("registers in time")
        .expect("registered");
    let node = Node {
        nm,
        rm,
        dir: tmp.path().to_path_buf(),
        _rm_server: server,
    };
    (node, tmp)
}

pub fn app(n: i32) -> ApplicationId {
    ApplicationId::new(FIRST_RM_IDENTIFIER, n)
}

pub fn container(app_n: i32, seq: i64) -> ContainerId {
    ContainerId::new(ApplicationAttemptId::new(app(app_n), 1), seq)
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

impl Node {
    fn node_id(&self) -> NodeId {
        self.nm.node_id().clone()
    }

    /// What the IPC layer derives from a DIGEST-MD5 NMToken login.
    fn caller(&self, id: ContainerId) -> NmTokenCaller {
        NmTokenCaller::new(NmTokenIdentifier::new(
            id.attempt,
            self.node_id(),
            user(),
            nm_master_key().key_id,
        ))
    }

    fn token_for(&self, id: ContainerId, memory_mb: i64, submitter: &str) -> TokenProto {
        let rm_identifier = self.nm.session().rm_identifier.expect("registered");
        let identifier = ContainerTokenIdentifier::new(
            id,
            self.node_id().to_string(),
            submitter.to_string(),
            Resource::new(memory_mb, 1),
            now_ms() + 600_000,
            container_master_key().key_id,
            rm_identifier,
            0,
            now_ms(),
            hadoop_protos::yarn::ContainerTypeProto::Task,
        )
        .encode();
        TokenProto {
            password: secret::password(&identifier, &container_master_key()),
            identifier,
            kind: "ContainerToken".into(),
            service: self.node_id().to_string(),
        }
    }

    /// Starts one container; `Err` carries the refusal's message.
    pub fn start(&self, id: ContainerId, clc: ContainerLaunchContextProto) -> Result<(), String> {
        self.start_as(id, clc, &user())
    }

    /// Starts one container submitted by `submitter`.
    pub fn start_as(
        &self,
        id: ContainerId,
        clc: ContainerLaunchContextProto,
        submitter: &str,
    ) -> Result<(), String> {
        let resp = self
            .nm
            .containers()
            .start_containers(
                &self.caller(id),
                StartContainersRequestProto {
                    start_container_request: vec![StartContainerRequestProto {
                        container_launch_context: Some(clc),
                        container_token: Some(self.token_for(id, 128, submitter)),
                    }],
                },
            )
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

    pub async fn wait_phase(&self, id: &ContainerId, phase: ContainerPhase) -> ContainerReport {
        self.nm
            .containers()
            .wait_for(id, WAIT, |r| r.phase >= phase)
            .await
            .unwrap_or_else(|| {
                panic!(
                    "{id} did not reach {phase:?}: {:?}",
                    self.nm.containers().report(id)
                )
            })
    }
}

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
