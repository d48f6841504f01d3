//! The proxies of YARN's clients, configured from Hadoop's keys as Hadoop
//! configures them:
//!
//! - [`rm_client`]: a client of the ResourceManager (YarnClient, an AM's
//!   scheduler client), as `ClientRMProxy`/`RMProxy` build it;
//! - [`rm_server`]: the NodeManager's resource-tracker client, as
//!   `ServerRMProxy` builds it (its own wait and interval when set);
//! - [`nm_client`]: a client of a NodeManager, as `NMProxy` builds it;
//! - [`rm_addresses`]: one address per ResourceManager with RM HA, as
//!   `HAUtil` and `ConfiguredRMFailoverProxyProvider` find them.

use std::time::Duration;

use spindle_common::conf::{keys as common_keys, ConfError, Configuration};

use crate::kerberos::KerberosLogin;
use crate::proxy::ProxyConfig;
use crate::retry::{ConnectRetry, Limit, RetryPolicy, Sleep, NM_PROXY_RETRIED, RM_PROXY_RETRIED};

/// Keys read here that Spindle's built-in defaults do not list: Hadoop ships
/// them without a value, or Spindle's daemons do not read them. Each falls
/// back to Hadoop's behaviour when unset.
pub mod keys {
    /// With RM HA, failovers before giving up; unset: max-wait / sleep base.
    pub const CLIENT_FAILOVER_MAX_ATTEMPTS: &str = "yarn.client.failover-max-attempts";
    /// With RM HA, the base of the growing pause between failovers; unset:
    /// `yarn.resourcemanager.connect.retry-interval.ms`.
    pub const CLIENT_FAILOVER_SLEEP_BASE_MS: &str = "yarn.client.failover-sleep-base-ms";
    /// With RM HA, the longest pause between failovers; unset:
    /// `yarn.resourcemanager.connect.retry-interval.ms`.
    pub const CLIENT_FAILOVER_SLEEP_MAX_MS: &str = "yarn.client.failover-sleep-max-ms";
    /// With RM HA, `ipc.client.connect.max.retries` per ResourceManager (0).
    pub const CLIENT_FAILOVER_RETRIES: &str = "yarn.client.failover-retries";
    /// With RM HA, `ipc.client.connect.max.retries.on.timeouts` per
    /// ResourceManager (0).
    pub const CLIENT_FAILOVER_RETRIES_ON_SOCKET_TIMEOUTS: &str =
        "yarn.client.failover-retries-on-socket-timeouts";
    /// The NodeManager's own `connect.max-wait.ms`; unset: the ResourceManager one.
    pub const NM_RM_CONNECT_MAX_WAIT_MS: &str =
        "yarn.nodemanager.resourcemanager.connect.max-wait.ms";
    /// The NodeManager's own `connect.retry-interval.ms`; unset: the
    /// ResourceManager one.
    pub const NM_RM_CONNECT_RETRY_INTERVAL_MS: &str =
        "yarn.nodemanager.resourcemanager.connect.retry-interval.ms";
    /// How long a client keeps trying to reach a NodeManager (180000 ms).
    pub const CLIENT_NM_CONNECT_MAX_WAIT_MS: &str = "yarn.client.nodemanager-connect.max-wait-ms";
    /// The pause between those attempts (10000 ms).
    pub const CLIENT_NM_CONNECT_RETRY_INTERVAL_MS: &str =
        "yarn.client.nodemanager-connect.retry-interval-ms";
}

/// Hadoop's defaults for the keys above and for the ResourceManager's.
pub mod defaults {
    use std::time::Duration;

    /// `yarn.resourcemanager.connect.max-wait.ms`.
    pub const RM_CONNECT_MAX_WAIT: Duration = Duration::from_millis(900_000);
    /// `yarn.resourcemanager.connect.retry-interval.ms`.
    pub const RM_CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(30_000);
    /// `yarn.client.nodemanager-connect.max-wait-ms`.
    pub const NM_CONNECT_MAX_WAIT: Duration = Duration::from_millis(180_000);
    /// `yarn.client.nodemanager-connect.retry-interval-ms`.
    pub const NM_CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(10_000);
    /// A call's wait for its answer when `ipc.client.rpc-timeout.ms` is 0
    /// (Hadoop then waits without limit, pinging the server).
    pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
}

