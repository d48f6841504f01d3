//! ResourceManager high availability on ZooKeeper: the ZooKeeper settings both the
//! leader election ([`elector`]) and the ZooKeeper state store (`store::zk_store`) read,
//! and the helpers they share.

pub mod elector;

pub use elector::{Election, Elector, ElectorConf, ElectorError};

use std::time::Duration;

// zookeeper-client starts its session tasks through `spawns`, whose `tokio` feature makes
// them run on the tokio runtime of the caller; naming the crate links that in.
use spawns as _;

use spindle_common::conf::Configuration;
use zookeeper_client::{Acl, AuthId, Client, CreateMode, Permission};

/// The ZooKeeper connection settings (`hadoop.zk.*`, with the deprecated
/// `yarn.resourcemanager.zk-*` names as Hadoop's deprecation table maps them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkConf {
    /// `hadoop.zk.address` (`yarn.resourcemanager.zk-address`): `host:port[,host:port…]`.
    pub address: String,
    /// `hadoop.zk.timeout-ms` (`yarn.resourcemanager.zk-timeout-ms`), default 10000.
    pub session_timeout: Duration,
    /// `hadoop.zk.num-retries` (`yarn.resourcemanager.zk-num-retries`), default 1000.
    pub num_retries: u32,
    /// `hadoop.zk.retry-interval-ms` (`yarn.resourcemanager.zk-retry-interval-ms`), default 1000.
    pub retry_interval: Duration,
    /// `hadoop.zk.acl` (`yarn.resourcemanager.zk-acl`), default `world:anyone:rwcda`.
    pub acl: Vec<Acl>,
}

/// The value of `key`, or of its deprecated name when only that one is set (a
/// built-in default of `key` does not hide a site file's deprecated key).
fn get_with_deprecated(conf: &Configuration, key: &str, deprecated: &str) -> Option<String> {
    let set_in_site = |k: &str| {
        conf.get_trimmed(k).is_some()
            && !conf
                .source_of(k)
                .is_some_and(|s| s.starts_with("<built-in"))
    };
    if set_in_site(key) {
        conf.get_trimmed(key)
    } else if set_in_site(deprecated) {
        conf.get_trimmed(deprecated)
    } else {
        conf.get_trimmed(key)
            .or_else(|| conf.get_trimmed(deprecated))
    }
    .filter(|v| !v.is_empty())
}

fn number(conf: &Configuration, key: &str, deprecated: &str, default: u64) -> Result<u64, String> {
    match get_with_deprecated(conf, key, deprecated) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| format!("{key} = {v:?}: not a non-negative whole number")),
    }
}

impl ZkConf {
    /// Reads the settings; an error names the key that is missing or malformed.
    pub fn from_conf(conf: &Configuration) -> Result<ZkConf, String> {
        let address =
            get_with_deprecated(conf, "hadoop.zk.address", "yarn.resourcemanager.zk-address")
                .ok_or_else(|| {
                    "hadoop.zk.address is not set: RM high availability and the ZooKeeper state \
                 store need the ZooKeeper quorum's host:port list"
                        .to_string()
                })?;
        let timeout_ms = number(
            conf,
            "hadoop.zk.timeout-ms",
            "yarn.resourcemanager.zk-timeout-ms",
            10_000,
        )?;
        if timeout_ms == 0 {
            return Err("hadoop.zk.timeout-ms = 0: the session timeout must be positive".into());
        }
        let num_retries = number(
            conf,
            "hadoop.zk.num-retries",
            "yarn.resourcemanager.zk-num-retries",
            1000,
        )?;
        let retry_ms = number(
            conf,
            "hadoop.zk.retry-interval-ms",
            "yarn.resourcemanager.zk-retry-interval-ms",
            1000,
        )?;
        let acl_text = get_with_deprecated(conf, "hadoop.zk.acl", "yarn.resourcemanager.zk-acl")
            .unwrap_or_else(|| "world:anyone:rwcda".into());
        let acl =
            parse_acls(&acl_text).map_err(|e| format!("hadoop.zk.acl = {acl_text:?}: {e}"))?;
        Ok(ZkConf {
            address,
            session_timeout: Duration::from_millis(timeout_ms),
            num_retries: u32::try_from(num_retries).unwrap_or(u32::MAX),
            retry_interval: Duration::from_millis(retry_ms.max(1)),
            acl,
        })
    }

