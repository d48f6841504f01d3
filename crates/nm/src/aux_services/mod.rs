//! Auxiliary services: Hadoop's `AuxServices` in the NodeManager.
//!
//! A node runs the services `yarn.nodemanager.aux-services` names
//! ([`config`]); each is started before the node registers (one that fails
//! to start fails the node's start) and stopped when the node stops. A
//! service's meta data (e.g. the shuffle port) is returned in every
//! `StartContainersResponse` (`services_meta_data`, as Hadoop's
//! `ContainerManagerImpl` returns `getAuxServiceMetaData()`), and a
//! container's `service_data` names services that must exist (Hadoop's
//! `InvalidAuxServiceException` otherwise).
//!
//! The events Hadoop's `AuxServices.handle` receives reach the services in
//! the order they happened, from one dispatcher task (Hadoop's
//! `AsyncDispatcher`), never blocking `startContainers`:
//! `initializeApplication` for each container that carries service data
//! (Hadoop sends `APPLICATION_INIT` per container, "as each container may
//! have distinct service data"), `initializeContainer`/`stopContainer` to
//! every service, `stopApplication` to every service when the application
//! is over on the node. A service's failure on an event is logged, as
//! Hadoop's `logWarningWhenAuxServiceThrowExceptions`.
//!
//! Services, by class:
//! - a class the NodeManager implements natively ([`native`], without a
//!   `.classpath` and not marked `java-hosted`): run in its process;
//!   there is one, `org.apache.hadoop.mapred.ShuffleHandler`, the native
//!   shuffle ([`shuffle`], `spindle_shuffle`);
//! - any other class: hosted in one JVM per node ([`java`]).

pub mod config;
pub mod frame;
pub mod java;
pub mod native;
pub mod shuffle;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use spindle_common::text::escaped;
use tokio::sync::mpsc;
use tracing::{info, warn};

pub use config::{AuxConfig, ServiceSpec};

use crate::error::NmError;

/// Hadoop's `ContainerType`, as `initializeContainer` gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerType {
    ApplicationMaster,
    Task,
}

/// What `initializeContainer` and `stopContainer` are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerContext {
    pub user: String,
    pub container_id: String,
    pub memory_mb: i64,
    pub vcores: i32,
    pub container_type: ContainerType,
}

/// One running auxiliary service (Hadoop's `AuxiliaryService` once
/// started). Errors are messages for the log.
pub trait AuxService: Send + Sync {
    fn initialize_application<'a>(
        &'a self,
        user: &'a str,
        app_id: &'a str,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<(), String>>;
    fn stop_application<'a>(&'a self, app_id: &'a str) -> BoxFuture<'a, Result<(), String>>;
    fn initialize_container<'a>(
        &'a self,
        ctx: &'a ContainerContext,
    ) -> BoxFuture<'a, Result<(), String>>;
    fn stop_container<'a>(&'a self, ctx: &'a ContainerContext)
        -> BoxFuture<'a, Result<(), String>>;
    /// Hadoop's `serviceStop` (the Java host stops its services itself).
    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// A started service: its name, itself, its meta data.
pub type Started = (String, Arc<dyn AuxService>, Option<Vec<u8>>);

/// One event for the services, in the order it happened.
#[derive(Debug)]
enum AuxEvent {
    AppInit {
        service: String,
        user: String,
        app_id: String,
        data: Vec<u8>,
    },
    AppStop {
        app_id: String,
    },
    ContainerInit(ContainerContext),
    ContainerStop(ContainerContext),
    /// Answered once the events before it are handled.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The node's auxiliary services. Cheap to share (`Arc`).
pub struct AuxServices {
    services: Vec<(String, Arc<dyn AuxService>)>,
    meta: MetaData,
    events: Option<mpsc::UnboundedSender<AuxEvent>>,
    java: Option<Arc<java::JavaHost>>,
    dispatcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for AuxServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuxServices")
            .field(
                "services",
                &self.services.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("meta", &self.meta_data())
            .finish()
    }
}

impl AuxServices {
    /// A node without services.
    pub fn none() -> AuxServices {
        AuxServices {
            services: Vec::new(),
            meta: MetaData::default(),
            events: None,
            java: None,
            dispatcher: Mutex::new(None),
        }
    }

