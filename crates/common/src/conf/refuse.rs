//! Settings that ask for a security or isolation property Spindle does not
//! provide: a daemon whose configuration holds one refuses to start.
//!
//! Hadoop's daemons act on these keys; a daemon that read past them would
//! run without the protection the operator asked for — a Kerberos
//! `core-site.xml` would leave every port on SIMPLE authentication, where any
//! client names its own user, with nothing said. Each [`Rule`] names the key
//! (and its deprecated spellings), the values Spindle serves, the daemons
//! that would act on it, and what to do instead. [`refusals`] checks a
//! configuration against every rule; `spindle check-config` shows the same
//! rules per key.
//!
//! When a later issue builds one of these (Kerberos, TLS, service ACLs…),
//! its rule goes and its tests turn into tests of the feature.

use std::fmt;

use super::keys;
use super::Configuration;

/// A daemon that reads the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Daemon {
    ResourceManager,
    NodeManager,
    /// `spindle proxyserver`, Hadoop's `yarn proxyserver`.
    WebProxy,
}

impl Daemon {
    pub const ALL: [Daemon; 3] = [
        Daemon::ResourceManager,
        Daemon::NodeManager,
        Daemon::WebProxy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Daemon::ResourceManager => "ResourceManager",
            Daemon::NodeManager => "NodeManager",
            Daemon::WebProxy => "web proxy",
        }
    }
}

impl fmt::Display for Daemon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const RPC_DAEMONS: &[Daemon] = &[Daemon::ResourceManager, Daemon::NodeManager];
const WEB_DAEMONS: &[Daemon] = &[
    Daemon::ResourceManager,
    Daemon::NodeManager,
    Daemon::WebProxy,
];
const RM: &[Daemon] = &[Daemon::ResourceManager];
const NM: &[Daemon] = &[Daemon::NodeManager];

/// Hadoop's class name of the LinuxContainerExecutor.
pub const LINUX_CONTAINER_EXECUTOR: &str =
    "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor";

/// The environment variable a container's launch context sets to ask for a
/// container runtime (Hadoop's `ContainerRuntimeConstants.ENV_CONTAINER_TYPE`).
pub const ENV_CONTAINER_RUNTIME_TYPE: &str = "YARN_CONTAINER_RUNTIME_TYPE";

/// One refused setting: a key, which values are served, and why the others
/// are not.
#[derive(Debug)]
pub struct Rule {
    /// The key as Hadoop 3.3 spells it.
    pub key: &'static str,
    /// Older spellings Hadoop still reads (its deprecation table).
    pub deprecated: &'static [&'static str],
    /// The daemons that act on the key.
    pub daemons: &'static [Daemon],
    /// Whether the (expanded, trimmed) value is one Spindle serves; `conf`
    /// is the whole configuration, for rules that depend on another key.
    pub accepts: fn(&str, &Configuration) -> bool,
    /// What Spindle serves, as a value to set ("simple").
    pub supported: &'static str,
    /// Why anything else is refused: what the daemon would otherwise do
    /// without a word.
    pub why: &'static str,
}

impl Rule {
    /// The key this configuration sets the rule with (the current spelling
    /// first), and its value.
    fn setting(&self, conf: &Configuration) -> Option<(&'static str, String)> {
        std::iter::once(self.key)
            .chain(self.deprecated.iter().copied())
            .find_map(|k| conf.get(k).map(|v| (k, v.trim().to_string())))
    }

    /// Whether this configuration's value for the rule is refused.
    pub fn refuses(&self, value: &str, conf: &Configuration) -> bool {
        !(self.accepts)(value, conf)
    }

    pub fn applies_to(&self, daemon: Daemon) -> bool {
        self.daemons.contains(&daemon)
    }
}

fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn is_false(value: &str) -> bool {
    value.is_empty() || value.eq_ignore_ascii_case("false")
}

fn linux_executor(conf: &Configuration) -> bool {
    conf.get_trimmed(keys::NM_CONTAINER_EXECUTOR_CLASS)
        .is_some_and(|c| c == LINUX_CONTAINER_EXECUTOR)
}

