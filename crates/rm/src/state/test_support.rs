//! Builders shared by the RM's unit tests: an [`RmState`] over a given
//! queue configuration, driven through commands ([`TestRm::run`]) with the
//! effects they leave collected, without any network or clock.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, NodeId};
use spindle_common::resource::Resource;
use spindle_scheduler::{Scheduler, SchedulerConfig};

use super::{RmState, Settings};
use crate::acl::Acl;
use crate::cluster::nodes::{
    ContainerStatus, Health, Heartbeat, NodeConfig, NodeTable, Registration,
};
use crate::cluster::Cluster;
use crate::hosts::HostLists;
use crate::model::apps::{AppState, AppTable};
use crate::model::convert::launch_context_from_pb;
use crate::model::keys::{KeyRing, KeyRolling, TokenIssuer};
use crate::model::launch::Effect;
use crate::model::submission::Submission;
use crate::queue_files::{capacity, QueueFile};
use crate::state::command::{
    AmLaunched, HeartbeatAnswer, NodeHeartbeat, NodeRegistration, RegisterApplicationMaster,
    RegisterNode, Request, SubmitApplication, Tick,
};
use crate::time::Now;

pub(crate) const TS: i64 = 1_700_000_000_000;
pub(crate) const MIN: Resource = Resource::new(1024, 1);
pub(crate) const MAX: Resource = Resource::new(8192, 4);

/// A capacity-scheduler queue configuration from `yarn.scheduler.capacity.`
/// keys (given without that prefix) over Hadoop's defaults.
pub(crate) fn capacity_queues(pairs: &[(&str, &str)]) -> QueueFile {
    let mut conf = Configuration::with_defaults();
    for (k, v) in pairs {
        conf.set(&format!("{}{k}", capacity::PREFIX), *v);
    }
    match capacity::from_conf(&conf, capacity::FILE_NAME) {
        Ok(q) => q,
        Err(e) => panic!("{e}"),
    }
}

/// An RM state whose scheduler runs `queues` (tree, delays and heartbeat
/// caps), with no nodes or applications, and Hadoop's default settings.
pub(crate) fn state_with(queues: QueueFile) -> TestRm {
    TestRm::new(queues, Settings::new(TS), KeyRolling::daily(0))
}

/// A state under test, with the effects its commands left.
pub(crate) struct TestRm {
    pub state: RmState,
    /// Effects of every command so far, oldest first, until taken.
    pub effects: Vec<Effect>,
    /// The last heartbeat answer's response id, per node.
    response_ids: BTreeMap<NodeId, i32>,
    /// With a store: the store operations of the commands so far, asked
    /// for after each command as the owner task does, until taken.
    store_ops: Vec<crate::store::StoreOp>,
}

impl Deref for TestRm {
    type Target = RmState;
    fn deref(&self) -> &RmState {
        &self.state
    }
}

impl DerefMut for TestRm {
    fn deref_mut(&mut self) -> &mut RmState {
        &mut self.state
    }
}

impl TestRm {
    /// A state over `queues` with `settings` and key rolling `rolling`.
    pub(crate) fn new(queues: QueueFile, settings: Settings, rolling: KeyRolling) -> TestRm {
        let nodes = NodeTable::new(
            NodeConfig {
                liveness_expiry_ms: 10_000,
                heartbeat_interval_ms: 1000,
                min_allocation: MIN,
                default_graceful_timeout_ms: 1000,
                default_rack: "/default-rack".into(),
            },
            HostLists::default(),
        );
        let scheduler = Scheduler::new(SchedulerConfig {
            queues: queues.tree.clone(),
            locality: queues.locality,
            heartbeat: queues.heartbeat,
            minimum_allocation: MIN,
            maximum_allocation: MAX,
            ..SchedulerConfig::default()
        })
        .unwrap_or_else(|e| panic!("scheduler: {e}"));
        let tokens = TokenIssuer::new(
            KeyRing::generate(&mut rand::rng()),
            rolling,
            "127.0.0.1:8030".into(),
            TS,
            600_000,
            rand::random(),
        );
        let state = RmState::new(
            settings,
            Cluster::new(nodes, scheduler),
            AppTable::new(TS, 100, MAX, 2),
            queues,
            Acl::parse("*"),
            tokens,
        );
        TestRm {
            state,
            effects: Vec::new(),
            response_ids: BTreeMap::new(),
            store_ops: Vec::new(),
        }
    }

