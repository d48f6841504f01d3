//! The Spindle ResourceManager: Hadoop's RM protocols over Hadoop IPC.
//!
//! - [`state`]: the RM state ([`state::RmState`]), changed only by the closed set of
//!   [`command`]s through `RmState::handle`, read through its named queries;
//! - [`core`]: the task that owns the state and the handle ([`core::CoreHandle`])
//!   protocol handlers use to send commands and ask queries; [`time`]: the clocks;
//! - [`cluster`]: the node table and the scheduler core, kept in step;
//! - [`apps`], [`attempts`], [`keys`], [`hosts`], [`acl`], [`queue_files`]: the
//!   state's parts, pure domain logic with time passed in; [`access`]: who may
//!   do what to an application, decided in one place;
//! - [`client_service`], [`ams_service`], [`tracker_service`], [`admin_service`]:
//!   the four protocols, one named handler per method, converting with
//!   [`convert`]; [`launcher`]: the effects that need the network.

pub mod access;
pub mod acl;
pub mod active;
pub mod admin_service;
pub mod amrm;
pub mod ams_service;
pub mod apps;
pub mod attempts;
pub mod client_service;
pub mod cluster;
pub mod command;
pub mod context;
pub mod convert;
pub mod core;
pub mod failover;
pub mod ha;
pub mod ha_conf;
pub mod haservice;
pub mod hosts;
pub mod iso8601;
pub mod keys;
pub mod launch;
pub mod launcher;
pub mod limits;
pub mod log_aggregation;
pub mod log_retention;
pub mod queue_admission;
pub mod queue_files;
pub mod refusal;
pub mod reports;
pub mod state;
pub mod state_build;
pub mod store;
pub mod submission;
pub mod time;
pub mod topology;
pub mod tracker_service;
pub mod tracking;
pub mod web;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spindle_common::conf::refuse::{self, Daemon};
use spindle_common::conf::{keys as conf_keys, ConfError, Configuration};
use spindle_common::resource::Resource;
use spindle_ipc::{Mechanism, RpcServer, ServerConfig, Service};
use spindle_scheduler::{
    NodeSelectionKind, PackingConfig, Scheduler, SchedulerConfig, SchedulerKind,
};
use tracing::info;

use crate::acl::GroupCache;
use crate::cluster::nodes::NodeConfig;
use crate::core::CoreHandle;
use crate::hosts::HostFiles;
use crate::keys::{AmrmVerifier, KeyRolling, KeySlot};
use crate::state::Settings;
use crate::time::Clock;
use crate::topology::Topology;

pub use crate::active::{RmControl, ServiceState};
pub use crate::context::RmContext;

