//! The NodeManager's settings, read once from the Hadoop-style configuration.
//!
//! Every value an operator can get wrong is checked here, so that a bad
//! `yarn-site.xml` stops the daemon at start-up with a message naming the key,
//! the value and the file it came from.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spindle_common::conf::keys;
use spindle_common::conf::refuse::{self, Daemon};
use spindle_common::{current_user, ConfError, Configuration, Resource};
use spindle_ipc::client::KerberosClient;
use spindle_ipc::kerberos::{self, KerberosLogin};
use spindle_ipc::yarn_conf::{self, RmRetry};
use spindle_ipc::ConnectRetry;
use spindle_ipc::{Mechanism, ServerConfig};

use crate::disks::DiskHealthConfig;
use crate::error::NmError;
use crate::hardware::{self, HostHardware, ResourceSettings};

/// What this NodeManager reports as its version (`nm_version` at registration).
pub const NM_VERSION: &str = concat!("spindle-", env!("CARGO_PKG_VERSION"));

/// Keys this crate reads that the shared key list does not name. Hadoop
/// ships them without a value in `yarn-default.xml` or added them in 3.3.x;
/// each falls back to Hadoop's behaviour when unset.
pub mod extra_keys {
    /// Low watermark of disk utilization; defaults to the high one.
    pub const DISK_UTILIZATION_WATERMARK_LOW: &str =
        "yarn.nodemanager.disk-health-checker.disk-utilization-watermark-low-per-disk-percentage";
    /// Free space a bad dir needs before it turns good again; defaults to
    /// `min-free-space-per-disk-mb`.
    pub const DISK_FREE_SPACE_WATERMARK_HIGH_MB: &str =
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-watermark-high-mb";
    /// Whether the utilization limit is checked (default true).
    pub const DISK_UTILIZATION_THRESHOLD_ENABLED: &str =
        "yarn.nodemanager.disk-health-checker.disk-utilization-threshold.enabled";
    /// Whether the free-space limit is checked (default true).
    pub const DISK_FREE_SPACE_THRESHOLD_ENABLED: &str =
        "yarn.nodemanager.disk-health-checker.disk-free-space-threshold.enabled";
    /// `HOME` of containers (default `/home/`).
    pub const NM_USER_HOME_DIR: &str = "yarn.nodemanager.user-home-dir";
    /// How long a stopped container is remembered after the RM acknowledged
    /// it (default 600000 ms).
    pub const NM_DURATION_TO_TRACK_STOPPED_CONTAINERS: &str =
        "yarn.nodemanager.duration-to-track-stopped-containers";
}

/// How containers are launched, watched and cleaned up.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSettings {
    /// `yarn.nodemanager.container-monitor.interval-ms`.
    pub monitor_interval: Duration,
    /// `yarn.nodemanager.pmem-check-enabled`.
    pub pmem_check_enabled: bool,
    /// `yarn.nodemanager.vmem-check-enabled`.
    pub vmem_check_enabled: bool,
    /// `yarn.nodemanager.vmem-pmem-ratio`.
    pub vmem_pmem_ratio: f64,
    /// `yarn.nodemanager.sleep-delay-before-sigkill.ms`: SIGTERM to SIGKILL.
    pub sigkill_delay: Duration,
    /// `yarn.nodemanager.env-whitelist`.
    pub env_whitelist: Vec<String>,
    /// `yarn.nodemanager.admin-env` as `(name, value)` pairs.
    pub admin_env: Vec<(String, String)>,
    /// `yarn.nodemanager.user-home-dir`.
    pub user_home_dir: String,
    /// `yarn.nodemanager.delete.debug-delay-sec`: how long a finished
    /// application's directories are kept.
    pub delete_debug_delay: Duration,
    /// `yarn.nodemanager.container.stderr.tail.bytes`: how much of a failed
    /// container's error output goes into its diagnostics.
    pub stderr_tail_bytes: u64,
    /// `yarn.nodemanager.container-diagnostics-maximum-size` (characters).
    pub diagnostics_max_chars: usize,
    /// How long stopped containers are remembered once acknowledged.
    pub track_stopped_for: Duration,
    /// The node's own environment, the source of whitelisted variables
    /// (with `JAVA_HOME` derived from `java` on `PATH` when unset).
    pub nm_env: BTreeMap<String, String>,
    /// The Hadoop client settings of the node's configuration (`fs.*`,
    /// `dfs.*`, `hadoop.*`, `ipc.*`), given to the clients that read
    /// resources from remote file systems (HDFS): NameServices, retries,
    /// failover.
    pub remote_fs: Vec<(String, String)>,
    /// `yarn.nodemanager.localizer.cache.target-size-mb`: what the PUBLIC
    /// and PRIVATE caches are cleaned down to, in bytes.
    pub cache_target_bytes: u64,
    /// `yarn.nodemanager.localizer.cache.cleanup.interval-ms`.
    pub cache_cleanup_interval: Duration,
    /// Log aggregation (`yarn.log-aggregation-enable` and the remote log
    /// dir), or how long local logs stay without it.
    pub log_aggregation: crate::logagg::LogAggregationSettings,
}

