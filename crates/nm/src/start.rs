//! Starting a NodeManager: [`NodeManager`]'s start as a list of named
//! steps, each done by the module it belongs to, and the order in which a
//! node that ends takes down what its start started.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use spindle_common::{Configuration, NodeId};
use spindle_ipc::RpcServer;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::agent::{Agent, NmExit, NmState};
use crate::aux_services::AuxServices;
use crate::config::NmConfig;
use crate::container_manager;
use crate::containers::ContainerManager;
use crate::disks::{self, DiskHealthChecker, NodeHealth, SpaceSource, StatvfsSpace};
use crate::error::NmError;
use crate::handle::NodeManagerHandle;
use crate::localizer;
use crate::recovery::{self, Recovered, StateStore};
use crate::security::{SessionSecrets, SharedNodeId, TokenSecrets};
use crate::session::RmSession;
use crate::web::{self, WebListener};

/// Starts NodeManagers.
pub struct NodeManager;

impl NodeManager {
    /// Reads the settings from `conf` and starts the NodeManager (see
    /// [`start_with_config`](Self::start_with_config)).
    pub async fn start(conf: &Configuration) -> Result<NodeManagerHandle, NmError> {
        let cfg = NmConfig::from_conf(conf)?;
        Self::start_with_config(cfg).await
    }

    /// Starts a NodeManager with checked settings, measuring disks with
    /// `statvfs(3)`.
    ///
    /// Creates missing local and log dirs, checks their health, binds the
    /// container-management server, and starts registering with the
    /// ResourceManager in the background: this returns once the node is
    /// listening, without waiting for the ResourceManager (see
    /// [`NodeManagerHandle::wait_registered`]).
    pub async fn start_with_config(cfg: NmConfig) -> Result<NodeManagerHandle, NmError> {
        Self::start_with_space_source(cfg, StatvfsSpace).await
    }

    /// Like [`start_with_config`](Self::start_with_config), with file-system
    /// usage taken from `space`.
    pub async fn start_with_space_source<S: SpaceSource>(
        cfg: NmConfig,
        space: S,
    ) -> Result<NodeManagerHandle, NmError> {
        Self::start_with_secrets(cfg, space, |session| {
            Arc::new(SessionSecrets::new(session)) as Arc<dyn TokenSecrets>
        })
        .await
    }

    /// Like [`start_with_space_source`](Self::start_with_space_source), with
    /// token passwords from the [`TokenSecrets`] that `secrets` builds. It
    /// receives the node's view of the ResourceManager session, whose
    /// master keys the default [`SessionSecrets`] uses.
    pub async fn start_with_secrets<S: SpaceSource>(
        cfg: NmConfig,
        space: S,
        secrets: impl FnOnce(watch::Receiver<RmSession>) -> Arc<dyn TokenSecrets>,
    ) -> Result<NodeManagerHandle, NmError> {
        disks::create_node_dirs(&cfg.local_dirs, &cfg.log_dirs);
        let (store, recovered) = recovery::read_previous_run(&cfg.recovery).await?;
        let cfg = clear_previous_run(cfg, &recovered).await?;
        let (cfg, web_listener) = bind_web(cfg).await?;
        let disk_watch = DiskWatch::first_check(&cfg, space).await?;
        let rm = RmLink::new(&cfg, secrets);
        let aux = start_aux_services(&cfg).await?;
        let containers = start_container_manager(&cfg, &rm, store, &aux);
        let server = stop_aux_on_error(
            &aux,
            container_manager::bind(&cfg, &containers, rm.node_id.clone(), rm.secrets.clone())
                .await,
        )
        .await?;
        let node_id = rm.set_node_id(&cfg, &server);
        containers.recover(recovered).await;
        announce(&cfg, &node_id, &server);
        let web_addr = web_listener.addr();
        let web = stop_aux_on_error(
            &aux,
            web::serve(
                web_listener,
                &cfg,
                node_id.clone(),
                &containers,
                disk_watch.health_rx.clone(),
            ),
        )
        .await?;
        let node = Running {
            server,
            web,
            web_addr,
            containers,
            aux,
        };
        Ok(start_tracker(cfg, node_id, node, disk_watch, rm))
    }
}