    /// Services already started, with their meta data (`None`: the service
    /// has none, and service data for it is refused, as in Hadoop).
    /// Must run inside a tokio runtime.
    pub fn from_started(services: Vec<Started>) -> AuxServices {
        let mut meta = BTreeMap::new();
        let mut list = Vec::new();
        for (name, s, m) in services {
            if let Some(m) = m {
                meta.insert(name.clone(), m);
            }
            list.push((name, s));
        }
        let mut this = AuxServices::none();
        *this.meta.0.write().unwrap_or_else(|p| p.into_inner()) = meta;
        this.services = list;
        if !this.services.is_empty() {
            let (tx, rx) = mpsc::unbounded_channel();
            let services = this.services.clone();
            this.events = Some(tx);
            *this.dispatcher.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(tokio::spawn(dispatch(services, rx)));
        }
        this
    }

    /// Starts the configured services (Hadoop's `serviceInit` and
    /// `serviceStart`): a service that cannot start is an error naming it.
    pub async fn start(cfg: &AuxConfig) -> Result<AuxServices, NmError> {
        if cfg.services.is_empty() {
            return Ok(AuxServices::none());
        }
        let mut started: Vec<Started> = Vec::new();
        let java_specs: Vec<ServiceSpec> = cfg
            .services
            .iter()
            .filter(|s| native::native_for(s).is_none())
            .cloned()
            .collect();
        for (s, n) in cfg
            .services
            .iter()
            .filter_map(|s| native::native_for(s).map(|n| (s, n)))
        {
            let (svc, meta) = (n.start)(s, cfg).await?;
            info!(service = %s.name, class = %s.class, "auxiliary service started (native)");
            started.push((s.name.clone(), svc, meta));
        }
        let mut host = None;
        let shared = MetaData::default();
        if !java_specs.is_empty() {
            let (h, metas) = java::JavaHost::start(cfg, java_specs, shared.clone()).await?;
            for (name, meta) in metas {
                let svc: Arc<dyn AuxService> = Arc::new(java::JavaService::new(h.clone(), &name));
                started.push((name, svc, meta));
            }
            host = Some(h);
        }
        // In the configured order.
        started.sort_by_key(|(n, _, _)| cfg.services.iter().position(|s| &s.name == n));
        let mut this = AuxServices::from_started(started);
        // One map, which a restarted Java host updates.
        let meta = this.meta_data();
        *shared.0.write().unwrap_or_else(|p| p.into_inner()) = meta;
        this.meta = shared;
        this.java = host;
        Ok(this)
    }