/// The web filters Spindle's web servers stand in for: the static user
/// (`hadoop.http.staticuser.user`), pseudo authentication with
/// `?user.name=` (refused below unless `hadoop.http.authentication.type`
/// is simple) and cross-origin headers (not security: without them a
/// browser refuses cross-origin calls).
const SERVED_WEB_FILTERS: &[&str] = &[
    "org.apache.hadoop.http.lib.StaticUserWebFilter",
    "org.apache.hadoop.security.AuthenticationFilterInitializer",
    "org.apache.hadoop.yarn.server.security.http.RMAuthenticationFilterInitializer",
    "org.apache.hadoop.security.HttpCrossOriginFilterInitializer",
];

/// Group mappings that give a user the groups the host's OS gives it, as
/// Spindle looks them up (`id -Gn`).
const OS_GROUP_MAPPINGS: &[&str] = &[
    "org.apache.hadoop.security.JniBasedUnixGroupsMappingWithFallback",
    "org.apache.hadoop.security.JniBasedUnixGroupsMapping",
    "org.apache.hadoop.security.ShellBasedUnixGroupsMapping",
];

/// Every refused setting.
pub static RULES: &[Rule] = &[
    // The ResourceManager and the NodeManager serve Kerberos on RPC
    // (spindle_ipc::kerberos); any value but simple and kerberos stops them
    // there, with Hadoop's words.
    Rule {
        key: keys::HADOOP_SECURITY_AUTHENTICATION,
        deprecated: &[],
        daemons: &[Daemon::WebProxy],
        accepts: |v, _| v.eq_ignore_ascii_case("simple"),
        supported: "simple",
        why: "the web proxy server has no Kerberos login yet (yarn.web-proxy.principal and \
              .keytab): it could not reach a Kerberized ResourceManager",
    },
    Rule {
        key: keys::HADOOP_RPC_PROTECTION,
        deprecated: &[],
        daemons: RPC_DAEMONS,
        accepts: |v, _| list(v).all(|q| q.eq_ignore_ascii_case("authentication")),
        supported: "authentication",
        why: "integrity and privacy need every RPC wrapped by SASL, which Spindle does not \
              do: calls would travel unprotected",
    },
    Rule {
        key: keys::YARN_HTTP_POLICY,
        deprecated: &[],
        daemons: WEB_DAEMONS,
        accepts: |v, _| v.eq_ignore_ascii_case("HTTP_ONLY"),
        supported: "HTTP_ONLY",
        why: "the web servers have no TLS yet: they would answer in plain HTTP",
    },
    // The RM's and NM's webs serve SPNEGO (spindle_web::spnego) and refuse
    // custom handlers there (spindle_ipc::kerberos::http_identity).
    Rule {
        key: "hadoop.http.authentication.type",
        deprecated: &[],
        daemons: &[Daemon::WebProxy],
        accepts: |v, _| v.eq_ignore_ascii_case("simple"),
        supported: "simple",
        why: "the separate web proxy server has no SPNEGO yet: it would take the caller's \
              ?user.name= at its word",
    },
    Rule {
        key: "hadoop.http.filter.initializers",
        deprecated: &[],
        daemons: WEB_DAEMONS,
        accepts: |v, _| list(v).all(|c| SERVED_WEB_FILTERS.contains(&c)),
        supported: "org.apache.hadoop.http.lib.StaticUserWebFilter (or \
                    AuthenticationFilterInitializer with simple authentication)",
        why: "Spindle runs no Java servlet filters: the web would answer without the filter's \
              checks",
    },
    Rule {
        key: "yarn.authorization-provider",
        deprecated: &[],
        daemons: RM,
        accepts: |v, _| {
            v.is_empty() || v == "org.apache.hadoop.yarn.security.ConfiguredYarnAuthorizer"
        },
        supported: "unset (the queues' ACLs in the scheduler's file decide)",
        why: "Spindle has no pluggable authorizer (such as Ranger's): queue access would be \
              decided by the scheduler's file instead",
    },
    Rule {
        key: keys::HADOOP_SECURITY_GROUP_MAPPING,
        deprecated: &[],
        daemons: RPC_DAEMONS,
        accepts: |v, _| OS_GROUP_MAPPINGS.contains(&v),
        supported: "org.apache.hadoop.security.ShellBasedUnixGroupsMapping (the host's groups, \
                    as `id -Gn` gives them)",
        why: "Spindle looks users' groups up on the host only (no LDAP or composite mapping): \
              ACLs naming groups would be decided on other groups",
    },
    Rule {
        key: "hadoop.zk.auth",
        deprecated: &["yarn.resourcemanager.zk-auth"],
        daemons: RM,
        accepts: |v, _| v.is_empty(),
        supported: "unset",
        why: "ZooKeeper authentication is not built yet: the RM would reach its store and \
              election as an anonymous client",
    },
    Rule {
        key: "yarn.nodemanager.runtime.linux.allowed-runtimes",
        deprecated: &[],
        daemons: NM,
        accepts: |v, conf| {
            !linux_executor(conf) || list(v).all(|r| r.eq_ignore_ascii_case("default"))
        },
        supported: "default",
        why: "Spindle runs containers on the host only: it has no docker, runc or javasandbox \
              runtime",
    },
    Rule {
        key: "yarn.nodemanager.runtime.linux.type",
        deprecated: &[],
        daemons: NM,
        accepts: |v, conf| !linux_executor(conf) || v.is_empty() || v == "default",
        supported: "default (or unset)",
        why: "Spindle runs containers on the host only: it has no docker or runc runtime",
    },
    Rule {
        key: "yarn.nodemanager.runtime.linux.sandbox-mode",
        deprecated: &[],
        daemons: NM,
        accepts: |v, conf| {
            !linux_executor(conf) || v.is_empty() || v.eq_ignore_ascii_case("disabled")
        },
        supported: "disabled",
        why: "the Java sandbox runtime is not built: containers would run without its security \
              policy",
    },
    Rule {
        key: "yarn.nodemanager.linux-container-executor.cgroups.strict-resource-usage",
        deprecated: &[],
        daemons: NM,
        accepts: |v, _| is_false(v),
        supported: "false (containers share CPU by weight, cpu.weight)",
        why: "hard CPU limits per container (cpu.max) are not built: containers could use idle \
              CPU beyond their vcores",
    },
    Rule {
        key: "yarn.nodemanager.resource-plugins",
        deprecated: &[],
        daemons: NM,
        accepts: |v, _| v.is_empty(),
        supported: "unset",
        why: "device plugins (GPU, FPGA) are not built: every container would see every device, \
              and the node would offer none as a resource",
    },
    Rule {
        key: "mapreduce.shuffle.ssl.enabled",
        deprecated: &[],
        daemons: NM,
        accepts: |v, _| is_false(v),
        supported: "false",
        why: "the native mapreduce_shuffle serves plain HTTP only: the encrypted shuffle is not \
              built",
    },
    Rule {
        key: "yarn.nodemanager.resource.disk.enabled",
        deprecated: &[],
        daemons: NM,
        accepts: |v, _| is_false(v),
        supported: "false",
        why: "disk I/O isolation (the blkio cgroup) is not built",
    },
    Rule {
        key: "yarn.nodemanager.resource.network.enabled",
        deprecated: &[],
        daemons: NM,
        accepts: |v, _| is_false(v),
        supported: "false",
        why: "outbound network isolation (traffic control) is not built",
    },
];