    /// Handles `request` with both clocks at `ms`; its effects join [`TestRm::effects`].
    pub(crate) fn run<R: Request>(&mut self, ms: u64, request: R) -> R::Reply {
        self.run_at(Now::at(ms), request)
    }

    /// Handles `request` at `now`; its effects join [`TestRm::effects`].
    pub(crate) fn run_at<R: Request>(&mut self, now: Now, request: R) -> R::Reply {
        let (reply, effects) = self.state.handle(now, request.into());
        // Every unit test of the state checks its tables after every command.
        if let Err(e) = self.state.check_invariants() {
            panic!("invariant broken after a command at {now:?}: {e}");
        }
        self.effects.extend(effects);
        if self.state.store_enabled() {
            let ops = self.state.take_store_ops();
            self.store_ops.extend(ops);
        }
        R::reply(reply).unwrap_or_else(|| panic!("a reply of another command"))
    }

    /// The store operations so far (those of the commands, then what
    /// changed since, e.g. by recovery); clears them.
    pub(crate) fn take_store_ops(&mut self) -> Vec<crate::store::StoreOp> {
        let mut ops = std::mem::take(&mut self.store_ops);
        ops.extend(self.state.take_store_ops());
        ops
    }

    /// The effects so far; clears them.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The attempts whose AM containers the effects so far ask to launch, in
    /// order; clears the effects.
    pub(crate) fn launched(&mut self) -> Vec<ApplicationAttemptId> {
        self.take_effects()
            .into_iter()
            .map(|e| {
                let Effect::LaunchAm { attempt, .. } = e;
                attempt
            })
            .collect()
    }

    /// Registers a NodeManager on `host` (port 4040) with `capability`.
    pub(crate) fn add_node(&mut self, host: &str, capability: Resource, ms: u64) -> NodeId {
        let id = NodeId::new(host, 4040);
        let registration = Registration {
            id: id.clone(),
            http_port: 8042,
            capability,
            nm_version: "test".into(),
            rack: None,
            health: healthy(),
        };
        let outcome = self.run(
            ms,
            RegisterNode {
                registration,
                containers: Vec::new(),
                running_apps: Vec::new(),
                log_reports: Vec::new(),
            },
        );
        assert!(
            matches!(outcome, NodeRegistration::Accepted(_)),
            "{outcome:?}"
        );
        self.response_ids.insert(id.clone(), 0);
        id
    }

    /// A heartbeat of `node` at `ms` reporting `containers` (and nothing running).
    pub(crate) fn heartbeat(
        &mut self,
        node: &NodeId,
        containers: Vec<ContainerStatus>,
        ms: u64,
    ) -> HeartbeatAnswer {
        self.heartbeat_at(node, containers, Now::at(ms))
    }

    /// A heartbeat of `node` at `now` reporting `containers`.
    pub(crate) fn heartbeat_at(
        &mut self,
        node: &NodeId,
        containers: Vec<ContainerStatus>,
        now: Now,
    ) -> HeartbeatAnswer {
        self.heartbeat_reporting(node, containers, Vec::new(), now)
    }

    /// A heartbeat of `node` at `now` reporting `containers` and the log
    /// aggregation reports `log_reports`.
    pub(crate) fn heartbeat_reporting(
        &mut self,
        node: &NodeId,
        containers: Vec<ContainerStatus>,
        log_reports: Vec<crate::log_aggregation::AppLogReport>,
        now: Now,
    ) -> HeartbeatAnswer {
        let response_id = self.response_ids.get(node).copied().unwrap_or(0);
        let heartbeat = Heartbeat {
            id: node.clone(),
            response_id,
            health: healthy(),
            num_containers: 0,
            used: Resource::default(),
        };
        let answer = self.run_at(
            now,
            NodeHeartbeat {
                heartbeat,
                containers,
                log_reports,
                known_container_token_key: None,
                known_nm_token_key: None,
            },
        );
        self.response_ids
            .insert(node.clone(), answer.reply.response_id);
        answer
    }

