//! Service-level authorization (`hadoop.security.authorization=true`): who
//! may open a connection to which protocol, as Hadoop's
//! `ServiceAuthorizationManager` decides from `hadoop-policy.xml`.
//!
//! Each protocol has an ACL (`security.<service>.protocol.acl`, default
//! `security.service.authorization.default.acl`, itself `*`), a blocked ACL
//! (`….acl.blocked`), and host lists (`security.<service>.protocol.hosts`
//! and `….hosts.blocked`, defaults `*` and none). A protocol whose client
//! must be one principal (the resource tracker's: the NodeManagers',
//! `yarn.nodemanager.principal`) refuses every other Kerberos name.
//! Messages are Hadoop's.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::proxy_users::MachineList;
use crate::acl::Acl;
use crate::conf::Configuration;

/// A protocol under service-level authorization, as Hadoop's policy
/// providers (`RMPolicyProvider`, `NMPolicyProvider`) list it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceDef {
    /// The protocol's ACL key (`security.….protocol.acl`).
    pub key: &'static str,
    /// The protocol name clients put in the connection context.
    pub protocol: &'static str,
    /// How Hadoop names the protocol class in its messages.
    pub class: &'static str,
    /// The key naming the only principal that may be its client.
    pub client_principal_key: Option<&'static str>,
}

/// The protocols of the ResourceManager's ports.
pub const RM_SERVICES: &[ServiceDef] = &[
    ServiceDef {
        key: "security.applicationclient.protocol.acl",
        protocol: "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB",
        class: "interface org.apache.hadoop.yarn.api.ApplicationClientProtocolPB",
        client_principal_key: None,
    },
    ServiceDef {
        key: "security.applicationmaster.protocol.acl",
        protocol: "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB",
        class: "interface org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB",
        client_principal_key: None,
    },
    ServiceDef {
        key: "security.resourcetracker.protocol.acl",
        protocol: "org.apache.hadoop.yarn.server.api.ResourceTrackerPB",
        class: "interface org.apache.hadoop.yarn.server.api.ResourceTrackerPB",
        client_principal_key: Some("yarn.nodemanager.principal"),
    },
    ServiceDef {
        key: "security.resourcemanager-administration.protocol.acl",
        protocol: "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB",
        class:
            "interface org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB",
        client_principal_key: None,
    },
    ServiceDef {
        key: "security.ha.service.protocol.acl",
        protocol: "org.apache.hadoop.ha.HAServiceProtocol",
        class: "interface org.apache.hadoop.ha.HAServiceProtocol",
        client_principal_key: None,
    },
];

/// The protocols of the NodeManager's ports.
pub const NM_SERVICES: &[ServiceDef] = &[ServiceDef {
    key: "security.containermanagement.protocol.acl",
    protocol: "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB",
    class: "interface org.apache.hadoop.yarn.api.ContainerManagementProtocolPB",
    client_principal_key: None,
}];

/// The file Hadoop reads the ACLs from, beside the site files.
pub const POLICY_FILE: &str = "hadoop-policy.xml";

/// `conf` with `dir`'s `hadoop-policy.xml` over it, when there is one (the
/// configuration Hadoop's `ServiceAuthorizationManager.refresh` reads).
pub fn with_policy_file(
    conf: &Configuration,
    dir: Option<&std::path::Path>,
) -> Result<Configuration, String> {
    let mut policy_conf = conf.clone();
    if let Some(file) = dir.map(|d| d.join(POLICY_FILE)).filter(|f| f.is_file()) {
        policy_conf.add_resource(&file).map_err(|e| e.to_string())?;
    }
    Ok(policy_conf)
}

const DEFAULT_ACL: &str = "security.service.authorization.default.acl";
const DEFAULT_HOSTS: &str = "security.service.authorization.default.hosts";

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    class: &'static str,
    allowed: Acl,
    blocked: Acl,
    hosts: MachineList,
    blocked_hosts: MachineList,
    client_principal: Option<String>,
}

/// Who opens a connection, as the check needs them.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Hadoop's `UserGroupInformation.toString()` of the caller (for
    /// messages): `alice@EXAMPLE.COM (auth:KERBEROS)`, `bob (auth:PROXY)
    /// via …`.
    pub display: &'a str,
    /// The authenticated Kerberos principal, when there is one and the
    /// caller acts for itself.
    pub principal: Option<&'a str>,
    /// The short name and groups the ACLs are checked against.
    pub short: &'a str,
    pub groups: &'a [String],
}

/// The ACLs of one daemon's protocols.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServicePolicy {
    rules: BTreeMap<&'static str, Rule>,
}

