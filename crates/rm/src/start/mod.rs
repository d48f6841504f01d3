//! The ResourceManager's start: the settings read and checked, its ports
//! bound, its context and active/standby switch made, and it served.

mod read;
mod settings;

pub use settings::ipc_server_config;
pub(crate) use settings::listen_addr;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spindle_common::conf::refuse::{self, Daemon};
use spindle_common::conf::{keys as conf_keys, Configuration};
use spindle_ipc::server::{Impersonation, ServiceAuthorization};
use spindle_ipc::{Mechanism, RpcServer, Service};
use tracing::info;

use crate::acl::GroupCache;
use crate::cluster::nodes::NodeConfig;
use crate::error::RmError;
use crate::model::tracking;
use crate::rpc::{admin_service, ams_service, client_service, haservice, tracker_service};
use crate::runtime::active::{self, RmControl, ServiceState};
use crate::runtime::amrm_verifier::{AmrmVerifier, KeySlot};
use crate::runtime::context::RmContext;
use crate::runtime::core::CoreHandle;
use crate::runtime::delegation_verifier::DelegationVerifier;
use crate::runtime::impersonation::Impersonator;
use crate::runtime::service_authz::ServiceAuthorizer;
use crate::runtime::{failover, ha_conf};
use crate::state::build as state_build;
use crate::state::Settings;
use crate::time::Clock;
use crate::{store, web};
use read::Read;

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
                instance_conf = ha_instance(conf, h)?;
                &instance_conf
            }
            None => conf,
        };
        let rm_id = ha.as_ref().map(|h| h.rm_id.clone());
        let clock = Clock::start();
        let read = Read::read(conf, conf_dir.as_deref(), clock.now().mono_ms).await?;
        let spnego = read.spnego.clone();
        // Under Kerberos the client, admin and resource-tracker ports take
        // Kerberos only (no SIMPLE), as Hadoop's with its RM principal.
        let kerberos_only: Option<Vec<Mechanism>> = read
            .kerberos
            .clone()
            .map(|identity| vec![Mechanism::Kerberos(Arc::new(identity))]);
        let standby_message = match &rm_id {
            Some(id) => format!("ResourceManager {id} is not Active!"),
            None => "ResourceManager is not Active!".to_string(),
        };
        let keys = KeySlot::new(standby_message);
        // The web listener is bound first: the tracking URLs the RM hands
        // out name its bound port.
        let (web_listener, web_bound, web_addresses) = bind_web(conf).await?;
        let context = Arc::new(RmContext {
            core: CoreHandle::standby(rm_id.as_deref()),
            rm_id: rm_id.clone(),
            standby_admin_acl: std::sync::RwLock::new(read.admin_acl),
            conf_dir,
            cluster_ts: std::sync::atomic::AtomicI64::new(clock.now().wall_ms as i64),
            rm_version: format!("spindle-{}", env!("CARGO_PKG_VERSION")),
            min_allocation: read.min_allocation,
            max_allocation: read.max_allocation,
            scheduler_kind: read.scheduler_kind,
            topology: read.topology,
            acl_enabled: read.acl_enabled,
            groups: GroupCache::new(read.groups_ttl).with_overrides(read.group_overrides.clone()),
            daemon_user: read.daemon_user,
            max_reply_bytes: read.max_reply_bytes,
            web: web_addresses,
            proxy_users: std::sync::RwLock::new(Arc::new(read.proxy_users)),
            names: read.names.clone(),
            kerberos: read.kerberos.is_some(),
            service_policy: std::sync::RwLock::new(read.service_policy.clone().map(Arc::new)),
        });
        // hadoop.security.authorization: every port checks each new
        // connection against hadoop-policy.xml.
        let authorization: Option<Arc<dyn ServiceAuthorization>> = read
            .service_policy
            .is_some()
            .then(|| Arc::new(ServiceAuthorizer(context.clone())) as Arc<dyn ServiceAuthorization>);
        // Kerberos callers may act for others as hadoop.proxyuser.* allows,
        // on the ports clients and administrators use.
        let impersonation: Option<Arc<dyn Impersonation>> =
            Some(Arc::new(Impersonator(context.clone())));
        // Without HA, calls that arrive before the state exists wait for it
        // in the first activation's channel (as they always did).
        let first = ha.is_none().then(|| {
            let inbox = context.core.channel();
            context.core.serve(&inbox);
            inbox
        });

        // Under Kerberos the client port also takes RM delegation tokens
        // (Hadoop's TOKEN method), before KERBEROS as Hadoop lists them.
        let client_mechanisms = kerberos_only.clone().map(|mut mechanisms| {
            mechanisms.insert(
                0,
                Mechanism::token(DelegationVerifier {
                    slot: keys.clone(),
                    names: read.names.clone(),
                }),
            );
            mechanisms
        });
        let client = bind_rpc(
            conf,
            "yarn.resourcemanager.address",
            vec![client_service::service(context.clone())],
            "rm-client",
            client_mechanisms,
            impersonation.clone(),
            authorization.clone(),
        )
        .await?;
        // The scheduler port accepts only AMRMToken-authenticated connections.
        let scheduler_server = bind_rpc(
            conf,
            "yarn.resourcemanager.scheduler.address",
            vec![ams_service::service(context.clone())],
            "rm-scheduler",
            Some(vec![Mechanism::token(AmrmVerifier(keys.clone()))]),
            None,
            authorization.clone(),
        )
        .await?;
        let scheduler_service = service_name(scheduler_server.local_addr());
        let tracker = bind_rpc(
            conf,
            "yarn.resourcemanager.resource-tracker.address",
            vec![tracker_service::service(context.clone())],
            "rm-tracker",
            kerberos_only.clone(),
            None,
            authorization.clone(),
        )
        .await?;

        let state_conf = state_build::StateConf {
            scheduler: read.scheduler,
            nodes: NodeConfig {
                liveness_expiry_ms: read.expiry_ms,
                heartbeat_interval_ms: read.heartbeat_ms,
                min_allocation: read.min_allocation,
                default_graceful_timeout_ms: read.graceful_timeout_ms,
                default_rack: "/default-rack".into(),
            },
            hosts: read.hosts,
            settings: Settings {
                acl_enabled: read.acl_enabled,
                max_application_priority: read.max_application_priority,
                am_expiry_ms: read.am_expiry_ms,
                limits: read.limits,
                work_preserving: read.work_preserving,
                scheduling_wait_ms: read.scheduling_wait_ms,
                log_aggregation: read.log_aggregation,
                ..Settings::new(0)
            },
            queue_file: read.queue_file,
            max_completed: read.max_completed,
            am_max_attempts: read.am_max_attempts,
            key_rolling: read.key_rolling,
            container_token_expiry_ms: read.container_token_expiry_ms,
            scheduler_service,
            delegation: read.delegation,
        };
        let active_conf = active::ActiveConf {
            clock,
            store: read.store,
            state: state_conf,
            // Check liveness often enough that expiry is noticed within a
            // tenth of its interval.
            tick: Duration::from_millis((read.expiry_ms / 10).clamp(50, 1000)),
            launcher: read.launcher,
            log_retention: read.log_retention,
        };
        let control = active::RmControl::new(context.clone(), keys, active_conf, ha.clone());

        // The admin port serves HAServiceProtocol with HA, as Hadoop's AdminService.
        let mut admin_services = vec![admin_service::service(context.clone())];
        if ha.is_some() {
            admin_services.push(haservice::service(control.clone()));
        }
        let admin = bind_rpc(
            conf,
            "yarn.resourcemanager.admin.address",
            admin_services,
            "rm-admin",
            kerberos_only,
            impersonation,
            authorization,
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
        // SPNEGO, when on, before everything else the web does.
        let routes = match &spnego {
            Some(s) => web::router(web).layer(axum::middleware::from_fn_with_state(
                s.clone(),
                spindle_web::spnego::authenticate,
            )),
            None => web::router(web),
        };
        let web = spindle_web::WebServer::serve(web_listener, routes, "rm-web")
            .map_err(|source| bind_error(conf_keys::RM_WEBAPP_ADDRESS, web_bound, source))?;
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

/// `yarn.resourcemanager.bind-host`: the host every RM port listens on
/// when set, as Hadoop's.
const BIND_HOST_KEY: &str = "yarn.resourcemanager.bind-host";

/// With HA, this RM's own view of the configuration (the `.rm-id`
/// suffixed addresses), said in the log.
fn ha_instance(conf: &Configuration, h: &ha_conf::HaConf) -> Result<Configuration, RmError> {
    let instance = h.instance_conf(conf)?;
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
    Ok(instance)
}

fn bind_error(key: &str, addr: SocketAddr, source: std::io::Error) -> RmError {
    RmError::Bind {
        key: key.to_string(),
        addr,
        source,
    }
}

/// Binds `yarn.resourcemanager.webapp.address`: the listener, its bound
/// address, and the addresses the RM hands out in tracking URLs (which
/// name the bound port).
async fn bind_web(
    conf: &Configuration,
) -> Result<(std::net::TcpListener, SocketAddr, tracking::WebAddresses), RmError> {
    let key = conf_keys::RM_WEBAPP_ADDRESS;
    let addr = listen_addr(conf, key, BIND_HOST_KEY).await?;
    let listener = std::net::TcpListener::bind(addr).map_err(|e| bind_error(key, addr, e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| bind_error(key, addr, e))?;
    let (host, _) = conf.get_socket_addr(key)?;
    let addresses = tracking::WebAddresses::new(
        crate::web_host::resolved_host_port(&host, bound.port()),
        conf.get(tracking::PROXY_ADDRESS_KEY).as_deref(),
    );
    Ok((listener, bound, addresses))
}

/// Binds the RPC port `key` names, serving `services`; `mechanisms`
/// replaces the SASL mechanisms the IPC settings give; `impersonation`
/// decides who may act for whom there.
async fn bind_rpc(
    conf: &Configuration,
    key: &'static str,
    services: Vec<Service>,
    name: &str,
    mechanisms: Option<Vec<Mechanism>>,
    impersonation: Option<Arc<dyn Impersonation>>,
    authorization: Option<Arc<dyn ServiceAuthorization>>,
) -> Result<RpcServer, RmError> {
    let addr = listen_addr(conf, key, BIND_HOST_KEY).await?;
    let mut cfg = ipc_server_config(conf, name)?;
    if let Some(mechanisms) = mechanisms {
        cfg.mechanisms = mechanisms;
    }
    cfg.impersonation = impersonation;
    cfg.authorization = authorization;
    RpcServer::bind(addr, services, cfg)
        .await
        .map_err(|source| bind_error(key, addr, source))
}

/// The scheduler address as the service of the AMRMTokens the RM issues:
/// a wildcard bind is named by the loopback address.
fn service_name(bound: SocketAddr) -> String {
    let host = if bound.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        bound.ip().to_string()
    };
    format!("{host}:{}", bound.port())
}

#[cfg(test)]
mod start_tests {
    use super::*;
    use spindle_scheduler::SchedulerKind;

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
}
