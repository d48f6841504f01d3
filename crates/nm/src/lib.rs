//! Spindle's NodeManager agent.
//!
//! A NodeManager offers one machine's memory and cores to the
//! ResourceManager. This crate currently provides:
//!
//! - [`NmConfig`]: the node's settings from `yarn-site.xml` (addresses,
//!   resources with Hadoop's hardware detection, local and log dirs, disk
//!   health limits);
//! - [`disks`]: the disk health checker for the local and log dirs;
//! - the node status updater: registration with the ResourceManager's
//!   resource tracker, heartbeats with response-id sequencing, RESYNC and
//!   SHUTDOWN handling, unregistration on a clean stop;
//! - the ContainerManagementProtocol server on `yarn.nodemanager.address`,
//!   bound first so the NodeId carries the real port, with NMToken
//!   authentication ([`security`]);
//! - containers ([`containers`]): container-token checks, localization of
//!   `file:` and `hdfs:` resources with shared caches ([`localizer`],
//!   [`unpack`]; remote sources read through `spindle_fs`),
//!   Hadoop's launch contract ([`launch`]), the container executor that
//!   starts, contains and kills container processes ([`executor`]: as the
//!   NodeManager's user or as their own, cgroups v2 where available), memory
//!   monitoring from `/proc` ([`procfs`]), and their statuses in heartbeats;
//! - recovery ([`recovery`]): with `yarn.nodemanager.recovery.enabled`, a
//!   NodeManager killed and started again takes back its containers (and
//!   the cached copies they use); without it, a start moves the previous
//!   run's caches and `nmPrivate` aside and deletes them in the background.
//!
//! - the web server ([`web`]) on `yarn.nodemanager.webapp.address`:
//!   Hadoop's `NMWebServices` and the container log pages.
//!
//! ```no_run
//! # async fn demo() -> Result<(), spindle_nm::NmError> {
//! let conf = spindle_common::Configuration::load(None)?;
//! let nm = spindle_nm::NodeManager::start(&conf).await?;
//! println!("running as {}", nm.node_id());
//! tokio::select! {
//!     exit = nm.wait() => println!("NodeManager ended: {exit}"),
//!     _ = tokio::signal::ctrl_c() => {
//!         let exit = nm.stop().await;
//!         println!("NodeManager {exit}");
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod agent;
pub mod aux_services;
pub mod cache_entry;
pub mod config;
pub mod container_manager;
pub mod containers;
pub mod disks;
pub mod error;
pub mod executor;
pub mod hardware;
pub mod launch;
pub mod localizer;
pub mod logagg;
pub mod procfs;
pub mod recovery;
pub mod security;
pub mod session;
pub mod unpack;
pub mod web;
pub mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_common::{Configuration, NodeId};
use spindle_ipc::{Mechanism, RpcServer};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

pub use agent::{NmExit, NmState, DEFAULT_HEARTBEAT_INTERVAL};
pub use config::{ContainerSettings, NmConfig, NM_VERSION};
pub use containers::{
    exit_status, AppReport, ContainerManager, ContainerPhase, ContainerReport, KillOutcome,
    KillReason,
};
pub use disks::{
    DiskHealthChecker, DiskHealthConfig, DiskUsage, NodeHealth, SpaceSource, StatvfsSpace,
};
pub use error::NmError;
pub use security::{KeyPurpose, NmTokenCaller, SessionSecrets, TokenSecrets};
pub use session::RmSession;
pub use spindle_common::security::{ContainerTokenIdentifier, NmTokenIdentifier};
pub use wire::MasterKey;

