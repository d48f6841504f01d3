//! Names of the configuration keys Spindle reads, as constants.
//!
//! Every key here has an entry in the built-in defaults
//! (`core-default-subset.xml`, `yarn-default-subset.xml`); the keys in
//! [`NO_DEFAULT`] are documented there without a value, as in Hadoop.
//! Using the constants instead of string literals keeps key names in one
//! place and lets the test suite check that each has its default.

// ---------------- core (hadoop-common) ----------------

// Paths
pub const HADOOP_TMP_DIR: &str = "hadoop.tmp.dir";
pub const FS_DEFAULT_FS: &str = "fs.defaultFS";

// Security
pub const HADOOP_SECURITY_AUTHENTICATION: &str = "hadoop.security.authentication";
/// The ResourceManager's Kerberos principal (`rm/_HOST@REALM`) and keytab.
pub const RM_PRINCIPAL: &str = "yarn.resourcemanager.principal";
pub const RM_KEYTAB: &str = "yarn.resourcemanager.keytab";
/// The NodeManager's Kerberos principal and keytab.
pub const NM_PRINCIPAL: &str = "yarn.nodemanager.principal";
pub const NM_KEYTAB: &str = "yarn.nodemanager.keytab";
/// The rules that map Kerberos principals to user names, and which of
/// Hadoop's two checks of their results applies (`hadoop` or `MIT`).
pub const AUTH_TO_LOCAL: &str = "hadoop.security.auth_to_local";
pub const AUTH_TO_LOCAL_MECHANISM: &str = "hadoop.security.auth_to_local.mechanism";
/// Hadoop's default for both keytabs.
pub const DEFAULT_KEYTAB: &str = "/etc/krb5.keytab";
pub const HADOOP_SECURITY_AUTHORIZATION: &str = "hadoop.security.authorization";
pub const HADOOP_RPC_PROTECTION: &str = "hadoop.rpc.protection";
pub const HADOOP_SECURITY_GROUP_MAPPING: &str = "hadoop.security.group.mapping";
pub const HADOOP_SECURITY_GROUPS_CACHE_SECS: &str = "hadoop.security.groups.cache.secs";
pub const HADOOP_USER_GROUP_STATIC_MAPPING_OVERRIDES: &str =
    "hadoop.user.group.static.mapping.overrides";
pub const HADOOP_HTTP_STATICUSER_USER: &str = "hadoop.http.staticuser.user";
pub const HADOOP_SECURITY_TOKEN_SERVICE_USE_IP: &str = "hadoop.security.token.service.use_ip";

// IPC
pub const IPC_MAXIMUM_DATA_LENGTH: &str = "ipc.maximum.data.length";
pub const IPC_MAXIMUM_RESPONSE_LENGTH: &str = "ipc.maximum.response.length";
pub const IPC_SERVER_MAX_RESPONSE_SIZE: &str = "ipc.server.max.response.size";
pub const IPC_SERVER_LISTEN_QUEUE_SIZE: &str = "ipc.server.listen.queue.size";
pub const IPC_CLIENT_CONNECTION_MAXIDLETIME: &str = "ipc.client.connection.maxidletime";
pub const IPC_CLIENT_CONNECT_TIMEOUT: &str = "ipc.client.connect.timeout";
pub const IPC_CLIENT_CONNECT_MAX_RETRIES: &str = "ipc.client.connect.max.retries";
pub const IPC_CLIENT_CONNECT_RETRY_INTERVAL: &str = "ipc.client.connect.retry.interval";
pub const IPC_CLIENT_CONNECT_MAX_RETRIES_ON_TIMEOUTS: &str =
    "ipc.client.connect.max.retries.on.timeouts";
