//! The NodeManager agent against a scripted in-process ResourceTracker.
//!
//! The fake tracker is a test double for the ResourceManager built on
//! `spindle_ipc::RpcServer`; it applies Hadoop's response-id rules so the
//! tests see the sequencing a real RM enforces. The real RM is exercised by
//! the integration tests.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::bind_tracker;
use hadoop_protos::yarn::{
    MasterKeyProto, NodeActionProto, NodeHeartbeatRequestProto, NodeHeartbeatResponseProto,
    RegisterNodeManagerRequestProto, RegisterNodeManagerResponseProto,
    ResourceLocalizationRequestProto, ResourceProto, StartContainersRequestProto,
    UnRegisterNodeManagerRequestProto, UnRegisterNodeManagerResponseProto,
};
use spindle_common::conf::keys;
use spindle_common::{Configuration, Resource};
use spindle_ipc::methods::container_management::{LOCALIZE, START_CONTAINERS};
use spindle_ipc::methods::resource_tracker::{
    NODE_HEARTBEAT, REGISTER_NODE_MANAGER, UN_REGISTER_NODE_MANAGER,
};
use spindle_ipc::yarn_conf::{Failover, RmRetry};
use spindle_ipc::{
    class, protocols, ClientOptions, ConnectRetry, IpcClient, IpcError, RpcError, RpcServer,
    Service,
};
use spindle_nm::{
    DiskUsage, MasterKey, NmConfig, NmExit, NmState, NodeManager, SpaceSource, NM_VERSION,
};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
enum Event {
    Register(RegisterNodeManagerRequestProto),
    Heartbeat(NodeHeartbeatRequestProto),
    Unregister(UnRegisterNodeManagerRequestProto),
}

/// What the fake RM answers.
#[derive(Clone)]
struct Script {
    /// rm_identifier of the n-th registration (the last one repeats).
    rm_identifiers: Vec<i64>,
    /// Answer the registration with SHUTDOWN.
    register_shutdown: bool,
    /// Fail the registration with this exception.
    register_error: Option<RpcError>,
    /// Answer the n-th heartbeat (1-based, counted over the whole run) with this action.
    action_at: Option<(usize, NodeActionProto)>,
    /// next_heart_beat_interval in every answer.
    next_interval_ms: i64,
    /// Resource override in the registration answer.
    resource_override: Option<Resource>,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            rm_identifiers: vec![1234],
            register_shutdown: false,
            register_error: None,
            action_at: None,
            next_interval_ms: 20,
            resource_override: None,
        }
    }
}

#[derive(Default)]
struct RmState {
    events: Vec<Event>,
    registrations: usize,
    heartbeats: usize,
    last_response_id: i32,
}

#[derive(Clone)]
struct FakeRm {
    state: Arc<Mutex<RmState>>,
    script: Arc<Script>,
}

fn container_key(id: i32) -> MasterKeyProto {
    MasterKeyProto {
        key_id: Some(id),
        bytes: Some(vec![0xC0, id as u8]),
    }
}

fn nm_key(id: i32) -> MasterKeyProto {
    MasterKeyProto {
        key_id: Some(id),
        bytes: Some(vec![0x4E, id as u8]),
    }
}

impl FakeRm {
    async fn start(script: Script) -> (FakeRm, RpcServer) {
        Self::start_on("127.0.0.1:0".parse().expect("addr"), script).await
    }