/// Clears what a previous run on these local dirs left, before anything
/// is served. The executor (checking it can run containers as configured
/// and finding the cgroup hierarchy) kills the containers it left running,
/// except the `recovered` ones the node takes back; then, without
/// recovery, its caches, private dir and application logs are set aside.
async fn clear_previous_run(mut cfg: NmConfig, recovered: &Recovered) -> Result<NmConfig, NmError> {
    // Without recovery nobody would watch this run's containers after it:
    // they die with it.
    let tie_to_node = !cfg.recovery.enabled;
    cfg.executor = cfg
        .executor
        .clone()
        .prepare_at_start(
            cfg.local_dirs.clone(),
            cfg.log_dirs.clone(),
            recovered.live_container_ids(),
            tie_to_node,
        )
        .await?;
    localizer::clean_up_previous_run(
        cfg.local_dirs.clone(),
        cfg.log_dirs.clone(),
        cfg.recovery.enabled,
    )
    .await;
    Ok(cfg)
}

/// Binds the web server before anything reports the node's HTTP port: the
/// settings from here on carry the port bound.
async fn bind_web(mut cfg: NmConfig) -> Result<(Arc<NmConfig>, WebListener), NmError> {
    let listener = web::bind(&cfg).await?;
    cfg.http_port = i32::from(listener.addr().port());
    Ok((Arc::new(cfg), listener))
}

/// The disk health checker and the health it publishes.
struct DiskWatch<S: SpaceSource> {
    checker: Arc<Mutex<DiskHealthChecker<S>>>,
    health_tx: watch::Sender<NodeHealth>,
    health_rx: watch::Receiver<NodeHealth>,
}

impl<S: SpaceSource> DiskWatch<S> {
    /// The node's disks after their first check: the health the
    /// ResourceManager hears first.
    async fn first_check(cfg: &NmConfig, space: S) -> Result<DiskWatch<S>, NmError> {
        let (checker, health) =
            disks::first_check(&cfg.disk_health, &cfg.local_dirs, &cfg.log_dirs, space).await?;
        let (health_tx, health_rx) = watch::channel(health);
        Ok(DiskWatch {
            checker,
            health_tx,
            health_rx,
        })
    }
}

/// What the node will know of the ResourceManager, shared before it
/// registers: the session the agent writes, the token secrets it feeds,
/// and the NodeId, set once the server is bound.
struct RmLink {
    session_tx: watch::Sender<RmSession>,
    session_rx: watch::Receiver<RmSession>,
    secrets: Arc<dyn TokenSecrets>,
    node_id: SharedNodeId,
}

impl RmLink {
    fn new(
        cfg: &NmConfig,
        secrets: impl FnOnce(watch::Receiver<RmSession>) -> Arc<dyn TokenSecrets>,
    ) -> RmLink {
        let (session_tx, session_rx) = watch::channel(RmSession {
            total_resource: cfg.resource,
            ..RmSession::default()
        });
        RmLink {
            secrets: secrets(session_rx.clone()),
            session_tx,
            session_rx,
            node_id: Arc::new(OnceLock::new()),
        }
    }

    /// The NodeId: the node host and the port `server` is bound to.
    fn set_node_id(&self, cfg: &NmConfig, server: &RpcServer) -> NodeId {
        let node_id = NodeId::new(cfg.node_host.clone(), i32::from(server.local_addr().port()));
        let _ = self.node_id.set(node_id.clone());
        node_id
    }
}

/// The auxiliary services start before the node serves or registers
/// (Hadoop's AuxServices start in the ContainerManager, before the
/// NodeStatusUpdater); one that cannot start fails the node's start.
async fn start_aux_services(cfg: &NmConfig) -> Result<Arc<AuxServices>, NmError> {
    Ok(Arc::new(AuxServices::start(&cfg.aux).await?))
}

/// The container manager, which the recovery records (with recovery on)
/// and the auxiliary services hear from.
fn start_container_manager(
    cfg: &Arc<NmConfig>,
    rm: &RmLink,
    store: Option<StateStore>,
    aux: &Arc<AuxServices>,
) -> ContainerManager {
    ContainerManager::new(
        cfg.clone(),
        rm.node_id.clone(),
        rm.session_rx.clone(),
        rm.secrets.clone(),
        store,
        aux.clone(),
    )
}

/// A start that fails once the auxiliary services run stops them first.
async fn stop_aux_on_error<T>(aux: &AuxServices, r: Result<T, NmError>) -> Result<T, NmError> {
    if r.is_err() {
        aux.stop().await;
    }
    r
}

/// Logs the start: the node, where it listens, what it offers, its RM.
fn announce(cfg: &NmConfig, node_id: &NodeId, server: &RpcServer) {
    info!(
        node = %node_id,
        listen = %server.local_addr(),
        resource = %cfg.resource,
        rm = ?cfg.resource_tracker_addrs,
        version = %cfg.version,
        "NodeManager starting"
    );
}

/// What a started node runs, which its end takes down.
struct Running {
    server: RpcServer,
    web: spindle_web::WebServer,
    web_addr: std::net::SocketAddr,
    containers: ContainerManager,
    aux: Arc<AuxServices>,
}