pub const IPC_CLIENT_PING: &str = "ipc.client.ping";
pub const IPC_PING_INTERVAL: &str = "ipc.ping.interval";
pub const IPC_CLIENT_RPC_TIMEOUT_MS: &str = "ipc.client.rpc-timeout.ms";
pub const IPC_CLIENT_TCPNODELAY: &str = "ipc.client.tcpnodelay";
pub const IPC_CLIENT_FALLBACK_TO_SIMPLE_AUTH_ALLOWED: &str =
    "ipc.client.fallback-to-simple-auth-allowed";

// Topology
pub const NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL: &str = "net.topology.node.switch.mapping.impl";
pub const NET_TOPOLOGY_SCRIPT_FILE_NAME: &str = "net.topology.script.file.name";
pub const NET_TOPOLOGY_SCRIPT_NUMBER_ARGS: &str = "net.topology.script.number.args";
pub const NET_TOPOLOGY_TABLE_FILE_NAME: &str = "net.topology.table.file.name";

// ---------------- YARN ----------------

// ResourceManager addresses
pub const RM_HOSTNAME: &str = "yarn.resourcemanager.hostname";
pub const RM_ADDRESS: &str = "yarn.resourcemanager.address";
pub const RM_SCHEDULER_ADDRESS: &str = "yarn.resourcemanager.scheduler.address";
pub const RM_RESOURCE_TRACKER_ADDRESS: &str = "yarn.resourcemanager.resource-tracker.address";
pub const RM_ADMIN_ADDRESS: &str = "yarn.resourcemanager.admin.address";
pub const RM_WEBAPP_ADDRESS: &str = "yarn.resourcemanager.webapp.address";
pub const RM_WEBAPP_HTTPS_ADDRESS: &str = "yarn.resourcemanager.webapp.https.address";
pub const RM_BIND_HOST: &str = "yarn.resourcemanager.bind-host";
pub const YARN_HTTP_POLICY: &str = "yarn.http.policy";
pub const RM_CLUSTER_ID: &str = "yarn.resourcemanager.cluster-id";

// ResourceManager handler threads
pub const RM_CLIENT_THREAD_COUNT: &str = "yarn.resourcemanager.client.thread-count";
pub const RM_SCHEDULER_CLIENT_THREAD_COUNT: &str =
    "yarn.resourcemanager.scheduler.client.thread-count";
pub const RM_RESOURCE_TRACKER_CLIENT_THREAD_COUNT: &str =
    "yarn.resourcemanager.resource-tracker.client.thread-count";
pub const RM_ADMIN_CLIENT_THREAD_COUNT: &str = "yarn.resourcemanager.admin.client.thread-count";
pub const RM_AMLAUNCHER_THREAD_COUNT: &str = "yarn.resourcemanager.amlauncher.thread-count";

// Scheduler
pub const RM_SCHEDULER_CLASS: &str = "yarn.resourcemanager.scheduler.class";
pub const SCHEDULER_MINIMUM_ALLOCATION_MB: &str = "yarn.scheduler.minimum-allocation-mb";
pub const SCHEDULER_MAXIMUM_ALLOCATION_MB: &str = "yarn.scheduler.maximum-allocation-mb";
pub const SCHEDULER_MINIMUM_ALLOCATION_VCORES: &str = "yarn.scheduler.minimum-allocation-vcores";
pub const SCHEDULER_MAXIMUM_ALLOCATION_VCORES: &str = "yarn.scheduler.maximum-allocation-vcores";
pub const SCHEDULER_INCLUDE_PORT_IN_NODE_NAME: &str = "yarn.scheduler.include-port-in-node-name";
pub const YARN_CLUSTER_MAX_APPLICATION_PRIORITY: &str = "yarn.cluster.max-application-priority";

// Node tracking
pub const RM_NODES_INCLUDE_PATH: &str = "yarn.resourcemanager.nodes.include-path";
pub const RM_NODES_EXCLUDE_PATH: &str = "yarn.resourcemanager.nodes.exclude-path";
pub const YARN_NM_LIVENESS_MONITOR_EXPIRY_INTERVAL_MS: &str =
    "yarn.nm.liveness-monitor.expiry-interval-ms";