    async fn start_on(addr: SocketAddr, script: Script) -> (FakeRm, RpcServer) {
        let rm = FakeRm {
            state: Arc::new(Mutex::new(RmState::default())),
            script: Arc::new(script),
        };
        let (r1, r2, r3) = (rm.clone(), rm.clone(), rm.clone());
        let service = Service::new(protocols::RESOURCE_TRACKER)
            .handle(
                &REGISTER_NODE_MANAGER,
                move |_ctx, req: RegisterNodeManagerRequestProto| {
                    let rm = r1.clone();
                    async move { rm.register(req) }
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
                move |_ctx, req: UnRegisterNodeManagerRequestProto| {
                    let rm = r3.clone();
                    async move {
                        rm.lock().events.push(Event::Unregister(req));
                        Ok::<_, RpcError>(UnRegisterNodeManagerResponseProto {})
                    }
                },
            );
        let server = bind_tracker(addr, service).await;
        (rm, server)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RmState> {
        self.state.lock().expect("fake RM state")
    }

    fn register(
        &self,
        req: RegisterNodeManagerRequestProto,
    ) -> Result<RegisterNodeManagerResponseProto, RpcError> {
        let mut st = self.lock();
        st.events.push(Event::Register(req));
        if let Some(e) = &self.script.register_error {
            return Err(e.clone());
        }
        if self.script.register_shutdown {
            return Ok(RegisterNodeManagerResponseProto {
                node_action: Some(NodeActionProto::Shutdown as i32),
                diagnostics_message: Some("node is in the exclude list".into()),
                ..Default::default()
            });
        }
        let n = st.registrations;
        st.registrations += 1;
        st.last_response_id = 0;
        let ids = &self.script.rm_identifiers;
        let rm_identifier = ids[n.min(ids.len() - 1)];
        Ok(RegisterNodeManagerResponseProto {
            container_token_master_key: Some(container_key(n as i32 + 1)),
            nm_token_master_key: Some(nm_key(n as i32 + 1)),
            node_action: Some(NodeActionProto::Normal as i32),
            rm_identifier: Some(rm_identifier),
            rm_version: Some("fake-rm-1".into()),
            resource: self.script.resource_override.map(|r| ResourceProto {
                memory: Some(r.memory_mb),
                virtual_cores: Some(r.vcores),
                resource_value_map: Vec::new(),
            }),
            ..Default::default()
        })
    }

    /// Hadoop's ResourceTrackerService rules: id+1 == last is a duplicate
    /// (answer again), any other mismatch is RESYNC, else last+1.
    fn heartbeat(&self, req: NodeHeartbeatRequestProto) -> NodeHeartbeatResponseProto {
        let mut st = self.lock();
        st.events.push(Event::Heartbeat(req.clone()));
        st.heartbeats += 1;
        let n = st.heartbeats;
        let mut resp = NodeHeartbeatResponseProto {
            next_heart_beat_interval: Some(self.script.next_interval_ms),
            node_action: Some(NodeActionProto::Normal as i32),
            ..Default::default()
        };
        if let Some((at, action)) = self.script.action_at {
            if at == n {
                resp.node_action = Some(action as i32);
                resp.diagnostics_message = Some(format!("scripted {}", action.as_str_name()));
                return resp;
            }
        }
        let got = req
            .node_status
            .as_ref()
            .and_then(|s| s.response_id)
            .unwrap_or(-1);
        if got + 1 == st.last_response_id {
            resp.response_id = Some(st.last_response_id);
        } else if got != st.last_response_id {
            resp.node_action = Some(NodeActionProto::Resync as i32);
            resp.diagnostics_message = Some(format!(
                "too far behind rm response id: {} nm response id: {got}",
                st.last_response_id
            ));
        } else {
            st.last_response_id += 1;
            resp.response_id = Some(st.last_response_id);
        }
        resp
    }

    fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    async fn wait_until(&self, what: &str, pred: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        let deadline = Instant::now() + WAIT;
        loop {
            let events = self.events();
            if pred(&events) {
                return events;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; events: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn heartbeats(events: &[Event]) -> Vec<&NodeHeartbeatRequestProto> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Heartbeat(h) => Some(h),
            _ => None,
        })
        .collect()
}

fn count_heartbeats(events: &[Event]) -> usize {
    heartbeats(events).len()
}

fn response_id(h: &NodeHeartbeatRequestProto) -> i32 {
    h.node_status
        .as_ref()
        .and_then(|s| s.response_id)
        .unwrap_or(-1)
}

/// Sequence of event kinds, heartbeats with their response id: "R", "H0", "U".
fn trace(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Register(_) => "R".to_string(),
            Event::Heartbeat(h) => format!("H{}", response_id(h)),
            Event::Unregister(_) => "U".to_string(),
        })
        .collect()
}

fn nm_config(dir: &Path, rm: &str) -> NmConfig {
    let mut conf = Configuration::with_defaults();
    conf.set(keys::NM_ADDRESS, "127.0.0.1:0");
    conf.set(keys::NM_WEBAPP_ADDRESS, "127.0.0.1:0");
    conf.set(keys::RM_RESOURCE_TRACKER_ADDRESS, rm);
    conf.set(keys::NM_RESOURCE_MEMORY_MB, "2048");
    conf.set(keys::NM_RESOURCE_CPU_VCORES, "3");
    conf.set(keys::NM_LOCAL_DIRS, dir.join("local").display().to_string());
    conf.set(
        keys::NM_LOG_DIRS,
        format!(
            "{},{}",
            dir.join("log1").display(),
            dir.join("log2").display()
        ),
    );
    let mut cfg = NmConfig::from_conf(&conf).expect("valid NodeManager configuration");
    cfg.heartbeat_interval = Duration::from_millis(20);
    cfg.rm_connect_timeout = Duration::from_secs(2);
    cfg.rm_call_timeout = Duration::from_secs(5);
    cfg.unregister_timeout = Duration::from_secs(2);
    cfg
}

#[tokio::test]
async fn registers_heartbeats_in_sequence_and_unregisters_on_stop() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (rm, server) = FakeRm::start(Script::default()).await;
    let cfg = nm_config(tmp.path(), &server.local_addr().to_string());
    // The disks are measured as roomy, so the report does not depend on how
    // full the machine running the test is.
    let nm = NodeManager::start_with_space_source(cfg, RoomyDisks)
        .await
        .expect("start");