/// A setting a daemon refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The key as the configuration set it (a deprecated spelling included).
    pub key: String,
    pub value: String,
    /// Where the value came from (`/etc/hadoop/core-site.xml:21`).
    pub source: String,
    /// What Spindle serves instead.
    pub supported: &'static str,
    pub why: &'static str,
}

/// One line: the file, the key and its value, why, and what to set instead.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} = {:?} is refused: {}; Spindle supports {}",
            self.source, self.key, self.value, self.why, self.supported
        )
    }
}

/// The refused settings of `conf` for `daemon`, in [`RULES`] order.
pub fn refusals(conf: &Configuration, daemon: Daemon) -> Vec<Refusal> {
    RULES
        .iter()
        .filter(|r| r.applies_to(daemon))
        .filter_map(|r| {
            let (key, value) = r.setting(conf)?;
            r.refuses(&value, conf).then(|| Refusal {
                key: key.to_string(),
                source: conf.source_of(key).unwrap_or_else(|| "?".into()),
                value,
                supported: r.supported,
                why: r.why,
            })
        })
        .collect()
}

/// The refusals of several daemons sharing one configuration (`spindle
/// standalone`), each setting once.
pub fn refusals_of(conf: &Configuration, daemons: &[Daemon]) -> Vec<Refusal> {
    let mut all: Vec<Refusal> = Vec::new();
    for d in daemons {
        for r in refusals(conf, *d) {
            if !all.iter().any(|a| a.key == r.key) {
                all.push(r);
            }
        }
    }
    all
}