use agent::Agent;

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
        for dir in cfg.local_dirs.iter().chain(&cfg.log_dirs) {
            if let Err(e) = disks::create_dir(dir) {
                // The health check marks it bad and reports it to the RM.
                warn!(dir = %dir.display(), error = %e, "cannot create a NodeManager directory");
            }
        }
        // With recovery on, the records of a previous run are read first:
        // its containers are taken back, not killed.
        let (store, recovered) = if cfg.recovery.enabled {
            let dir = cfg.recovery.dir.clone();
            tokio::task::spawn_blocking(move || {
                recovery::StateStore::open(&dir).map(|s| {
                    let r = s.load();
                    (Some(s), r)
                })
            })
            .await
            .map_err(|e| NmError::Internal(format!("reading the recovery records failed: {e}")))??
        } else {
            (None, recovery::Recovered::default())
        };
        if let Some(s) = &store {
            info!(
                dir = %s.dir().display(),
                containers = recovered.containers.len(),
                applications = recovered.apps.len(),
                localized_resources = recovered.resources.len(),
                "NodeManager recovery is on: recovering the containers a previous run recorded"
            );
        }
        let keep: std::collections::HashSet<String> = recovered
            .containers
            .iter()
            .filter(|c| c.phase != ContainerPhase::Done)
            .map(|c| c.grant.container.to_string())
            .collect();
        // The executor checks it can run containers as configured, finds
        // the cgroup hierarchy, and kills what a previous run on these
        // local dirs left running (except the recovered containers),
        // before anything is served.
        let cfg = tokio::task::spawn_blocking(move || {
            let mut cfg = cfg;
            let (local, logs) = (cfg.local_dirs.clone(), cfg.log_dirs.clone());
            // Without recovery nobody would watch this run's containers
            // after it: they die with it.
            let tie = !cfg.recovery.enabled;
            cfg.executor
                .prepare(&local, &logs, &keep, tie)
                .map(|()| cfg)
        })
        .await
        .map_err(|e| {
            NmError::Internal(format!("the container executor's start-up failed: {e}"))
        })??;
        // Without recovery the previous run's caches and private dir are
        // not taken over (Hadoop's cleanUpLocalDirs): moved aside now, after
        // the executor reaped its containers by their pid files, and deleted
        // in the background so that a big cache does not slow the start.
        let doomed = {
            let dirs = cfg.local_dirs.clone();
            let clean = !cfg.recovery.enabled;
            tokio::task::spawn_blocking(move || {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0);
                if clean {
                    localizer::move_aside_local_dirs(&dirs, now_ms)
                } else {
                    localizer::moved_aside_leftovers(&dirs)
                }
            })
            .await
            .unwrap_or_default()
        };
        if !doomed.is_empty() {
            let spawned = std::thread::Builder::new()
                .name("nm-local-dir-cleanup".into())
                .spawn(move || localizer::delete_moved_aside(doomed));
            if let Err(e) = spawned {
                warn!(error = %e, "cannot start deleting the previous run's local directories");
            }
        }
        // The web server is bound before anything reports its port: the
        // RM (registration) and containers (NM_HTTP_PORT) get the port
        // actually bound.
        let mut cfg = cfg;
        let web_text = format!("{}:{}", cfg.webapp_bind_host, cfg.http_port);
        let web_port = u16::try_from(cfg.http_port).unwrap_or(0);
        let web_addr = resolve(&cfg.webapp_bind_host, web_port, &web_text).await?;
        let web_listener =
            std::net::TcpListener::bind(web_addr).map_err(|source| NmError::Bind {
                addr: web_text.clone(),
                source,
            })?;
        let web_addr = web_listener.local_addr().map_err(|source| NmError::Bind {
            addr: web_text.clone(),
            source,
        })?;
        cfg.http_port = i32::from(web_addr.port());
        let cfg = Arc::new(cfg);
        let checker = Arc::new(Mutex::new(DiskHealthChecker::new(
            cfg.disk_health.clone(),
            cfg.local_dirs.clone(),
            cfg.log_dirs.clone(),
            space,
            disks::now_ms(),
        )));
        let initial_health = disks::run_check(checker.clone())
            .await
            .ok_or_else(|| NmError::Internal("the first disk health check panicked".into()))?;
        if !initial_health.healthy {
            warn!(report = %initial_health.report, "the node starts unhealthy");
        }

        let (session_tx, session_rx) = watch::channel(RmSession {
            total_resource: cfg.resource,
            ..RmSession::default()
        });
        let secrets = secrets(session_rx.clone());
        let shared_node_id: security::SharedNodeId = Arc::new(std::sync::OnceLock::new());
        // The auxiliary services start before the node serves or registers
        // (Hadoop's AuxServices start in the ContainerManager, before the
        // NodeStatusUpdater); one that cannot start fails the node's start.
        let aux = Arc::new(aux_services::AuxServices::start(&cfg.aux).await?);
        let containers = ContainerManager::new(
            cfg.clone(),
            shared_node_id.clone(),
            session_rx.clone(),
            secrets.clone(),
            store,
            aux.clone(),
        );

        let bind_text = format!("{}:{}", cfg.bind_host, cfg.bind_port);
        let bind_addr = resolve(&cfg.bind_host, cfg.bind_port, &bind_text).await?;
        let server = match RpcServer::bind(
            bind_addr,
            vec![container_manager::service(containers.clone())],
            cfg.ipc_limits.server_config(
                "nm-container-manager",
                vec![
                    Mechanism::token(security::NmTokenVerifier::new(
                        shared_node_id.clone(),
                        secrets,
                    )),
                    Mechanism::Simple,
                ],
            ),
        )
        .await
        {
            Ok(s) => s,
            Err(source) => {
                aux.stop().await;
                return Err(NmError::Bind {
                    addr: bind_text.clone(),
                    source,
                });
            }
        };
        let local_addr = server.local_addr();
        let node_id = NodeId::new(cfg.node_host.clone(), i32::from(local_addr.port()));
        let _ = shared_node_id.set(node_id.clone());
        containers.recover(recovered).await;
        info!(
            node = %node_id,
            listen = %local_addr,
            resource = %cfg.resource,
            rm = ?cfg.resource_tracker_addrs,
            version = %cfg.version,
            "NodeManager starting"
        );

        let (health_tx, health_rx) = watch::channel(initial_health);
        let web = match spindle_web::WebServer::serve(
            web_listener,
            web::router(web::NmWeb::new(
                &cfg,
                node_id.clone(),
                containers.clone(),
                health_rx.clone(),
                disks::now_ms(),
            ))
            .merge(web::ops::router(web::ops::NmOps::new(
                containers.clone(),
                cfg.resource,
                cfg.node_host.clone(),
                cfg.conf_properties.clone(),
            ))),
            "nm-web",
        ) {
            Ok(w) => w,
            Err(source) => {
                aux.stop().await;
                return Err(NmError::Bind {
                    addr: web_text,
                    source,
                });
            }
        };
        info!(web = %web_addr, "NodeManager web server listening (yarn.nodemanager.webapp.address)");
        let (state_tx, state_rx) = watch::channel(NmState::Registering);
        let (stop_tx, stop_rx) = watch::channel(false);

        let monitor = cfg.disk_health.enabled.then(|| {
            tokio::spawn(disks::monitor(
                checker,
                health_tx,
                stop_rx.clone(),
                cfg.disk_health.interval,
            ))
        });

        let container_monitor = tokio::spawn(containers.clone().run_monitor(stop_rx.clone()));
        let cache_cleanup = tokio::spawn(containers.clone().run_cache_cleanup(stop_rx.clone()));
        // Killing a container takes up to the SIGKILL delay; allow for
        // scripts that are slow to die and for localizations in flight.
        let containers_stop_timeout = cfg.containers.sigkill_delay + Duration::from_secs(3);
        let aux_stop_timeout = if cfg.aux.services.is_empty() {
            Duration::ZERO
        } else {
            Duration::from_secs(20)
        };
        let stop_timeout = cfg.unregister_timeout
            + containers_stop_timeout
            + aux_stop_timeout
            + Duration::from_secs(2);
        let mut agent = Agent::new(
            cfg,
            node_id.clone(),
            health_rx.clone(),
            state_tx,
            session_tx,
            containers.clone(),
            stop_rx,
        );
        let task_containers = containers.clone();
        let task = tokio::spawn(async move {
            let exit = agent.run().await;
            match &exit {
                NmExit::Stopped => info!("NodeManager stopped"),
                other => warn!("NodeManager ended: {other}"),
            }
            if let Some(m) = monitor {
                m.abort();
            }
            drop(server);
            drop(web);
            if exit == NmExit::Stopped && task_containers.keeps_containers_on_stop() {
                // Recovery on and supervised: the next start takes them
                // back (Hadoop's ContainerManagerImpl does not clean up).
                info!("recovery is on and supervised: leaving the containers running");
                task_containers.detach();
            } else {
                // No container outlives the node.
                task_containers.shutdown(containers_stop_timeout).await;
            }
            container_monitor.abort();
            cache_cleanup.abort();
            // The services hear of the containers' ends, then stop.
            let _ = tokio::time::timeout(Duration::from_secs(5), aux.drain()).await;
            aux.stop().await;
            // The records the stop itself changed are on disk before the
            // node says it ended.
            task_containers.records_flushed().await;
            agent.finish(exit);
        });

        Ok(NodeManagerHandle {
            node_id,
            containers,
            container_manager_addr: local_addr,
            web_addr,
            state: state_rx,
            session: session_rx,
            health: health_rx,
            stop: stop_tx,
            task: Some(task),
            stop_timeout,
        })
    }
}