    // The NodeId carries the port the container manager really bound.
    let node_id = nm.node_id().clone();
    assert_eq!(node_id.host, "127.0.0.1");
    assert_ne!(node_id.port, 0);
    assert_eq!(node_id.port, i32::from(nm.container_manager_addr().port()));
    assert!(tmp.path().join("local").is_dir() && tmp.path().join("log2").is_dir());

    tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("registers in time")
        .expect("registered");
    let events = rm
        .wait_until("5 heartbeats", |e| count_heartbeats(e) >= 5)
        .await;

    // Registration content.
    let Event::Register(reg) = &events[0] else {
        panic!("first call is not a registration: {events:#?}");
    };
    let reg_node = reg.node_id.as_ref().expect("node id");
    assert_eq!(reg_node.host.as_deref(), Some("127.0.0.1"));
    assert_eq!(reg_node.port, Some(node_id.port));
    // The web port reported is the one the web server bound.
    assert_ne!(nm.web_addr().port(), 0);
    assert_eq!(reg.http_port, Some(i32::from(nm.web_addr().port())));
    let res = reg.resource.as_ref().expect("resource");
    assert_eq!((res.memory, res.virtual_cores), (Some(2048), Some(3)));
    assert_eq!(reg.nm_version.as_deref(), Some(NM_VERSION));
    let physical = reg.physical_resource.as_ref().expect("physical resource");
    assert!(physical.memory.unwrap_or(0) > 0 && physical.virtual_cores.unwrap_or(0) > 0);
    assert!(reg.container_statuses.is_empty());
    let status = reg.node_status.as_ref().expect("node status");
    assert_eq!(status.response_id, Some(0));
    let health = status.node_health_status.as_ref().expect("health");
    assert_eq!(health.is_node_healthy, Some(true));
    assert_eq!(health.health_report.as_deref(), Some(""));
    assert!(health.last_health_report_time.unwrap_or(0) > 0);

    // Heartbeats: ids 0, 1, 2, ... and the keys from the registration.
    let hbs = heartbeats(&events);
    for (i, h) in hbs.iter().enumerate() {
        assert_eq!(response_id(h), i as i32, "{:#?}", trace(&events));
        let s = h.node_status.as_ref().expect("status");
        assert_eq!(s.node_id.as_ref(), Some(reg_node));
        assert_eq!(
            s.node_health_status
                .as_ref()
                .and_then(|h| h.is_node_healthy),
            Some(true)
        );
        assert_eq!(
            h.last_known_container_token_master_key,
            Some(container_key(1))
        );
        assert_eq!(h.last_known_nm_token_master_key, Some(nm_key(1)));
    }