/// Why the RM could not start.
#[derive(Debug, thiserror::Error)]
pub enum RmError {
    #[error(transparent)]
    Conf(#[from] ConfError),
    /// A setting asks for a security or isolation property Spindle does not provide.
    #[error(transparent)]
    Refused(#[from] spindle_common::conf::refuse::Refused),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("cannot resolve {key} = '{value}': {detail}")]
    Resolve {
        key: String,
        value: String,
        detail: String,
    },
    #[error("cannot listen on {addr} ({key}): {source}")]
    Bind {
        key: String,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The addresses the RM actually listens on.
#[derive(Debug, Clone, Copy)]
pub struct RmAddresses {
    pub client: SocketAddr,
    pub scheduler: SocketAddr,
    pub resource_tracker: SocketAddr,
    pub admin: SocketAddr,
    /// `yarn.resourcemanager.webapp.address`: the REST API, proxy and UI.
    pub webapp: SocketAddr,
}

/// A running ResourceManager. Dropping it stops the listeners.
pub struct ResourceManager {
    addresses: RmAddresses,
    context: Arc<RmContext>,
    control: Arc<RmControl>,
    /// The leader election, with automatic failover.
    _failover: Option<failover::Failover>,
    _servers: Vec<RpcServer>,
    _web: spindle_web::WebServer,
}

/// Resolves `key` (host:port) to a listen address, honouring
/// `yarn.resourcemanager.bind-host` like Hadoop.
async fn listen_addr(
    conf: &Configuration,
    key: &str,
    bind_host_key: &str,
) -> Result<SocketAddr, RmError> {
    let (host, port) = conf.get_socket_addr(key)?;
    let host = conf
        .get(bind_host_key)
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or(host);
    let text = format!("{host}:{port}");
    let first = tokio::net::lookup_host(text.as_str())
        .await
        .map_err(|e| RmError::Resolve {
            key: key.to_string(),
            value: text.clone(),
            detail: e.to_string(),
        })?
        .next();
    first.ok_or_else(|| RmError::Resolve {
        key: key.to_string(),
        value: text,
        detail: "no address".into(),
    })
}

fn positive(conf: &Configuration, key: &str) -> Result<i64, RmError> {
    let v = conf.get_i64(key)?;
    if v <= 0 {
        return Err(RmError::Invalid(format!("{key} must be positive, not {v}")));
    }
    Ok(v)
}

/// Spindle's own container-placement keys (not Hadoop keys, so they have
/// no entry in the defaults and unset means the default given here):
///
/// * `spindle.scheduler.placement`: `spread` (default) or `packing`;
/// * `spindle.scheduler.packing.high-memory-threshold`: memory in use at
///   or above which a node is only used when no other fits; a fraction
///   (default 0.6), or a percentage when above 1 (`80` means 0.8);
/// * `spindle.scheduler.packing.min-nodes`: packing applies only with at
///   least this many schedulable nodes (default 5).
///
/// With the fair scheduler, Hadoop's own packing keys from Qubole's
/// design apply as well: `yarn.scheduler.fair.continuous-scheduling-packed`
/// (true selects packing), `…packed.high.memory.threshold` and
/// `…packed.min.nodes`; the `spindle.*` keys win when both are set.
fn placement_settings(
    conf: &Configuration,
    kind: SchedulerKind,
) -> Result<(NodeSelectionKind, PackingConfig), RmError> {
    let set = |key: &str| conf.get_trimmed(key).is_some_and(|v| !v.is_empty());
    let fair = kind == SchedulerKind::Fair;
    let fair_packed = "yarn.scheduler.fair.continuous-scheduling-packed";
    let fair_threshold = "yarn.scheduler.fair.continuous-scheduling-packed.high.memory.threshold";
    let fair_min_nodes = "yarn.scheduler.fair.continuous-scheduling-packed.min.nodes";
    let pick = |spindle: &'static str, hadoop: &'static str| -> Option<&'static str> {
        if set(spindle) {
            Some(spindle)
        } else if fair && set(hadoop) {
            Some(hadoop)
        } else {
            None
        }
    };
    let placement_key = "spindle.scheduler.placement";
    let selection = match conf.get_trimmed(placement_key).filter(|v| !v.is_empty()) {
        None if fair && set(fair_packed) => {
            if conf.get_bool(fair_packed)? {
                NodeSelectionKind::Packing
            } else {
                NodeSelectionKind::Spread
            }
        }
        None => NodeSelectionKind::default(),
        Some(v) => v
            .parse()
            .map_err(|e| RmError::Invalid(format!("{placement_key}: {e}")))?,
    };
    let mut packing = PackingConfig::default();
    if let Some(threshold_key) = pick(
        "spindle.scheduler.packing.high-memory-threshold",
        fair_threshold,
    ) {
        let v = conf.get_f64(threshold_key)?;
        let fraction = if v > 1.0 { v / 100.0 } else { v };
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(RmError::Invalid(format!(
                "{threshold_key} must be a fraction in (0, 1] or a percentage in (1, 100], not {v}"
            )));
        }
        packing.high_memory_threshold = fraction;
    }
    if let Some(min_nodes_key) = pick("spindle.scheduler.packing.min-nodes", fair_min_nodes) {
        let v = conf.get_u64(min_nodes_key)?;
        packing.min_nodes = usize::try_from(v)
            .map_err(|_| RmError::Invalid(format!("{min_nodes_key} is too large: {v}")))?;
    }
    Ok((selection, packing))
}

/// `yarn.cluster.max-application-priority`: the highest application
/// priority (default 0), read at start-up and by `refreshClusterMaxPriority`.
pub(crate) fn max_application_priority(conf: &Configuration) -> Result<i32, RmError> {
    let key = spindle_common::conf::keys::YARN_CLUSTER_MAX_APPLICATION_PRIORITY;
    let v = conf.get_i64(key)?;
    i32::try_from(v).map_err(|_| RmError::Invalid(format!("{key} = {v} is not a 32-bit integer")))
}

/// The most a reply listing applications may carry: the client's
/// `ipc.maximum.response.length` (Hadoop's default 128 MiB; 0 turns the
/// client's check off, and this bound with it) less 1 MiB for the RPC
/// header and the reply's other fields. The RM reads the key from its own
/// configuration, which clients share unless they set their own.
fn max_reply_bytes(conf: &Configuration) -> Result<Option<usize>, RmError> {
    let key = "ipc.maximum.response.length";
    let v = conf.get_i64(key)?;
    Ok((v > 0).then(|| (v as usize).saturating_sub(1 << 20).max(v as usize / 2)))
}

/// The server settings Hadoop's and Spindle's `ipc.*` keys describe
/// ([`ServerConfig::from_conf`]); the frame limit and the idle time must be
/// positive.
pub fn ipc_server_config(conf: &Configuration, name: &str) -> Result<ServerConfig, RmError> {
    positive(conf, "ipc.maximum.data.length")?;
    positive(conf, "ipc.client.connection.maxidletime")?;
    Ok(ServerConfig::from_conf(conf, name)?)
}

impl ResourceManager {
    /// Reads the configuration, binds the four RM ports and starts serving:
    /// without HA the RM activates at once; with
    /// `yarn.resourcemanager.ha.enabled` it starts standby (see [`active`]).
    pub async fn start(
        conf: &Configuration,
        conf_dir: Option<PathBuf>,
    ) -> Result<ResourceManager, RmError> {
        // Before anything listens: a setting Spindle cannot honour stops it.
        refuse::check(conf, &[Daemon::ResourceManager], "ResourceManager")?;
        let ha = ha_conf::HaConf::from_conf(conf)?;
        let instance_conf;
        let conf = match &ha {
            Some(h) => {
                instance_conf = h.instance_conf(conf)?;
                info!(
                    rm_id = %h.rm_id,
                    rm_ids = ?h.rm_ids,
                    automatic_failover = h.automatic_failover,
                    "ResourceManager HA enabled"
                );
                if h.automatic_failover && !h.embedded {
                    tracing::warn!(
                        "yarn.resourcemanager.ha.automatic-failover.embedded is false: this RM \
                         stays standby until a failover controller (or `yarn rmadmin \
                         -transitionToActive --forcemanual {}`) makes it active",
                        h.rm_id
                    );
                }
                &instance_conf
            }
            None => conf,
        };
        let rm_id = ha.as_ref().map(|h| h.rm_id.clone());
        let clock = Clock::start();
        // A store configuration this RM cannot use stops it before it serves.
        let store_conf = store::StoreConf::from_conf(conf).map_err(RmError::Invalid)?;
        let work_preserving = conf.get_bool(conf_keys::RM_WORK_PRESERVING_RECOVERY_ENABLED)?;
        let scheduling_wait_ms = conf
            .get_i64(conf_keys::RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS)?
            .max(0) as u64;
        let min_allocation = Resource::new(
            positive(conf, "yarn.scheduler.minimum-allocation-mb")?,
            positive(conf, "yarn.scheduler.minimum-allocation-vcores")? as i32,
        );
        let max_allocation = Resource::new(
            positive(conf, "yarn.scheduler.maximum-allocation-mb")?,
            positive(conf, "yarn.scheduler.maximum-allocation-vcores")? as i32,
        );
        if max_allocation.memory_mb < min_allocation.memory_mb
            || max_allocation.vcores < min_allocation.vcores
        {
            return Err(RmError::Invalid(format!(
                "yarn.scheduler.maximum-allocation-* ({max_allocation}) is below the minimum allocation ({min_allocation})"
            )));
        }
        let expiry_ms = positive(conf, "yarn.nm.liveness-monitor.expiry-interval-ms")? as u64;
        let heartbeat_ms = positive(
            conf,
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
        )?;
        let graceful_s =
            conf.get_i64("yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs")?;
        let max_completed = conf
            .get_i64("yarn.resourcemanager.max-completed-applications")?
            .max(0) as usize;
        let am_max_attempts = positive(conf, "yarn.resourcemanager.am.max-attempts")? as i32;
        let hosts = HostFiles::from_conf(conf)
            .read()
            .map_err(RmError::Invalid)?;
        let class_key = "yarn.resourcemanager.scheduler.class";
        let class = conf.get_trimmed(class_key).unwrap_or_default();
        let scheduler_kind = SchedulerKind::from_class_name(&class).ok_or_else(|| {
            RmError::Invalid(format!(
                "{class_key} = '{class}' is not a scheduler Spindle provides; use one of {}, {}, {}",
                SchedulerKind::CAPACITY_CLASS,
                SchedulerKind::FAIR_CLASS,
                SchedulerKind::FIFO_CLASS
            ))
        })?;
        let queue_file = crate::queue_files::load(scheduler_kind, conf, conf_dir.as_deref())
            .map_err(|e| RmError::Invalid(e.to_string()))?;
        let topology = Topology::from_conf(conf).map_err(RmError::Invalid)?;
        let acl_enabled = conf.get_bool("yarn.acl.enable")?;
        let max_application_priority = max_application_priority(conf)?;
        let limits = limits::Limits::from_conf(conf)?;
        let max_reply_bytes = max_reply_bytes(conf)?;
        let daemon_user = acl::daemon_user().await;
        let admin_acl = acl::admin_acl(
            conf.get("yarn.admin.acl").as_deref(),
            daemon_user.as_deref(),
        );
        let groups_ttl = Duration::from_secs(
            conf.get_i64(spindle_common::conf::keys::HADOOP_SECURITY_GROUPS_CACHE_SECS)?
                .max(0) as u64,
        );
        // AM containers are started through the NMProxy settings; a bad one stops start-up.
        let launcher = launcher::Launcher::new(conf)?;
        let am_expiry_ms = positive(conf, "yarn.am.liveness-monitor.expiry-interval-ms")? as u64;
        let container_token_expiry_ms = positive(
            conf,
            "yarn.resourcemanager.rm.container-allocation.expiry-interval-ms",
        )? as u64;
        let interval =
            |key: &str| -> Result<u64, RmError> { Ok(positive(conf, key)? as u64 * 1000) };
        let key_rolling = KeyRolling {
            amrm_interval_ms: interval(
                "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs",
            )?,
            container_interval_ms: interval(
                "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
            )?,
            nm_interval_ms: interval(
                "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
            )?,
            // As Hadoop's RM: nodes have a rolled key 1.5 liveness expiries
            // before it signs tokens.
            activation_delay_ms: expiry_ms.saturating_mul(3) / 2,
            ..KeyRolling::daily(clock.now().mono_ms)
        };
        // Hadoop's RM refuses to start when a node key would roll again
        // before the previous roll has reached every node.
        for (key, interval_ms) in [
            (
                "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
                key_rolling.container_interval_ms,
            ),
            (
                "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
                key_rolling.nm_interval_ms,
            ),
        ] {
            if interval_ms <= key_rolling.activation_delay_ms.saturating_mul(2) {
                return Err(RmError::Invalid(format!(
                    "{key} ({} s) should be more than 3 x yarn.nm.liveness-monitor.expiry-interval-ms ({expiry_ms} ms)",
                    interval_ms / 1000
                )));
            }
        }
        let (node_selection, packing) = placement_settings(conf, scheduler_kind)?;
        let scheduler_config = SchedulerConfig {
            queues: queue_file.tree.clone(),
            locality: queue_file.locality,
            heartbeat: queue_file.heartbeat,
            minimum_allocation: min_allocation,
            maximum_allocation: max_allocation,
            node_selection,
            packing,
            ..SchedulerConfig::default()
        };
        // A configuration the scheduler refuses stops start-up (each
        // activation builds its scheduler from it again).
        Scheduler::new(scheduler_config.clone()).map_err(|e| RmError::Invalid(e.to_string()))?;
        info!(
            scheduler = %scheduler_kind,
            queues = queue_file.tree.root.walk().len(),
            placement = %node_selection,
            racks = %topology.describe(),
            "scheduler configured"
        );

        let standby_message = match &rm_id {
            Some(id) => format!("ResourceManager {id} is not Active!"),
            None => "ResourceManager is not Active!".to_string(),
        };
        let keys = KeySlot::new(standby_message);
        // The web listener is bound first: the tracking URLs the RM hands
        // out name its bound port.
        let bind_key = "yarn.resourcemanager.bind-host";
        let web_key = conf_keys::RM_WEBAPP_ADDRESS;
        let web_addr = listen_addr(conf, web_key, bind_key).await?;
        let web_bind_error = |source| RmError::Bind {
            key: web_key.to_string(),
            addr: web_addr,
            source,
        };
        let web_listener = std::net::TcpListener::bind(web_addr).map_err(web_bind_error)?;
        let web_bound = web_listener.local_addr().map_err(web_bind_error)?;
        let (web_host, _) = conf.get_socket_addr(web_key)?;
        let web_addresses = tracking::WebAddresses::new(
            &web_host,
            web_bound,
            conf.get(tracking::PROXY_ADDRESS_KEY).as_deref(),
        );
        let context = Arc::new(RmContext {
            core: CoreHandle::standby(rm_id.as_deref()),
            rm_id: rm_id.clone(),
            standby_admin_acl: std::sync::RwLock::new(admin_acl),
            conf_dir,
            cluster_ts: std::sync::atomic::AtomicI64::new(clock.now().wall_ms as i64),
            rm_version: format!("spindle-{}", env!("CARGO_PKG_VERSION")),
            min_allocation,
            max_allocation,
            scheduler_kind,
            topology,
            acl_enabled,
            groups: GroupCache::new(groups_ttl),
            daemon_user,
            max_reply_bytes,
            web: web_addresses,
        });
        // Without HA, calls that arrive before the state exists wait for it
        // in the first activation's channel (as they always did).
        let first = ha.is_none().then(|| {
            let inbox = context.core.channel();
            context.core.serve(&inbox);
            inbox
        });

        let bind = |key: &'static str, addr: SocketAddr, services: Vec<Service>, name: &str| {
            let cfg = ipc_server_config(conf, name);
            async move {
                let cfg = cfg?;
                RpcServer::bind(addr, services, cfg)
                    .await
                    .map_err(|source| RmError::Bind {
                        key: key.to_string(),
                        addr,
                        source,
                    })
            }
        };
        let client_key = "yarn.resourcemanager.address";
        let client = bind(
            client_key,
            listen_addr(conf, client_key, bind_key).await?,
            vec![client_service::service(context.clone())],
            "rm-client",
        )
        .await?;
        // The scheduler port accepts only AMRMToken-authenticated connections.
        let sched_key = "yarn.resourcemanager.scheduler.address";
        let sched_addr = listen_addr(conf, sched_key, bind_key).await?;
        let mut sched_cfg = ipc_server_config(conf, "rm-scheduler")?;
        sched_cfg.mechanisms = vec![Mechanism::token(AmrmVerifier(keys.clone()))];
        let scheduler_server = RpcServer::bind(
            sched_addr,
            vec![ams_service::service(context.clone())],
            sched_cfg,
        )
        .await
        .map_err(|source| RmError::Bind {
            key: sched_key.to_string(),
            addr: sched_addr,
            source,
        })?;
        let sched_bound = scheduler_server.local_addr();
        let service_host = if sched_bound.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            sched_bound.ip().to_string()
        };
        let scheduler_service = format!("{service_host}:{}", sched_bound.port());
        let tracker_key = "yarn.resourcemanager.resource-tracker.address";
        let tracker = bind(
            tracker_key,
            listen_addr(conf, tracker_key, bind_key).await?,
            vec![tracker_service::service(context.clone())],
            "rm-tracker",
        )
        .await?;

        let state_conf = state_build::StateConf {
            scheduler: scheduler_config,
            nodes: NodeConfig {
                liveness_expiry_ms: expiry_ms,
                heartbeat_interval_ms: heartbeat_ms,
                min_allocation,
                default_graceful_timeout_ms: graceful_s.max(0) as u64 * 1000,
                default_rack: "/default-rack".into(),
            },
            hosts,
            settings: Settings {
                acl_enabled,
                max_application_priority,
                am_expiry_ms,
                limits,
                work_preserving,
                scheduling_wait_ms,
                log_aggregation: log_aggregation::LogAggregationConf::from_conf(conf)?,
                ..Settings::new(0)
            },
            queue_file,
            max_completed,
            am_max_attempts,
            key_rolling,
            container_token_expiry_ms,
            scheduler_service,
        };
        let active_conf = active::ActiveConf {
            clock,
            store: store_conf,
            state: state_conf,
            // Check liveness often enough that expiry is noticed within a
            // tenth of its interval.
            tick: Duration::from_millis((expiry_ms / 10).clamp(50, 1000)),
            launcher,
            log_retention: log_retention::LogRetention::from_conf(conf)?,
        };
        let control = active::RmControl::new(context.clone(), keys, active_conf, ha.clone());

        // The admin port serves HAServiceProtocol with HA, as Hadoop's AdminService.
        let mut admin_services = vec![admin_service::service(context.clone())];
        if ha.is_some() {
            admin_services.push(haservice::service(control.clone()));
        }
        let admin_key = "yarn.resourcemanager.admin.address";
        let admin = bind(
            admin_key,
            listen_addr(conf, admin_key, bind_key).await?,
            admin_services,
            "rm-admin",
        )
        .await?;

        if let Some(inbox) = first {
            control.activate_first(inbox).await?;
        }
        // With automatic failover the RM's own elector makes it active when
        // it wins the election on ZooKeeper.
        let failover = match &ha {
            Some(h) if h.automatic_failover && h.embedded => {
                Some(failover::Failover::start(conf, &h.rm_id, control.clone()).await?)
            }
            _ => None,
        };
        let web = web::WebContext {
            control: control.clone(),
            conf: Arc::new(conf.clone()),
            bound: web_bound,
            lists: Arc::new(tokio::sync::Semaphore::new(1)),
        };
        let web = spindle_web::WebServer::serve(web_listener, web::router(web), "rm-web")
            .map_err(web_bind_error)?;
        let addresses = RmAddresses {
            client: client.local_addr(),
            scheduler: scheduler_server.local_addr(),
            resource_tracker: tracker.local_addr(),
            admin: admin.local_addr(),
            webapp: web.local_addr(),
        };
        info!(?addresses, state = %control.service_state(), "ResourceManager started");
        Ok(ResourceManager {
            addresses,
            context,
            control,
            _failover: failover,
            _servers: vec![client, scheduler_server, tracker, admin],
            _web: web,
        })
    }

