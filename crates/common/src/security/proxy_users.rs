//! Hadoop's proxy users (`hadoop.proxyuser.<user>.hosts`, `.groups`,
//! `.users`): which authenticated users may act for others, for whom and from
//! where (Hadoop's `DefaultImpersonationProvider` and `MachineList`).
//!
//! A super-user `hive` may act for a user when `hadoop.proxyuser.hive.users`
//! names that user or `….groups` one of its groups (`*`: anyone), and only
//! from an address `hadoop.proxyuser.hive.hosts` lists (`*`, an address, a
//! CIDR range or a host name, resolved when the rules are read). Anything
//! else is refused in Hadoop's words.

use std::collections::BTreeMap;
use std::net::{IpAddr, ToSocketAddrs};

use crate::conf::Configuration;

/// The key prefix of the proxy-user rules.
pub const PREFIX: &str = "hadoop.proxyuser.";

/// Who one super-user may act for, and from where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rule {
    users: Names,
    groups: Names,
    hosts: MachineList,
}

/// A comma-separated list, or everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Names {
    #[default]
    Nobody,
    Everyone,
    Some(Vec<String>),
}

impl Names {
    fn parse(value: Option<String>) -> Names {
        let Some(value) = value else {
            return Names::Nobody;
        };
        let items: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if items.iter().any(|i| i == "*") {
            Names::Everyone
        } else if items.is_empty() {
            Names::Nobody
        } else {
            Names::Some(items)
        }
    }

    fn contains(&self, name: &str) -> bool {
        match self {
            Names::Nobody => false,
            Names::Everyone => true,
            Names::Some(items) => items.iter().any(|i| i == name),
        }
    }
}

/// Hadoop's `MachineList`: `*`, addresses, CIDR ranges and host names (as
/// they resolve when read); none when unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MachineList {
    #[default]
    Nowhere,
    Anywhere,
    Some {
        addresses: Vec<IpAddr>,
        ranges: Vec<(IpAddr, u8)>,
    },
}

impl MachineList {
    /// The list `value` of `key` (named in the error).
    pub fn parse(value: Option<String>, key: &str) -> Result<MachineList, String> {
        let Some(value) = value else {
            return Ok(MachineList::Nowhere);
        };
        let items: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if items.contains(&"*") {
            return Ok(MachineList::Anywhere);
        }
        let mut addresses = Vec::new();
        let mut ranges = Vec::new();
        for item in items {
            if let Some((net, bits)) = item.split_once('/') {
                let net: IpAddr = net
                    .parse()
                    .map_err(|_| format!("{key}: '{item}' is not a CIDR range"))?;
                let max = if net.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits
                    .parse()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("{key}: '{item}' is not a CIDR range"))?;
                ranges.push((net, bits));
            } else if let Ok(ip) = item.parse::<IpAddr>() {
                addresses.push(ip);
            } else {
                // A host name stands for the addresses it resolves to now;
                // one that does not resolve admits nothing (as Hadoop's).
                if let Ok(resolved) = (item, 0).to_socket_addrs() {
                    addresses.extend(resolved.map(|a| a.ip()));
                }
            }
        }
        Ok(MachineList::Some { addresses, ranges })
    }

    /// Whether `ip` is in the list.
    pub fn includes(&self, ip: IpAddr) -> bool {
        match self {
            MachineList::Nowhere => false,
            MachineList::Anywhere => true,
            MachineList::Some { addresses, ranges } => {
                let ip = canonical(ip);
                addresses.iter().any(|a| canonical(*a) == ip)
                    || ranges
                        .iter()
                        .any(|(net, bits)| in_range(ip, canonical(*net), *bits))
            }
        }
    }
}

/// An IPv4 address mapped into IPv6 is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn in_range(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(bits))
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(bits))
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// Every super-user's rule, as read from a configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyUsers {
    rules: BTreeMap<String, Rule>,
}

impl ProxyUsers {
    /// The rules of `conf` (`hadoop.proxyuser.<user>.{users,groups,hosts}`).
    pub fn from_conf(conf: &Configuration) -> Result<ProxyUsers, String> {
        let mut supers: Vec<String> = Vec::new();
        for key in conf.keys() {
            let Some(rest) = key.strip_prefix(PREFIX) else {
                continue;
            };
            for suffix in [".users", ".groups", ".hosts"] {
                if let Some(user) = rest.strip_suffix(suffix) {
                    if !user.is_empty() && !supers.iter().any(|s| s == user) {
                        supers.push(user.to_string());
                    }
                }
            }
        }
        let mut rules = BTreeMap::new();
        for user in supers {
            let key = |what: &str| format!("{PREFIX}{user}.{what}");
            let rule = Rule {
                users: Names::parse(conf.get(&key("users"))),
                groups: Names::parse(conf.get(&key("groups"))),
                hosts: MachineList::parse(conf.get(&key("hosts")), &key("hosts"))?,
            };
            rules.insert(user, rule);
        }
        Ok(ProxyUsers { rules })
    }

