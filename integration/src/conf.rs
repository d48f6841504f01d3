//! Hadoop-style XML configuration files (`yarn-site.xml`, `core-site.xml`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

/// An ordered set of Hadoop configuration properties that can be written as a
/// `<configuration>` XML file. Keys are kept sorted so generated files are stable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HadoopConf {
    props: BTreeMap<String, String>,
}

impl HadoopConf {
    /// An empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl ToString) -> &mut Self {
        self.props.insert(key.into(), value.to_string());
        self
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.props.get(key).map(String::as_str)
    }

    /// Copies every property of `other` into `self`, `other` winning on conflicts.
    pub fn extend_from(&mut self, other: &HadoopConf) -> &mut Self {
        for (k, v) in &other.props {
            self.props.insert(k.clone(), v.clone());
        }
        self
    }

    /// All properties, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.props.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The configuration as a Hadoop XML document.
    pub fn to_xml(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration>\n");
        for (k, v) in &self.props {
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "  <property><name>{}</name><value>{}</value></property>",
                xml_escape(k),
                xml_escape(v)
            );
        }
        out.push_str("</configuration>\n");
        out
    }

    /// Writes [`Self::to_xml`] to `path`.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.to_xml())
            .with_context(|| format!("writing Hadoop configuration {}", path.display()))
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Client-side settings that make a Hadoop client give up quickly when nothing listens
/// on the ResourceManager's address (or nothing answers a call), so a failing test fails
/// in seconds, not minutes.
pub fn fast_failing_client_settings() -> HadoopConf {
    let mut conf = HadoopConf::new();
    conf.set("ipc.client.connect.max.retries", 2)
        .set("ipc.client.connect.retry.interval", 200)
        .set("ipc.client.connect.max.retries.on.timeouts", 2)
        .set("ipc.client.connect.timeout", 5000)
        .set("ipc.client.rpc-timeout.ms", 30000)
        .set("yarn.resourcemanager.connect.max-wait.ms", 5000)
        .set("yarn.resourcemanager.connect.retry-interval.ms", 500);
    conf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_is_sorted_and_escaped() {
        let mut conf = HadoopConf::new();
        conf.set("b.key", "x<y & 'z'").set("a.key", 42);
        assert_eq!(
            conf.to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration>\n\
             \x20 <property><name>a.key</name><value>42</value></property>\n\
             \x20 <property><name>b.key</name><value>x&lt;y &amp; &apos;z&apos;</value></property>\n\
             </configuration>\n"
        );
    }

    #[test]
    fn extend_overrides_existing_keys() {
        let mut base = HadoopConf::new();
        base.set("k", "old").set("keep", "yes");
        let mut top = HadoopConf::new();
        top.set("k", "new");
        base.extend_from(&top);
        assert_eq!(base.get("k"), Some("new"));
        assert_eq!(base.get("keep"), Some("yes"));
    }
}