    let session = nm.session();
    assert_eq!(session.rm_identifier, Some(1234));
    assert_eq!(session.rm_version.as_deref(), Some("fake-rm-1"));
    assert_eq!(
        session.container_token_master_key,
        Some(MasterKey {
            key_id: 1,
            bytes: vec![0xC0, 1]
        })
    );
    assert_eq!(session.total_resource, Resource::new(2048, 3));
    assert_eq!(session.registrations, 1);
    assert_eq!(nm.state(), NmState::Running);

    // A clean stop unregisters, then nothing more is sent.
    let exit = tokio::time::timeout(WAIT, nm.stop())
        .await
        .expect("stops in time");
    assert_eq!(exit, NmExit::Stopped);
    let events = rm.events();
    let Some(Event::Unregister(un)) = events.last() else {
        panic!(
            "last call is not unRegisterNodeManager: {:?}",
            trace(&events)
        );
    };
    assert_eq!(un.node_id.as_ref(), Some(reg_node));
    // `stop` returned once the agent ended, and the agent awaits each call
    // before the next: the unregistration is the last call there will be,
    // and the only one.
    let t = trace(&events);
    assert_eq!(t.iter().filter(|k| *k == "U").count(), 1, "{t:?}");
}

#[tokio::test]
async fn resync_registers_again_and_restarts_response_ids() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        rm_identifiers: vec![1111, 2222],
        action_at: Some((3, NodeActionProto::Resync)),
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let events = rm
        .wait_until("a second registration and 3 more heartbeats", |e| {
            let t = trace(e);
            t.iter().filter(|k| *k == "R").count() == 2 && t.len() >= 8
        })
        .await;
    assert_eq!(
        trace(&events)[..8],
        ["R", "H0", "H1", "H2", "R", "H0", "H1", "H2"],
        "{:?}",
        trace(&events)
    );
    let session = nm.session();
    assert_eq!(session.rm_identifier, Some(2222));
    assert_eq!(session.registrations, 2);
    // The keys of the second registration are the ones sent from then on.
    let last = *heartbeats(&events).last().expect("heartbeat");
    assert_eq!(
        last.last_known_container_token_master_key,
        Some(container_key(2))
    );
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn shutdown_in_heartbeat_ends_the_node_without_unregistering() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        action_at: Some((2, NodeActionProto::Shutdown)),
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let exit = tokio::time::timeout(WAIT, nm.wait())
        .await
        .expect("ends in time");
    assert_eq!(
        exit,
        NmExit::ShutdownByRm {
            diagnostics: "scripted SHUTDOWN".into()
        }
    );
    assert!(!exit.is_clean());
    // The exit is published when the agent has ended, so nothing more can
    // be sent: no heartbeat after the SHUTDOWN, no unregistration.
    assert_eq!(nm.state(), NmState::Exited(exit.clone()));
    assert_eq!(trace(&rm.events()), ["R", "H0", "H1"]);
    // Stopping an ended node reports how it ended and sends nothing.
    assert_eq!(nm.stop().await, exit);
    assert_eq!(trace(&rm.events()), ["R", "H0", "H1"]);
}

#[tokio::test]
async fn shutdown_at_registration_ends_the_node() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        register_shutdown: true,
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let expected = NmExit::ShutdownByRm {
        diagnostics: "node is in the exclude list".into(),
    };
    let registered = tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("ends in time");
    assert_eq!(registered, Err(expected.clone()));
    assert_eq!(nm.wait().await, expected);
    assert_eq!(trace(&rm.events()), ["R"]);
}