    /// Every started service's meta data, by name (Hadoop's
    /// `getAuxServiceMetaData()`).
    pub fn meta_data(&self) -> BTreeMap<String, Vec<u8>> {
        self.meta
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The meta data as containers' `NM_AUX_SERVICE_<name>` variables
    /// (base64, as Hadoop's `AuxiliaryServiceHelper`).
    pub fn meta_env(&self) -> Vec<(String, String)> {
        use base64::Engine as _;
        self.meta_data()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    base64::engine::general_purpose::STANDARD.encode(v),
                )
            })
            .collect()
    }

    /// The names of the running services.
    pub fn names(&self) -> Vec<String> {
        self.services.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Hadoop's check of a container's service data: every name must have
    /// meta data. The message is Hadoop's.
    pub fn check_service_data<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), String> {
        let meta = self.meta.0.read().unwrap_or_else(|p| p.into_inner());
        for n in names {
            if !meta.contains_key(n) {
                return Err(format!("The auxService:{n} does not exist"));
            }
        }
        Ok(())
    }

    fn send(&self, e: AuxEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(e);
        }
    }

    /// A container starts: `initializeContainer` to every service, then
    /// `initializeApplication` for each of its service data entries.
    pub fn container_started(
        &self,
        ctx: ContainerContext,
        app_id: &str,
        service_data: &[(String, Vec<u8>)],
    ) {
        if self.events.is_none() {
            return;
        }
        let user = ctx.user.clone();
        self.send(AuxEvent::ContainerInit(ctx));
        for (name, data) in service_data {
            self.send(AuxEvent::AppInit {
                service: name.clone(),
                user: user.clone(),
                app_id: app_id.to_string(),
                data: data.clone(),
            });
        }
    }

    /// A container is done: `stopContainer` to every service.
    pub fn container_stopped(&self, ctx: ContainerContext) {
        self.send(AuxEvent::ContainerStop(ctx));
    }

    /// An application is over on the node: `stopApplication` to every
    /// service.
    pub fn application_stopped(&self, app_id: &str) {
        self.send(AuxEvent::AppStop {
            app_id: app_id.to_string(),
        });
    }

    /// Waits until the events sent so far are handled.
    pub async fn drain(&self) {
        let Some(tx) = &self.events else { return };
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        if tx.send(AuxEvent::Flush(done_tx)).is_ok() {
            let _ = done_rx.await;
        }
    }

    /// Stops every service (Hadoop's `serviceStop`), then the Java host.
    pub async fn stop(&self) {
        let handle = self
            .dispatcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            h.abort();
        }
        for (_, s) in &self.services {
            s.stop().await;
        }
        if let Some(h) = &self.java {
            h.stop().await;
        }
        for (name, _) in &self.services {
            info!(service = %name, "auxiliary service stopped");
        }
    }

    /// The Java host's process id, when one runs.
    pub fn java_host_pid(&self) -> Option<u32> {
        self.java.as_ref().and_then(|h| h.pid())
    }
}

/// The services' meta data, shared with the Java host, which replaces a
/// service's when a restarted JVM started it anew.
#[derive(Debug, Clone, Default)]
pub struct MetaData(Arc<std::sync::RwLock<BTreeMap<String, Vec<u8>>>>);

impl MetaData {
    pub(crate) fn set(&self, name: &str, meta: Option<Vec<u8>>) {
        let mut m = self.0.write().unwrap_or_else(|p| p.into_inner());
        match meta {
            Some(v) => {
                m.insert(name.to_string(), v);
            }
            None => {
                m.remove(name);
            }
        }
    }
}

async fn dispatch(
    services: Vec<(String, Arc<dyn AuxService>)>,
    mut rx: mpsc::UnboundedReceiver<AuxEvent>,
) {
    while let Some(e) = rx.recv().await {
        if let AuxEvent::Flush(done) = e {
            let _ = done.send(());
            continue;
        }
        match &e {
            AuxEvent::AppInit {
                service,
                user,
                app_id,
                data,
            } => {
                if let Some((_, s)) = services.iter().find(|(n, _)| n == service) {
                    if let Err(m) = s.initialize_application(user, app_id, data).await {
                        warn_event(service, "APPLICATION_INIT", &m);
                    }
                }
            }
            AuxEvent::AppStop { app_id } => {
                for (n, s) in &services {
                    if let Err(m) = s.stop_application(app_id).await {
                        warn_event(n, "APPLICATION_STOP", &m);
                    }
                }
            }
            AuxEvent::ContainerInit(ctx) => {
                for (n, s) in &services {
                    if let Err(m) = s.initialize_container(ctx).await {
                        warn_event(n, "CONTAINER_INIT", &m);
                    }
                }
            }
            AuxEvent::ContainerStop(ctx) => {
                for (n, s) in &services {
                    if let Err(m) = s.stop_container(ctx).await {
                        warn_event(n, "CONTAINER_STOP", &m);
                    }
                }
            }
            AuxEvent::Flush(_) => {}
        }
    }
}

fn warn_event(service: &str, event: &str, message: &str) {
    warn!(
        "The auxService name is {service} and it got an error at event: {event}: {}",
        escaped(message)
    );
}
