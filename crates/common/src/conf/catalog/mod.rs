//! What Spindle does with each configuration key a Hadoop operator may set:
//! the catalog behind `spindle check-config`.
//!
//! Two halves: Hadoop 3.3.4's own keys, generated from the `*-default.xml`
//! files its jars carry (`hadoop-3.3.4-keys.tsv`, written by
//! `integration/check-config/hadoop-keys.py`), and Spindle's tables
//! ([`table`]): the keys its code reads, the documented differences, the
//! keys that tune parts of Hadoop's Java implementation Spindle has no
//! counterpart of, the capabilities not built yet, and the keys other
//! programs read. The refused settings are [`super::refuse::RULES`].
//!
//! [`classify`] puts a key and its value in one [`Class`]; the scheduler's
//! own files (`capacity-scheduler.xml`, the fair allocation file) are
//! classified by the RM's readers, which know their keys.

mod table;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::refuse::{Daemon, RULES};
use super::Configuration;

/// The Hadoop version whose keys the catalog lists.
pub const HADOOP_VERSION: &str = "3.3.4";

const HADOOP_KEYS_TSV: &str = include_str!("hadoop-3.3.4-keys.tsv");

/// What Spindle does with one key, as `spindle check-config` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Spindle reads it and does what Hadoop does.
    Served,
    /// Spindle reads it, with the difference told (and where it is written).
    Differs(&'static str),
    /// The value asks for what Spindle does not provide: the daemons named
    /// refuse to start with it.
    Refused {
        daemons: Vec<Daemon>,
        why: &'static str,
        supported: &'static str,
    },
    /// Another program reads it (HDFS, MapReduce, the Timeline Service…).
    OtherDaemon(&'static str),
    /// Hadoop tunes a part of its Java implementation with it that Spindle
    /// has no counterpart of.
    NoEffect(&'static str),
    /// Hadoop's ResourceManager or NodeManager acts on it; Spindle does not
    /// yet. `at_default`: the value is Hadoop's default, so nothing differs.
    NotBuilt {
        note: Option<&'static str>,
        at_default: bool,
    },
    /// Not a key of Hadoop 3.3.4 nor of Spindle: likely a typo.
    Unknown { nearest: Option<String> },
}

impl Class {
    /// One word for summaries.
    pub fn label(&self) -> &'static str {
        match self {
            Class::Served => "served",
            Class::Differs(_) => "differs",
            Class::Refused { .. } => "REFUSED",
            Class::OtherDaemon(_) => "other program",
            Class::NoEffect(_) => "no effect",
            Class::NotBuilt { .. } => "not built",
            Class::Unknown { .. } => "UNKNOWN",
        }
    }

    /// A not-built key set away from Hadoop's default, an unknown key or a
    /// refused value: what an operator moving over must look at.
    pub fn needs_attention(&self) -> bool {
        matches!(
            self,
            Class::Refused { .. }
                | Class::Unknown { .. }
                | Class::NotBuilt {
                    at_default: false,
                    ..
                }
        )
    }
}

/// The label and the detail, as one line's tail.
impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Class::Served => f.write_str("served"),
            Class::Differs(note) => write!(f, "served, with a difference: {note}"),
            Class::Refused {
                daemons,
                why,
                supported,
            } => {
                let names: Vec<&str> = daemons.iter().map(|d| d.name()).collect();
                let names = match names.split_last() {
                    Some((last, [])) => (*last).to_string(),
                    Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                    None => String::new(),
                };
                write!(
                    f,
                    "REFUSED (the {names} will not start): {why}; Spindle supports {supported}"
                )
            }
            Class::OtherDaemon(who) => write!(f, "not Spindle's: read by {who}"),
            Class::NoEffect(why) => write!(f, "no effect: {why}"),
            Class::NotBuilt { note, at_default } => {
                f.write_str("not built")?;
                if let Some(note) = note {
                    write!(f, ": {note}")?;
                }
                if *at_default {
                    f.write_str(" (at Hadoop's default: nothing differs)")?;
                }
                Ok(())
            }
            Class::Unknown { nearest } => {
                write!(f, "UNKNOWN to Hadoop {HADOOP_VERSION} and Spindle")?;
                match nearest {
                    Some(n) => write!(f, ": did you mean {n}?"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// One key of Hadoop's `*-default.xml` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HadoopKey {
    /// `core-default.xml`, `hdfs-default.xml`, `yarn-default.xml` or `mapred-default.xml`.
    pub file: &'static str,
    pub default: &'static str,
}

/// Hadoop's keys, by name (the first file that lists a key wins).
pub fn hadoop_keys() -> &'static BTreeMap<&'static str, HadoopKey> {
    static KEYS: OnceLock<BTreeMap<&'static str, HadoopKey>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = BTreeMap::new();
        for line in HADOOP_KEYS_TSV.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let mut parts = line.splitn(3, '\t');
            let (Some(file), Some(key), Some(default)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            keys.entry(key).or_insert(HadoopKey { file, default });
        }
        keys
    })
}

/// Hadoop's default of `key`, unescaped, when its files list it.
pub fn hadoop_default(key: &str) -> Option<String> {
    hadoop_keys().get(key).map(|k| unescape(k.default))
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Whether `pattern` (with `*` for any non-empty text) matches `key`.
pub fn matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == key,
        Some((head, tail)) => {
            let Some(rest) = key.strip_prefix(head) else {
                return false;
            };
            // `*` takes at least one character, then the tail must match
            // what is left at some split.
            (1..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .any(|i| matches(tail, &rest[i..]))
        }
    }
}

fn find<'t, T>(table: &'t [(&'static str, T)], key: &str) -> Option<&'t T> {
    table
        .iter()
        .find(|(pattern, _)| matches(pattern, key))
        .map(|(_, t)| t)
}

/// Whether Spindle's code reads `key` (a refused setting's key included).
pub fn is_read(key: &str) -> bool {
    table::READ.contains(&key) || table::READ_PATTERNS.iter().any(|p| matches(p, key))
}

/// Every key or pattern the catalog names, for the test that keeps it true.
pub fn named_keys() -> impl Iterator<Item = &'static str> {
    table::READ
        .iter()
        .copied()
        .chain(table::READ_PATTERNS.iter().copied())
        .chain(table::DIFFERS.iter().map(|(k, _)| *k))
        .chain(table::NO_EFFECT.iter().map(|(k, _)| *k))
        .chain(table::NOT_BUILT.iter().map(|(k, _)| *k))
        .chain(table::HADOOP_EXTRA.iter().copied())
        .chain(
            RULES
                .iter()
                .flat_map(|r| std::iter::once(r.key).chain(r.deprecated.iter().copied())),
        )
}

/// The exact keys Spindle's code reads by name (not its patterns).
pub fn read_keys() -> &'static [&'static str] {
    table::READ
}

/// Whether Hadoop 3.3.4 knows `key`.
pub fn is_hadoop_key(key: &str) -> bool {
    hadoop_keys().contains_key(key)
        || table::HADOOP_EXTRA.contains(&key)
        || RULES
            .iter()
            .any(|r| r.key == key || r.deprecated.contains(&key))
}

/// What Spindle does with `key` set to `value` (expanded), within the whole
/// configuration `conf` (for rules that depend on other keys).
pub fn classify(key: &str, value: &str, conf: &Configuration) -> Class {
    let value = value.trim();
    if let Some(rule) = RULES
        .iter()
        .find(|r| r.key == key || r.deprecated.contains(&key))
    {
        if rule.refuses(value, conf) {
            return Class::Refused {
                daemons: rule.daemons.to_vec(),
                why: rule.why,
                supported: rule.supported,
            };
        }
    }
    if let Some(note) = find(table::DIFFERS, key) {
        return Class::Differs(note);
    }
    if is_read(key)
        || RULES
            .iter()
            .any(|r| r.key == key || r.deprecated.contains(&key))
    {
        return Class::Served;
    }
    if let Some(why) = find(table::NO_EFFECT, key) {
        return Class::NoEffect(why);
    }
    // Hadoop's default, expanded the way the value was.
    let at_default = || hadoop_default(key).is_some_and(|d| conf.expand(d.trim()).trim() == value);
    if let Some(note) = find(table::NOT_BUILT, key) {
        return Class::NotBuilt {
            note: Some(note),
            at_default: at_default(),
        };
    }
    if let Some(who) = find(table::OTHER_DAEMONS, key) {
        return Class::OtherDaemon(who);
    }
    if is_hadoop_key(key) {
        return Class::NotBuilt {
            note: None,
            at_default: at_default(),
        };
    }
    Class::Unknown {
        nearest: nearest_key(key),
    }
}

/// The prefix of the capacity scheduler's keys, which the RM's reader of
/// `capacity-scheduler.xml` classifies (it knows their structure).
pub const CAPACITY_PREFIX: &str = "yarn.scheduler.capacity.";

/// One line per key that a site file of `conf` sets and Spindle will not act
/// on as asked: not built and set away from Hadoop's default, or unknown.
/// The daemons log these at start, so nothing an operator asks for is
/// dropped without a word (`spindle check-config` tells the whole story).
/// Keys from the built-in defaults or set by code are left out, and so are
/// the capacity scheduler's, which its reader reports.
pub fn warnings(conf: &Configuration) -> Vec<String> {
    conf.keys()
        .filter(|k| !k.starts_with(CAPACITY_PREFIX))
        .filter_map(|key| {
            let origin = conf.origin_of(key)?;
            if origin.is_programmatic() || origin.resource().starts_with("<built-in") {
                return None;
            }
            let value = conf.get(key)?;
            let class = classify(key, &value, conf);
            let ignored = matches!(
                class,
                Class::Unknown { .. }
                    | Class::NotBuilt {
                        at_default: false,
                        ..
                    }
            );
            ignored.then(|| {
                format!("{origin}: {key} = {value:?}: {class}; Spindle does not act on it")
            })
        })
        .collect()
}

/// The known key closest to `key` by edit distance, when close enough to be
/// a likely typo (a distance of at most a quarter of its length, and 4).
pub fn nearest_key(key: &str) -> Option<String> {
    let limit = (key.len() / 4).clamp(1, 4);
    let candidates = hadoop_keys()
        .keys()
        .copied()
        .chain(table::READ.iter().copied())
        .chain(table::HADOOP_EXTRA.iter().copied());
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c.len().abs_diff(key.len()) > limit {
            continue;
        }
        let d = edit_distance(key, c);
        if d <= limit && best.is_none_or(|(bd, bc)| (d, c) < (bd, bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

/// Levenshtein distance over bytes.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(key: &str, value: &str) -> Class {
        classify(key, value, &Configuration::with_defaults())
    }

    #[test]
    fn hadoop_keys_load_from_the_generated_list() {
        let keys = hadoop_keys();
        assert!(keys.len() > 1700, "{}", keys.len());
        assert_eq!(
            keys.get("yarn.resourcemanager.address").map(|k| k.file),
            Some("yarn-default.xml")
        );
        assert_eq!(
            hadoop_default("yarn.resourcemanager.address").as_deref(),
            Some("${yarn.resourcemanager.hostname}:8032")
        );
        assert_eq!(hadoop_default("fs.defaultFS").as_deref(), Some("file:///"));
    }

    #[test]
    fn patterns_match_any_non_empty_text() {
        assert!(matches(
            "yarn.resourcemanager.address.*",
            "yarn.resourcemanager.address.rm1"
        ));
        assert!(!matches(
            "yarn.resourcemanager.address.*",
            "yarn.resourcemanager.address."
        ));
        assert!(matches(
            "*.thread-count",
            "yarn.resourcemanager.client.thread-count"
        ));
        assert!(matches(
            "yarn.*.webapp.spnego-*",
            "yarn.resourcemanager.webapp.spnego-principal"
        ));
        assert!(!matches("dfs.*", "dfsx"));
        assert!(matches("exact", "exact"));
    }

    #[test]
    fn each_class_has_its_keys() {
        assert_eq!(class("yarn.resourcemanager.hostname", "rm1"), Class::Served);
        assert_eq!(
            class("yarn.resourcemanager.hostname.rm2", "rm2"),
            Class::Served
        );
        assert_eq!(
            class("hadoop.security.authentication", "simple"),
            Class::Served
        );
        assert!(matches!(
            class("hadoop.security.authentication", "kerberos"),
            Class::Refused { .. }
        ));
        assert!(matches!(
            class("yarn.resourcemanager.store.class", "x"),
            Class::Differs(_)
        ));
        assert_eq!(
            class("dfs.replication", "3"),
            Class::OtherDaemon("HDFS (NameNodes, DataNodes and their clients)")
        );
        // Below an other program's prefix, the keys Spindle reads are its own.
        assert_eq!(class("mapreduce.shuffle.port", "13562"), Class::Served);
        assert!(matches!(
            class("yarn.resourcemanager.client.thread-count", "50"),
            Class::NoEffect(_)
        ));
        assert_eq!(
            class("yarn.resourcemanager.scheduler.monitor.enable", "false"),
            Class::NotBuilt {
                note: Some("preemption is not built yet (S17)"),
                at_default: true
            }
        );
        assert_eq!(
            class("yarn.resourcemanager.scheduler.monitor.enable", "true"),
            Class::NotBuilt {
                note: Some("preemption is not built yet (S17)"),
                at_default: false
            }
        );
        // A Hadoop key of the RM with no table entry: not built, no note.
        assert_eq!(
            class("yarn.resourcemanager.auto-update.containers", "true"),
            Class::NotBuilt {
                note: None,
                at_default: false
            }
        );
    }

    #[test]
    fn a_typo_gets_the_nearest_key() {
        assert_eq!(
            class("yarn.resourcemanager.adress", "x"),
            Class::Unknown {
                nearest: Some("yarn.resourcemanager.address".into())
            }
        );
        assert_eq!(
            class("yarn.nodemanager.resource.memory-gb", "8"),
            Class::Unknown {
                nearest: Some("yarn.nodemanager.resource.memory-mb".into())
            }
        );
        assert_eq!(
            class("com.example.completely.different", "x"),
            Class::Unknown { nearest: None }
        );
    }

    #[test]
    fn warnings_name_what_a_site_file_asks_for_in_vain() {
        let mut conf = Configuration::with_defaults();
        conf.add_resource_str(
            "/etc/hadoop/yarn-site.xml",
            "<configuration>\
             <property><name>yarn.resourcemanager.scheduler.monitor.enable</name><value>true</value></property>\
             <property><name>yarn.resourcemanager.reservation-system.enable</name><value>false</value></property>\
             <property><name>yarn.resourcemanager.adress</name><value>x:1</value></property>\
             <property><name>yarn.resourcemanager.hostname</name><value>rm1</value></property>\
             <property><name>yarn.scheduler.capacity.root.a.disable_preemption</name><value>true</value></property>\
             </configuration>",
        )
        .expect("xml");
        conf.set("yarn.node-labels.enabled", "true");
        let w = warnings(&conf);
        assert_eq!(w.len(), 2, "{w:#?}");
        assert!(
            w[0].starts_with(
                "/etc/hadoop/yarn-site.xml:1: yarn.resourcemanager.adress = \"x:1\": UNKNOWN"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("did you mean yarn.resourcemanager.address?"),
            "{}",
            w[0]
        );
        assert!(
            w[1].contains(
                "yarn.resourcemanager.scheduler.monitor.enable = \"true\": not built: preemption"
            ),
            "{}",
            w[1]
        );
    }

    #[test]
    fn lines_read_as_sentences() {
        let refused = class("yarn.http.policy", "HTTPS_ONLY").to_string();
        assert!(
            refused.starts_with(
                "REFUSED (the ResourceManager, NodeManager and web proxy will not start)"
            ),
            "{refused}"
        );
        assert!(refused.ends_with("Spindle supports HTTP_ONLY"), "{refused}");
        assert_eq!(
            class("yarn.resourcemanager.scheduler.monitor.enable", "false").to_string(),
            "not built: preemption is not built yet (S17) (at Hadoop's default: nothing differs)"
        );
    }
}