    /// A new session (the crate's client reconnects by itself until the session expires).
    pub async fn connect(&self) -> Result<Client, zookeeper_client::Error> {
        Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.session_timeout)
            .connect(&self.address)
            .await
    }

    /// Creates `path` and its missing ancestors as persistent znodes with this ACL.
    pub async fn ensure_path(
        &self,
        client: &Client,
        path: &str,
    ) -> Result<(), zookeeper_client::Error> {
        match client
            .mkdir(path, &CreateMode::Persistent.with_acls(self.acls()))
            .await
        {
            Ok(()) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The ACL as the client takes it.
    pub fn acls(&self) -> zookeeper_client::Acls<'_> {
        zookeeper_client::Acls::new(&self.acl)
    }
}

/// Parses Hadoop's ACL list syntax: `scheme:id:perms[,scheme:id:perms…]`, perms a
/// subset of `rwcda` (ZKUtil.parseACLs).
pub fn parse_acls(text: &str) -> Result<Vec<Acl>, String> {
    let mut acls = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        // The id may itself hold colons (digest ids do); the perms are after the last one.
        let (rest, perms) = entry
            .rsplit_once(':')
            .ok_or_else(|| format!("ACL {entry:?} is not scheme:id:perms"))?;
        let (scheme, id) = rest
            .split_once(':')
            .ok_or_else(|| format!("ACL {entry:?} is not scheme:id:perms"))?;
        let mut permission = Permission::NONE;
        for c in perms.chars() {
            permission = permission
                | match c {
                    'r' => Permission::READ,
                    'w' => Permission::WRITE,
                    'c' => Permission::CREATE,
                    'd' => Permission::DELETE,
                    'a' => Permission::ADMIN,
                    other => {
                        return Err(format!(
                            "ACL {entry:?}: unknown permission {other:?} (rwcda)"
                        ))
                    }
                };
        }
        acls.push(Acl::new(permission, AuthId::new(scheme, id)));
    }
    if acls.is_empty() {
        return Err("no ACL given".into());
    }
    Ok(acls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_new_keys_and_the_deprecated_ones() {
        let mut conf = Configuration::with_defaults();
        assert!(ZkConf::from_conf(&conf)
            .expect_err("refused")
            .contains("hadoop.zk.address"));
        conf.set("yarn.resourcemanager.zk-address", "zk1:2181");
        conf.set("yarn.resourcemanager.zk-timeout-ms", "4000");
        let zk = ZkConf::from_conf(&conf).expect("conf");
        assert_eq!(zk.address, "zk1:2181");
        assert_eq!(zk.session_timeout, Duration::from_secs(4));
        assert_eq!(zk.num_retries, 1000);
        assert_eq!(zk.retry_interval, Duration::from_secs(1));
        assert_eq!(zk.acl.len(), 1);
        assert_eq!(zk.acl[0].permission(), Permission::ALL);
        conf.set("hadoop.zk.address", "zk2:2181");
        conf.set("hadoop.zk.timeout-ms", "2000");
        let zk = ZkConf::from_conf(&conf).expect("conf");
        assert_eq!(zk.address, "zk2:2181");
        assert_eq!(zk.session_timeout, Duration::from_secs(2));
        conf.set("hadoop.zk.acl", "world:anyone:rwq");
        assert!(ZkConf::from_conf(&conf)
            .expect_err("refused")
            .contains("unknown permission"));
    }

    #[test]
    fn parses_acl_lists() {
        let acls = parse_acls("sasl:rm@EXAMPLE:rwcda, digest:u:pw=:r").expect("acls");
        assert_eq!(acls.len(), 2);
        assert_eq!(acls[1].scheme(), "digest");
        assert_eq!(acls[1].id(), "u:pw=");
        assert_eq!(acls[1].permission(), Permission::READ);
        assert!(parse_acls("world").is_err());
    }
}