#[tokio::test]
async fn rejected_registration_fails_the_node() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        register_error: Some(RpcError::yarn(
            "node resource is below the minimum allocation",
        )),
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let exit = tokio::time::timeout(WAIT, nm.wait())
        .await
        .expect("ends in time");
    match &exit {
        NmExit::Failed { message } => {
            assert!(
                message.contains("below the minimum allocation"),
                "{message}"
            )
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(trace(&rm.events()), ["R"]);
}

#[tokio::test]
async fn keeps_trying_until_the_rm_appears() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A free port with nothing listening on it yet.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let log = common::capture();
    let nm = NodeManager::start_with_config(nm_config(tmp.path(), &addr.to_string()))
        .await
        .expect("start without an RM");
    // Its first attempt is refused; it says it retries, and is still registering.
    let retrying = format!("Retrying connect to server: {addr}.");
    let deadline = Instant::now() + WAIT;
    while !log.text().contains(&retrying) {
        assert!(
            Instant::now() < deadline,
            "the node never retried its registration:\n{}",
            log.text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(nm.state(), NmState::Registering);

    let (rm, _server) = FakeRm::start_on(addr, Script::default()).await;
    tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("registers once the RM is up")
        .expect("registered");
    rm.wait_until("heartbeats", |e| count_heartbeats(e) >= 2)
        .await;
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

/// A port where every connection is accepted and dropped at once: an RM
/// that cannot be talked to. Counts the connections.
struct Dropper {
    addr: SocketAddr,
    accepted: Arc<Mutex<usize>>,
    _accept: tokio::task::JoinHandle<()>,
}

impl Dropper {
    async fn start() -> Dropper {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted: Arc<Mutex<usize>> = Arc::default();
        let count = accepted.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                *count.lock().expect("count") += 1;
                drop(stream);
            }
        });
        Dropper {
            addr,
            accepted,
            _accept: accept,
        }
    }

    fn accepted(&self) -> usize {
        *self.accepted.lock().expect("count")
    }
}

/// Stops `nm` and checks that the agent itself ended: the handle would
/// abandon an agent that ignores the stop only after its stop timeout,
/// which `nm_config_for_stop` makes far longer than the wait here.
async fn stop_promptly(nm: spindle_nm::NodeManagerHandle) {
    let exit = tokio::time::timeout(WAIT, nm.stop())
        .await
        .expect("the agent did not honour the stop while retrying");
    assert_eq!(exit, NmExit::Stopped);
}

fn nm_config_for_stop(dir: &Path, rm: &str) -> NmConfig {
    let mut cfg = nm_config(dir, rm);
    cfg.unregister_timeout = Duration::from_secs(600);
    cfg
}

#[tokio::test]
async fn stop_while_the_rm_is_unreachable_is_prompt() {
    // Nothing listens: every connection attempt is refused.
    let tmp = tempfile::tempdir().expect("tempdir");
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let nm = NodeManager::start_with_config(nm_config_for_stop(tmp.path(), &addr.to_string()))
        .await
        .expect("start");
    assert_eq!(nm.state(), NmState::Registering);
    stop_promptly(nm).await;

    // Every connection is dropped: the node is retrying once the first
    // one was taken.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dropper = Dropper::start().await;
    let nm =
        NodeManager::start_with_config(nm_config_for_stop(tmp.path(), &dropper.addr.to_string()))
            .await
            .expect("start");
    let deadline = Instant::now() + WAIT;
    while dropper.accepted() == 0 {
        assert!(Instant::now() < deadline, "the node never tried to connect");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(nm.state(), NmState::Registering);
    stop_promptly(nm).await;
}

#[tokio::test]
async fn non_positive_interval_from_the_rm_means_one_second() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        next_interval_ms: 0,
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let started = Instant::now();
    rm.wait_until("2 heartbeats", |e| count_heartbeats(e) >= 2)
        .await;
    // The first heartbeat follows the registration at once; the second
    // waits the default second, not the 20 ms configured.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn resource_override_from_the_rm_is_adopted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Script {
        rm_identifiers: vec![1, 2],
        resource_override: Some(Resource::new(1024, 1)),
        action_at: Some((2, NodeActionProto::Resync)),
        ..Script::default()
    };
    let (rm, server) = FakeRm::start(script).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let events = rm
        .wait_until("a second registration", |e| {
            e.iter().filter(|e| matches!(e, Event::Register(_))).count() >= 2
        })
        .await;
    assert_eq!(nm.session().total_resource, Resource::new(1024, 1));
    let regs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Register(r) => r.resource.as_ref().map(|r| (r.memory, r.virtual_cores)),
            _ => None,
        })
        .collect();
    assert_eq!(regs, vec![(Some(2048), Some(3)), (Some(1024), Some(1))]);
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

