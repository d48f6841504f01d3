//! Settings the ResourceManager reads at start-up that belong to no one
//! part of it: listen addresses, positive numbers, container placement,
//! reply bounds, IPC server settings.

use std::net::SocketAddr;

use spindle_common::conf::Configuration;
use spindle_ipc::ServerConfig;
use spindle_scheduler::{NodeSelectionKind, PackingConfig, SchedulerKind};

use crate::error::RmError;

/// Resolves `key` (host:port) to a listen address, honouring
/// `yarn.resourcemanager.bind-host` like Hadoop.
pub(crate) async fn listen_addr(
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

pub(crate) fn positive(conf: &Configuration, key: &str) -> Result<i64, RmError> {
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
pub(crate) fn placement_settings(
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

/// The most a reply listing applications may carry: the client's
/// `ipc.maximum.response.length` (Hadoop's default 128 MiB; 0 turns the
/// client's check off, and this bound with it) less 1 MiB for the RPC
/// header and the reply's other fields. The RM reads the key from its own
/// configuration, which clients share unless they set their own.
pub(crate) fn max_reply_bytes(conf: &Configuration) -> Result<Option<usize>, RmError> {
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
