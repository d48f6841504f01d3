//! Builders shared by the RM's unit tests: a pure [`RmState`] over a given
//! queue configuration, nodes, submissions and running AMs, without any
//! network or clock.

use std::collections::BTreeSet;
use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, NodeId};
use spindle_common::resource::Resource;
use spindle_scheduler::{Scheduler, SchedulerConfig};

use crate::acl::Acl;
use crate::apps::{AppTable, Submission};
use crate::core::RmState;
use crate::hosts::HostLists;
use crate::lifecycle::{Effect, KeyRing};
use crate::nodes::{Health, NodeConfig, NodeTable, RegisterOutcome, Registration};
use crate::queue_files::{capacity, QueueFile};

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
/// caps), with no nodes or applications.
pub(crate) fn state_with(queues: QueueFile) -> RmState {
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
    RmState::new(
        TS,
        nodes,
        AppTable::new(TS, 100, MAX, 2),
        queues,
        Acl::parse("*"),
        scheduler,
        Arc::new(KeyRing::generate()),
    )
}

/// Registers a NodeManager on `host` with `capability`.
pub(crate) fn add_node(s: &mut RmState, host: &str, capability: Resource, now: u64) -> NodeId {
    let id = NodeId::new(host, 4040);
    let reg = Registration {
        id: id.clone(),
        http_port: 8042,
        capability,
        nm_version: "test".into(),
        rack: None,
        health: Health {
            healthy: true,
            report: String::new(),
            last_report_ms: 0,
        },
    };
    assert_eq!(s.nodes.register(reg, now), RegisterOutcome::Accepted);
    s.node_registered(&id, now);
    id
}

/// Submits a 1 GB AM application to `queue` as `user`, with `priority`
/// (`None`: the submission carries none).
pub(crate) fn submit_to(
    s: &mut RmState,
    queue: &str,
    user: &str,
    priority: Option<i32>,
    now: u64,
) -> ApplicationId {
    let id = s.apps.new_id();
    let sub = Submission {
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
    };
    let clc = pb::ContainerLaunchContextProto {
        command: vec!["sleep 1".into()],
        ..Default::default()
    };
    if let Err(e) = s.submit(sub, clc, user, &[], now) {
        panic!("submit: {e:?}");
    }
    id
}

/// Launches the AM containers the outbox holds and registers their AMs:
/// those applications are RUNNING afterwards. Returns their attempts.
pub(crate) fn run_ams(s: &mut RmState, now: u64) -> Vec<ApplicationAttemptId> {
    let effects = std::mem::take(&mut s.outbox);
    let mut attempts = Vec::new();
    for effect in effects {
        let Effect::LaunchAm { attempt, .. } = effect;
        s.am_launched(attempt, now);
        if let Err(e) = s.register_am(attempt, "amhost".into(), 7000, String::new(), now) {
            panic!("register {attempt}: {e:?}");
        }
        attempts.push(attempt);
    }
    attempts
}