impl Running {
    /// Takes the node down once the agent ended with `exit`: the servers
    /// close, the containers stop (or are left running for the next start),
    /// the services hear of their ends and stop, and the records the stop
    /// itself changed are on disk before the node says it ended.
    async fn stop(self, exit: &NmExit, monitors: Monitors, containers_stop_timeout: Duration) {
        if let Some(m) = monitors.disks {
            m.abort();
        }
        drop(self.server);
        drop(self.web);
        if *exit == NmExit::Stopped && self.containers.keeps_containers_on_stop() {
            // Recovery on and supervised: the next start takes them
            // back (Hadoop's ContainerManagerImpl does not clean up).
            info!("recovery is on and supervised: leaving the containers running");
            self.containers.detach();
        } else {
            // No container outlives the node.
            self.containers.shutdown(containers_stop_timeout).await;
        }
        monitors.containers.abort();
        monitors.cache_cleanup.abort();
        // The services hear of the containers' ends, then stop.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.aux.drain()).await;
        self.aux.stop().await;
        self.containers.records_flushed().await;
    }
}

/// The node's periodic tasks.
struct Monitors {
    disks: Option<JoinHandle<()>>,
    containers: JoinHandle<()>,
    cache_cleanup: JoinHandle<()>,
}

impl Monitors {
    /// Starts the disk health checks (when enabled), the containers'
    /// memory monitor and the cache cleanup, until `stop`.
    fn start<S: SpaceSource>(
        cfg: &NmConfig,
        disk_watch: DiskWatch<S>,
        containers: &ContainerManager,
        stop: &watch::Receiver<bool>,
    ) -> Monitors {
        let DiskWatch {
            checker, health_tx, ..
        } = disk_watch;
        Monitors {
            disks: cfg.disk_health.enabled.then(|| {
                tokio::spawn(disks::monitor(
                    checker,
                    health_tx,
                    stop.clone(),
                    cfg.disk_health.interval,
                ))
            }),
            containers: tokio::spawn(containers.clone().run_monitor(stop.clone())),
            cache_cleanup: tokio::spawn(containers.clone().run_cache_cleanup(stop.clone())),
        }
    }
}

/// How long the stop of the containers may take: killing a container takes
/// up to the SIGKILL delay; allow for scripts that are slow to die and for
/// localizations in flight.
fn containers_stop_timeout(cfg: &NmConfig) -> Duration {
    cfg.containers.sigkill_delay + Duration::from_secs(3)
}

/// How long a stop may take: unregistering, stopping the containers and
/// the auxiliary services.
fn stop_timeout(cfg: &NmConfig) -> Duration {
    let aux_stop_timeout = if cfg.aux.services.is_empty() {
        Duration::ZERO
    } else {
        Duration::from_secs(20)
    };
    cfg.unregister_timeout
        + containers_stop_timeout(cfg)
        + aux_stop_timeout
        + Duration::from_secs(2)
}

/// Starts the monitors and the tracker: the agent, which registers with
/// the ResourceManager and heartbeats, in a task that stops the node in
/// order when the agent ends.
fn start_tracker<S: SpaceSource>(
    cfg: Arc<NmConfig>,
    node_id: NodeId,
    node: Running,
    disk_watch: DiskWatch<S>,
    rm: RmLink,
) -> NodeManagerHandle {
    let (state_tx, state_rx) = watch::channel(NmState::Registering);
    let (stop_tx, stop_rx) = watch::channel(false);
    let health_rx = disk_watch.health_rx.clone();
    let monitors = Monitors::start(&cfg, disk_watch, &node.containers, &stop_rx);
    let containers_stop_timeout = containers_stop_timeout(&cfg);
    let stop_timeout = stop_timeout(&cfg);
    let containers = node.containers.clone();
    let container_manager_addr = node.server.local_addr();
    let web_addr = node.web_addr;
    let mut agent = Agent::new(
        cfg,
        node_id.clone(),
        health_rx.clone(),
        state_tx,
        rm.session_tx,
        containers.clone(),
        stop_rx,
    );
    let task = tokio::spawn(async move {
        let exit = agent.run().await;
        match &exit {
            NmExit::Stopped => info!("NodeManager stopped"),
            other => warn!("NodeManager ended: {other}"),
        }
        node.stop(&exit, monitors, containers_stop_timeout).await;
        agent.finish(exit);
    });
    NodeManagerHandle {
        node_id,
        containers,
        container_manager_addr,
        web_addr,
        state: state_rx,
        session: rm.session_rx,
        health: health_rx,
        stop: stop_tx,
        task: Some(task),
        stop_timeout,
    }
}