/// Every file system is 10 % full.
struct RoomyDisks;

impl SpaceSource for RoomyDisks {
    fn usage(&self, _dir: &Path) -> std::io::Result<DiskUsage> {
        Ok(DiskUsage {
            total_bytes: 100 << 30,
            usable_bytes: 90 << 30,
        })
    }
}

/// Every file system is 99 % full.
struct FullDisks;

impl SpaceSource for FullDisks {
    fn usage(&self, _dir: &Path) -> std::io::Result<DiskUsage> {
        Ok(DiskUsage {
            total_bytes: 100 << 20,
            usable_bytes: 1 << 20,
        })
    }
}

#[tokio::test]
async fn unhealthy_disks_are_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (rm, server) = FakeRm::start(Script::default()).await;
    let nm = NodeManager::start_with_space_source(
        nm_config(tmp.path(), &server.local_addr().to_string()),
        FullDisks,
    )
    .await
    .expect("start");
    let events = rm
        .wait_until("a heartbeat", |e| count_heartbeats(e) >= 1)
        .await;
    assert!(!nm.health().healthy);
    let Event::Register(reg) = &events[0] else {
        panic!("no registration: {events:#?}");
    };
    let health = reg
        .node_status
        .as_ref()
        .and_then(|s| s.node_health_status.clone())
        .expect("health");
    assert_eq!(health.is_node_healthy, Some(false));
    let report = health.health_report.unwrap_or_default();
    assert!(
        report.starts_with(
            "1/1 local-dirs usable space is below configured utilization percentage/no more \
             usable space [ "
        ) && report.contains("2/2 log-dirs usable space"),
        "{report}"
    );
    let hb = heartbeats(&events)[0];
    assert_eq!(
        hb.node_status
            .as_ref()
            .and_then(|s| s.node_health_status.as_ref())
            .and_then(|h| h.is_node_healthy),
        Some(false)
    );
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn container_methods_need_an_nm_token_or_are_unsupported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_rm, server) = FakeRm::start(Script::default()).await;
    let nm =
        NodeManager::start_with_config(nm_config(tmp.path(), &server.local_addr().to_string()))
            .await
            .expect("start");
    let client = IpcClient::connect(
        &nm.container_manager_addr().to_string(),
        ClientOptions::new("tester", protocols::CONTAINER_MANAGEMENT),
    )
    .await
    .expect("connect to the container manager");
    let err = client
        .call_method(&START_CONTAINERS, &StartContainersRequestProto::default())
        .await
        .expect_err("a SIMPLE caller has no NMToken");
    match &err {
        IpcError::Remote {
            class_name,
            message,
        } => {
            assert_eq!(class_name, class::YARN);
            assert_eq!(message, "No NMToken sent");
        }
        other => panic!("expected a remote YarnException, got {other:?}"),
    }
    let err = client
        .call_method(&LOCALIZE, &ResourceLocalizationRequestProto::default())
        .await
        .expect_err("not served");
    match &err {
        IpcError::Remote { message, .. } => assert!(message.contains(LOCALIZE.name), "{message}"),
        other => panic!("expected a remote exception, got {other:?}"),
    }
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn start_fails_when_the_port_is_taken() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut cfg = nm_config(tmp.path(), "127.0.0.1:1");
    cfg.bind_port = taken.local_addr().expect("addr").port();
    match NodeManager::start_with_config(cfg).await {
        Err(spindle_nm::NmError::Bind { addr, .. }) => assert!(addr.starts_with("127.0.0.1:")),
        Err(other) => panic!("expected a bind error, got {other}"),
        Ok(_) => panic!("bound a port that is in use"),
    }
}

