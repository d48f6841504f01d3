//! The native `mapreduce_shuffle` (the entry of [`super::native`] for its
//! class): a service whose class is Hadoop's
//! `org.apache.hadoop.mapred.ShuffleHandler` (without a `.classpath`, and not
//! marked `spindle.nodemanager.aux-services.<name>.java-hosted`) is served by
//! `spindle_shuffle` in the NodeManager's process. Its settings are the
//! node's configuration (plus the service's manifest properties): Hadoop's
//! `mapreduce.shuffle.*` keys; map outputs are read under the node's
//! `yarn.nodemanager.local-dirs`; with recovery on, the job tokens are kept
//! in `<yarn.nodemanager.recovery.dir>/nm-aux-services/<name>` (Hadoop's
//! `setRecoveryPath`), so a restarted node still serves the applications it
//! had.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use spindle_common::Configuration;
use spindle_shuffle::{ShuffleConfig, ShuffleServer};

use super::{AuxConfig, AuxService, ContainerContext, ServiceSpec};
use crate::error::NmError;

/// The native shuffle as an auxiliary service.
pub struct NativeShuffle {
    server: Mutex<Option<ShuffleServer>>,
}

fn error(spec: &ServiceSpec, message: String) -> NmError {
    NmError::AuxService {
        name: spec.name.clone(),
        message,
    }
}

/// The shuffle's settings from the node's configuration and the service's
/// own properties.
pub fn shuffle_config(spec: &ServiceSpec, cfg: &AuxConfig) -> Result<ShuffleConfig, NmError> {
    let mut conf = Configuration::empty();
    for (k, v) in cfg.properties.iter().chain(&spec.properties) {
        conf.set(k, v.clone());
    }
    let mut config = ShuffleConfig::from_conf(&conf, cfg.local_dirs.clone())
        .map_err(|e| error(spec, e.to_string()))?;
    if let Some(root) = &cfg.recovery_root {
        let dir = root.join(&spec.name);
        std::fs::create_dir_all(&dir).map_err(|e| {
            error(
                spec,
                format!("cannot create its recovery dir {}: {e}", dir.display()),
            )
        })?;
        config.recovery_dir = Some(dir);
    }
    Ok(config)
}

impl NativeShuffle {
    /// Starts the server; its meta data is the port (4 bytes, big-endian),
    /// as Hadoop's `ShuffleHandler.getMetaData`.
    pub async fn start(
        spec: &ServiceSpec,
        cfg: &AuxConfig,
    ) -> Result<(Arc<dyn AuxService>, Option<Vec<u8>>), NmError> {
        let config = shuffle_config(spec, cfg)?;
        let server = ShuffleServer::start(config)
            .await
            .map_err(|e| error(spec, e.to_string()))?;
        let meta = server.meta_data();
        tracing::info!(service = %spec.name, port = server.port(), "native shuffle listening");
        let svc: Arc<dyn AuxService> = Arc::new(NativeShuffle {
            server: Mutex::new(Some(server)),
        });
        Ok((svc, Some(meta)))
    }

    fn with<T>(&self, f: impl FnOnce(&ShuffleServer) -> T) -> Option<T> {
        self.server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(f)
    }
}

impl AuxService for NativeShuffle {
    fn initialize_application<'a>(
        &'a self,
        user: &'a str,
        app_id: &'a str,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<(), String>> {
        let r = self
            .with(|s| {
                s.add_application(app_id, user, data)
                    .map_err(|e| e.to_string())
            })
            .unwrap_or_else(|| Err("the shuffle is stopped".into()));
        Box::pin(async move { r })
    }

    fn stop_application<'a>(&'a self, app_id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        self.with(|s| s.remove_application(app_id));
        Box::pin(async { Ok(()) })
    }

    fn initialize_container<'a>(
        &'a self,
        _ctx: &'a ContainerContext,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn stop_container<'a>(
        &'a self,
        _ctx: &'a ContainerContext,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        // Dropping the server closes its listener and connections.
        let server = self.server.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(server);
        Box::pin(async {})
    }
}