async fn resolve(host: &str, port: u16, shown: &str) -> Result<SocketAddr, NmError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| NmError::Resolve {
            addr: shown.to_string(),
            detail: e.to_string(),
        })?;
    addrs.next().ok_or_else(|| NmError::Resolve {
        addr: shown.to_string(),
        detail: "the name has no addresses".to_string(),
    })
}

/// A running NodeManager. Dropping the handle asks the node to stop.
pub struct NodeManagerHandle {
    node_id: NodeId,
    containers: ContainerManager,
    container_manager_addr: SocketAddr,
    web_addr: SocketAddr,
    state: watch::Receiver<NmState>,
    session: watch::Receiver<RmSession>,
    health: watch::Receiver<NodeHealth>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    stop_timeout: Duration,
}

impl NodeManagerHandle {
    /// The NodeId: the node host and the port the container-management
    /// server is bound to.
    pub fn node_id(&self) -> &NodeId {
        &self.node_id
    }

    /// The node's containers: the same operations the container-management
    /// protocol serves, for callers already authenticated by other means,
    /// plus snapshots of container state.
    pub fn containers(&self) -> &ContainerManager {
        &self.containers
    }

    /// The address the container-management server listens on.
    pub fn container_manager_addr(&self) -> SocketAddr {
        self.container_manager_addr
    }