impl Default for ContainerSettings {
    /// Hadoop's defaults, with the current process environment.
    fn default() -> Self {
        ContainerSettings {
            monitor_interval: Duration::from_millis(3000),
            pmem_check_enabled: true,
            vmem_check_enabled: true,
            vmem_pmem_ratio: 2.1,
            sigkill_delay: Duration::from_millis(250),
            env_whitelist: [
                "JAVA_HOME",
                "HADOOP_COMMON_HOME",
                "HADOOP_HDFS_HOME",
                "HADOOP_CONF_DIR",
                "CLASSPATH_PREPEND_DISTCACHE",
                "HADOOP_YARN_HOME",
                "HADOOP_HOME",
                "PATH",
                "LANG",
                "TZ",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            admin_env: vec![(
                "MALLOC_ARENA_MAX".to_string(),
                "$MALLOC_ARENA_MAX".to_string(),
            )],
            user_home_dir: "/home/".to_string(),
            delete_debug_delay: Duration::ZERO,
            stderr_tail_bytes: 4096,
            diagnostics_max_chars: 10_000,
            track_stopped_for: Duration::from_millis(600_000),
            nm_env: node_environment(),
            remote_fs: Vec::new(),
            cache_target_bytes: 10240 << 20,
            cache_cleanup_interval: Duration::from_millis(600_000),
            log_aggregation: crate::logagg::LogAggregationSettings::default(),
        }
    }
}

/// The process environment, plus `JAVA_HOME` from `java` on `PATH` when the
/// environment has none.
pub fn node_environment() -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    if env.get("JAVA_HOME").is_none_or(|v| v.is_empty()) {
        if let Some(home) = env
            .get("PATH")
            .and_then(|p| crate::launch::java_home_from_path(p))
        {
            env.insert("JAVA_HOME".to_string(), home);
        }
    }
    env
}