    /// The heartbeat `node` sent last, sent again (its answer was lost),
    /// at `ms`.
    pub(crate) fn repeat_heartbeat(&mut self, node: &NodeId, ms: u64) -> HeartbeatAnswer {
        let answered = self.response_ids.get(node).copied().unwrap_or(0);
        self.response_ids
            .insert(node.clone(), answered.wrapping_sub(1) & i32::MAX);
        self.heartbeat(node, Vec::new(), ms)
    }

    /// Submits a 1 GB AM application to `queue` as `user`, with `priority`
    /// (`None`: the submission carries none); the AM runs `sleep 1`.
    pub(crate) fn submit_to(
        &mut self,
        queue: &str,
        user: &str,
        priority: Option<i32>,
        ms: u64,
    ) -> ApplicationId {
        let id = self.run(ms, crate::state::command::NewApplication);
        let submit = SubmitApplication {
            submission: submission(id, queue, priority),
            launch: launch_context_from_pb(pb::ContainerLaunchContextProto {
                command: vec!["sleep 1".into()],
                ..Default::default()
            }),
            user: user.into(),
            groups: Vec::new(),
        };
        if let Err(e) = self.run(ms, submit) {
            panic!("submit: {e:?}");
        }
        id
    }

    /// Launches the AM containers the effects so far ask for and registers
    /// their AMs: those applications are RUNNING afterwards. Returns their
    /// attempts.
    pub(crate) fn run_ams(&mut self, ms: u64) -> Vec<ApplicationAttemptId> {
        let attempts = self.launched();
        for attempt in &attempts {
            self.run(ms, AmLaunched { attempt: *attempt });
            let register = RegisterApplicationMaster {
                attempt: *attempt,
                host: "amhost".into(),
                rpc_port: 7000,
                tracking_url: String::new(),
            };
            if let Err(e) = self.run(ms, register) {
                panic!("register {attempt}: {e:?}");
            }
        }
        attempts
    }

    /// The application's state.
    pub(crate) fn app_state(&self, id: &ApplicationId) -> Option<AppState> {
        self.state.apps.get(id).map(|a| a.state)
    }

    /// A tick at `ms`: liveness, key rolling, a scheduling pass.
    pub(crate) fn tick(&mut self, ms: u64) {
        self.run(ms, Tick);
    }
}

pub(crate) fn healthy() -> Health {
    Health {
        healthy: true,
        report: String::new(),
        last_report_ms: 0,
    }
}

/// A submission of a 1 GB AM to `queue`.
pub(crate) fn submission(id: ApplicationId, queue: &str, priority: Option<i32>) -> Submission {
    Submission {
        id,
        name: "test".into(),
        queue: queue.into(),
        app_type: "YARN".into(),
        tags: BTreeSet::new(),
        priority,
        am_resource: MIN,
        max_attempts: 0,
        unmanaged_am: false,
        keep_containers: false,
    }
}

/// A capacity tree `root.eng.{etl,adhoc}` + `root.ops` (STOPPED) on one
/// 10 GB node, with two applications in etl: the first AM fits etl's AM
/// limit and runs, the second waits. Returns the state, the running
/// application and the waiting one.
pub(crate) fn two_etl_apps() -> (TestRm, ApplicationId, ApplicationId) {
    let mut s = state_with(capacity_queues(&[
        ("root.queues", "eng,ops"),
        ("root.eng.capacity", "60"),
        ("root.eng.maximum-capacity", "80"),
        ("root.eng.queues", "etl,adhoc"),
        ("root.eng.etl.capacity", "50"),
        ("root.eng.adhoc.capacity", "50"),
        ("root.ops.capacity", "40"),
        ("root.ops.state", "STOPPED"),
    ]));
    s.add_node("h1", Resource::new(10240, 10), 0);
    let running = s.submit_to("etl", "alice", None, 1);
    assert_eq!(s.run_ams(2).len(), 1);
    let waiting = s.submit_to("etl", "bob", None, 3);
    assert!(s.effects.is_empty(), "the second AM is held back");
    assert_eq!(s.app_state(&running), Some(AppState::Running));
    assert_eq!(s.app_state(&waiting), Some(AppState::Accepted));
    (s, running, waiting)
}