/// The failover settings of RM HA (`yarn.client.failover-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Failover {
    /// `yarn.client.failover-max-attempts`; `None`: max-wait / sleep base.
    pub max_attempts: Option<u32>,
    /// `yarn.client.failover-sleep-base-ms`; `None`: the retry interval.
    pub sleep_base: Option<Duration>,
    /// `yarn.client.failover-sleep-max-ms`; `None`: the retry interval.
    pub sleep_max: Option<Duration>,
    /// `yarn.client.failover-retries` (0).
    pub retries: u32,
    /// `yarn.client.failover-retries-on-socket-timeouts` (0).
    pub retries_on_timeouts: u32,
}

impl Failover {
    /// Reads the `yarn.client.failover-*` keys.
    pub fn from_conf(conf: &Configuration) -> Result<Failover, ConfError> {
        let ms = |key| Ok::<_, ConfError>(optional_i64(conf, key)?.map(non_negative_ms));
        let count = |key| {
            Ok::<_, ConfError>(
                optional_i64(conf, key)?.map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX)),
            )
        };
        Ok(Failover {
            // -1 means "derive it", as when unset.
            max_attempts: optional_i64(conf, keys::CLIENT_FAILOVER_MAX_ATTEMPTS)?
                .filter(|n| *n >= 0)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            sleep_base: ms(keys::CLIENT_FAILOVER_SLEEP_BASE_MS)?,
            sleep_max: ms(keys::CLIENT_FAILOVER_SLEEP_MAX_MS)?,
            retries: count(keys::CLIENT_FAILOVER_RETRIES)?.unwrap_or(0),
            retries_on_timeouts: count(keys::CLIENT_FAILOVER_RETRIES_ON_SOCKET_TIMEOUTS)?
                .unwrap_or(0),
        })
    }

    /// The connection-level retries while failing over: Hadoop's
    /// `ConfiguredRMFailoverProxyProvider` sets `ipc.client.connect.max.retries`
    /// and `.on.timeouts` to the failover retries, so that an unreachable
    /// ResourceManager is left quickly for the next.
    pub fn connect_retry(&self, base: ConnectRetry) -> ConnectRetry {
        ConnectRetry {
            max_retries: self.retries,
            retry_interval: base.retry_interval,
            max_retries_on_timeouts: self.retries_on_timeouts,
        }
    }
}

/// How a client keeps trying to reach the ResourceManager, the inputs of
/// `RMProxy.createRetryPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmRetry {
    /// `None`: forever (a max-wait of -1).
    pub max_wait: Option<Duration>,
    pub retry_interval: Duration,
    /// `Some` with RM HA.
    pub failover: Option<Failover>,
}

impl RmRetry {
    /// `RMProxy.createRetryPolicy`. With HA: `FailoverOnNetworkExceptionRetry`
    /// with the failover settings, the sleeps defaulting to the retry
    /// interval and the number of failovers to max-wait / sleep base (no
    /// limit when waiting forever). Without HA: retry the network failures of
    /// RMProxy's map every `retry_interval` for `max_wait`; a max-wait below
    /// the interval means "try once".
    pub fn policy(&self) -> RetryPolicy {
        let max_wait = self.max_wait.map(|w| {
            if w < self.retry_interval {
                Duration::ZERO
            } else {
                w
            }
        });
        match &self.failover {
            Some(f) => {
                let sleep_base = f.sleep_base.unwrap_or(self.retry_interval);
                let sleep_max = f.sleep_max.unwrap_or(self.retry_interval);
                let max_failovers = f.max_attempts.unwrap_or_else(|| match max_wait {
                    None => u32::MAX,
                    Some(w) => {
                        let base = sleep_base.as_millis().max(1);
                        u32::try_from(w.as_millis() / base).unwrap_or(u32::MAX)
                    }
                });
                RetryPolicy::FailoverOnNetworkException {
                    max_failovers,
                    max_retries: 0,
                    sleep_base,
                    sleep_max,
                }
            }
            None => RetryPolicy::OnNetworkFailures {
                on: RM_PROXY_RETRIED,
                limit: match max_wait {
                    None => Limit::Forever,
                    Some(w) => Limit::Time(w),
                },
                sleep: Sleep::Fixed(self.retry_interval),
            },
        }
    }