/// The host key of an ACL key (`….protocol.acl` → `….protocol.hosts`).
fn hosts_key(acl_key: &str) -> String {
    match acl_key.rsplit_once('.') {
        Some((stem, _)) => format!("{stem}.hosts"),
        None => acl_key.to_string(),
    }
}

impl ServicePolicy {
    /// The policy of `services` in `conf` (the site files with
    /// `hadoop-policy.xml` added).
    pub fn from_conf(
        conf: &Configuration,
        services: &[ServiceDef],
    ) -> Result<ServicePolicy, String> {
        let get = |key: &str, default: &str| conf.get(key).unwrap_or_else(|| default.to_string());
        let default_acl = get(DEFAULT_ACL, "*");
        let default_blocked = get(&format!("{DEFAULT_ACL}.blocked"), "");
        let default_hosts = get(DEFAULT_HOSTS, "*");
        let default_blocked_hosts = get(&format!("{DEFAULT_HOSTS}.blocked"), "");
        let mut rules = BTreeMap::new();
        for s in services {
            let hosts = hosts_key(s.key);
            let machines =
                |key: &str, default: &str| MachineList::parse(Some(get(key, default)), key);
            rules.insert(
                s.protocol,
                Rule {
                    class: s.class,
                    allowed: Acl::parse(&get(s.key, &default_acl)),
                    blocked: Acl::parse(&get(&format!("{}.blocked", s.key), &default_blocked)),
                    hosts: machines(&hosts, &default_hosts)?,
                    blocked_hosts: machines(&format!("{hosts}.blocked"), &default_blocked_hosts)?,
                    client_principal: s
                        .client_principal_key
                        .and_then(|k| conf.get_trimmed(k).filter(|p| !p.is_empty())),
                },
            );
        }
        Ok(ServicePolicy { rules })
    }

    /// Whether `who` may open a connection to `protocol` from `from`;
    /// `resolves(host, ip)` answers whether `host` names `ip` (for a
    /// client principal with `_HOST`). The refusal is Hadoop's message.
    pub fn check(
        &self,
        protocol: &str,
        who: &Subject<'_>,
        from: IpAddr,
        resolves: &dyn Fn(&str, IpAddr) -> bool,
    ) -> Result<(), String> {
        let Some(rule) = self.rules.get(protocol) else {
            return Err(format!("Protocol {protocol} is not known."));
        };
        let principal_ok = match &rule.client_principal {
            None => true,
            Some(pattern) => who
                .principal
                .is_some_and(|p| principal_matches(pattern, p, from, resolves)),
        };
        if !principal_ok
            || !rule.allowed.allows(who.short, who.groups)
            || rule.blocked.allows(who.short, who.groups)
        {
            let cause = match &rule.client_principal {
                Some(p) => format!(": this service is only accessible by {p}"),
                None => ": denied by configured ACL".to_string(),
            };
            return Err(format!(
                "User {} is not authorized for protocol {}{cause}",
                who.display, rule.class
            ));
        }
        if !rule.hosts.includes(from) || rule.blocked_hosts.includes(from) {
            return Err(format!(
                "Host {from} is not authorized for protocol {}",
                rule.class
            ));
        }
        Ok(())
    }

    /// Whether the protocol needs the caller's groups (an ACL that is not
    /// `*`, or a blocked ACL that names any).
    pub fn needs_groups(&self, protocol: &str) -> bool {
        self.rules
            .get(protocol)
            .is_some_and(|r| !r.allowed.allows_everyone() || r.blocked != Acl::parse(""))
    }
}

/// Whether `host` resolves to `ip` now (a blocking lookup): what
/// [`ServicePolicy::check`] is given for a client principal with `_HOST`.
pub fn resolves(host: &str, ip: IpAddr) -> bool {
    use std::net::ToSocketAddrs;
    (host, 0)
        .to_socket_addrs()
        .is_ok_and(|mut addrs| addrs.any(|a| a.ip() == ip))
}

