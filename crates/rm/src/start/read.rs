//! Start-up, step one: everything the ResourceManager reads from its
//! configuration before it binds a port. A setting it cannot use stops it
//! here, with the key named, before anything listens.

use std::path::Path;
use std::time::Duration;

use std::sync::Arc;

use spindle_common::conf::{keys as conf_keys, Configuration};
use spindle_common::resource::Resource;
use spindle_common::security::proxy_users::ProxyUsers;
use spindle_ipc::kerberos::{self, KerberosIdentity};
use spindle_scheduler::{Scheduler, SchedulerConfig, SchedulerKind};
use spindle_web::spnego::Spnego;
use tracing::info;

use super::settings::{max_reply_bytes, placement_settings, positive};
use crate::acl;
use crate::error::RmError;
use crate::hosts::HostLists;
use crate::model::keys::KeyRolling;
use crate::model::limits;
use crate::model::limits::max_application_priority;
use crate::queue_files::QueueFile;
use crate::runtime::{launcher, log_retention};
use crate::topology::Topology;
use crate::{log_aggregation, store};

/// What the RM read from its configuration.
pub(super) struct Read {
    pub store: Option<store::StoreConf>,
    pub work_preserving: bool,
    pub scheduling_wait_ms: u64,
    pub min_allocation: Resource,
    pub max_allocation: Resource,
    pub expiry_ms: u64,
    pub heartbeat_ms: i64,
    pub graceful_timeout_ms: u64,
    pub max_completed: usize,
    pub am_max_attempts: i32,
    pub hosts: HostLists,
    pub scheduler_kind: SchedulerKind,
    pub scheduler: SchedulerConfig,
    pub queue_file: QueueFile,
    pub topology: Topology,
    pub acl_enabled: bool,
    pub max_application_priority: i32,
    pub limits: limits::Limits,
    pub max_reply_bytes: Option<usize>,
    pub daemon_user: Option<String>,
    pub admin_acl: acl::Acl,
    pub groups_ttl: Duration,
    /// `hadoop.user.group.static.mapping.overrides`.
    pub group_overrides: std::collections::HashMap<String, Vec<String>>,
    pub launcher: launcher::Launcher,
    pub am_expiry_ms: u64,
    pub container_token_expiry_ms: u64,
    pub key_rolling: KeyRolling,
    pub log_aggregation: log_aggregation::LogAggregationConf,
    pub log_retention: Option<log_retention::LogRetention>,
    /// The RM's Kerberos principal and keytab when Kerberos is on: its
    /// client, admin and resource-tracker ports then take Kerberos only.
    pub kerberos: Option<KerberosIdentity>,
    /// `hadoop.proxyuser.*`: who may act for whom on the client and admin
    /// ports.
    pub proxy_users: ProxyUsers,
    /// `hadoop.security.auth_to_local`: the short names of principals
    /// (delegation tokens' renewers and owners).
    pub names: std::sync::Arc<spindle_common::security::auth_to_local::AuthToLocal>,
    /// `yarn.resourcemanager.delegation.*`.
    pub delegation: crate::model::delegation::DelegationConf,
    /// `hadoop-policy.xml`'s ACLs when `hadoop.security.authorization` is on.
    pub service_policy: Option<spindle_common::security::service_acl::ServicePolicy>,
    /// SPNEGO on the web, when `hadoop.http.authentication.type=kerberos`.
    pub spnego: Option<Arc<Spnego>>,
}

