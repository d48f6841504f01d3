//! Simulated NodeManagers: each registers through ResourceTracker on its own
//! IPC connection (as a real NodeManager does) and heartbeats at the interval
//! the RM asks for, with jitter, reporting the containers its AMs started on
//! it as RUNNING and the ones the RM had it stop as COMPLETE until the RM
//! acknowledges them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hadoop_protos::yarn as pb;
use rand::Rng;
use spindle_common::exit_status;
use spindle_common::proto::{
    app_id_from_pb, container_id_from_pb, container_id_to_pb, node_id_to_pb, resource_to_pb,
};
use spindle_common::{ApplicationId, ContainerId, NodeId, Resource};
use spindle_ipc::methods::resource_tracker::{
    NODE_HEARTBEAT, REGISTER_NODE_MANAGER, UN_REGISTER_NODE_MANAGER,
};
use spindle_ipc::{protocols, ProxyConfig, RpcProxy};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

use crate::Stats;

/// The containers one simulated node holds.
#[derive(Debug, Default)]
struct NodeContainers {
    running: BTreeMap<ContainerId, Resource>,
    /// Ended, reported COMPLETE until the RM says it took note.
    done: BTreeMap<ContainerId, (Resource, i32)>,
}

impl NodeContainers {
    fn stop(&mut self, id: &ContainerId, exit: i32) {
        if let Some(r) = self.running.remove(id) {
            self.done.insert(*id, (r, exit));
        }
    }

    fn statuses(&self) -> Vec<pb::ContainerStatusProto> {
        let status = |id: &ContainerId, r: Resource, state, exit: i32, diag: &str| {
            pb::ContainerStatusProto {
                container_id: Some(container_id_to_pb(id)),
                state: Some(state as i32),
                diagnostics: Some(diag.to_string()),
                exit_status: Some(exit),
                capability: Some(resource_to_pb(r)),
                execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
                ..Default::default()
            }
        };
        let mut out = Vec::with_capacity(self.running.len() + self.done.len());
        for (id, r) in &self.running {
            out.push(status(
                id,
                *r,
                pb::ContainerStateProto::CRunning,
                exit_status::INVALID,
                "",
            ));
        }
        for (id, (r, exit)) in &self.done {
            out.push(status(
                id,
                *r,
                pb::ContainerStateProto::CComplete,
                *exit,
                "Container killed by the ResourceManager",
            ));
        }
        out
    }
}

/// One simulated node.
#[derive(Debug)]
pub struct SimNode {
    pub id: NodeId,
    containers: Mutex<NodeContainers>,
}