    /// Reads `max_wait_key` and `interval_key` (falling back to the
    /// ResourceManager keys when unset) and, with HA, the failover keys.
    fn read(
        conf: &Configuration,
        max_wait_key: &str,
        interval_key: &str,
    ) -> Result<RmRetry, ConfError> {
        let rm_wait = optional_i64(conf, common_keys::RM_CONNECT_MAX_WAIT_MS)?;
        let rm_interval = optional_i64(conf, common_keys::RM_CONNECT_RETRY_INTERVAL_MS)?;
        let wait = optional_i64(conf, max_wait_key)?.or(rm_wait);
        let interval = optional_i64(conf, interval_key)?.or(rm_interval);
        let max_wait = max_wait(
            conf,
            wait_key(conf, max_wait_key),
            wait,
            defaults::RM_CONNECT_MAX_WAIT,
        )?;
        let retry_interval = retry_interval(
            conf,
            wait_key(conf, interval_key),
            interval,
            defaults::RM_CONNECT_RETRY_INTERVAL,
            0,
        )?;
        let failover = if ha_enabled(conf)? {
            Some(Failover::from_conf(conf)?)
        } else {
            None
        };
        Ok(RmRetry {
            max_wait,
            retry_interval,
            failover,
        })
    }

    /// What a client of the ResourceManager uses
    /// (`yarn.resourcemanager.connect.*`).
    pub fn client(conf: &Configuration) -> Result<RmRetry, ConfError> {
        RmRetry::read(
            conf,
            common_keys::RM_CONNECT_MAX_WAIT_MS,
            common_keys::RM_CONNECT_RETRY_INTERVAL_MS,
        )
    }

    /// What the NodeManager uses (`ServerRMProxy`): its own keys, else the
    /// ResourceManager ones.
    pub fn node_manager(conf: &Configuration) -> Result<RmRetry, ConfError> {
        RmRetry::read(
            conf,
            keys::NM_RM_CONNECT_MAX_WAIT_MS,
            keys::NM_RM_CONNECT_RETRY_INTERVAL_MS,
        )
    }

    /// The connection-level retries to use with this policy: the `ipc.client`
    /// ones, or the failover retries with HA.
    pub fn connect_retry(&self, base: ConnectRetry) -> ConnectRetry {
        match &self.failover {
            Some(f) => f.connect_retry(base),
            None => base,
        }
    }
}

/// The key a value came from: `key` if set, else the ResourceManager key it
/// falls back to.
fn wait_key<'a>(conf: &Configuration, key: &'a str) -> &'a str {
    if is_set(conf, key) {
        return key;
    }
    if key == keys::NM_RM_CONNECT_MAX_WAIT_MS {
        common_keys::RM_CONNECT_MAX_WAIT_MS
    } else if key == keys::NM_RM_CONNECT_RETRY_INTERVAL_MS {
        common_keys::RM_CONNECT_RETRY_INTERVAL_MS
    } else {
        key
    }
}

/// A max-wait setting read from `key`: unset is `default`, -1 is forever
/// (`None`), other negative values are refused.
fn max_wait(
    conf: &Configuration,
    key: &str,
    ms: Option<i64>,
    default: Duration,
) -> Result<Option<Duration>, ConfError> {
    match ms {
        None => Ok(Some(default)),
        Some(-1) => Ok(None),
        Some(ms) if ms < 0 => Err(conf.invalid_value(
            key,
            "can be -1 (wait forever), but can not be other negative numbers",
        )),
        Some(ms) => Ok(Some(non_negative_ms(ms))),
    }
}

/// A retry interval read from `key`: unset is `default`; below `min` is refused.
fn retry_interval(
    conf: &Configuration,
    key: &str,
    ms: Option<i64>,
    default: Duration,
    min: i64,
) -> Result<Duration, ConfError> {
    match ms {
        None => Ok(default),
        Some(ms) if ms < min => Err(conf.invalid_value(key, &format!("must be at least {min} ms"))),
        Some(ms) => Ok(non_negative_ms(ms)),
    }
}