impl Read {
    /// Reads and checks the settings; `now_mono_ms` starts the key-rolling
    /// schedule.
    pub(super) async fn read(
        conf: &Configuration,
        conf_dir: Option<&Path>,
        now_mono_ms: u64,
    ) -> Result<Read, RmError> {
        // A store configuration this RM cannot use stops it before it serves.
        let store = store::StoreConf::from_conf(conf).map_err(RmError::Invalid)?;
        let work_preserving = conf.get_bool(conf_keys::RM_WORK_PRESERVING_RECOVERY_ENABLED)?;
        let scheduling_wait_ms = conf
            .get_i64(conf_keys::RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS)?
            .max(0) as u64;
        let (min_allocation, max_allocation) = allocation_bounds(conf)?;
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
        let hosts = crate::hosts::HostFiles::from_conf(conf)
            .read()
            .map_err(RmError::Invalid)?;
        let scheduler_kind = scheduler_kind(conf)?;
        let queue_file = crate::queue_files::load(scheduler_kind, conf, conf_dir)
            .map_err(|e| RmError::Invalid(e.to_string()))?;
        let topology = Topology::from_conf(conf).map_err(RmError::Invalid)?;
        let daemon_user = acl::daemon_user().await;
        let admin_acl = acl::admin_acl(
            conf.get("yarn.admin.acl").as_deref(),
            daemon_user.as_deref(),
        );
        let groups_ttl = Duration::from_secs(
            conf.get_i64(conf_keys::HADOOP_SECURITY_GROUPS_CACHE_SECS)?
                .max(0) as u64,
        );
        let (node_selection, packing) = placement_settings(conf, scheduler_kind)?;
        let scheduler = SchedulerConfig {
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
        Scheduler::new(scheduler.clone()).map_err(|e| RmError::Invalid(e.to_string()))?;
        info!(
            scheduler = %scheduler_kind,
            queues = queue_file.tree.root.walk().len(),
            placement = %node_selection,
            racks = %topology.describe(),
            "scheduler configured"
        );
        let kerberos = kerberos_identity(conf)?;
        let service_policy = if conf.get_bool(conf_keys::HADOOP_SECURITY_AUTHORIZATION)? {
            Some(
                crate::runtime::service_authz::read_policy(conf, conf_dir)
                    .map_err(RmError::Invalid)?,
            )
        } else {
            None
        };
        Ok(Read {
            spnego: spnego(conf)?,
            service_policy,
            store,
            work_preserving,
            scheduling_wait_ms,
            min_allocation,
            max_allocation,
            expiry_ms,
            heartbeat_ms,
            graceful_timeout_ms: graceful_s.max(0) as u64 * 1000,
            max_completed,
            am_max_attempts,
            hosts,
            scheduler_kind,
            scheduler,
            queue_file,
            topology,
            acl_enabled: conf.get_bool("yarn.acl.enable")?,
            max_application_priority: max_application_priority(conf).map_err(RmError::Invalid)?,
            limits: limits::Limits::from_conf(conf)?,
            max_reply_bytes: max_reply_bytes(conf)?,
            daemon_user,
            admin_acl,
            groups_ttl,
            group_overrides: acl::static_group_overrides(
                &conf
                    .get(conf_keys::HADOOP_USER_GROUP_STATIC_MAPPING_OVERRIDES)
                    .unwrap_or_default(),
            )
            .map_err(RmError::Invalid)?,
            // AM containers are started through the NMProxy settings; a bad
            // one stops start-up.
            launcher: launcher::Launcher::new(conf)?,
            am_expiry_ms: positive(conf, "yarn.am.liveness-monitor.expiry-interval-ms")? as u64,
            container_token_expiry_ms: positive(
                conf,
                "yarn.resourcemanager.rm.container-allocation.expiry-interval-ms",
            )? as u64,
            key_rolling: key_rolling(conf, expiry_ms, now_mono_ms)?,
            log_aggregation: log_aggregation::LogAggregationConf::from_conf(conf)?,
            log_retention: log_retention::LogRetention::from_conf(conf)?,
            kerberos: kerberos.clone(),
            proxy_users: ProxyUsers::from_conf(conf).map_err(RmError::Invalid)?,
            names: match &kerberos {
                Some(identity) => identity.names.clone(),
                None => {
                    std::sync::Arc::new(kerberos::names_of(conf, "").map_err(RmError::Invalid)?)
                }
            },
            delegation: crate::model::delegation::DelegationConf {
                key_update_interval_ms: positive(
                    conf,
                    conf_keys::RM_DELEGATION_KEY_UPDATE_INTERVAL,
                )? as u64,
                renew_interval_ms: positive(conf, conf_keys::RM_DELEGATION_TOKEN_RENEW_INTERVAL)?
                    as u64,
                max_lifetime_ms: positive(conf, conf_keys::RM_DELEGATION_TOKEN_MAX_LIFETIME)?
                    as u64,
                ..Default::default()
            },
        })
    }
}

/// `yarn.resourcemanager.principal` and `.keytab` under Kerberos, `_HOST`
/// standing for the host of `yarn.resourcemanager.address` (the machine's
/// host name when that is a wildcard), as Hadoop's `doSecureLogin`.
fn kerberos_identity(conf: &Configuration) -> Result<Option<KerberosIdentity>, RmError> {
    if !kerberos::enabled(conf).map_err(RmError::Invalid)? {
        return Ok(None);
    }
    let host = principal_host(conf, conf_keys::RM_ADDRESS, conf_keys::RM_PRINCIPAL)?;
    kerberos::daemon_identity(conf, conf_keys::RM_PRINCIPAL, conf_keys::RM_KEYTAB, &host)
        .map_err(RmError::Invalid)
}

/// What `_HOST` stands for in a principal of the server at `address_key`:
/// that address's host, or the machine's host name when it is a wildcard.
fn principal_host(
    conf: &Configuration,
    address_key: &str,
    principal_key: &str,
) -> Result<String, RmError> {
    let (host, _) = conf.get_socket_addr(address_key)?;
    let wildcard = host.is_empty()
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_unspecified());
    if !wildcard {
        return Ok(host);
    }
    crate::web_host::machine_hostname().ok_or_else(|| {
        RmError::Invalid(format!(
            "{address_key} is a wildcard and the machine has no host name for _HOST in \
             {principal_key}"
        ))
    })
}