pub const RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS: &str =
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms";
pub const RM_DECOMMISSIONING_NODES_WATCHER_POLL_INTERVAL_SECS: &str =
    "yarn.resourcemanager.decommissioning-nodes-watcher.poll-interval-secs";
pub const RM_NODEMANAGER_GRACEFUL_DECOMMISSION_TIMEOUT_SECS: &str =
    "yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs";
pub const RM_NODE_REMOVAL_UNTRACKED_TIMEOUT_MS: &str =
    "yarn.resourcemanager.node-removal-untracked.timeout-ms";
pub const RM_RESOURCE_TRACKER_NM_IP_HOSTNAME_CHECK: &str =
    "yarn.resourcemanager.resource-tracker.nm.ip-hostname-check";
pub const RM_NODEMANAGER_MINIMUM_VERSION: &str = "yarn.resourcemanager.nodemanager.minimum.version";
pub const RM_NODEMANAGER_CONNECT_RETRIES: &str = "yarn.resourcemanager.nodemanager-connect-retries";

// Applications
pub const RM_AM_MAX_ATTEMPTS: &str = "yarn.resourcemanager.am.max-attempts";
pub const YARN_AM_LIVENESS_MONITOR_EXPIRY_INTERVAL_MS: &str =
    "yarn.am.liveness-monitor.expiry-interval-ms";
pub const RM_CONTAINER_ALLOCATION_EXPIRY_INTERVAL_MS: &str =
    "yarn.resourcemanager.rm.container-allocation.expiry-interval-ms";
pub const RM_CONTAINER_LIVENESS_MONITOR_INTERVAL_MS: &str =
    "yarn.resourcemanager.container.liveness-monitor.interval-ms";
pub const RM_MAX_COMPLETED_APPLICATIONS: &str = "yarn.resourcemanager.max-completed-applications";
pub const RM_STATE_STORE_MAX_COMPLETED_APPLICATIONS: &str =
    "yarn.resourcemanager.state-store.max-completed-applications";
pub const RM_APPLICATION_TIMEOUTS_MONITOR_INTERVAL_MS: &str =
    "yarn.resourcemanager.application-timeouts.monitor.interval-ms";

// Recovery and HA
pub const RM_RECOVERY_ENABLED: &str = "yarn.resourcemanager.recovery.enabled";
pub const RM_WORK_PRESERVING_RECOVERY_ENABLED: &str =
    "yarn.resourcemanager.work-preserving-recovery.enabled";
pub const RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS: &str =
    "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms";
pub const RM_STORE_CLASS: &str = "yarn.resourcemanager.store.class";
/// Spindle: the embedded state store's file.
pub const RM_STATE_STORE_PATH: &str = "spindle.resourcemanager.state-store.path";
// ZooKeeper (core-default.xml's hadoop.zk.*; the RM's ZooKeeper store and leader election)
pub const HADOOP_ZK_ADDRESS: &str = "hadoop.zk.address";
pub const HADOOP_ZK_NUM_RETRIES: &str = "hadoop.zk.num-retries";
pub const HADOOP_ZK_RETRY_INTERVAL_MS: &str = "hadoop.zk.retry-interval-ms";
pub const HADOOP_ZK_TIMEOUT_MS: &str = "hadoop.zk.timeout-ms";
pub const HADOOP_ZK_ACL: &str = "hadoop.zk.acl";
pub const RM_ZK_STATE_STORE_PARENT_PATH: &str = "yarn.resourcemanager.zk-state-store.parent-path";
pub const RM_ZK_MAX_ZNODE_SIZE_BYTES: &str = "yarn.resourcemanager.zk-max-znode-size.bytes";
pub const RM_HA_AUTOMATIC_FAILOVER_ZK_BASE_PATH: &str =
    "yarn.resourcemanager.ha.automatic-failover.zk-base-path";
