//! The ResourceManager's HA configuration, read as Hadoop's `HAUtil` reads it.
//!
//! With `yarn.resourcemanager.ha.enabled`, `yarn.resourcemanager.ha.rm-ids`
//! lists at least two RMs, each with its service addresses
//! (`yarn.resourcemanager.address.<id>`, `….scheduler.address.<id>`,
//! `….resource-tracker.address.<id>`, `….admin.address.<id>`,
//! `….webapp.address.<id>`, or `yarn.resourcemanager.hostname.<id>` with the
//! default ports: [`yarn_conf::rm_instance_address`], which clients share).
//! This RM is `yarn.resourcemanager.ha.id`, or else the one id whose
//! `yarn.resourcemanager.address.<id>` is a local address. Its own
//! addresses are copied to the plain keys ([`HaConf::instance_conf`]), as
//! `HAUtil.verifyAndSetAllServiceAddresses` does.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

use spindle_common::conf::keys as common_keys;
use spindle_common::conf::Configuration;
use spindle_ipc::yarn_conf;

use crate::error::RmError;

pub const RM_HA_ID: &str = "yarn.resourcemanager.ha.id";
pub const AUTO_FAILOVER_ENABLED: &str = "yarn.resourcemanager.ha.automatic-failover.enabled";
pub const AUTO_FAILOVER_EMBEDDED: &str = "yarn.resourcemanager.ha.automatic-failover.embedded";

/// `YarnConfiguration.getServiceAddressConfKeys`: the four RPC addresses and
/// the web address of `yarn.http.policy` (`HTTPS_ONLY`: the HTTPS one).
pub fn service_address_keys(conf: &Configuration) -> [&'static str; 5] {
    let https = conf
        .get_trimmed("yarn.http.policy")
        .is_some_and(|p| p.eq_ignore_ascii_case("HTTPS_ONLY"));
    [
        common_keys::RM_ADDRESS,
        common_keys::RM_SCHEDULER_ADDRESS,
        common_keys::RM_ADMIN_ADDRESS,
        common_keys::RM_RESOURCE_TRACKER_ADDRESS,
        if https {
            common_keys::RM_WEBAPP_HTTPS_ADDRESS
        } else {
            common_keys::RM_WEBAPP_ADDRESS
        },
    ]
}

/// Hadoop's `HAUtil.BAD_CONFIG_MESSAGE_PREFIX`.
const BAD_CONFIG: &str = "Invalid configuration! ";

/// The HA settings of this RM (HA enabled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaConf {
    /// `yarn.resourcemanager.ha.rm-ids`, in order.
    pub rm_ids: Vec<String>,
    /// This RM's id.
    pub rm_id: String,
    /// `yarn.resourcemanager.ha.automatic-failover.enabled` (default true).
    pub automatic_failover: bool,
    /// `yarn.resourcemanager.ha.automatic-failover.embedded` (default true).
    pub embedded: bool,
}

fn bad(msg: String) -> RmError {
    RmError::Invalid(format!("{BAD_CONFIG}{msg}"))
}

fn bool_or(conf: &Configuration, key: &str, default: bool) -> Result<bool, RmError> {
    if conf.get_trimmed(key).is_some_and(|v| !v.is_empty()) {
        Ok(conf.get_bool(key)?)
    } else {
        Ok(default)
    }
}

/// Whether `addr` (`host:port`) resolves to an address of this host: one a
/// socket can be bound to (`NetUtils.isLocalAddress`).
fn is_local(addr: &str) -> bool {
    let Ok(resolved) = addr.to_socket_addrs() else {
        return false;
    };
    resolved
        .into_iter()
        .any(|a| TcpListener::bind(SocketAddr::new(a.ip(), 0)).is_ok())
}

impl HaConf {
    /// `None` without `yarn.resourcemanager.ha.enabled`; the checks and the
    /// messages of `HAUtil.verifyAndSetConfiguration` otherwise.
    pub fn from_conf(conf: &Configuration) -> Result<Option<HaConf>, RmError> {
        if !yarn_conf::ha_enabled(conf)? {
            return Ok(None);
        }
        let ids_key = common_keys::RM_HA_RM_IDS;
        let rm_ids = conf.get_strings(ids_key);
        if rm_ids.len() < 2 {
            return Err(bad(format!(
                "Invalid value of {ids_key}. Current value is {}\nHA mode requires atleast two RMs",
                conf.get(ids_key).unwrap_or_else(|| "null".into())
            )));
        }
        for id in &rm_ids {
            for key in service_address_keys(conf) {
                yarn_conf::rm_instance_address(conf, key, id).map_err(|_| {
                    bad(format!(
                        "{}.{id} or {key}.{id} needs to be set in an HA configuration.",
                        common_keys::RM_HOSTNAME
                    ))
                })?;
            }
        }
        let rm_id = match conf.get_trimmed(RM_HA_ID).filter(|v| !v.is_empty()) {
            Some(id) => id,
            None => {
                let local: Vec<&String> = rm_ids
                    .iter()
                    .filter(|id| {
                        conf.get_trimmed(&format!("{}.{id}", common_keys::RM_ADDRESS))
                            .is_some_and(|a| is_local(&a))
                    })
                    .collect();
                match local.as_slice() {
                    [one] => (*one).clone(),
                    [] => {
                        let keys: Vec<String> = rm_ids
                            .iter()
                            .map(|id| format!("{}.{id} ", common_keys::RM_ADDRESS))
                            .collect();
                        return Err(bad(format!(
                            "Can not find valid RM_HA_ID. None of {} are matching the local \
                             address OR {RM_HA_ID} is not specified in HA Configuration",
                            keys.concat()
                        )));
                    }
                    _ => {
                        return Err(RmError::Invalid(
                            "The HA Configuration has multiple addresses that match local \
                             node's address."
                                .into(),
                        ))
                    }
                }
            }
        };
        if !rm_ids.contains(&rm_id) {
            return Err(bad(format!(
                "{ids_key}([{}]) need to contain {RM_HA_ID}({rm_id}) in an HA configuration.",
                rm_ids.join(", ")
            )));
        }
        Ok(Some(HaConf {
            rm_ids,
            rm_id,
            automatic_failover: bool_or(conf, AUTO_FAILOVER_ENABLED, true)?,
            embedded: bool_or(conf, AUTO_FAILOVER_EMBEDDED, true)?,
        }))
    }