fn non_negative_ms(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn is_set(conf: &Configuration, key: &str) -> bool {
    conf.get_trimmed(key).is_some_and(|v| !v.is_empty())
}

/// An integer key that may be unset or empty (Hadoop ships several of these
/// keys without a value).
fn optional_i64(conf: &Configuration, key: &str) -> Result<Option<i64>, ConfError> {
    if is_set(conf, key) {
        conf.get_i64(key).map(Some)
    } else {
        Ok(None)
    }
}

/// `yarn.resourcemanager.ha.enabled` (unset: false).
pub fn ha_enabled(conf: &Configuration) -> Result<bool, ConfError> {
    if is_set(conf, common_keys::RM_HA_ENABLED) {
        conf.get_bool(common_keys::RM_HA_ENABLED)
    } else {
        Ok(false)
    }
}

/// The connection-level retries from `ipc.client.connect.*`.
pub fn connect_retry(conf: &Configuration) -> Result<ConnectRetry, ConfError> {
    let d = ConnectRetry::default();
    let count = |key, default: u32| -> Result<u32, ConfError> {
        Ok(optional_i64(conf, key)?
            .map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
            .unwrap_or(default))
    };
    Ok(ConnectRetry {
        max_retries: count(common_keys::IPC_CLIENT_CONNECT_MAX_RETRIES, d.max_retries)?,
        retry_interval: optional_i64(conf, common_keys::IPC_CLIENT_CONNECT_RETRY_INTERVAL)?
            .map(non_negative_ms)
            .unwrap_or(d.retry_interval),
        max_retries_on_timeouts: count(
            common_keys::IPC_CLIENT_CONNECT_MAX_RETRIES_ON_TIMEOUTS,
            d.max_retries_on_timeouts,
        )?,
    })
}

/// `ipc.client.connect.timeout` (20000 ms).
pub fn connect_timeout(conf: &Configuration) -> Result<Duration, ConfError> {
    Ok(optional_i64(conf, common_keys::IPC_CLIENT_CONNECT_TIMEOUT)?
        .map(|ms| non_negative_ms(ms.max(1)))
        .unwrap_or(Duration::from_secs(20)))
}

/// `ipc.client.rpc-timeout.ms` when positive, else [`defaults::CALL_TIMEOUT`].
pub fn call_timeout(conf: &Configuration) -> Result<Duration, ConfError> {
    Ok(optional_i64(conf, common_keys::IPC_CLIENT_RPC_TIMEOUT_MS)?
        .filter(|ms| *ms > 0)
        .map(non_negative_ms)
        .unwrap_or(defaults::CALL_TIMEOUT))
}

/// `config` with the connect and call timeouts of `conf`.
fn with_timeouts(conf: &Configuration, mut config: ProxyConfig) -> Result<ProxyConfig, ConfError> {
    config.connect_timeout = connect_timeout(conf)?;
    config.call_timeout = call_timeout(conf)?;
    Ok(config)
}

/// `host:port`, with an IPv6 host in brackets.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The port Hadoop gives a ResourceManager address built from
/// `yarn.resourcemanager.hostname.<rm-id>` (`YarnConfiguration.getRMDefaultPortNumber`).
fn rm_default_port(address_key: &str) -> Option<u16> {
    Some(match address_key {
        common_keys::RM_ADDRESS => 8032,
        common_keys::RM_SCHEDULER_ADDRESS => 8030,
        common_keys::RM_RESOURCE_TRACKER_ADDRESS => 8031,
        common_keys::RM_ADMIN_ADDRESS => 8033,
        common_keys::RM_WEBAPP_ADDRESS => 8088,
        common_keys::RM_WEBAPP_HTTPS_ADDRESS => 8090,
        _ => return None,
    })
}

/// The ResourceManager address(es) of `address_key`
/// (e.g. `yarn.resourcemanager.address`): the key's own value without HA;
/// with `yarn.resourcemanager.ha.enabled`, one per id of
/// `yarn.resourcemanager.ha.rm-ids`, in that order, from
/// `<address_key>.<rm-id>`, else `yarn.resourcemanager.hostname.<rm-id>` with
/// the default port of the address (as `HAUtil` completes a configuration).
pub fn rm_addresses(conf: &Configuration, address_key: &str) -> Result<Vec<String>, ConfError> {
    if !ha_enabled(conf)? {
        let (host, port) = conf.get_socket_addr(address_key)?;
        return Ok(vec![join_host_port(&host, port)]);
    }
    let ids = conf.get_strings(common_keys::RM_HA_RM_IDS);
    if ids.is_empty() {
        return Err(conf.invalid_value(
            common_keys::RM_HA_RM_IDS,
            &format!(
                "lists no ResourceManager, but {} is true",
                common_keys::RM_HA_ENABLED
            ),
        ));
    }
    ids.iter()
        .map(|id| rm_instance_address(conf, address_key, id))
        .collect()
}

/// The address `address_key` of ResourceManager `id` in an HA configuration:
/// `<address_key>.<id>`, else `yarn.resourcemanager.hostname.<id>` with the
/// default port of the address (`HAUtil.checkAndSetRMRPCAddress`); an error
/// naming both keys when neither is set.
pub fn rm_instance_address(
    conf: &Configuration,
    address_key: &str,
    id: &str,
) -> Result<String, ConfError> {
    let addr_key = format!("{address_key}.{id}");
    let host_key = format!("{}.{id}", common_keys::RM_HOSTNAME);
    if is_set(conf, &addr_key) {
        let (host, port) = conf.get_socket_addr(&addr_key)?;
        return Ok(join_host_port(&host, port));
    }
    let host = conf.get_trimmed(&host_key).filter(|h| !h.is_empty());
    let port = match rm_default_port(address_key) {
        Some(p) => Some(p),
        // Not one of Hadoop's RM addresses: the port of the plain key.
        None => conf.get_socket_addr(address_key).ok().map(|(_, p)| p),
    };
    match (host, port) {
        (Some(h), Some(p)) => Ok(join_host_port(&h, p)),
        _ => Err(conf.invalid_value(
            common_keys::RM_HA_RM_IDS,
            &format!(
                "names ResourceManager '{id}', but neither {addr_key} nor {host_key} is \
                 set; one of them needs to be set in an HA configuration"
            ),
        )),
    }
}

/// A client of the ResourceManager at `address_key` (`ClientRMProxy`): every
/// ResourceManager with HA, the policy of [`RmRetry::client`], the
/// `ipc.client` connection settings.
pub fn rm_client(
    conf: &Configuration,
    address_key: &str,
    user: &str,
    protocol: &str,
) -> Result<ProxyConfig, ConfError> {
    let mut config = rm_proxy(conf, address_key, user, protocol, RmRetry::client(conf)?)?;
    // Under Kerberos a client logs in with the user's ticket cache
    // (`KRB5CCNAME`), as Hadoop's client does after `kinit`.
    config.kerberos = crate::kerberos::rm_client(conf, KerberosLogin::TicketCache)
        .map_err(|m| conf.invalid_value(common_keys::RM_PRINCIPAL, &m))?;
    Ok(config)
}

/// The NodeManager's client of the ResourceManager (`ServerRMProxy`): as
/// [`rm_client`], with the policy of [`RmRetry::node_manager`].
pub fn rm_server(
    conf: &Configuration,
    address_key: &str,
    user: &str,
    protocol: &str,
) -> Result<ProxyConfig, ConfError> {
    rm_proxy(
        conf,
        address_key,
        user,
        protocol,
        RmRetry::node_manager(conf)?,
    )
}

fn rm_proxy(
    conf: &Configuration,
    address_key: &str,
    user: &str,
    protocol: &str,
    retry: RmRetry,
) -> Result<ProxyConfig, ConfError> {
    let mut config = with_timeouts(conf, ProxyConfig::new(String::new(), user, protocol))?;
    config.servers = rm_addresses(conf, address_key)?;
    config.connect_retry = retry.connect_retry(connect_retry(conf)?);
    config.policy = retry.policy();
    Ok(config)
}

/// `NMProxy`: retry the network failures of NMProxy's map every `interval`
/// for `max_wait` (`None`: forever), with no connection-level retries.
pub fn nm_policy(max_wait: Option<Duration>, interval: Duration) -> RetryPolicy {
    RetryPolicy::OnNetworkFailures {
        on: NM_PROXY_RETRIED,
        limit: match max_wait {
            None => Limit::Forever,
            Some(w) => Limit::Time(w),
        },
        sleep: Sleep::Fixed(interval),
    }
}

/// A client of the NodeManager at `addr` (`NMProxy`):
/// `yarn.client.nodemanager-connect.max-wait-ms` (-1: forever) and
/// `.retry-interval-ms`, and no connection-level retries (NMProxy sets
/// `ipc.client.connect.max.retries` and `.on.timeouts` to 0).
pub fn nm_client(
    conf: &Configuration,
    addr: &str,
    user: &str,
    protocol: &str,
) -> Result<ProxyConfig, ConfError> {
    let max_wait = max_wait(
        conf,
        keys::CLIENT_NM_CONNECT_MAX_WAIT_MS,
        optional_i64(conf, keys::CLIENT_NM_CONNECT_MAX_WAIT_MS)?,
        defaults::NM_CONNECT_MAX_WAIT,
    )?;
    let interval = retry_interval(
        conf,
        keys::CLIENT_NM_CONNECT_RETRY_INTERVAL_MS,
        optional_i64(conf, keys::CLIENT_NM_CONNECT_RETRY_INTERVAL_MS)?,
        defaults::NM_CONNECT_RETRY_INTERVAL,
        1,
    )?;
    let mut config = with_timeouts(conf, ProxyConfig::new(addr, user, protocol))?;
    config.connect_retry = ConnectRetry::NONE;
    config.policy = nm_policy(max_wait, interval);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> Configuration {
        Configuration::with_defaults()
    }

    #[test]
    fn rm_policy_without_ha_retries_for_the_max_wait() {
        let c = conf();
        let r = RmRetry::client(&c).expect("defaults");
        assert_eq!(r.max_wait, Some(Duration::from_millis(900_000)));
        assert_eq!(r.retry_interval, Duration::from_millis(30_000));
        assert_eq!(
            r.policy(),
            RetryPolicy::OnNetworkFailures {
                on: RM_PROXY_RETRIED,
                limit: Limit::Time(Duration::from_millis(900_000)),
                sleep: Sleep::Fixed(Duration::from_millis(30_000)),
            }
        );
        let p = rm_client(&c, common_keys::RM_ADDRESS, "u", "p").expect("proxy");
        assert_eq!(p.servers, ["0.0.0.0:8032"]);
        assert_eq!(p.connect_retry, ConnectRetry::default());
        assert_eq!(p.connect_timeout, Duration::from_millis(20_000));

        // A wait below the interval: try once. -1: forever.
        let mut c = conf();
        c.set(common_keys::RM_CONNECT_MAX_WAIT_MS, "1000");
        assert!(matches!(
            RmRetry::client(&c).expect("valid").policy(),
            RetryPolicy::OnNetworkFailures { limit: Limit::Time(w), .. } if w.is_zero()
        ));
        c.set(common_keys::RM_CONNECT_MAX_WAIT_MS, "-1");
        assert!(matches!(
            RmRetry::client(&c).expect("valid").policy(),
            RetryPolicy::OnNetworkFailures {
                limit: Limit::Forever,
                ..
            }
        ));
        c.set(common_keys::RM_CONNECT_MAX_WAIT_MS, "-2");
        let err = RmRetry::client(&c).expect_err("-2 is refused").to_string();
        assert!(err.contains(common_keys::RM_CONNECT_MAX_WAIT_MS), "{err}");
    }

    #[test]
    fn the_node_manager_keys_override_the_resource_manager_ones() {
        let mut c = conf();
        c.set(common_keys::RM_CONNECT_MAX_WAIT_MS, "60000");
        c.set(keys::NM_RM_CONNECT_RETRY_INTERVAL_MS, "500");
        let r = RmRetry::node_manager(&c).expect("valid");
        assert_eq!(r.max_wait, Some(Duration::from_millis(60_000)));
        assert_eq!(r.retry_interval, Duration::from_millis(500));
        c.set(keys::NM_RM_CONNECT_MAX_WAIT_MS, "-1");
        assert_eq!(RmRetry::node_manager(&c).expect("valid").max_wait, None);
        // Hadoop ships the NodeManager keys empty: that means "not set".
        c.set(keys::NM_RM_CONNECT_MAX_WAIT_MS, "");
        assert_eq!(
            RmRetry::node_manager(&c).expect("valid").max_wait,
            Some(Duration::from_millis(60_000))
        );
        assert_eq!(
            RmRetry::client(&c).expect("valid").retry_interval,
            Duration::from_millis(30_000)
        );
    }

    #[test]
    fn ha_addresses_and_failover_policy() {
        let mut c = conf();
        c.set(common_keys::RM_HA_ENABLED, "true");
        c.set(common_keys::RM_HA_RM_IDS, "rm1, rm2");
        c.set("yarn.resourcemanager.hostname.rm1", "a.example");
        c.set("yarn.resourcemanager.hostname.rm2", "b.example");
        c.set(
            "yarn.resourcemanager.scheduler.address.rm2",
            "b.example:9030",
        );
        assert_eq!(
            rm_addresses(&c, common_keys::RM_SCHEDULER_ADDRESS).expect("addresses"),
            ["a.example:8030", "b.example:9030"]
        );
        assert_eq!(
            rm_addresses(&c, common_keys::RM_ADDRESS).expect("addresses"),
            ["a.example:8032", "b.example:8032"]
        );
        let p = rm_client(&c, common_keys::RM_ADDRESS, "u", "p").expect("proxy");
        // Failovers = max-wait / sleep base; one connection attempt per RM.
        assert_eq!(
            p.policy,
            RetryPolicy::FailoverOnNetworkException {
                max_failovers: 30,
                max_retries: 0,
                sleep_base: Duration::from_millis(30_000),
                sleep_max: Duration::from_millis(30_000),
            }
        );
        assert_eq!(p.connect_retry.max_retries, 0);
        assert_eq!(p.connect_retry.max_retries_on_timeouts, 0);

        c.set(keys::CLIENT_FAILOVER_SLEEP_BASE_MS, "100");
        c.set(keys::CLIENT_FAILOVER_SLEEP_MAX_MS, "2000");
        c.set(keys::CLIENT_FAILOVER_RETRIES, "2");
        let p = rm_client(&c, common_keys::RM_ADDRESS, "u", "p").expect("proxy");
        assert_eq!(
            p.policy,
            RetryPolicy::FailoverOnNetworkException {
                max_failovers: 9000,
                max_retries: 0,
                sleep_base: Duration::from_millis(100),
                sleep_max: Duration::from_millis(2000),
            }
        );
        assert_eq!(p.connect_retry.max_retries, 2);
        c.set(keys::CLIENT_FAILOVER_MAX_ATTEMPTS, "4");
        assert!(matches!(
            rm_client(&c, common_keys::RM_ADDRESS, "u", "p")
                .expect("proxy")
                .policy,
            RetryPolicy::FailoverOnNetworkException {
                max_failovers: 4,
                ..
            }
        ));

        c.set(common_keys::RM_HA_RM_IDS, "rm1,rm3");
        let err = rm_addresses(&c, common_keys::RM_ADDRESS)
            .expect_err("rm3 has no address")
            .to_string();
        assert!(err.contains("yarn.resourcemanager.hostname.rm3"), "{err}");
    }

    #[test]
    fn nm_client_follows_nm_proxy() {
        let c = conf();
        let p = nm_client(&c, "n1:8041", "u", "p").expect("proxy");
        assert_eq!(p.servers, ["n1:8041"]);
        assert_eq!(p.connect_retry, ConnectRetry::NONE);
        assert_eq!(
            p.policy,
            nm_policy(
                Some(Duration::from_millis(180_000)),
                Duration::from_millis(10_000)
            )
        );
        let mut c = conf();
        c.set(keys::CLIENT_NM_CONNECT_MAX_WAIT_MS, "-1");
        c.set(keys::CLIENT_NM_CONNECT_RETRY_INTERVAL_MS, "5");
        let p = nm_client(&c, "n1:8041", "u", "p").expect("proxy");
        assert_eq!(p.policy, nm_policy(None, Duration::from_millis(5)));
        c.set(keys::CLIENT_NM_CONNECT_RETRY_INTERVAL_MS, "0");
        assert!(nm_client(&c, "n1:8041", "u", "p").is_err());
    }
}