    /// Whether `real` (short name `real_short`, full name `real_full` as
    /// Hadoop prints it) may act for `user`, whose groups are `user_groups`,
    /// from `from`; the refusal is Hadoop's message.
    pub fn authorize(
        &self,
        real_short: &str,
        real_full: &str,
        user: &str,
        user_groups: &[String],
        from: IpAddr,
    ) -> Result<(), String> {
        let rule = self.rules.get(real_short);
        // `*` in either list admits everyone (Hadoop's AccessControlList
        // takes a wildcard part as "all allowed").
        let allowed = rule.is_some_and(|r| {
            r.users.contains(user)
                || r.groups == Names::Everyone
                || user_groups.iter().any(|g| r.groups.contains(g))
        });
        if !allowed {
            return Err(format!(
                "User: {real_full} is not allowed to impersonate {user}"
            ));
        }
        if !rule.is_some_and(|r| r.hosts.includes(from)) {
            return Err(format!(
                "Unauthorized connection for super-user: {real_full} from IP {from}"
            ));
        }
        Ok(())
    }

    /// Whether any super-user is configured.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pairs: &[(&str, &str)]) -> ProxyUsers {
        let mut c = Configuration::empty();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        ProxyUsers::from_conf(&c).expect("rules")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    const HIVE: &str = "hive/h@EXAMPLE.COM";

    #[test]
    fn users_groups_and_hosts_as_hadoop_reads_them() {
        let p = rules(&[
            ("hadoop.proxyuser.hive.users", "alice, bob"),
            ("hadoop.proxyuser.hive.groups", "analysts"),
            ("hadoop.proxyuser.hive.hosts", "10.0.0.0/8, 192.168.1.7"),
        ]);
        let none: Vec<String> = Vec::new();
        assert_eq!(
            p.authorize("hive", HIVE, "alice", &none, ip("10.1.2.3")),
            Ok(())
        );
        assert_eq!(
            p.authorize("hive", HIVE, "bob", &none, ip("192.168.1.7")),
            Ok(())
        );
        let analysts = vec!["staff".to_string(), "analysts".to_string()];
        assert_eq!(
            p.authorize("hive", HIVE, "carol", &analysts, ip("10.0.0.1")),
            Ok(())
        );
        assert_eq!(
            p.authorize("hive", HIVE, "carol", &none, ip("10.0.0.1")),
            Err("User: hive/h@EXAMPLE.COM is not allowed to impersonate carol".into())
        );
        assert_eq!(
            p.authorize("hive", HIVE, "alice", &none, ip("192.168.1.8")),
            Err(
                "Unauthorized connection for super-user: hive/h@EXAMPLE.COM from IP 192.168.1.8"
                    .into()
            )
        );
        // An IPv4 peer seen through an IPv6 socket is the same address.
        assert_eq!(
            p.authorize("hive", HIVE, "alice", &none, ip("::ffff:10.9.9.9")),
            Ok(())
        );
    }

    #[test]
    fn wildcards_and_absent_rules() {
        let p = rules(&[
            ("hadoop.proxyuser.oozie.groups", "*"),
            ("hadoop.proxyuser.oozie.hosts", "*"),
            ("hadoop.proxyuser.livy.users", "*"),
        ]);
        let none: Vec<String> = Vec::new();
        assert_eq!(
            p.authorize("oozie", "oozie@R", "anyone", &none, ip("1.2.3.4")),
            Ok(())
        );
        // A super-user without hosts connects from nowhere.
        assert!(p
            .authorize("livy", "livy@R", "anyone", &none, ip("127.0.0.1"))
            .expect_err("no hosts")
            .starts_with("Unauthorized connection for super-user"));
        // A user without a rule impersonates no one.
        assert_eq!(
            p.authorize("mallory", "mallory@R", "alice", &none, ip("127.0.0.1")),
            Err("User: mallory@R is not allowed to impersonate alice".into())
        );
        assert!(rules(&[]).is_empty());
    }

    #[test]
    fn host_names_resolve_and_bad_ranges_are_named() {
        let p = rules(&[
            ("hadoop.proxyuser.hive.users", "*"),
            ("hadoop.proxyuser.hive.hosts", "localhost"),
        ]);
        let none: Vec<String> = Vec::new();
        assert_eq!(
            p.authorize("hive", HIVE, "alice", &none, ip("127.0.0.1")),
            Ok(())
        );
        let mut c = Configuration::empty();
        c.set("hadoop.proxyuser.hive.hosts", "10.0.0.0/33");
        let err = ProxyUsers::from_conf(&c).expect_err("bad range");
        assert_eq!(
            err,
            "hadoop.proxyuser.hive.hosts: '10.0.0.0/33' is not a CIDR range"
        );
    }
}