    pub fn addresses(&self) -> RmAddresses {
        self.addresses
    }

    /// The state store's write figures of the current (or last) activation
    /// (`None` with recovery off).
    pub fn store_figures(&self) -> Option<store::StoreFigures> {
        self.control.store_figures()
    }

    /// The RM epoch of the current (or last) activation (`None` with recovery off).
    pub fn epoch(&self) -> Option<u64> {
        self.control.epoch()
    }

    pub fn context(&self) -> &Arc<RmContext> {
        &self.context
    }

    /// The active/standby switch, for a driver (an elector) to hold.
    pub fn control(&self) -> &Arc<RmControl> {
        &self.control
    }

    /// See [`RmControl::transition_to_active`].
    pub async fn transition_to_active(&self) -> Result<(), RmError> {
        self.control.transition_to_active().await
    }

    /// See [`RmControl::transition_to_standby`].
    pub async fn transition_to_standby(&self) -> Result<(), RmError> {
        self.control.transition_to_standby().await
    }

    pub fn service_state(&self) -> ServiceState {
        self.control.service_state()
    }
}

#[cfg(test)]
mod placement_tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<(NodeSelectionKind, PackingConfig), String> {
        settings_for(SchedulerKind::Capacity, pairs)
    }

    fn settings_for(
        kind: SchedulerKind,
        pairs: &[(&str, &str)],
    ) -> Result<(NodeSelectionKind, PackingConfig), String> {
        let mut conf = Configuration::empty();
        for (k, v) in pairs {
            conf.set(k, *v);
        }
        placement_settings(&conf, kind).map_err(|e| e.to_string())
    }

    #[test]
    fn fair_scheduler_packing_keys_from_the_seed() {
        let pairs = [
            ("yarn.scheduler.fair.continuous-scheduling-packed", "true"),
            (
                "yarn.scheduler.fair.continuous-scheduling-packed.high.memory.threshold",
                "0.8",
            ),
            (
                "yarn.scheduler.fair.continuous-scheduling-packed.min.nodes",
                "7",
            ),
        ];
        let (selection, packing) =
            settings_for(SchedulerKind::Fair, &pairs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(selection, NodeSelectionKind::Packing);
        assert_eq!(packing.high_memory_threshold, 0.8);
        assert_eq!(packing.min_nodes, 7);
        // They are the fair scheduler's keys: other schedulers ignore them.
        let (selection, packing) =
            settings_for(SchedulerKind::Capacity, &pairs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(selection, NodeSelectionKind::Spread);
        assert_eq!(packing, PackingConfig::default());
        // Spindle's own keys win.
        let mut both = pairs.to_vec();
        both.push(("spindle.scheduler.placement", "spread"));
        let (selection, _) =
            settings_for(SchedulerKind::Fair, &both).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(selection, NodeSelectionKind::Spread);
    }

    #[test]
    fn defaults_are_spread_and_the_documented_packing_values() {
        let (selection, packing) = settings(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(selection, NodeSelectionKind::Spread);
        assert_eq!(packing, PackingConfig::default());
        assert_eq!(packing.high_memory_threshold, 0.6);
        assert_eq!(packing.min_nodes, 5);
    }

    #[test]
    fn packing_keys() {
        let (selection, packing) = settings(&[
            ("spindle.scheduler.placement", " Packing "),
            ("spindle.scheduler.packing.high-memory-threshold", "80"),
            ("spindle.scheduler.packing.min-nodes", "3"),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(selection, NodeSelectionKind::Packing);
        assert_eq!(packing.high_memory_threshold, 0.8);
        assert_eq!(packing.min_nodes, 3);
        let (_, packing) = settings(&[("spindle.scheduler.packing.high-memory-threshold", "0.75")])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(packing.high_memory_threshold, 0.75);
    }

    #[test]
    fn bad_values_name_the_key() {
        for (key, value) in [
            ("spindle.scheduler.placement", "packed"),
            ("spindle.scheduler.packing.high-memory-threshold", "0"),
            ("spindle.scheduler.packing.high-memory-threshold", "150"),
            ("spindle.scheduler.packing.high-memory-threshold", "lots"),
            ("spindle.scheduler.packing.min-nodes", "-1"),
        ] {
            match settings(&[(key, value)]) {
                Ok(s) => panic!("{key} = {value} accepted: {s:?}"),
                Err(e) => assert!(e.contains(key), "{key} = {value}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod start_tests {
    use super::*;

    /// An unknown `yarn.resourcemanager.scheduler.class` stops start-up
    /// with an error naming the key, the value and the classes Spindle
    /// provides; nothing is bound. (Hadoop's short names or a typo are no
    /// exception: there is no silent fallback to a default scheduler.)
    #[tokio::test]
    async fn unknown_scheduler_class_stops_start_up() {
        for class in [
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduer",
            "CapacityScheduler",
            "",
        ] {
            let mut conf = Configuration::with_defaults();
            for key in [
                "yarn.resourcemanager.address",
                "yarn.resourcemanager.scheduler.address",
                "yarn.resourcemanager.resource-tracker.address",
                "yarn.resourcemanager.admin.address",
                "yarn.resourcemanager.webapp.address",
            ] {
                conf.set(key, "127.0.0.1:0");
            }
            conf.set("yarn.resourcemanager.scheduler.class", class);
            let err = match ResourceManager::start(&conf, None).await {
                Ok(_) => panic!("the RM started with scheduler class '{class}'"),
                Err(e) => e,
            };
            assert!(matches!(err, RmError::Invalid(_)), "{err:?}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!(
                    "yarn.resourcemanager.scheduler.class = '{class}' is not a scheduler Spindle provides"
                )),
                "{msg}"
            );
            for known in [
                SchedulerKind::CAPACITY_CLASS,
                SchedulerKind::FAIR_CLASS,
                SchedulerKind::FIFO_CLASS,
            ] {
                assert!(msg.contains(known), "{msg}");
            }
        }
    }

    /// As Hadoop's RM: a node key rolling interval of no more than 3 NM
    /// liveness expiries stops start-up, naming the key.
    #[tokio::test]
    async fn node_key_rolling_faster_than_three_liveness_expiries_stops_start_up() {
        for key in [
            "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
            "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
        ] {
            let mut conf = Configuration::with_defaults();
            for addr in [
                "yarn.resourcemanager.address",
                "yarn.resourcemanager.scheduler.address",
                "yarn.resourcemanager.resource-tracker.address",
                "yarn.resourcemanager.admin.address",
                "yarn.resourcemanager.webapp.address",
            ] {
                conf.set(addr, "127.0.0.1:0");
            }
            conf.set("yarn.nm.liveness-monitor.expiry-interval-ms", "10000");
            conf.set(key, "30");
            let err = match ResourceManager::start(&conf, None).await {
                Ok(_) => panic!("the RM started with {key} = 30 s and a 10 s expiry"),
                Err(e) => e,
            };
            assert!(matches!(err, RmError::Invalid(_)), "{err:?}");
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    /// The RM's servers take their limits from the `ipc.*` keys, Spindle's
    /// per-peer and byte-budget keys included; a frame limit of 0 is refused.
    #[test]
    fn ipc_server_config_reads_the_limit_keys() {
        let mut conf = Configuration::with_defaults();
        conf.set("spindle.ipc.server.max.connections.per.peer", "3");
        conf.set("ipc.server.max.connections", "7");
        conf.set("spindle.ipc.server.max.buffered.request.bytes", "4194304");
        let cfg = ipc_server_config(&conf, "rm-client").expect("valid");
        assert_eq!(cfg.max_connections_per_peer, 3);
        assert_eq!(cfg.max_connections, 7);
        assert_eq!(cfg.max_buffered_request_bytes, 4 << 20);
        assert_eq!(cfg.name, "rm-client");
        conf.set("ipc.maximum.data.length", "0");
        assert!(ipc_server_config(&conf, "rm-client").is_err());
    }

    /// `yarn.cluster.max-application-priority` is read at start-up (0 by
    /// default, as in Hadoop); a value that is not an int stops start-up.
    #[test]
    fn max_application_priority_key() {
        let mut conf = Configuration::with_defaults();
        assert_eq!(max_application_priority(&conf).ok(), Some(0));
        conf.set("yarn.cluster.max-application-priority", "10");
        assert_eq!(max_application_priority(&conf).ok(), Some(10));
        conf.set("yarn.cluster.max-application-priority", "99999999999");
        let msg = max_application_priority(&conf)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("yarn.cluster.max-application-priority"),
            "{msg}"
        );
    }
}