impl SimNode {
    fn lock(&self) -> std::sync::MutexGuard<'_, NodeContainers> {
        self.containers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every simulated node, shared with the simulated AMs (which "start" the
/// containers they are granted on them, as `startContainers` would).
#[derive(Debug)]
pub struct Cluster {
    pub nodes: Vec<SimNode>,
    by_id: HashMap<NodeId, usize>,
    pub capability: Resource,
}

impl Cluster {
    /// `count` nodes, each with `capability`, named by a loopback address of its
    /// own ([`node_host`]) at port 45454.
    pub fn new(count: usize, capability: Resource) -> Cluster {
        let nodes: Vec<SimNode> = (0..count)
            .map(|i| SimNode {
                id: NodeId::new(node_host(i), 45454),
                containers: Mutex::new(NodeContainers::default()),
            })
            .collect();
        let by_id = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        Cluster {
            nodes,
            by_id,
            capability,
        }
    }

    /// A container an AM was granted starts on its node. False when the node
    /// is not one of ours.
    pub fn start_container(&self, node: &NodeId, id: ContainerId, resource: Resource) -> bool {
        match self.by_id.get(node) {
            Some(i) => {
                self.nodes[*i].lock().running.insert(id, resource);
                true
            }
            None => false,
        }
    }

    /// Containers running on all nodes.
    pub fn running(&self) -> usize {
        self.nodes.iter().map(|n| n.lock().running.len()).sum()
    }
}

/// How the simulated NMs behave.
#[derive(Debug, Clone)]
pub struct NmSettings {
    pub tracker: String,
    /// Used until the RM names its own in a heartbeat answer.
    pub heartbeat_interval: Duration,
    /// Each interval is drawn from `interval × (1 ± jitter)`.
    pub jitter: f64,
    pub call_timeout: Duration,
}

/// What a node keeps between heartbeats.
struct Session {
    client: RpcProxy,
    response_id: i32,
    container_key: Option<pb::MasterKeyProto>,
    nm_key: Option<pb::MasterKeyProto>,
    interval: Duration,
}

fn health() -> pb::NodeHealthStatusProto {
    pb::NodeHealthStatusProto {
        is_node_healthy: Some(true),
        health_report: Some(String::new()),
        last_health_report_time: Some(0),
    }
}

/// The node's connection to the resource tracker. No retries: a failed
/// heartbeat is counted, and the next one goes out at the next interval.
async fn connect(settings: &NmSettings) -> Result<RpcProxy, String> {
    let mut config = ProxyConfig::new(
        settings.tracker.clone(),
        "yarn",
        protocols::RESOURCE_TRACKER,
    );
    config.call_timeout = settings.call_timeout;
    let proxy = RpcProxy::new(config);
    proxy
        .connect()
        .await
        .map_err(|e| format!("cannot connect to the resource tracker: {e}"))?;
    Ok(proxy)
}

/// `registerNodeManager` for `node`, reporting what it runs (a re-registration
/// after RESYNC keeps its containers, as a real NodeManager does).
async fn register(
    client: RpcProxy,
    node: &SimNode,
    capability: Resource,
    default_interval: Duration,
) -> Result<Session, String> {
    let statuses: Vec<pb::NmContainerStatusProto> = {
        let c = node.lock();
        c.running
            .iter()
            .map(|(id, r)| pb::NmContainerStatusProto {
                container_id: Some(container_id_to_pb(id)),
                container_state: Some(pb::ContainerStateProto::CRunning as i32),
                resource: Some(resource_to_pb(*r)),
                priority: Some(pb::PriorityProto { priority: Some(1) }),
                diagnostics: Some(String::new()),
                container_exit_status: Some(exit_status::INVALID),
                creation_time: Some(0),
                ..Default::default()
            })
            .collect()
    };
    let req = pb::RegisterNodeManagerRequestProto {
        node_id: Some(node_id_to_pb(&node.id)),
        http_port: Some(8042),
        resource: Some(resource_to_pb(capability)),
        nm_version: Some("3.3.6".into()),
        container_statuses: statuses,
        node_status: Some(pb::NodeStatusProto {
            node_id: Some(node_id_to_pb(&node.id)),
            response_id: Some(0),
            node_health_status: Some(health()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let resp = client
        .call(&REGISTER_NODE_MANAGER, &req)
        .await
        .map_err(|e| format!("{}: {e}", node.id))?;
    if resp.node_action != Some(pb::NodeActionProto::Normal as i32) {
        return Err(format!(
            "the ResourceManager refused {}: {}",
            node.id,
            resp.diagnostics_message.unwrap_or_default()
        ));
    }
    Ok(Session {
        client,
        response_id: 0,
        container_key: resp.container_token_master_key,
        nm_key: resp.nm_token_master_key,
        interval: default_interval,
    })
}

/// Applies a heartbeat answer to the node's containers.
fn absorb(node: &SimNode, resp: &pb::NodeHeartbeatResponseProto) {
    if resp.containers_to_cleanup.is_empty()
        && resp.applications_to_cleanup.is_empty()
        && resp.containers_to_be_removed_from_nm.is_empty()
    {
        return;
    }
    let mut c = node.lock();
    for id in &resp.containers_to_cleanup {
        if let Ok(id) = container_id_from_pb(id) {
            c.stop(&id, exit_status::KILLED_BY_RESOURCEMANAGER);
        }
    }
    if !resp.applications_to_cleanup.is_empty() {
        let apps: Vec<ApplicationId> = resp
            .applications_to_cleanup
            .iter()
            .map(app_id_from_pb)
            .collect();
        let ending: Vec<ContainerId> = c
            .running
            .keys()
            .filter(|id| apps.contains(&id.app()))
            .copied()
            .collect();
        for id in ending {
            c.stop(&id, exit_status::KILLED_AFTER_APP_COMPLETION);
        }
    }
    for id in &resp.containers_to_be_removed_from_nm {
        if let Ok(id) = container_id_from_pb(id) {
            c.done.remove(&id);
        }
    }
}

/// `unRegisterNodeManager`, best effort: an RM that outlives the bench
/// (`--rm`) then shows the simulated nodes as SHUTDOWN instead of waiting
/// for them to expire.
async fn leave(client: &RpcProxy, node: &SimNode, timeout: Duration) {
    let req = pb::UnRegisterNodeManagerRequestProto {
        node_id: Some(node_id_to_pb(&node.id)),
    };
    let call = client.call(&UN_REGISTER_NODE_MANAGER, &req);
    let _ = tokio::time::timeout(timeout, call).await;
}

fn jittered(interval: Duration, jitter: f64) -> Duration {
    if jitter <= 0.0 {
        return interval;
    }
    let f = rand::rng().random_range(1.0 - jitter..=1.0 + jitter);
    interval.mul_f64(f.max(0.0))
}

/// Registers node `index` (at most `register_limit` at a time across nodes),
/// then heartbeats until `stop` turns true. Returns why it ended early.
pub async fn run_node(
    index: usize,
    cluster: Arc<Cluster>,
    settings: NmSettings,
    stats: Arc<Stats>,
    register_limit: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let node = &cluster.nodes[index];
    let mut session = {
        let _permit = register_limit
            .acquire()
            .await
            .map_err(|_| "the bench is stopping".to_string())?;
        let client = connect(&settings).await?;
        register(
            client,
            node,
            cluster.capability,
            settings.heartbeat_interval,
        )
        .await?
    };
    stats.nms_registered.fetch_add(1, Ordering::Relaxed);
    // Nodes start spread over one interval, as a real cluster's do.
    let first = settings
        .heartbeat_interval
        .mul_f64(rand::rng().random_range(0.0..1.0));
    let mut next = Instant::now() + first;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            leave(&session.client, node, settings.call_timeout).await;
            return Ok(());
        }
        let started = Instant::now();
        let req = pb::NodeHeartbeatRequestProto {
            node_status: Some(pb::NodeStatusProto {
                node_id: Some(node_id_to_pb(&node.id)),
                response_id: Some(session.response_id),
                containers_statuses: node.lock().statuses(),
                node_health_status: Some(health()),
                ..Default::default()
            }),
            last_known_container_token_master_key: session.container_key.clone(),
            last_known_nm_token_master_key: session.nm_key.clone(),
            ..Default::default()
        };
        let result = session.client.call(&NODE_HEARTBEAT, &req).await;
        let elapsed = started.elapsed();
        match result {
            Ok(resp) => {
                stats.heartbeat_done(elapsed);
                session.response_id = resp.response_id.unwrap_or(0);
                if let Some(ms) = resp.next_heart_beat_interval.filter(|ms| *ms > 0) {
                    session.interval = Duration::from_millis(ms as u64);
                }
                if let Some(k) = resp.container_token_master_key.clone() {
                    session.container_key = Some(k);
                }
                if let Some(k) = resp.nm_token_master_key.clone() {
                    session.nm_key = Some(k);
                }
                absorb(node, &resp);
                match resp
                    .node_action
                    .and_then(|a| pb::NodeActionProto::try_from(a).ok())
                {
                    Some(pb::NodeActionProto::Resync) => {
                        stats.nm_resyncs.fetch_add(1, Ordering::Relaxed);
                        let client = session.client.clone();
                        session =
                            register(client, node, cluster.capability, session.interval).await?;
                    }
                    Some(pb::NodeActionProto::Shutdown) => {
                        return Err(format!(
                            "the ResourceManager shut {} down: {}",
                            node.id,
                            resp.diagnostics_message.unwrap_or_default()
                        ));
                    }
                    _ => {}
                }
            }
            Err(e) => {
                stats.heartbeat_failed(format!("{}: {e}", node.id));
                // The connection broke: the proxy opens a new one, and the
                // node registers again on it.
                if !session.client.is_connected() {
                    let client = session.client.clone();
                    session = register(client, node, cluster.capability, session.interval).await?;
                }
            }
        }
        next = started + jittered(session.interval, settings.jitter);
    }
}

/// The host of simulated node `i`: an IP address literal in 127.1.0.1 and up
/// (16 million before it wraps). An RM that resolves node names (Hadoop's
/// checks each registering host against its include and exclude lists, and its
/// rack resolver normalises names, through DNS) answers a literal at once; an
/// invented name would cost a DNS lookup per node, measuring the resolver.
pub fn node_host(i: usize) -> String {
    let n = (i % 0x00ff_ffff) + (1 << 16) + 1;
    format!("127.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationAttemptId;

    #[test]
    fn node_hosts_are_distinct_loopback_literals() {
        assert_eq!(node_host(0), "127.1.0.1");
        assert_eq!(node_host(254), "127.1.0.255");
        assert_eq!(node_host(255), "127.1.1.0");
        assert_eq!(node_host(70_000), "127.2.17.113");
        let hosts: std::collections::HashSet<String> = (0..50_000).map(node_host).collect();
        assert_eq!(hosts.len(), 50_000);
    }

    fn cid(app: i32, n: i64) -> ContainerId {
        ContainerId::new(ApplicationAttemptId::new(ApplicationId::new(7, app), 1), n)
    }

    #[test]
    fn containers_run_stop_and_are_forgotten_when_acknowledged() {
        let cluster = Cluster::new(3, Resource::new(8192, 8));
        let node = cluster.nodes[1].id.clone();
        assert_eq!(node.to_string(), "127.1.0.2:45454");
        let r = Resource::new(1024, 1);
        assert!(cluster.start_container(&node, cid(1, 1), r));
        assert!(cluster.start_container(&node, cid(1, 2), r));
        assert!(cluster.start_container(&node, cid(2, 1), r));
        assert!(!cluster.start_container(&NodeId::new("elsewhere", 1), cid(1, 3), r));
        assert_eq!(cluster.running(), 3);

        let sim = &cluster.nodes[1];
        let states = |n: &SimNode| -> Vec<(i32, i32)> {
            n.lock()
                .statuses()
                .iter()
                .map(|s| (s.state.unwrap_or(-1), s.exit_status.unwrap_or(0)))
                .collect()
        };
        let running = pb::ContainerStateProto::CRunning as i32;
        let complete = pb::ContainerStateProto::CComplete as i32;
        assert_eq!(states(sim), vec![(running, -1000); 3]);

        absorb(
            sim,
            &pb::NodeHeartbeatResponseProto {
                containers_to_cleanup: vec![container_id_to_pb(&cid(1, 1))],
                applications_to_cleanup: vec![spindle_common::proto::app_id_to_pb(
                    &ApplicationId::new(7, 2),
                )],
                ..Default::default()
            },
        );
        let mut now = states(sim);
        now.sort();
        assert_eq!(
            now,
            vec![(running, -1000), (complete, -107), (complete, -106)]
        );
        absorb(
            sim,
            &pb::NodeHeartbeatResponseProto {
                containers_to_be_removed_from_nm: vec![
                    container_id_to_pb(&cid(1, 1)),
                    container_id_to_pb(&cid(2, 1)),
                ],
                ..Default::default()
            },
        );
        assert_eq!(states(sim), vec![(running, -1000)]);
        assert_eq!(cluster.running(), 1);
    }

    #[test]
    fn jitter_stays_in_its_band() {
        let base = Duration::from_millis(1000);
        assert_eq!(jittered(base, 0.0), base);
        for _ in 0..1000 {
            let d = jittered(base, 0.1);
            assert!(d >= Duration::from_millis(900) && d <= Duration::from_millis(1100));
        }
    }
}