    /// `conf` with this RM's addresses in the plain keys
    /// (`yarn.resourcemanager.address` = `yarn.resourcemanager.address.<rm-id>`, …).
    pub fn instance_conf(&self, conf: &Configuration) -> Result<Configuration, RmError> {
        let mut own = conf.clone();
        for key in service_address_keys(conf) {
            let addr = yarn_conf::rm_instance_address(conf, key, &self.rm_id)?;
            own.set(key, addr);
        }
        own.set(RM_HA_ID, self.rm_id.clone());
        Ok(own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ha(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        c.set(common_keys::RM_HA_ENABLED, "true");
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    fn err(c: &Configuration) -> String {
        match HaConf::from_conf(c) {
            Ok(h) => panic!("accepted: {h:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn off_without_the_enabled_key() {
        let c = Configuration::with_defaults();
        assert_eq!(HaConf::from_conf(&c).ok(), Some(None));
    }

    #[test]
    fn ids_addresses_and_the_instance_conf() {
        let c = ha(&[
            (common_keys::RM_HA_RM_IDS, "rm1, rm2"),
            (RM_HA_ID, "rm2"),
            ("yarn.resourcemanager.hostname.rm1", "a.example"),
            ("yarn.resourcemanager.hostname.rm2", "b.example"),
            ("yarn.resourcemanager.admin.address.rm2", "b.example:9033"),
            (AUTO_FAILOVER_ENABLED, "false"),
        ]);
        let h = HaConf::from_conf(&c)
            .expect("valid")
            .expect("HA is enabled");
        assert_eq!(h.rm_ids, ["rm1", "rm2"]);
        assert_eq!(h.rm_id, "rm2");
        assert!(!h.automatic_failover);
        assert!(h.embedded);
        let own = h.instance_conf(&c).expect("instance");
        assert_eq!(
            own.get("yarn.resourcemanager.address").as_deref(),
            Some("b.example:8032")
        );
        assert_eq!(
            own.get("yarn.resourcemanager.admin.address").as_deref(),
            Some("b.example:9033")
        );
        assert_eq!(
            own.get("yarn.resourcemanager.resource-tracker.address")
                .as_deref(),
            Some("b.example:8031")
        );
    }

    #[test]
    fn hadoop_messages_for_bad_configurations() {
        let one = err(&ha(&[(common_keys::RM_HA_RM_IDS, "rm1")]));
        assert!(
            one.contains("Invalid configuration! Invalid value of yarn.resourcemanager.ha.rm-ids. Current value is rm1")
                && one.contains("HA mode requires atleast two RMs"),
            "{one}"
        );
        let missing = err(&ha(&[
            (common_keys::RM_HA_RM_IDS, "rm1,rm2"),
            (RM_HA_ID, "rm1"),
            ("yarn.resourcemanager.hostname.rm1", "a.example"),
        ]));
        assert!(
            missing.contains(
                "yarn.resourcemanager.hostname.rm2 or yarn.resourcemanager.address.rm2 needs to be set in an HA configuration."
            ),
            "{missing}"
        );
        let foreign = err(&ha(&[
            (common_keys::RM_HA_RM_IDS, "rm1,rm2"),
            (RM_HA_ID, "rm3"),
            ("yarn.resourcemanager.hostname.rm1", "a.example"),
            ("yarn.resourcemanager.hostname.rm2", "b.example"),
        ]));
        assert!(
            foreign.contains("yarn.resourcemanager.ha.rm-ids([rm1, rm2]) need to contain yarn.resourcemanager.ha.id(rm3)"),
            "{foreign}"
        );
    }

    /// Without `yarn.resourcemanager.ha.id`, the id whose client address is
    /// local is this RM; none or several is an error.
    #[test]
    fn the_id_is_found_by_the_local_address() {
        let mut pairs = vec![
            (common_keys::RM_HA_RM_IDS, "rm1,rm2"),
            ("yarn.resourcemanager.hostname.rm1", "203.0.113.1"),
            ("yarn.resourcemanager.hostname.rm2", "127.0.0.1"),
            ("yarn.resourcemanager.address.rm1", "203.0.113.1:8032"),
            ("yarn.resourcemanager.address.rm2", "127.0.0.1:8032"),
        ];
        let h = HaConf::from_conf(&ha(&pairs))
            .expect("valid")
            .expect("HA is enabled");
        assert_eq!(h.rm_id, "rm2");
        pairs[4] = ("yarn.resourcemanager.address.rm2", "203.0.113.2:8032");
        let none = err(&ha(&pairs));
        assert!(
            none.contains("Can not find valid RM_HA_ID. None of yarn.resourcemanager.address.rm1 yarn.resourcemanager.address.rm2"),
            "{none}"
        );
        pairs[3] = ("yarn.resourcemanager.address.rm1", "127.0.0.1:8032");
        pairs[4] = ("yarn.resourcemanager.address.rm2", "127.0.0.1:8033");
        let several = err(&ha(&pairs));
        assert!(
            several.contains("multiple addresses that match"),
            "{several}"
        );
    }
}