/// `principal` is the one `pattern` names: the same text, or, where the
/// pattern says `_HOST`, any host name that names the connection's
/// address (Hadoop substitutes the address's canonical name; Spindle does
/// no reverse lookups, so it checks that the name the principal gives
/// resolves to the address).
fn principal_matches(
    pattern: &str,
    principal: &str,
    from: IpAddr,
    resolves: &dyn Fn(&str, IpAddr) -> bool,
) -> bool {
    let split = |p: &str| -> Option<(String, String, String)> {
        let (name, realm) = p.split_once('@')?;
        let (primary, host) = name.split_once('/')?;
        Some((primary.to_string(), host.to_string(), realm.to_string()))
    };
    match (split(pattern), split(principal)) {
        (Some((pp, ph, pr)), Some((p, h, r))) if ph == "_HOST" => {
            pp == p && pr == r && resolves(&h, from)
        }
        _ => pattern == principal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::empty();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    fn who<'a>(display: &'a str, short: &'a str, groups: &'a [String]) -> Subject<'a> {
        Subject {
            display,
            principal: None,
            short,
            groups,
        }
    }

    const CLIENT: &str = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
    const TRACKER: &str = "org.apache.hadoop.yarn.server.api.ResourceTrackerPB";
    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn acls_blocked_acls_and_hosts_decide_with_hadoops_messages() {
        let policy = ServicePolicy::from_conf(
            &conf(&[
                ("security.applicationclient.protocol.acl", "alice analysts"),
                ("security.applicationclient.protocol.acl.blocked", "mallory"),
                (
                    "security.applicationclient.protocol.hosts.blocked",
                    "10.0.0.0/8",
                ),
            ]),
            RM_SERVICES,
        )
        .expect("policy");
        let none: Vec<String> = Vec::new();
        let analysts = vec!["analysts".to_string()];
        let nothing = |_: &str, _: IpAddr| false;
        assert!(policy
            .check(
                CLIENT,
                &who("alice (auth:SIMPLE)", "alice", &none),
                LOCAL,
                &nothing
            )
            .is_ok());
        assert!(policy
            .check(
                CLIENT,
                &who("carol (auth:SIMPLE)", "carol", &analysts),
                LOCAL,
                &nothing
            )
            .is_ok());
        let err = policy
            .check(
                CLIENT,
                &who("bob (auth:SIMPLE)", "bob", &none),
                LOCAL,
                &nothing,
            )
            .expect_err("bob is not listed");
        assert_eq!(
            err,
            "User bob (auth:SIMPLE) is not authorized for protocol interface \
             org.apache.hadoop.yarn.api.ApplicationClientProtocolPB: denied by configured ACL"
        );
        let mallory = vec!["analysts".to_string()];
        assert!(policy
            .check(
                CLIENT,
                &who("mallory (auth:SIMPLE)", "mallory", &mallory),
                LOCAL,
                &nothing
            )
            .is_err());
        let err = policy
            .check(
                CLIENT,
                &who("alice (auth:SIMPLE)", "alice", &none),
                "10.1.2.3".parse().expect("ip"),
                &nothing,
            )
            .expect_err("a blocked host");
        assert_eq!(
            err,
            "Host 10.1.2.3 is not authorized for protocol interface \
             org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
        );
        // Unlisted protocols keep the default ACL, *.
        assert!(policy
            .check(
                TRACKER,
                &who("x (auth:SIMPLE)", "x", &none),
                LOCAL,
                &nothing
            )
            .is_ok());
        assert!(policy
            .check("no.such.Protocol", &who("x", "x", &none), LOCAL, &nothing)
            .is_err());
    }

    #[test]
    fn the_resource_tracker_takes_only_the_nodemanagers_principal() {
        let policy = ServicePolicy::from_conf(
            &conf(&[("yarn.nodemanager.principal", "nm/_HOST@EXAMPLE.COM")]),
            RM_SERVICES,
        )
        .expect("policy");
        let none: Vec<String> = Vec::new();
        let resolves = |host: &str, ip: IpAddr| host == "node1.example.com" && ip == LOCAL;
        let nm = Subject {
            display: "nm/node1.example.com@EXAMPLE.COM (auth:KERBEROS)",
            principal: Some("nm/node1.example.com@EXAMPLE.COM"),
            short: "nm",
            groups: &none,
        };
        assert!(policy.check(TRACKER, &nm, LOCAL, &resolves).is_ok());
        // The same principal from an address its host does not name.
        let elsewhere: IpAddr = "192.0.2.7".parse().expect("ip");
        assert!(policy.check(TRACKER, &nm, elsewhere, &resolves).is_err());
        let alice = Subject {
            display: "alice@EXAMPLE.COM (auth:KERBEROS)",
            principal: Some("alice@EXAMPLE.COM"),
            short: "alice",
            groups: &none,
        };
        let err = policy
            .check(TRACKER, &alice, LOCAL, &resolves)
            .expect_err("a user is no NodeManager");
        assert_eq!(
            err,
            "User alice@EXAMPLE.COM (auth:KERBEROS) is not authorized for protocol interface \
             org.apache.hadoop.yarn.server.api.ResourceTrackerPB: this service is only \
             accessible by nm/_HOST@EXAMPLE.COM"
        );
    }
}