pub const RM_HA_ENABLED: &str = "yarn.resourcemanager.ha.enabled";
pub const RM_HA_RM_IDS: &str = "yarn.resourcemanager.ha.rm-ids";
pub const YARN_FAIL_FAST: &str = "yarn.fail-fast";
pub const RM_FAIL_FAST: &str = "yarn.resourcemanager.fail-fast";
pub const RM_CONNECT_MAX_WAIT_MS: &str = "yarn.resourcemanager.connect.max-wait.ms";
pub const RM_CONNECT_RETRY_INTERVAL_MS: &str = "yarn.resourcemanager.connect.retry-interval.ms";

// Tokens
pub const RM_AM_RM_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS: &str =
    "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs";
pub const RM_CONTAINER_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS: &str =
    "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs";
pub const RM_NM_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS: &str =
    "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs";
pub const RM_DELEGATION_KEY_UPDATE_INTERVAL: &str =
    "yarn.resourcemanager.delegation.key.update-interval";
pub const RM_DELEGATION_TOKEN_RENEW_INTERVAL: &str =
    "yarn.resourcemanager.delegation.token.renew-interval";
pub const RM_DELEGATION_TOKEN_MAX_LIFETIME: &str =
    "yarn.resourcemanager.delegation.token.max-lifetime";

// Access control, web, logs
pub const YARN_ACL_ENABLE: &str = "yarn.acl.enable";
pub const YARN_ADMIN_ACL: &str = "yarn.admin.acl";
pub const YARN_WEBAPP_ENABLE_REST_APP_SUBMISSIONS: &str = "yarn.webapp.enable-rest-app-submissions";
pub const RM_WEBAPP_UI_ACTIONS_ENABLED: &str = "yarn.resourcemanager.webapp.ui-actions.enabled";
pub const YARN_WEB_PROXY_ADDRESS: &str = "yarn.web-proxy.address";
pub const YARN_TIMELINE_SERVICE_ENABLED: &str = "yarn.timeline-service.enabled";
pub const YARN_NODE_LABELS_ENABLED: &str = "yarn.node-labels.enabled";
pub const YARN_LOG_AGGREGATION_ENABLE: &str = "yarn.log-aggregation-enable";
pub const YARN_LOG_AGGREGATION_RETAIN_SECONDS: &str = "yarn.log-aggregation.retain-seconds";
pub const YARN_LOG_AGGREGATION_RETAIN_CHECK_INTERVAL_SECONDS: &str =
    "yarn.log-aggregation.retain-check-interval-seconds";
pub const YARN_LOG_SERVER_URL: &str = "yarn.log.server.url";
pub const YARN_LOG_DIR: &str = "yarn.log.dir";

// NodeManager addresses
pub const NM_HOSTNAME: &str = "yarn.nodemanager.hostname";
pub const NM_ADDRESS: &str = "yarn.nodemanager.address";
pub const NM_BIND_HOST: &str = "yarn.nodemanager.bind-host";
pub const NM_WEBAPP_ADDRESS: &str = "yarn.nodemanager.webapp.address";
pub const NM_WEBAPP_HTTPS_ADDRESS: &str = "yarn.nodemanager.webapp.https.address";
pub const NM_LOCALIZER_ADDRESS: &str = "yarn.nodemanager.localizer.address";
pub const NM_CONTAINER_MANAGER_THREAD_COUNT: &str =
    "yarn.nodemanager.container-manager.thread-count";
pub const NM_LOCALIZER_CLIENT_THREAD_COUNT: &str = "yarn.nodemanager.localizer.client.thread-count";
pub const NM_LOCALIZER_FETCH_THREAD_COUNT: &str = "yarn.nodemanager.localizer.fetch.thread-count";

// NodeManager resources
pub const NM_RESOURCE_MEMORY_MB: &str = "yarn.nodemanager.resource.memory-mb";
pub const NM_RESOURCE_CPU_VCORES: &str = "yarn.nodemanager.resource.cpu-vcores";
pub const NM_RESOURCE_DETECT_HARDWARE_CAPABILITIES: &str =
    "yarn.nodemanager.resource.detect-hardware-capabilities";