/// SPNEGO on the RM's web (`hadoop.http.authentication.type=kerberos`), with
/// `yarn.resourcemanager.webapp.spnego-principal`/`-keytab-file` or
/// `hadoop.http.authentication.kerberos.*`; `_HOST` is the web address's host.
fn spnego(conf: &Configuration) -> Result<Option<Arc<Spnego>>, RmError> {
    const PRINCIPAL: &str = "yarn.resourcemanager.webapp.spnego-principal";
    const KEYTAB: &str = "yarn.resourcemanager.webapp.spnego-keytab-file";
    let host = principal_host(conf, conf_keys::RM_WEBAPP_ADDRESS, PRINCIPAL)?;
    Spnego::from_conf(
        conf,
        PRINCIPAL,
        KEYTAB,
        &host,
        spindle_common::time::wall_ms_u64,
    )
    .map_err(RmError::Invalid)
}

/// `yarn.scheduler.{minimum,maximum}-allocation-{mb,vcores}`; the maximum
/// may not be below the minimum.
fn allocation_bounds(conf: &Configuration) -> Result<(Resource, Resource), RmError> {
    let min = Resource::new(
        positive(conf, "yarn.scheduler.minimum-allocation-mb")?,
        positive(conf, "yarn.scheduler.minimum-allocation-vcores")? as i32,
    );
    let max = Resource::new(
        positive(conf, "yarn.scheduler.maximum-allocation-mb")?,
        positive(conf, "yarn.scheduler.maximum-allocation-vcores")? as i32,
    );
    if max.memory_mb < min.memory_mb || max.vcores < min.vcores {
        return Err(RmError::Invalid(format!(
            "yarn.scheduler.maximum-allocation-* ({max}) is below the minimum allocation ({min})"
        )));
    }
    Ok((min, max))
}

/// `yarn.resourcemanager.scheduler.class`: one of the three schedulers.
fn scheduler_kind(conf: &Configuration) -> Result<SchedulerKind, RmError> {
    let class_key = "yarn.resourcemanager.scheduler.class";
    let class = conf.get_trimmed(class_key).unwrap_or_default();
    SchedulerKind::from_class_name(&class).ok_or_else(|| {
        RmError::Invalid(format!(
            "{class_key} = '{class}' is not a scheduler Spindle provides; use one of {}, {}, {}",
            SchedulerKind::CAPACITY_CLASS,
            SchedulerKind::FAIR_CLASS,
            SchedulerKind::FIFO_CLASS
        ))
    })
}

/// The master-key rolling intervals. As Hadoop's RM, nodes have a rolled
/// key 1.5 liveness expiries before it signs tokens, and the RM refuses to
/// start when a node key would roll again before the previous roll has
/// reached every node.
fn key_rolling(
    conf: &Configuration,
    expiry_ms: u64,
    now_mono_ms: u64,
) -> Result<KeyRolling, RmError> {
    let interval = |key: &str| -> Result<u64, RmError> { Ok(positive(conf, key)? as u64 * 1000) };
    let rolling = KeyRolling {
        amrm_interval_ms: interval(
            "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs",
        )?,
        container_interval_ms: interval(
            "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
        )?,
        nm_interval_ms: interval(
            "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
        )?,
        activation_delay_ms: expiry_ms.saturating_mul(3) / 2,
        ..KeyRolling::daily(now_mono_ms)
    };
    for (key, interval_ms) in [
        (
            "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
            rolling.container_interval_ms,
        ),
        (
            "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
            rolling.nm_interval_ms,
        ),
    ] {
        if interval_ms <= rolling.activation_delay_ms.saturating_mul(2) {
            return Err(RmError::Invalid(format!(
                "{key} ({} s) should be more than 3 x yarn.nm.liveness-monitor.expiry-interval-ms ({expiry_ms} ms)",
                interval_ms / 1000
            )));
        }
    }
    Ok(rolling)
}