/// A TCP relay in front of the fake RM whose open connections can be cut.
struct Relay {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accepted: Arc<Mutex<usize>>,
    _accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind relay");
        let addr = listener.local_addr().expect("relay addr");
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let accepted: Arc<Mutex<usize>> = Arc::default();
        let (c, a) = (conns.clone(), accepted.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                *a.lock().expect("count") += 1;
                let task = tokio::spawn(async move {
                    if let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                c.lock().expect("conns").push(task);
            }
        });
        Relay {
            addr,
            conns,
            accepted,
            _accept: accept,
        }
    }

    /// Drops every relayed connection (both sockets close).
    fn cut(&self) {
        for t in self.conns.lock().expect("conns").drain(..) {
            t.abort();
        }
    }

    fn accepted(&self) -> usize {
        *self.accepted.lock().expect("count")
    }
}

#[tokio::test]
async fn reconnects_when_the_connection_breaks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (rm, server) = FakeRm::start(Script::default()).await;
    let relay = Relay::start(server.local_addr()).await;
    let nm = NodeManager::start_with_config(nm_config(tmp.path(), &relay.addr.to_string()))
        .await
        .expect("start");
    rm.wait_until("3 heartbeats", |e| count_heartbeats(e) >= 3)
        .await;
    assert_eq!(relay.accepted(), 1);

    relay.cut();
    let before = count_heartbeats(&rm.events());
    let events = rm
        .wait_until("heartbeats on a new connection", |e| {
            count_heartbeats(e) >= before + 3
        })
        .await;
    assert!(relay.accepted() >= 2, "no new connection was opened");
    // Same registration, response ids carry on without a resync.
    let t = trace(&events);
    assert_eq!(t.iter().filter(|k| *k == "R").count(), 1, "{t:?}");
    let ids: Vec<i32> = heartbeats(&events).iter().map(|h| response_id(h)).collect();
    for pair in ids.windows(2) {
        assert!(
            pair[1] == pair[0] + 1 || pair[1] == pair[0],
            "response ids jumped: {ids:?}"
        );
    }
    assert_eq!(nm.session().registrations, 1);
    assert_eq!(nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn gives_up_when_the_rm_stays_unreachable_for_the_connect_wait() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let mut cfg = nm_config(tmp.path(), &addr);
    // yarn.nodemanager.resourcemanager.connect.max-wait.ms and
    // .retry-interval.ms, small; one connection attempt each time.
    cfg.rm_retry = RmRetry {
        max_wait: Some(Duration::from_millis(300)),
        retry_interval: Duration::from_millis(20),
        failover: None,
    };
    cfg.rm_connect_retry = ConnectRetry::NONE;
    let nm = NodeManager::start_with_config(cfg).await.expect("start");
    let exit = tokio::time::timeout(WAIT, nm.wait())
        .await
        .expect("ends in time");
    match &exit {
        NmExit::Failed { message } => {
            assert!(message.contains(&addr), "names the RM: {message}");
            assert!(
                message.contains("attempts"),
                "counts the attempts: {message}"
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn fails_over_from_a_standby_rm_and_stays_with_the_active_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (standby, s1) = FakeRm::start(Script {
        register_error: Some(RpcError::new(class::STANDBY, "Server is in standby state")),
        ..Script::default()
    })
    .await;
    let (active, s2) = FakeRm::start(Script::default()).await;
    let mut cfg = nm_config(tmp.path(), &s1.local_addr().to_string());
    cfg.resource_tracker_addrs = vec![s1.local_addr().to_string(), s2.local_addr().to_string()];
    cfg.rm_retry = RmRetry {
        max_wait: Some(Duration::from_secs(5)),
        retry_interval: Duration::from_millis(20),
        failover: Some(Failover::default()),
    };
    let nm = NodeManager::start_with_config(cfg).await.expect("start");
    tokio::time::timeout(WAIT, nm.wait_registered())
        .await
        .expect("registers in time")
        .expect("registered with the active RM");
    active
        .wait_until("heartbeats", |e| count_heartbeats(e) >= 3)
        .await;
    assert_eq!(
        trace(&standby.events()),
        ["R"],
        "nothing more went to the standby"
    );
    assert_eq!(nm.stop().await, NmExit::Stopped);
}