pub const NM_RESOURCE_SYSTEM_RESERVED_MEMORY_MB: &str =
    "yarn.nodemanager.resource.system-reserved-memory-mb";
pub const NM_RESOURCE_COUNT_LOGICAL_PROCESSORS_AS_CORES: &str =
    "yarn.nodemanager.resource.count-logical-processors-as-cores";
pub const NM_RESOURCE_PCORES_VCORES_MULTIPLIER: &str =
    "yarn.nodemanager.resource.pcores-vcores-multiplier";
pub const NM_RESOURCE_PERCENTAGE_PHYSICAL_CPU_LIMIT: &str =
    "yarn.nodemanager.resource.percentage-physical-cpu-limit";

// NodeManager directories and disks
pub const NM_LOCAL_DIRS: &str = "yarn.nodemanager.local-dirs";
pub const NM_LOG_DIRS: &str = "yarn.nodemanager.log-dirs";
pub const NM_DISK_HEALTH_CHECKER_ENABLE: &str = "yarn.nodemanager.disk-health-checker.enable";
pub const NM_DISK_HEALTH_CHECKER_INTERVAL_MS: &str =
    "yarn.nodemanager.disk-health-checker.interval-ms";
pub const NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS: &str =
    "yarn.nodemanager.disk-health-checker.min-healthy-disks";
pub const NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE: &str =
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage";
pub const NM_DISK_HEALTH_CHECKER_MIN_FREE_SPACE_PER_DISK_MB: &str =
    "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb";

// NodeManager health and monitoring
pub const NM_HEALTH_CHECKER_INTERVAL_MS: &str = "yarn.nodemanager.health-checker.interval-ms";
pub const NM_HEALTH_CHECKER_TIMEOUT_MS: &str = "yarn.nodemanager.health-checker.timeout-ms";
pub const NM_HEALTH_CHECKER_RUN_BEFORE_STARTUP: &str =
    "yarn.nodemanager.health-checker.run-before-startup";
pub const NM_RESOURCE_MONITOR_INTERVAL_MS: &str = "yarn.nodemanager.resource-monitor.interval-ms";
pub const NM_CONTAINER_MONITOR_INTERVAL_MS: &str = "yarn.nodemanager.container-monitor.interval-ms";
pub const NM_VMEM_PMEM_RATIO: &str = "yarn.nodemanager.vmem-pmem-ratio";
pub const NM_PMEM_CHECK_ENABLED: &str = "yarn.nodemanager.pmem-check-enabled";
pub const NM_VMEM_CHECK_ENABLED: &str = "yarn.nodemanager.vmem-check-enabled";

// NodeManager containers
pub const NM_CONTAINER_EXECUTOR_CLASS: &str = "yarn.nodemanager.container-executor.class";
pub const NM_AUX_SERVICES: &str = "yarn.nodemanager.aux-services";
pub const NM_ENV_WHITELIST: &str = "yarn.nodemanager.env-whitelist";
pub const NM_ADMIN_ENV: &str = "yarn.nodemanager.admin-env";
pub const NM_SLEEP_DELAY_BEFORE_SIGKILL_MS: &str = "yarn.nodemanager.sleep-delay-before-sigkill.ms";
pub const NM_PROCESS_KILL_WAIT_MS: &str = "yarn.nodemanager.process-kill-wait.ms";
pub const NM_CONTAINER_DIAGNOSTICS_MAXIMUM_SIZE: &str =
    "yarn.nodemanager.container-diagnostics-maximum-size";
pub const NM_CONTAINER_STDERR_TAIL_BYTES: &str = "yarn.nodemanager.container.stderr.tail.bytes";
pub const NM_DELETE_DEBUG_DELAY_SEC: &str = "yarn.nodemanager.delete.debug-delay-sec";
pub const NM_DEFAULT_CONTAINER_EXECUTOR_LOG_DIRS_PERMISSIONS: &str =
    "yarn.nodemanager.default-container-executor.log-dirs.permissions";