/// Parses `K=V,K2=V2` (Hadoop's admin-env syntax). Entries without `=`
/// are refused.
fn parse_env_list(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((k, v)) = entry.split_once('=') else {
            return Err(format!("'{entry}' is not NAME=VALUE"));
        };
        let k = k.trim();
        if k.is_empty()
            || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || k.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(format!("'{k}' is not a valid environment variable name"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

fn container_settings(conf: &Configuration) -> Result<ContainerSettings, NmError> {
    let d = ContainerSettings::default();
    let positive_ms = |key: &str, default: Duration| -> Result<Duration, NmError> {
        let ms = optional(conf, key, default.as_millis() as i64, |c, k| c.get_i64(k))?;
        if ms <= 0 {
            return Err(conf.invalid_value(key, "must be greater than 0").into());
        }
        Ok(Duration::from_millis(ms.unsigned_abs()))
    };
    let monitor_interval = positive_ms(keys::NM_CONTAINER_MONITOR_INTERVAL_MS, d.monitor_interval)?;
    let sigkill_ms = optional(
        conf,
        keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS,
        d.sigkill_delay.as_millis() as i64,
        |c, k| c.get_i64(k),
    )?;
    let ratio = optional(conf, keys::NM_VMEM_PMEM_RATIO, d.vmem_pmem_ratio, |c, k| {
        c.get_f64(k)
    })?;
    if !(ratio.is_finite() && ratio >= 1.0) {
        return Err(conf
            .invalid_value(keys::NM_VMEM_PMEM_RATIO, "must be a number of at least 1.0")
            .into());
    }
    let whitelist = if conf.get(keys::NM_ENV_WHITELIST).is_some() {
        conf.get_strings(keys::NM_ENV_WHITELIST)
    } else {
        d.env_whitelist.clone()
    };
    let admin_env = match conf.get(keys::NM_ADMIN_ENV) {
        Some(text) => parse_env_list(&text).map_err(|problem| NmError::Config {
            key: keys::NM_ADMIN_ENV.to_string(),
            message: problem,
        })?,
        None => d.admin_env.clone(),
    };
    let debug_delay_s = optional(conf, keys::NM_DELETE_DEBUG_DELAY_SEC, 0, |c, k| {
        c.get_i64(k)
    })?;
    Ok(ContainerSettings {
        monitor_interval,
        pmem_check_enabled: optional(
            conf,
            keys::NM_PMEM_CHECK_ENABLED,
            d.pmem_check_enabled,
            |c, k| c.get_bool(k),
        )?,
        vmem_check_enabled: optional(
            conf,
            keys::NM_VMEM_CHECK_ENABLED,
            d.vmem_check_enabled,
            |c, k| c.get_bool(k),
        )?,
        vmem_pmem_ratio: ratio,
        sigkill_delay: Duration::from_millis(sigkill_ms.max(0).unsigned_abs()),
        env_whitelist: whitelist,
        admin_env,
        user_home_dir: conf
            .get(extra_keys::NM_USER_HOME_DIR)
            .unwrap_or_else(|| d.user_home_dir.clone()),
        // Negative means "keep forever" in Hadoop; a year is as good.
        delete_debug_delay: if debug_delay_s < 0 {
            Duration::from_secs(365 * 24 * 3600)
        } else {
            Duration::from_secs(debug_delay_s.unsigned_abs())
        },
        stderr_tail_bytes: optional(
            conf,
            keys::NM_CONTAINER_STDERR_TAIL_BYTES,
            d.stderr_tail_bytes,
            |c, k| c.get_u64(k),
        )?,
        diagnostics_max_chars: optional(
            conf,
            keys::NM_CONTAINER_DIAGNOSTICS_MAXIMUM_SIZE,
            d.diagnostics_max_chars as u64,
            |c, k| c.get_u64(k),
        )?
        .try_into()
        .unwrap_or(usize::MAX),
        track_stopped_for: positive_ms(
            extra_keys::NM_DURATION_TO_TRACK_STOPPED_CONTAINERS,
            d.track_stopped_for,
        )?,
        nm_env: d.nm_env,
        remote_fs: remote_fs_settings(conf),
        cache_target_bytes: optional(
            conf,
            keys::NM_LOCALIZER_CACHE_TARGET_SIZE_MB,
            d.cache_target_bytes >> 20,
            |c, k| c.get_u64(k),
        )?
        .saturating_mul(1 << 20),
        cache_cleanup_interval: positive_ms(
            keys::NM_LOCALIZER_CACHE_CLEANUP_INTERVAL_MS,
            d.cache_cleanup_interval,
        )?,
        log_aggregation: crate::logagg::LogAggregationSettings::from_conf(conf)?,
    })
}

/// The Hadoop client settings remote file system clients read.
fn remote_fs_settings(conf: &Configuration) -> Vec<(String, String)> {
    spindle_fs::remote_logs::client_settings(conf)
}

/// Everything the NodeManager agent needs to run.
#[derive(Debug, Clone, PartialEq)]
pub struct NmConfig {
    /// The host of the NodeId, i.e. the name the ResourceManager and
    /// ApplicationMasters use to reach this node.
    pub node_host: String,
    /// Host the container-management server listens on.
    pub bind_host: String,
    /// Port of the container-management server; 0 picks a free port, and
    /// the port actually bound becomes the NodeId port.
    pub bind_port: u16,
    /// `host:port` of the ResourceManager resource tracker(s). More than
    /// one with RM HA: the agent moves to the next one when the current
    /// one is unreachable or standby.
    pub resource_tracker_addrs: Vec<String>,
    /// How the agent keeps trying to reach the ResourceManager, as Hadoop's
    /// `ServerRMProxy` does: `yarn.nodemanager.resourcemanager.connect.*`,
    /// else `yarn.resourcemanager.connect.*`, and the `yarn.client.failover-*`
    /// keys with RM HA.
    pub rm_retry: RmRetry,
    /// Connection-level retries (`ipc.client.connect.*`).
    pub rm_connect_retry: ConnectRetry,
    /// The node's Kerberos login to the ResourceManager, under Kerberos.
    pub kerberos: Option<KerberosClient>,
    /// SPNEGO on the node's web (`hadoop.http.authentication.type=kerberos`).
    pub spnego: Option<SharedSpnego>,
    /// `hadoop-policy.xml`'s ACL of the container-management protocol when
    /// `hadoop.security.authorization` is on.
    pub service_policy:
        Option<std::sync::Arc<spindle_common::security::service_acl::ServicePolicy>>,
    /// Port of the NodeManager's web server, reported to the ResourceManager
    /// at registration and to containers (`NM_HTTP_PORT`). Read from
    /// `yarn.nodemanager.webapp.address`; once the server is bound it is
    /// the port actually bound (port 0 picks a free one).
    pub http_port: i32,
    /// Host the web server listens on: `yarn.nodemanager.bind-host` when
    /// set, else the host of `yarn.nodemanager.webapp.address` (Hadoop's
    /// `WebAppUtils.getWebAppBindURL`).
    pub webapp_bind_host: String,
    /// Resources offered to containers.
    pub resource: Resource,
    /// The machine's memory and processors, when they could be read.
    pub physical_resource: Option<Resource>,
    /// `yarn.nodemanager.local-dirs`, absolute.
    pub local_dirs: Vec<PathBuf>,
    /// `yarn.nodemanager.log-dirs`, absolute.
    pub log_dirs: Vec<PathBuf>,
    pub disk_health: DiskHealthConfig,
    /// Heartbeat interval until the ResourceManager says otherwise.
    pub heartbeat_interval: Duration,
    /// The user the agent names in its IPC connection context.
    pub user: String,
    /// Version string sent at registration.
    pub version: String,
    /// Time allowed to open a connection to the ResourceManager.
    pub rm_connect_timeout: Duration,
    /// Time allowed for one call to the ResourceManager.
    pub rm_call_timeout: Duration,
    /// Time allowed for `unRegisterNodeManager` on a clean stop.
    pub unregister_timeout: Duration,
    /// Whether the ResourceManager keeps running containers across its
    /// restarts, as far as this node's configuration says: true only when
    /// both `yarn.resourcemanager.recovery.enabled` and
    /// `yarn.resourcemanager.work-preserving-recovery.enabled` are. When it
    /// does not, the node kills its containers when the ResourceManager
    /// asks it to resync, before registering again (Hadoop's
    /// `NodeManager.resyncWithRM`).
    pub rm_work_preserving: bool,
    /// Container launch, monitoring and cleanup.
    pub containers: ContainerSettings,
    /// Who runs containers and how their processes are contained
    /// (`crate::executor`).
    pub executor: crate::executor::ExecutorConfig,
    /// The container-management server's IPC limits.
    pub ipc_limits: IpcLimits,
    /// NodeManager recovery (`yarn.nodemanager.recovery.*`).
    pub recovery: crate::recovery::RecoveryConfig,
    /// Who may read containers' logs on the web server (`yarn.acl.enable`,
    /// `yarn.admin.acl`, the web user).
    pub web_access: crate::web::access::WebAccess,
    /// The configuration the node started with, redacted (its `/conf` page).
    pub conf_properties: Vec<spindle_web::conf_page::Property>,
    /// The auxiliary services (`yarn.nodemanager.aux-services`).
    pub aux: crate::aux_services::AuxConfig,
}

/// The limits of the container-management server, as Hadoop's and Spindle's
/// `ipc.*` keys set them (read by [`ServerConfig::from_conf`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IpcLimits {
    pub max_frame_bytes: usize,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
    pub max_buffered_request_bytes: usize,
}

impl IpcLimits {
    fn from_conf(conf: &Configuration) -> Result<IpcLimits, NmError> {
        let c = ServerConfig::from_conf(conf, "nm-container-manager")?;
        Ok(IpcLimits {
            max_frame_bytes: c.max_frame_bytes,
            idle_timeout: c.idle_timeout,
            max_connections: c.max_connections,
            max_connections_per_peer: c.max_connections_per_peer,
            max_buffered_request_bytes: c.max_buffered_request_bytes,
        })
    }

    /// A server configuration with these limits.
    pub fn server_config(&self, name: &str, mechanisms: Vec<Mechanism>) -> ServerConfig {
        ServerConfig {
            name: name.to_string(),
            mechanisms,
            max_frame_bytes: self.max_frame_bytes,
            idle_timeout: self.idle_timeout,
            max_connections: self.max_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            max_buffered_request_bytes: self.max_buffered_request_bytes,
            ..ServerConfig::default()
        }
    }
}

impl NmConfig {
    /// Reads and checks the NodeManager settings.
    pub fn from_conf(conf: &Configuration) -> Result<NmConfig, NmError> {
        // A setting Spindle cannot honour stops the node before it serves.
        refuse::check(conf, &[Daemon::NodeManager], "NodeManager")?;
        let (address_host, _) = conf.get_socket_addr(keys::NM_ADDRESS)?;
        let (bind_host, bind_port) = conf.get_bind_addr(keys::NM_BIND_HOST, keys::NM_ADDRESS)?;
        let node_host = node_host(conf, &address_host)?;

        let (webapp_bind_host, http_port) =
            conf.get_bind_addr(keys::NM_BIND_HOST, keys::NM_WEBAPP_ADDRESS)?;

        let resource_tracker_addrs =
            yarn_conf::rm_addresses(conf, keys::RM_RESOURCE_TRACKER_ADDRESS)?;
        let rm_retry = RmRetry::node_manager(conf)?;
        let rm_connect_retry = rm_retry.connect_retry(yarn_conf::connect_retry(conf)?);

        let settings = resource_settings(conf)?;
        let hardware = match HostHardware::detect() {
            Ok(hw) => Some(hw),
            Err(e) => {
                if settings.detect_hardware {
                    tracing::warn!(
                        "hardware detection is on but the host could not be read ({e}); \
                         using the default node resources"
                    );
                }
                None
            }
        };
        let resource = node_resource(&settings, hardware.as_ref())?;
        let physical_resource =
            hardware.map(|hw| Resource::new(hw.physical_memory_mb, hw.logical_processors));

        let local_dirs = dir_list(conf, keys::NM_LOCAL_DIRS)?;
        let log_dirs = dir_list(conf, keys::NM_LOG_DIRS)?;
        let disk_health = disk_health_config(conf)?;

        let heartbeat_ms = conf.get_i64(keys::RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS)?;
        if heartbeat_ms <= 0 {
            return Err(conf
                .invalid_value(
                    keys::RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS,
                    "must be greater than 0",
                )
                .into());
        }
        let containers = container_settings(conf)?;
        let rm_work_preserving = conf.get_bool(keys::RM_RECOVERY_ENABLED)?
            && conf.get_bool(keys::RM_WORK_PRESERVING_RECOVERY_ENABLED)?;

        let recovery = crate::recovery::RecoveryConfig::from_conf(conf)?;
        if recovery.enabled && bind_port == 0 {
            // Hadoop's ContainerManagerImpl refuses it too: the recovered
            // containers belong to the NodeId, whose port must not change.
            return Err(conf
                .invalid_value(
                    keys::NM_ADDRESS,
                    "Cannot support recovery with an ephemeral server port. Check the setting \
                     of yarn.nodemanager.address",
                )
                .into());
        }
        let aux = crate::aux_services::AuxConfig::from_conf(conf, &local_dirs)?;
        let kerberos = kerberos_login(conf)?;
        Ok(NmConfig {
            kerberos,
            spnego: spindle_web::spnego::Spnego::from_conf(
                conf,
                "yarn.nodemanager.webapp.spnego-principal",
                "yarn.nodemanager.webapp.spnego-keytab-file",
                &node_host,
                spindle_common::time::wall_ms_u64,
            )
            .map_err(|message| NmError::Config {
                key: "hadoop.http.authentication.type".into(),
                message,
            })?
            .map(SharedSpnego),
            service_policy: if conf.get_bool(keys::HADOOP_SECURITY_AUTHORIZATION)? {
                Some(std::sync::Arc::new(
                    spindle_common::security::service_acl::ServicePolicy::from_conf(
                        conf,
                        spindle_common::security::service_acl::NM_SERVICES,
                    )
                    .map_err(|message| NmError::Config {
                        key: keys::HADOOP_SECURITY_AUTHORIZATION.to_string(),
                        message,
                    })?,
                ))
            } else {
                None
            },
            aux,
            node_host,
            bind_host,
            bind_port,
            resource_tracker_addrs,
            rm_retry,
            rm_connect_retry,
            http_port: i32::from(http_port),
            webapp_bind_host,
            resource,
            physical_resource,
            local_dirs,
            log_dirs,
            disk_health,
            heartbeat_interval: Duration::from_millis(heartbeat_ms.unsigned_abs()),
            user: current_user(),
            version: NM_VERSION.to_string(),
            rm_connect_timeout: yarn_conf::connect_timeout(conf)?,
            rm_call_timeout: Duration::from_secs(60),
            unregister_timeout: Duration::from_secs(5),
            rm_work_preserving,
            containers,
            executor: crate::executor::ExecutorConfig::from_conf(conf)?,
            ipc_limits: IpcLimits::from_conf(conf)?,
            recovery,
            web_access: crate::web::access::WebAccess::from_conf(conf)?,
            conf_properties: crate::web::ops::conf_properties(conf),
        })
    }
}

/// The web's SPNEGO, shared by the configuration's copies (compared by
/// identity).
#[derive(Debug, Clone)]
pub struct SharedSpnego(pub std::sync::Arc<spindle_web::spnego::Spnego>);

impl PartialEq for SharedSpnego {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How the node authenticates to the ResourceManager under Kerberos:
/// `yarn.nodemanager.principal` (`_HOST` standing for the machine's host
/// name, as Hadoop's `SecurityUtil.login`) with the keys of
/// `yarn.nodemanager.keytab`, checked now, expecting the RM to be
/// `yarn.resourcemanager.principal`.
fn kerberos_login(conf: &Configuration) -> Result<Option<KerberosClient>, NmError> {
    let invalid = |key: &str, message: String| NmError::Config {
        key: key.to_string(),
        message,
    };
    if !kerberos::enabled(conf).map_err(|m| invalid(keys::HADOOP_SECURITY_AUTHENTICATION, m))? {
        return Ok(None);
    }
    let host = machine_hostname()?.to_ascii_lowercase();
    let identity = kerberos::daemon_identity(conf, keys::NM_PRINCIPAL, keys::NM_KEYTAB, &host)
        .map_err(|m| invalid(keys::NM_PRINCIPAL, m))?
        .expect("Kerberos is on");
    let login = KerberosLogin::Keytab {
        principal: identity.principal.to_string(),
        keytab: identity.keytab,
    };
    kerberos::rm_client(conf, login).map_err(|m| invalid(keys::RM_PRINCIPAL, m))
}

/// True for the addresses that mean "every interface".
pub(crate) fn is_wildcard(host: &str) -> bool {
    let h = host.trim();
    h.is_empty() || h == "0.0.0.0" || h == "::" || h == "[::]" || h == "*"
}

/// The NodeId host: the host of `yarn.nodemanager.address` unless that is a
/// wildcard, then `yarn.nodemanager.hostname` unless that is one too, then
/// the machine's host name.
fn node_host(conf: &Configuration, address_host: &str) -> Result<String, NmError> {
    if !is_wildcard(address_host) {
        return Ok(address_host.to_string());
    }
    if let Some(h) = conf.get_trimmed(keys::NM_HOSTNAME) {
        if !is_wildcard(&h) {
            return Ok(h);
        }
    }
    machine_hostname()
}

/// The machine's host name, from `gethostname(2)`.
pub fn machine_hostname() -> Result<String, NmError> {
    let name = nix::unistd::gethostname().map_err(|e| NmError::Hostname(e.to_string()))?;
    let name = name
        .into_string()
        .map_err(|raw| NmError::Hostname(format!("host name {raw:?} is not valid UTF-8")))?;
    if name.trim().is_empty() {
        return Err(NmError::Hostname(format!(
            "the machine has no host name; set {} or {}",
            keys::NM_HOSTNAME,
            keys::NM_ADDRESS
        )));
    }
    Ok(name.trim().to_string())
}

fn resource_settings(conf: &Configuration) -> Result<ResourceSettings, NmError> {
    let d = ResourceSettings::default();
    Ok(ResourceSettings {
        memory_mb: optional(conf, keys::NM_RESOURCE_MEMORY_MB, d.memory_mb, |c, k| {
            c.get_i64(k)
        })?,
        vcores: optional(conf, keys::NM_RESOURCE_CPU_VCORES, d.vcores, |c, k| {
            c.get_i32(k)
        })?,
        detect_hardware: optional(
            conf,
            keys::NM_RESOURCE_DETECT_HARDWARE_CAPABILITIES,
            d.detect_hardware,
            |c, k| c.get_bool(k),
        )?,
        system_reserved_memory_mb: optional(
            conf,
            keys::NM_RESOURCE_SYSTEM_RESERVED_MEMORY_MB,
            d.system_reserved_memory_mb,
            |c, k| c.get_i64(k),
        )?,
        count_logical_processors_as_cores: optional(
            conf,
            keys::NM_RESOURCE_COUNT_LOGICAL_PROCESSORS_AS_CORES,
            d.count_logical_processors_as_cores,
            |c, k| c.get_bool(k),
        )?,
        pcores_vcores_multiplier: optional(
            conf,
            keys::NM_RESOURCE_PCORES_VCORES_MULTIPLIER,
            d.pcores_vcores_multiplier,
            |c, k| c.get_f64(k),
        )?,
        physical_cpu_limit_percent: optional(
            conf,
            keys::NM_RESOURCE_PERCENTAGE_PHYSICAL_CPU_LIMIT,
            d.physical_cpu_limit_percent,
            |c, k| c.get_i32(k),
        )?,
    })
}

fn node_resource(
    settings: &ResourceSettings,
    hardware: Option<&HostHardware>,
) -> Result<Resource, NmError> {
    let to_err = |e: hardware::ResourceError| NmError::Config {
        key: e.key.to_string(),
        message: e.message,
    };
    let memory_mb = hardware::node_memory_mb(settings, hardware).map_err(to_err)?;
    let vcores = hardware::node_vcores(settings, hardware).map_err(to_err)?;
    Ok(Resource::new(memory_mb, vcores))
}

/// Reads `key` with `get`, or returns `default` when the key has no value
/// at all (neither configured nor built in).
fn optional<T>(
    conf: &Configuration,
    key: &str,
    default: T,
    get: impl FnOnce(&Configuration, &str) -> Result<T, ConfError>,
) -> Result<T, NmError> {
    if conf.get(key).is_none() {
        return Ok(default);
    }
    Ok(get(conf, key)?)
}

/// A comma-separated list of local directories. Entries may be plain paths
/// or `file:` URIs; relative paths are taken from the working directory.
fn dir_list(conf: &Configuration, key: &str) -> Result<Vec<PathBuf>, NmError> {
    let entries = conf.get_strings(key);
    if entries.is_empty() {
        return Err(NmError::Config {
            key: key.to_string(),
            message: "no directory is configured; give at least one".to_string(),
        });
    }
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(entries.len());
    for entry in entries {
        let path = local_path(&entry).map_err(|problem| NmError::Config {
            key: key.to_string(),
            message: format!("'{entry}' {problem}"),
        })?;
        if !dirs.contains(&path) {
            dirs.push(path);
        }
    }
    Ok(dirs)
}

fn local_path(entry: &str) -> Result<PathBuf, String> {
    if entry.contains("${") {
        return Err("contains a ${...} reference that could not be resolved".to_string());
    }
    let path = match entry.split_once(':') {
        Some((scheme, rest))
            if scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            if !scheme.eq_ignore_ascii_case("file") {
                return Err(format!(
                    "is not a local path: only file: URIs or plain paths are accepted, not {scheme}:"
                ));
            }
            // file:///x, file://localhost/x and file:/x all name /x.
            match rest.strip_prefix("//") {
                Some(after) => match after.find('/') {
                    Some(i) if after[..i].is_empty() || after[..i] == *"localhost" => {
                        after[i..].to_string()
                    }
                    _ => {
                        return Err("names a remote host; only local paths can be used".to_string())
                    }
                },
                None => rest.to_string(),
            }
        }
        _ => entry.to_string(),
    };
    if path.is_empty() {
        return Err("is an empty path".to_string());
    }
    std::path::absolute(Path::new(&path)).map_err(|e| format!("cannot be made absolute: {e}"))
}

fn disk_health_config(conf: &Configuration) -> Result<DiskHealthConfig, NmError> {
    let d = DiskHealthConfig::default();
    let enabled = optional(
        conf,
        keys::NM_DISK_HEALTH_CHECKER_ENABLE,
        d.enabled,
        |c, k| c.get_bool(k),
    )?;
    let interval_ms = optional(
        conf,
        keys::NM_DISK_HEALTH_CHECKER_INTERVAL_MS,
        d.interval.as_millis() as u64,
        |c, k| c.get_u64(k),
    )?;
    if interval_ms == 0 {
        return Err(conf
            .invalid_value(
                keys::NM_DISK_HEALTH_CHECKER_INTERVAL_MS,
                "must be greater than 0",
            )
            .into());
    }
    let min_healthy = optional(
        conf,
        keys::NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS,
        f64::from(d.min_healthy_fraction),
        |c, k| c.get_f64(k),
    )?;
    if !(0.0..=1.0).contains(&min_healthy) {
        return Err(conf
            .invalid_value(
                keys::NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS,
                "must be a fraction between 0.0 and 1.0",
            )
            .into());
    }
    let high = optional(
        conf,
        keys::NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE,
        f64::from(d.max_utilization_percent),
        |c, k| c.get_f64(k),
    )?;
    let low = optional(
        conf,
        extra_keys::DISK_UTILIZATION_WATERMARK_LOW,
        high,
        |c, k| c.get_f64(k),
    )?;
    if low > high {
        tracing::warn!(
            "{} ({low}) is above {} ({high}); using {high} for both",
            extra_keys::DISK_UTILIZATION_WATERMARK_LOW,
            keys::NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE
        );
    }
    let min_free = optional(
        conf,
        keys::NM_DISK_HEALTH_CHECKER_MIN_FREE_SPACE_PER_DISK_MB,
        d.min_free_space_mb,
        |c, k| c.get_u64(k),
    )?;
    let min_free_high = optional(
        conf,
        extra_keys::DISK_FREE_SPACE_WATERMARK_HIGH_MB,
        min_free,
        |c, k| c.get_u64(k),
    )?;
    if min_free_high < min_free {
        tracing::warn!(
            "{} ({min_free_high}) is below {} ({min_free}); using {min_free} for both",
            extra_keys::DISK_FREE_SPACE_WATERMARK_HIGH_MB,
            keys::NM_DISK_HEALTH_CHECKER_MIN_FREE_SPACE_PER_DISK_MB
        );
    }
    Ok(DiskHealthConfig {
        enabled,
        interval: Duration::from_millis(interval_ms),
        min_healthy_fraction: min_healthy as f32,
        utilization_check_enabled: optional(
            conf,
            extra_keys::DISK_UTILIZATION_THRESHOLD_ENABLED,
            d.utilization_check_enabled,
            |c, k| c.get_bool(k),
        )?,
        max_utilization_percent: high as f32,
        low_utilization_percent: low as f32,
        free_space_check_enabled: optional(
            conf,
            extra_keys::DISK_FREE_SPACE_THRESHOLD_ENABLED,
            d.free_space_check_enabled,
            |c, k| c.get_bool(k),
        )?,
        min_free_space_mb: min_free,
        min_free_space_high_mb: min_free_high,
    }
    .normalized())
}

/// A configured `host` and `port` resolved to the address a server binds
/// (the first one); `shown` names the setting's value in errors.
pub(crate) async fn resolve(host: &str, port: u16, shown: &str) -> Result<SocketAddr, NmError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn base(tmp: &Path) -> Configuration {
        let mut conf = Configuration::with_defaults();
        conf.set(keys::NM_LOCAL_DIRS, tmp.join("local").display().to_string());
        conf.set(keys::NM_LOG_DIRS, tmp.join("logs").display().to_string());
        conf
    }

    fn config_err(conf: &Configuration) -> String {
        match NmConfig::from_conf(conf) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let c = NmConfig::from_conf(&base(tmp.path())).expect("valid");
        assert_eq!(c.bind_host, "0.0.0.0");
        assert_eq!(c.bind_port, 0);
        assert_eq!(c.node_host, machine_hostname().expect("hostname"));
        assert_eq!(c.resource_tracker_addrs, vec!["0.0.0.0:8031".to_string()]);
        assert_eq!(c.http_port, 8042);
        assert_eq!(c.webapp_bind_host, "0.0.0.0");
        assert_eq!(c.resource, Resource::new(8192, 8));
        assert_eq!(c.heartbeat_interval, Duration::from_millis(1000));
        assert_eq!(c.local_dirs, vec![tmp.path().join("local")]);
        assert_eq!(c.log_dirs, vec![tmp.path().join("logs")]);
        assert_eq!(c.disk_health, DiskHealthConfig::default());
        assert!(c.physical_resource.is_some());
    }

    #[test]
    fn node_manager_recovery_settings() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::HADOOP_TMP_DIR, tmp.path().display().to_string());
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert!(!c.recovery.enabled, "off by default, as in Hadoop");
        assert_eq!(c.recovery.dir, tmp.path().join("yarn-nm-recovery"));
        conf.set(keys::NM_RECOVERY_ENABLED, "true");
        let err = config_err(&conf);
        assert!(
            err.contains(keys::NM_ADDRESS) && err.contains("ephemeral server port"),
            "{err}"
        );
        conf.set(keys::NM_ADDRESS, "0.0.0.0:8041");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert!(c.recovery.enabled && !c.recovery.supervised);
        assert!(!c.recovery.keeps_containers_on_stop());
        conf.set(crate::recovery::NM_RECOVERY_SUPERVISED, "true");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert!(c.recovery.keeps_containers_on_stop());
        conf.set(crate::recovery::NM_RECOVERY_SUPERVISED, "sometimes");
        assert!(config_err(&conf).contains(crate::recovery::NM_RECOVERY_SUPERVISED));
        conf.set(crate::recovery::NM_RECOVERY_SUPERVISED, "false");
        conf.set(keys::NM_RECOVERY_DIR, "relative/dir");
        assert!(config_err(&conf).contains(keys::NM_RECOVERY_DIR));
    }

    #[test]
    fn work_preserving_resync_needs_rm_recovery() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        // Hadoop's defaults: recovery off, work preserving on.
        assert!(
            !NmConfig::from_conf(&conf)
                .expect("valid")
                .rm_work_preserving
        );
        conf.set(keys::RM_RECOVERY_ENABLED, "true");
        assert!(
            NmConfig::from_conf(&conf)
                .expect("valid")
                .rm_work_preserving
        );
        conf.set(keys::RM_WORK_PRESERVING_RECOVERY_ENABLED, "false");
        assert!(
            !NmConfig::from_conf(&conf)
                .expect("valid")
                .rm_work_preserving
        );
    }

    #[test]
    fn addresses_and_host() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::NM_HOSTNAME, "nm1.example");
        conf.set(keys::RM_HOSTNAME, "rm.example");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.node_host, "nm1.example");
        assert_eq!(c.bind_host, "nm1.example");
        assert_eq!(
            c.resource_tracker_addrs,
            vec!["rm.example:8031".to_string()]
        );

        conf.set(keys::NM_ADDRESS, "0.0.0.0:45454");
        conf.set(keys::NM_BIND_HOST, "127.0.0.1");
        conf.set(keys::NM_WEBAPP_ADDRESS, "0.0.0.0:18042");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.node_host, "nm1.example");
        assert_eq!((c.bind_host.as_str(), c.bind_port), ("127.0.0.1", 45454));
        assert_eq!(c.http_port, 18042);
        assert_eq!(c.webapp_bind_host, "127.0.0.1");
    }

    #[test]
    fn resource_manager_retries_follow_server_rm_proxy() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.rm_retry.max_wait, Some(Duration::from_millis(900_000)));
        assert_eq!(c.rm_retry.retry_interval, Duration::from_millis(30_000));
        assert_eq!(c.rm_connect_retry, ConnectRetry::default());
        conf.set(
            spindle_ipc::yarn_conf::keys::NM_RM_CONNECT_MAX_WAIT_MS,
            "-1",
        );
        conf.set(keys::RM_CONNECT_RETRY_INTERVAL_MS, "1000");
        conf.set(keys::IPC_CLIENT_CONNECT_MAX_RETRIES, "3");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.rm_retry.max_wait, None, "-1 waits forever");
        assert_eq!(c.rm_retry.retry_interval, Duration::from_millis(1000));
        assert_eq!(c.rm_connect_retry.max_retries, 3);
    }

    #[test]
    fn ha_tracker_addresses() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::RM_HA_ENABLED, "true");
        conf.set(keys::RM_HA_RM_IDS, "rm1,rm2");
        conf.set("yarn.resourcemanager.hostname.rm1", "a.example");
        conf.set(
            "yarn.resourcemanager.resource-tracker.address.rm2",
            "b.example:9031",
        );
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(
            c.resource_tracker_addrs,
            vec!["a.example:8031".to_string(), "b.example:9031".to_string()]
        );
        conf.set(keys::RM_HA_RM_IDS, "rm1,rm3");
        assert!(config_err(&conf).contains("rm3"));
    }

    #[test]
    fn configured_resources_and_errors() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::NM_RESOURCE_MEMORY_MB, "2048");
        conf.set(keys::NM_RESOURCE_CPU_VCORES, "2");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.resource, Resource::new(2048, 2));

        conf.set(keys::NM_RESOURCE_MEMORY_MB, "lots");
        let err = config_err(&conf);
        assert!(
            err.contains(keys::NM_RESOURCE_MEMORY_MB) && err.contains("lots"),
            "{err}"
        );

        conf.set(keys::NM_RESOURCE_MEMORY_MB, "0");
        let err = config_err(&conf);
        assert!(err.contains(keys::NM_RESOURCE_MEMORY_MB), "{err}");

        conf.set(keys::NM_RESOURCE_MEMORY_MB, "2048");
        conf.set(keys::NM_RESOURCE_CPU_VCORES, "-3");
        let err = config_err(&conf);
        assert!(err.contains(keys::NM_RESOURCE_CPU_VCORES), "{err}");
    }

    #[test]
    fn detected_resources_follow_the_host() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::NM_RESOURCE_DETECT_HARDWARE_CAPABILITIES, "true");
        conf.set(keys::NM_RESOURCE_COUNT_LOGICAL_PROCESSORS_AS_CORES, "true");
        conf.set(keys::NM_RESOURCE_SYSTEM_RESERVED_MEMORY_MB, "100");
        let host = HostHardware::detect().expect("readable host");
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(
            c.resource,
            Resource::new(host.physical_memory_mb - 100, host.logical_processors)
        );
        assert_eq!(
            c.physical_resource,
            Some(Resource::new(
                host.physical_memory_mb,
                host.logical_processors
            ))
        );
    }

    #[test]
    fn dir_lists() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        conf.set(
            keys::NM_LOCAL_DIRS,
            format!(" file://{} , {},{} ", a.display(), b.display(), a.display()),
        );
        let c = NmConfig::from_conf(&conf).expect("valid");
        assert_eq!(c.local_dirs, vec![a, b]);

        conf.set(keys::NM_LOCAL_DIRS, "hdfs://nn:8020/tmp");
        let err = config_err(&conf);
        assert!(
            err.contains(keys::NM_LOCAL_DIRS) && err.contains("hdfs"),
            "{err}"
        );

        conf.set(keys::NM_LOCAL_DIRS, " , ");
        let err = config_err(&conf);
        assert!(err.contains("no directory"), "{err}");

        conf.set(keys::NM_LOCAL_DIRS, "file://otherhost/tmp");
        assert!(config_err(&conf).contains("remote host"));
    }

    #[test]
    fn disk_health_settings() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(
            keys::NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE,
            "95.5",
        );
        conf.set(extra_keys::DISK_UTILIZATION_WATERMARK_LOW, "85");
        conf.set(
            keys::NM_DISK_HEALTH_CHECKER_MIN_FREE_SPACE_PER_DISK_MB,
            "100",
        );
        conf.set(keys::NM_DISK_HEALTH_CHECKER_INTERVAL_MS, "5000");
        conf.set(keys::NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS, "0.5");
        let d = NmConfig::from_conf(&conf).expect("valid").disk_health;
        assert_eq!(d.max_utilization_percent, 95.5);
        assert_eq!(d.low_utilization_percent, 85.0);
        assert_eq!(d.min_free_space_mb, 100);
        assert_eq!(d.min_free_space_high_mb, 100);
        assert_eq!(d.interval, Duration::from_millis(5000));
        assert_eq!(d.min_healthy_fraction, 0.5);

        conf.set(keys::NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS, "1.5");
        assert!(config_err(&conf).contains(keys::NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS));
    }

    #[test]
    fn container_settings_defaults_and_overrides() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        let c = NmConfig::from_conf(&conf).expect("valid").containers;
        assert_eq!(c.monitor_interval, Duration::from_millis(3000));
        assert_eq!(c.sigkill_delay, Duration::from_millis(250));
        assert!(c.pmem_check_enabled && c.vmem_check_enabled);
        assert_eq!(c.vmem_pmem_ratio, 2.1);
        assert_eq!(
            c.env_whitelist.first().map(String::as_str),
            Some("JAVA_HOME")
        );
        assert!(c.env_whitelist.iter().any(|v| v == "PATH"));
        assert_eq!(
            c.admin_env,
            vec![(
                "MALLOC_ARENA_MAX".to_string(),
                "$MALLOC_ARENA_MAX".to_string()
            )]
        );
        assert_eq!(c.user_home_dir, "/home/");
        assert_eq!(c.delete_debug_delay, Duration::ZERO);
        assert_eq!(c.stderr_tail_bytes, 4096);
        assert_eq!(c.cache_target_bytes, 10240 << 20);
        assert_eq!(c.cache_cleanup_interval, Duration::from_millis(600_000));

        conf.set(keys::NM_LOCALIZER_CACHE_TARGET_SIZE_MB, "64");
        conf.set(keys::NM_LOCALIZER_CACHE_CLEANUP_INTERVAL_MS, "1000");
        let c = NmConfig::from_conf(&conf).expect("valid").containers;
        assert_eq!(c.cache_target_bytes, 64 << 20);
        assert_eq!(c.cache_cleanup_interval, Duration::from_millis(1000));
        conf.set(keys::NM_CONTAINER_MONITOR_INTERVAL_MS, "500");
        conf.set(keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, "100");
        conf.set(keys::NM_VMEM_CHECK_ENABLED, "false");
        conf.set(keys::NM_VMEM_PMEM_RATIO, "3");
        conf.set(keys::NM_ENV_WHITELIST, "JAVA_HOME, PATH");
        conf.set(keys::NM_ADMIN_ENV, "A=1,B=$HOME/x");
        conf.set(keys::NM_DELETE_DEBUG_DELAY_SEC, "60");
        conf.set(extra_keys::NM_USER_HOME_DIR, "/srv/home");
        let c = NmConfig::from_conf(&conf).expect("valid").containers;
        assert_eq!(c.monitor_interval, Duration::from_millis(500));
        assert_eq!(c.sigkill_delay, Duration::from_millis(100));
        assert!(!c.vmem_check_enabled);
        assert_eq!(c.vmem_pmem_ratio, 3.0);
        assert_eq!(
            c.env_whitelist,
            vec!["JAVA_HOME".to_string(), "PATH".to_string()]
        );
        assert_eq!(
            c.admin_env,
            vec![
                ("A".to_string(), "1".to_string()),
                ("B".to_string(), "$HOME/x".to_string())
            ]
        );
        assert_eq!(c.delete_debug_delay, Duration::from_secs(60));
        assert_eq!(c.user_home_dir, "/srv/home");

        conf.set(keys::NM_ADMIN_ENV, "NOEQUALS");
        assert!(config_err(&conf).contains(keys::NM_ADMIN_ENV));
        conf.set(keys::NM_ADMIN_ENV, "A=1");
        conf.set(keys::NM_VMEM_PMEM_RATIO, "0.5");
        assert!(config_err(&conf).contains(keys::NM_VMEM_PMEM_RATIO));
        conf.set(keys::NM_VMEM_PMEM_RATIO, "2");
        conf.set(keys::NM_CONTAINER_MONITOR_INTERVAL_MS, "0");
        assert!(config_err(&conf).contains(keys::NM_CONTAINER_MONITOR_INTERVAL_MS));
    }

    #[test]
    fn bad_heartbeat_interval_and_address() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut conf = base(tmp.path());
        conf.set(keys::RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS, "0");
        assert!(config_err(&conf).contains(keys::RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS));

        let mut conf = base(tmp.path());
        conf.set(keys::NM_ADDRESS, "no-port-here");
        assert!(config_err(&conf).contains(keys::NM_ADDRESS));
    }
}