/// The error a daemon stops with: one line per refused setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub daemon: &'static str,
    pub refusals: Vec<Refusal>,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} does not start: its configuration asks for what Spindle does not provide \
             (`spindle check-config` lists every key)",
            self.daemon
        )?;
        for r in &self.refusals {
            write!(f, "\n  {r}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refused {}

/// `Err` with every refused setting of `conf` for `daemons`.
pub fn check(conf: &Configuration, daemons: &[Daemon], name: &'static str) -> Result<(), Refused> {
    let refusals = refusals_of(conf, daemons);
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(Refused {
            daemon: name,
            refusals,
        })
    }
}

/// Why a container's launch context is refused: it asks (through
/// [`ENV_CONTAINER_RUNTIME_TYPE`]) for a container runtime other than the
/// default one. Hadoop's default runtime takes an unset, empty or `default`
/// type; Hadoop's message for a runtime it does not run is "Requested
/// runtime not allowed.".
pub fn container_runtime_refusal<'a>(
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let (_, value) = env
        .into_iter()
        .find(|(k, _)| *k == ENV_CONTAINER_RUNTIME_TYPE)?;
    if value.is_empty() || value == "default" {
        return None;
    }
    Some(format!(
        "Requested runtime not allowed. The launch context sets {ENV_CONTAINER_RUNTIME_TYPE}={}, \
         and this NodeManager runs containers with the default runtime only (on the host): \
         Spindle has no docker or runc runtime. The container was not started.",
        crate::text::escaped(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(props: &[(&str, &str)]) -> Configuration {
        let mut xml = String::from("<configuration>\n");
        for (k, v) in props {
            xml.push_str(&format!(
                "<property><name>{k}</name><value>{v}</value></property>\n"
            ));
        }
        xml.push_str("</configuration>\n");
        let mut c = Configuration::with_defaults();
        c.add_resource_str("/etc/hadoop/core-site.xml", &xml)
            .expect("xml");
        c
    }

    #[test]
    fn defaults_are_served_by_every_daemon() {
        let c = Configuration::with_defaults();
        for d in Daemon::ALL {
            assert_eq!(refusals(&c, d), vec![], "{d}");
        }
    }

    #[test]
    fn kerberos_is_served_by_the_rm_and_the_nm_and_refused_by_the_web_proxy() {
        let c = conf(&[("hadoop.security.authentication", "kerberos")]);
        // The RM and the NM serve Kerberos on RPC (spindle_ipc::kerberos).
        assert!(refusals(&c, Daemon::ResourceManager).is_empty());
        assert!(refusals(&c, Daemon::NodeManager).is_empty());
        let r = refusals(&c, Daemon::WebProxy);
        assert_eq!(r.len(), 1);
        let line = r[0].to_string();
        assert!(
            line.starts_with(
                "/etc/hadoop/core-site.xml:2: hadoop.security.authentication = \"kerberos\" \
                 is refused: the web proxy server has no Kerberos login yet"
            ),
            "{line}"
        );
        assert!(line.ends_with("Spindle supports simple"), "{line}");
        // Hadoop reads the method case-insensitively.
        assert!(refusals(
            &conf(&[("hadoop.security.authentication", "SIMPLE")]),
            Daemon::ResourceManager
        )
        .is_empty());
    }

    #[test]
    fn each_rule_refuses_a_value_and_accepts_its_supported_one() {
        let lce = (keys::NM_CONTAINER_EXECUTOR_CLASS, LINUX_CONTAINER_EXECUTOR);
        let refused: &[(&str, &str)] = &[
            ("hadoop.security.authentication", "kerberos"),
            ("hadoop.rpc.protection", "authentication,privacy"),
            ("yarn.http.policy", "HTTPS_ONLY"),
            ("hadoop.http.authentication.type", "kerberos"),
            (
                "hadoop.http.filter.initializers",
                "org.apache.hadoop.security.authentication.server.ProxyUserAuthenticationFilterInitializer",
            ),
            (
                "yarn.authorization-provider",
                "org.apache.ranger.authorization.yarn.authorizer.RangerYarnAuthorizer",
            ),
            (
                "hadoop.security.group.mapping",
                "org.apache.hadoop.security.LdapGroupsMapping",
            ),
            ("hadoop.zk.auth", "digest:yarn:secret"),
            ("yarn.nodemanager.runtime.linux.allowed-runtimes", "default,docker"),
            ("yarn.nodemanager.runtime.linux.type", "docker"),
            ("yarn.nodemanager.runtime.linux.sandbox-mode", "enforcing"),
            (
                "yarn.nodemanager.linux-container-executor.cgroups.strict-resource-usage",
                "true",
            ),
            ("yarn.nodemanager.resource-plugins", "yarn.io/gpu"),
            ("mapreduce.shuffle.ssl.enabled", "true"),
            ("yarn.nodemanager.resource.disk.enabled", "true"),
            ("yarn.nodemanager.resource.network.enabled", "true"),
        ];
        assert_eq!(refused.len(), RULES.len(), "a case per rule");
        for (key, value) in refused {
            let rule = RULES.iter().find(|r| r.key == *key).expect(key);
            let c = conf(&[(key, value), lce]);
            let all = refusals_of(&c, &Daemon::ALL);
            assert_eq!(all.len(), 1, "{key}: {all:?}");
            assert_eq!(all[0].key, *key);
            for d in Daemon::ALL {
                assert_eq!(
                    refusals(&c, d).len(),
                    usize::from(rule.applies_to(d)),
                    "{key} {d}"
                );
            }
            let supported = rule.supported.split(' ').next().expect("a value");
            let supported = if supported == "unset" { "" } else { supported };
            let ok = conf(&[(key, supported), lce]);
            assert!(
                refusals_of(&ok, &Daemon::ALL).is_empty(),
                "{key}={supported}"
            );
        }
    }

    #[test]
    fn deprecated_spellings_are_refused_under_their_own_name() {
        let c = conf(&[("yarn.resourcemanager.zk-auth", "digest:yarn:secret")]);
        let r = refusals(&c, Daemon::ResourceManager);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].key, "yarn.resourcemanager.zk-auth");
    }

    #[test]
    fn runtimes_matter_only_to_the_linux_container_executor() {
        // Hadoop's DefaultContainerExecutor never reads them.
        let c = conf(&[("yarn.nodemanager.runtime.linux.allowed-runtimes", "docker")]);
        assert!(refusals(&c, Daemon::NodeManager).is_empty());
    }

    #[test]
    fn the_error_lists_every_refusal_one_per_line() {
        let c = conf(&[
            ("hadoop.rpc.protection", "privacy"),
            ("yarn.http.policy", "HTTPS_ONLY"),
        ]);
        let e = check(
            &c,
            &[Daemon::ResourceManager, Daemon::NodeManager],
            "ResourceManager",
        )
        .expect_err("refused");
        let text = e.to_string();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains("hadoop.rpc.protection = \"privacy\""));
        assert!(text.contains("yarn.http.policy = \"HTTPS_ONLY\""));
    }

    #[test]
    fn container_runtimes_other_than_default_are_refused() {
        assert_eq!(container_runtime_refusal([("PATH", "/bin")]), None);
        assert_eq!(
            container_runtime_refusal([(ENV_CONTAINER_RUNTIME_TYPE, "")]),
            None
        );
        assert_eq!(
            container_runtime_refusal([(ENV_CONTAINER_RUNTIME_TYPE, "default")]),
            None
        );
        for runtime in ["docker", "runc", "Default", "x\ny"] {
            let why =
                container_runtime_refusal([(ENV_CONTAINER_RUNTIME_TYPE, runtime)]).expect(runtime);
            assert!(why.starts_with("Requested runtime not allowed."), "{why}");
            assert!(why.contains("YARN_CONTAINER_RUNTIME_TYPE="), "{why}");
            assert!(!why.contains('\n'), "{why}");
        }
    }
}