pub const NM_LOCALIZER_CACHE_TARGET_SIZE_MB: &str =
    "yarn.nodemanager.localizer.cache.target-size-mb";
pub const NM_LOCALIZER_CACHE_CLEANUP_INTERVAL_MS: &str =
    "yarn.nodemanager.localizer.cache.cleanup.interval-ms";

// NodeManager logs and recovery
pub const NM_LOG_RETAIN_SECONDS: &str = "yarn.nodemanager.log.retain-seconds";
pub const NM_REMOTE_APP_LOG_DIR: &str = "yarn.nodemanager.remote-app-log-dir";
pub const NM_REMOTE_APP_LOG_DIR_SUFFIX: &str = "yarn.nodemanager.remote-app-log-dir-suffix";
pub const NM_LOG_AGGREGATION_ROLL_MONITORING_INTERVAL_SECONDS: &str =
    "yarn.nodemanager.log-aggregation.roll-monitoring-interval-seconds";
pub const NM_RECOVERY_ENABLED: &str = "yarn.nodemanager.recovery.enabled";
pub const NM_RECOVERY_DIR: &str = "yarn.nodemanager.recovery.dir";
pub const NM_RESOURCEMANAGER_MINIMUM_VERSION: &str =
    "yarn.nodemanager.resourcemanager.minimum.version";