    /// The address the web server listens on
    /// (`yarn.nodemanager.webapp.address`; its port is the node's HTTP
    /// port).
    pub fn web_addr(&self) -> SocketAddr {
        self.web_addr
    }

    /// `host:port` of the web server as the ResourceManager reports it
    /// (the node host and the port bound).
    pub fn http_address(&self) -> String {
        format!("{}:{}", self.node_id.host, self.web_addr.port())
    }

    /// Where the node is now.
    pub fn state(&self) -> NmState {
        self.state.borrow().clone()
    }

    /// What the node currently knows from the ResourceManager.
    pub fn session(&self) -> RmSession {
        self.session.borrow().clone()
    }

    /// Follows [`session`](Self::session) as it changes (re-registration,
    /// rolled master keys).
    pub fn subscribe_session(&self) -> watch::Receiver<RmSession> {
        self.session.clone()
    }

    /// The latest disk health, as sent in the next heartbeat.
    pub fn health(&self) -> NodeHealth {
        self.health.borrow().clone()
    }

    /// Waits until the node is registered (`Ok`) or has ended (`Err` with
    /// how). Returns at once if it is registered already.
    pub async fn wait_registered(&self) -> Result<(), NmExit> {
        let mut rx = self.state.clone();
        let state = rx
            .wait_for(|s| !matches!(s, NmState::Registering))
            .await
            .map(|s| s.clone());
        match state {
            Ok(NmState::Running) => Ok(()),
            Ok(NmState::Exited(exit)) => Err(exit),
            Ok(NmState::Registering) | Err(_) => Err(agent_vanished()),
        }
    }

    /// Waits until the node ends on its own (SHUTDOWN from the RM, rejected
    /// registration) or after [`stop`](Self::stop). Cancel-safe: it can be
    /// raced against a signal and the handle stopped afterwards.
    pub async fn wait(&self) -> NmExit {
        let mut rx = self.state.clone();
        let state = rx
            .wait_for(|s| matches!(s, NmState::Exited(_)))
            .await
            .map(|s| s.clone());
        match state {
            Ok(NmState::Exited(exit)) => exit,
            _ => agent_vanished(),
        }
    }

    /// Stops the node: unregisters from the ResourceManager if registered
    /// (bounded by the unregister timeout) and closes the server. If the
    /// node had already ended, returns how.
    pub async fn stop(mut self) -> NmExit {
        let _ = self.stop.send(true);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(self.stop_timeout, &mut task)
                .await
                .is_err()
            {
                warn!(
                    "the NodeManager did not stop within {} ms; abandoning it",
                    self.stop_timeout.as_millis()
                );
                task.abort();
                return NmExit::Stopped;
            }
        }
        let state = self.state.borrow().clone();
        match state {
            NmState::Exited(exit) => exit,
            _ => agent_vanished(),
        }
    }
}

impl Drop for NodeManagerHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn agent_vanished() -> NmExit {
    NmExit::Failed {
        message: "the NodeManager agent task ended without a result".to_string(),
    }
}
