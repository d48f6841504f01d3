//! The auxiliary services the NodeManager runs in its own process, by the
//! Hadoop class they stand for.
//!
//! A configured service runs natively when its class is in [`NATIVE`] and
//! it may run natively ([`ServiceSpec::may_run_natively`]: no `.classpath`
//! of its own, not marked `spindle.nodemanager.aux-services.<name>.java-hosted`);
//! any other runs in the Java host ([`super::java`]). A second native
//! service is one entry in [`NATIVE`] and a module of its own, as the
//! shuffle is ([`super::shuffle`]).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::config::SHUFFLE_HANDLER_CLASS;
use super::shuffle::NativeShuffle;
use super::{AuxConfig, AuxService, ServiceSpec};
use crate::error::NmError;

/// A native service started (Hadoop's `serviceInit` and `serviceStart`):
/// the service and its meta data (`None`: it has none).
pub type StartResult = Result<(Arc<dyn AuxService>, Option<Vec<u8>>), NmError>;

/// Starts a native service for its configured spec, given the node's
/// aux-service settings; a failure names the service.
pub type Start = for<'a> fn(&'a ServiceSpec, &'a AuxConfig) -> BoxFuture<'a, StartResult>;

/// A native implementation of a Hadoop auxiliary service class.
pub struct NativeService {
    /// The Hadoop class it stands for.
    pub class: &'static str,
    /// Starts it.
    pub start: Start,
}

/// The native services, one per Hadoop class.
pub const NATIVE: &[NativeService] = &[
    // `mapreduce_shuffle`: Hadoop's ShuffleHandler, served by `spindle_shuffle`.
    NativeService {
        class: SHUFFLE_HANDLER_CLASS,
        start: |spec, cfg| Box::pin(NativeShuffle::start(spec, cfg)),
    },
];

/// The native implementation that runs `spec`, if any.
pub fn native_for(spec: &ServiceSpec) -> Option<&'static NativeService> {
    if !spec.may_run_natively() {
        return None;
    }
    NATIVE.iter().find(|n| n.class == spec.class)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(class: &str) -> ServiceSpec {
        ServiceSpec {
            name: "svc".into(),
            class: class.into(),
            classpath: None,
            system_classes: None,
            properties: Vec::new(),
            java_hosted: false,
        }
    }

    #[test]
    fn the_shuffle_handler_class_selects_the_native_shuffle() {
        let shuffle = native_for(&spec(SHUFFLE_HANDLER_CLASS)).expect("native");
        assert_eq!(shuffle.class, SHUFFLE_HANDLER_CLASS);
        // Its own class path or `java-hosted` sends it to the Java host.
        let with_classpath = ServiceSpec {
            classpath: Some("/opt/hadoop/share/mapreduce/*".into()),
            ..spec(SHUFFLE_HANDLER_CLASS)
        };
        assert!(native_for(&with_classpath).is_none());
        let hosted = ServiceSpec {
            java_hosted: true,
            ..spec(SHUFFLE_HANDLER_CLASS)
        };
        assert!(native_for(&hosted).is_none());
        // Any other class runs in the Java host.
        assert!(native_for(&spec("org.apache.spark.network.yarn.YarnShuffleService")).is_none());
    }

    #[test]
    fn each_class_has_one_native_service() {
        let mut classes: Vec<&str> = NATIVE.iter().map(|n| n.class).collect();
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(classes.len(), NATIVE.len());
    }
}