/// Every key above, in the order of the defaults files.
pub const ALL: &[&str] = &[
    HADOOP_TMP_DIR,
    FS_DEFAULT_FS,
    HADOOP_SECURITY_AUTHENTICATION,
    HADOOP_SECURITY_AUTHORIZATION,
    HADOOP_RPC_PROTECTION,
    HADOOP_SECURITY_GROUP_MAPPING,
    HADOOP_SECURITY_GROUPS_CACHE_SECS,
    HADOOP_USER_GROUP_STATIC_MAPPING_OVERRIDES,
    HADOOP_HTTP_STATICUSER_USER,
    HADOOP_SECURITY_TOKEN_SERVICE_USE_IP,
    IPC_MAXIMUM_DATA_LENGTH,
    IPC_MAXIMUM_RESPONSE_LENGTH,
    IPC_SERVER_MAX_RESPONSE_SIZE,
    IPC_SERVER_LISTEN_QUEUE_SIZE,
    IPC_CLIENT_CONNECTION_MAXIDLETIME,
    IPC_CLIENT_CONNECT_TIMEOUT,
    IPC_CLIENT_CONNECT_MAX_RETRIES,
    IPC_CLIENT_CONNECT_RETRY_INTERVAL,
    IPC_CLIENT_CONNECT_MAX_RETRIES_ON_TIMEOUTS,
    IPC_CLIENT_PING,
    IPC_PING_INTERVAL,
    IPC_CLIENT_RPC_TIMEOUT_MS,
    IPC_CLIENT_TCPNODELAY,
    IPC_CLIENT_FALLBACK_TO_SIMPLE_AUTH_ALLOWED,
    NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL,
    NET_TOPOLOGY_SCRIPT_FILE_NAME,
    NET_TOPOLOGY_SCRIPT_NUMBER_ARGS,
    NET_TOPOLOGY_TABLE_FILE_NAME,
    RM_HOSTNAME,
    RM_ADDRESS,
    RM_SCHEDULER_ADDRESS,
    RM_RESOURCE_TRACKER_ADDRESS,
    RM_ADMIN_ADDRESS,
    RM_WEBAPP_ADDRESS,
    RM_WEBAPP_HTTPS_ADDRESS,
    RM_BIND_HOST,
    YARN_HTTP_POLICY,
    RM_CLUSTER_ID,
    RM_CLIENT_THREAD_COUNT,
    RM_SCHEDULER_CLIENT_THREAD_COUNT,
    RM_RESOURCE_TRACKER_CLIENT_THREAD_COUNT,
    RM_ADMIN_CLIENT_THREAD_COUNT,
    RM_AMLAUNCHER_THREAD_COUNT,
    RM_SCHEDULER_CLASS,
    SCHEDULER_MINIMUM_ALLOCATION_MB,
    SCHEDULER_MAXIMUM_ALLOCATION_MB,
    SCHEDULER_MINIMUM_ALLOCATION_VCORES,
    SCHEDULER_MAXIMUM_ALLOCATION_VCORES,
    SCHEDULER_INCLUDE_PORT_IN_NODE_NAME,
    YARN_CLUSTER_MAX_APPLICATION_PRIORITY,
    RM_NODES_INCLUDE_PATH,
    RM_NODES_EXCLUDE_PATH,
    YARN_NM_LIVENESS_MONITOR_EXPIRY_INTERVAL_MS,
    RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS,
    RM_DECOMMISSIONING_NODES_WATCHER_POLL_INTERVAL_SECS,
    RM_NODEMANAGER_GRACEFUL_DECOMMISSION_TIMEOUT_SECS,
    RM_NODE_REMOVAL_UNTRACKED_TIMEOUT_MS,
    RM_RESOURCE_TRACKER_NM_IP_HOSTNAME_CHECK,
    RM_NODEMANAGER_MINIMUM_VERSION,
    RM_NODEMANAGER_CONNECT_RETRIES,
    RM_AM_MAX_ATTEMPTS,
    YARN_AM_LIVENESS_MONITOR_EXPIRY_INTERVAL_MS,
    RM_CONTAINER_ALLOCATION_EXPIRY_INTERVAL_MS,
    RM_CONTAINER_LIVENESS_MONITOR_INTERVAL_MS,
    RM_MAX_COMPLETED_APPLICATIONS,
    RM_STATE_STORE_MAX_COMPLETED_APPLICATIONS,
    RM_APPLICATION_TIMEOUTS_MONITOR_INTERVAL_MS,
    RM_RECOVERY_ENABLED,
    RM_WORK_PRESERVING_RECOVERY_ENABLED,
    RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS,
    RM_STORE_CLASS,
    RM_STATE_STORE_PATH,
    HADOOP_ZK_ADDRESS,
    HADOOP_ZK_NUM_RETRIES,
    HADOOP_ZK_RETRY_INTERVAL_MS,
    HADOOP_ZK_TIMEOUT_MS,
    HADOOP_ZK_ACL,
    RM_ZK_STATE_STORE_PARENT_PATH,
    RM_ZK_MAX_ZNODE_SIZE_BYTES,
    RM_HA_AUTOMATIC_FAILOVER_ZK_BASE_PATH,
    RM_HA_ENABLED,
    RM_HA_RM_IDS,
    YARN_FAIL_FAST,
    RM_FAIL_FAST,
    RM_CONNECT_MAX_WAIT_MS,
    RM_CONNECT_RETRY_INTERVAL_MS,
    RM_AM_RM_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS,
    RM_CONTAINER_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS,
    RM_NM_TOKENS_MASTER_KEY_ROLLING_INTERVAL_SECS,
    RM_DELEGATION_KEY_UPDATE_INTERVAL,
    RM_DELEGATION_TOKEN_RENEW_INTERVAL,
    RM_DELEGATION_TOKEN_MAX_LIFETIME,
    YARN_ACL_ENABLE,
    YARN_ADMIN_ACL,
    YARN_WEBAPP_ENABLE_REST_APP_SUBMISSIONS,
    RM_WEBAPP_UI_ACTIONS_ENABLED,
    YARN_WEB_PROXY_ADDRESS,
    YARN_TIMELINE_SERVICE_ENABLED,
    YARN_NODE_LABELS_ENABLED,
    YARN_LOG_AGGREGATION_ENABLE,
    YARN_LOG_AGGREGATION_RETAIN_SECONDS,
    YARN_LOG_AGGREGATION_RETAIN_CHECK_INTERVAL_SECONDS,
    YARN_LOG_SERVER_URL,
    YARN_LOG_DIR,
    NM_HOSTNAME,
    NM_ADDRESS,
    NM_BIND_HOST,
    NM_WEBAPP_ADDRESS,
    NM_WEBAPP_HTTPS_ADDRESS,
    NM_LOCALIZER_ADDRESS,
    NM_CONTAINER_MANAGER_THREAD_COUNT,
    NM_LOCALIZER_CLIENT_THREAD_COUNT,
    NM_LOCALIZER_FETCH_THREAD_COUNT,
    NM_RESOURCE_MEMORY_MB,
    NM_RESOURCE_CPU_VCORES,
    NM_RESOURCE_DETECT_HARDWARE_CAPABILITIES,
    NM_RESOURCE_SYSTEM_RESERVED_MEMORY_MB,
    NM_RESOURCE_COUNT_LOGICAL_PROCESSORS_AS_CORES,
    NM_RESOURCE_PCORES_VCORES_MULTIPLIER,
    NM_RESOURCE_PERCENTAGE_PHYSICAL_CPU_LIMIT,
    NM_LOCAL_DIRS,
    NM_LOG_DIRS,
    NM_DISK_HEALTH_CHECKER_ENABLE,
    NM_DISK_HEALTH_CHECKER_INTERVAL_MS,
    NM_DISK_HEALTH_CHECKER_MIN_HEALTHY_DISKS,
    NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE,
    NM_DISK_HEALTH_CHECKER_MIN_FREE_SPACE_PER_DISK_MB,
    NM_HEALTH_CHECKER_INTERVAL_MS,
    NM_HEALTH_CHECKER_TIMEOUT_MS,
    NM_HEALTH_CHECKER_RUN_BEFORE_STARTUP,
    NM_RESOURCE_MONITOR_INTERVAL_MS,
    NM_CONTAINER_MONITOR_INTERVAL_MS,
    NM_VMEM_PMEM_RATIO,
    NM_PMEM_CHECK_ENABLED,
    NM_VMEM_CHECK_ENABLED,
    NM_CONTAINER_EXECUTOR_CLASS,
    NM_AUX_SERVICES,
    NM_ENV_WHITELIST,
    NM_ADMIN_ENV,
    NM_SLEEP_DELAY_BEFORE_SIGKILL_MS,
    NM_PROCESS_KILL_WAIT_MS,
    NM_CONTAINER_DIAGNOSTICS_MAXIMUM_SIZE,
    NM_CONTAINER_STDERR_TAIL_BYTES,
    NM_DELETE_DEBUG_DELAY_SEC,
    NM_DEFAULT_CONTAINER_EXECUTOR_LOG_DIRS_PERMISSIONS,
    NM_LOCALIZER_CACHE_TARGET_SIZE_MB,
    NM_LOCALIZER_CACHE_CLEANUP_INTERVAL_MS,
    NM_LOG_RETAIN_SECONDS,
    NM_REMOTE_APP_LOG_DIR,
    NM_REMOTE_APP_LOG_DIR_SUFFIX,
    NM_LOG_AGGREGATION_ROLL_MONITORING_INTERVAL_SECONDS,
    NM_RECOVERY_ENABLED,
    NM_RECOVERY_DIR,
    NM_RESOURCEMANAGER_MINIMUM_VERSION,
];

/// Keys Hadoop documents without a default value; `get` returns `None` for
/// them until a site file or [`Configuration::set`](super::Configuration::set)
/// provides one.
pub const NO_DEFAULT: &[&str] = &[
    RM_CLUSTER_ID,
    RM_HA_RM_IDS,
    NM_CONTAINER_MONITOR_INTERVAL_MS,
    HADOOP_ZK_ADDRESS,
];

/// What Hadoop components use when [`RM_CLUSTER_ID`] is not set.
pub const DEFAULT_RM_CLUSTER_ID: &str = "yarn_cluster";
