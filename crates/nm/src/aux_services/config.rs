//! Which auxiliary services a node runs, read as Hadoop 3.3.4's
//! `AuxServices.serviceInit` reads them: the `yarn.nodemanager.aux-services`
//! list with `yarn.nodemanager.aux-services.<name>.class`, `.classpath` and
//! `.system-classes`, or, with `yarn.nodemanager.aux-services.manifest.enabled`,
//! the JSON manifest `yarn.nodemanager.aux-services.manifest` (read once at
//! start; Hadoop's reload timer and REST reload are not there).

use std::path::{Path, PathBuf};

use spindle_common::Configuration;

use crate::error::NmError;

/// `yarn.nodemanager.aux-services`: the service names.
pub const AUX_SERVICES: &str = "yarn.nodemanager.aux-services";
/// `yarn.nodemanager.aux-services.manifest.enabled` (default false).
pub const MANIFEST_ENABLED: &str = "yarn.nodemanager.aux-services.manifest.enabled";
/// `yarn.nodemanager.aux-services.manifest`: a local JSON file.
pub const MANIFEST: &str = "yarn.nodemanager.aux-services.manifest";
/// The class that selects the native `mapreduce_shuffle` (see
/// [`super::native`]).
pub const SHUFFLE_HANDLER_CLASS: &str = "org.apache.hadoop.mapred.ShuffleHandler";

/// The directory holding the built Java host (`aux-host.jar` and `lib/`);
/// else `$SPINDLE_AUX_HOST_DIR`, else `aux-host/` or
/// `../share/spindle/aux-host/` next to the binary.
pub const JAVA_HOST_DIR: &str = "spindle.nodemanager.aux-services.java-host.dir";
/// The `java` the host runs with; else `$JAVA_HOME/bin/java`, else `java`
/// on `PATH`.
pub const JAVA_HOST_JAVA: &str = "spindle.nodemanager.aux-services.java-host.java";
/// Extra JVM options of the host, whitespace-separated (e.g. `-Xmx1g`).
pub const JAVA_HOST_OPTS: &str = "spindle.nodemanager.aux-services.java-host.opts";
/// Extra entries of the host's own class path (the NodeManager class path of
/// Hadoop, where services without a `.classpath` are found), `:`-separated;
/// a `dir/*` entry means every jar of `dir`, as for `java -cp`.
pub const JAVA_HOST_CLASSPATH: &str = "spindle.nodemanager.aux-services.java-host.classpath";
/// How many times a JVM that died is started again before its services are
/// given up (default 3).
pub const JAVA_HOST_MAX_RESTARTS: &str = "spindle.nodemanager.aux-services.java-host.max-restarts";
/// The environment variable naming the Java host's directory.
pub const JAVA_HOST_DIR_ENV: &str = "SPINDLE_AUX_HOST_DIR";

/// Hadoop's `AuxServices.CLASS_NAME` manifest property.
const CLASS_NAME_PROPERTY: &str = "class.name";
/// Hadoop's `AuxServices.SYSTEM_CLASSES` manifest property.
const SYSTEM_CLASSES_PROPERTY: &str = "system.classes";

/// One configured service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    pub name: String,
    pub class: String,
    /// `.classpath` (or the manifest's files): loaded with a class loader of
    /// its own, as Hadoop's `AuxiliaryServiceWithCustomClassLoader`.
    pub classpath: Option<String>,
    /// `.system-classes`: what that class loader takes from the host.
    pub system_classes: Option<String>,
    /// Manifest properties set on the service's configuration.
    pub properties: Vec<(String, String)>,
    /// `spindle.nodemanager.aux-services.<name>.java-hosted`: run the class
    /// in the Java host even when a native implementation exists (e.g.
    /// Hadoop's own ShuffleHandler beside the native one).
    pub java_hosted: bool,
}

impl ServiceSpec {
    /// Whether a native implementation of its class may serve it: not
    /// when it has a class path of its own or is marked `java-hosted`
    /// (which native classes there are: [`super::native`]).
    pub fn may_run_natively(&self) -> bool {
        self.classpath.is_none() && !self.java_hosted
    }
}

/// How the JVM of the Java host is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaHostSettings {
    pub java: PathBuf,
    /// Where `aux-host.jar` and `lib/` are, when found.
    pub dir: Option<PathBuf>,
    pub opts: Vec<String>,
    pub extra_classpath: Vec<String>,
    pub max_restarts: u32,
}

/// The aux-service settings of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct AuxConfig {
    pub services: Vec<ServiceSpec>,
    pub java: JavaHostSettings,
    /// The node's whole configuration, for the services' `serviceInit`.
    pub properties: Vec<(String, String)>,
    /// `yarn.nodemanager.recovery.dir`/`nm-aux-services` with recovery on
    /// (Hadoop's `setRecoveryPath`).
    pub recovery_root: Option<PathBuf>,
    /// The node's local dirs (the native shuffle reads map outputs there).
    pub local_dirs: Vec<PathBuf>,
}

impl AuxConfig {
    /// No services.
    pub fn none() -> AuxConfig {
        AuxConfig {
            services: Vec::new(),
            java: JavaHostSettings {
                java: PathBuf::from("java"),
                dir: None,
                opts: Vec::new(),
                extra_classpath: Vec::new(),
                max_restarts: 0,
            },
            properties: Vec::new(),
            recovery_root: None,
            local_dirs: Vec::new(),
        }
    }

    /// Reads the services as Hadoop's `AuxServices.serviceInit` does.
    pub fn from_conf(conf: &Configuration, local_dirs: &[PathBuf]) -> Result<AuxConfig, NmError> {
        let manifest_enabled = conf.get_bool(MANIFEST_ENABLED).unwrap_or(false);
        let services = if manifest_enabled {
            match conf.get_trimmed(MANIFEST).filter(|m| !m.is_empty()) {
                Some(path) => {
                    let local = path.strip_prefix("file://").unwrap_or(&path);
                    let local = local.strip_prefix("file:").unwrap_or(local);
                    if path.contains("://") && !path.starts_with("file://") {
                        return Err(config_error(
                            MANIFEST,
                            format!("only a local manifest file is supported, not {path}"),
                        ));
                    }
                    read_manifest(Path::new(local))?
                }
                None => {
                    tracing::info!(
                        "Auxiliary services manifest is enabled, but no manifest file is \
                         specified in the configuration."
                    );
                    Vec::new()
                }
            }
        } else {
            let mut out: Vec<ServiceSpec> = Vec::new();
            for name in conf.get_strings(AUX_SERVICES) {
                let name = name.trim().to_string();
                if name.is_empty() {
                    continue;
                }
                let spec = spec_from_conf(conf, &name)?;
                // A repeated name replaces the earlier one, as Hadoop's
                // maybeRemoveAuxService before each add.
                out.retain(|s| s.name != name);
                out.push(spec);
            }
            out
        };
        for s in &services {
            check_name(&s.name)?;
            if s.class.trim().is_empty() {
                return Err(config_error(
                    &format!("yarn.nodemanager.aux-services.{}.class", s.name),
                    format!("Class name not provided for auxiliary service {}", s.name),
                ));
            }
        }
        let recovery_root = if conf
            .get_bool(spindle_common::conf::keys::NM_RECOVERY_ENABLED)
            .unwrap_or(false)
        {
            conf.get_trimmed(spindle_common::conf::keys::NM_RECOVERY_DIR)
                .map(|d| PathBuf::from(d).join("nm-aux-services"))
        } else {
            None
        };
        let mut properties: Vec<(String, String)> = conf
            .keys()
            .filter_map(|k| conf.get(k).map(|v| (k.to_string(), v)))
            .collect();
        properties.sort();
        Ok(AuxConfig {
            services,
            java: java_settings(conf)?,
            properties,
            recovery_root,
            local_dirs: local_dirs.to_vec(),
        })
    }
}

fn config_error(key: &str, message: String) -> NmError {
    NmError::Config {
        key: key.to_string(),
        message,
    }
}

/// Hadoop's `validateAuxServiceName`: `^[A-Za-z_]+[A-Za-z0-9_]*$`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_name(name: &str) -> Result<(), NmError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(config_error(
            AUX_SERVICES,
            format!(
                "The auxiliary service name: {name} is invalid. The valid service name should \
                 only contain a-zA-Z0-9_ and cannot start with numbers."
            ),
        ))
    }
}

fn spec_from_conf(conf: &Configuration, name: &str) -> Result<ServiceSpec, NmError> {
    let key = |suffix: &str| format!("yarn.nodemanager.aux-services.{name}.{suffix}");
    let class = conf.get_trimmed(&key("class")).unwrap_or_default();
    if let Some(remote) = conf.get_trimmed(&key("remote-classpath")) {
        return Err(config_error(
            &key("remote-classpath"),
            format!(
                "a remote class path ({remote}) is not supported by this NodeManager; copy the \
                 jars to the node and name them in {}",
                key("classpath")
            ),
        ));
    }
    let classpath = conf
        .get_trimmed(&key("classpath"))
        .filter(|c| !c.is_empty());
    let system_classes = {
        let list = conf.get_strings(&key("system-classes"));
        let list: Vec<String> = list
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        (!list.is_empty()).then(|| list.join(","))
    };
    let hosted_key = format!("spindle.nodemanager.aux-services.{name}.java-hosted");
    let java_hosted = match conf.get_trimmed(&hosted_key) {
        Some(v) => conf
            .get_bool(&hosted_key)
            .map_err(|_| config_error(&hosted_key, format!("'{v}' is not true or false")))?,
        None => false,
    };
    Ok(ServiceSpec {
        name: name.to_string(),
        class,
        classpath,
        system_classes,
        properties: Vec::new(),
        java_hosted,
    })
}

/// Reads Hadoop's `AuxServiceRecords` JSON.
pub fn read_manifest(path: &Path) -> Result<Vec<ServiceSpec>, NmError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        config_error(
            MANIFEST,
            format!("cannot read the manifest {}: {e}", path.display()),
        )
    })?;
    parse_manifest(&text).map_err(|m| {
        config_error(
            MANIFEST,
            format!("the manifest {} is invalid: {m}", path.display()),
        )
    })
}

/// Parses Hadoop's `AuxServiceRecords` JSON (`{"services": [{"name": ..,
/// "configuration": {"properties": {..}, "files": [{"src_file": ..,
/// "type": "STATIC"}]}}]}`). Only local STATIC files are supported.
pub fn parse_manifest(text: &str) -> Result<Vec<ServiceSpec>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let Some(services) = v.get("services") else {
        return Ok(out);
    };
    let services = services
        .as_array()
        .ok_or("\"services\" is not a list".to_string())?;
    for s in services {
        let name = s
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or("a service has no \"name\"".to_string())?
            .to_string();
        let conf = s.get("configuration");
        let mut properties = Vec::new();
        if let Some(props) = conf.and_then(|c| c.get("properties")) {
            let props = props
                .as_object()
                .ok_or(format!("the properties of {name} are not an object"))?;
            for (k, v) in props {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                properties.push((k.clone(), v));
            }
        }
        let mut files = Vec::new();
        if let Some(fs) = conf.and_then(|c| c.get("files")) {
            let fs = fs
                .as_array()
                .ok_or(format!("the files of {name} are not a list"))?;
            for f in fs {
                let src = f
                    .get("src_file")
                    .and_then(|s| s.as_str())
                    .ok_or(format!("a file of {name} has no \"src_file\""))?;
                let kind = f.get("type").and_then(|t| t.as_str()).unwrap_or("STATIC");
                if kind != "STATIC" {
                    return Err(format!(
                        "the file {src} of {name} is of type {kind}; only STATIC (a jar or a \
                         directory) is supported"
                    ));
                }
                let local = src.strip_prefix("file://").unwrap_or(src);
                let local = local.strip_prefix("file:").unwrap_or(local);
                if local.contains("://") {
                    return Err(format!(
                        "the file {src} of {name} is not local; only local files are supported"
                    ));
                }
                files.push(local.to_string());
            }
        }
        let take = |props: &mut Vec<(String, String)>, key: &str| {
            let i = props.iter().position(|(k, _)| k == key)?;
            Some(props.remove(i).1)
        };
        let class = take(&mut properties, CLASS_NAME_PROPERTY).unwrap_or_default();
        let system_classes = take(&mut properties, SYSTEM_CLASSES_PROPERTY);
        out.retain(|o: &ServiceSpec| o.name != name);
        out.push(ServiceSpec {
            name,
            class,
            classpath: (!files.is_empty()).then(|| files.join(":")),
            system_classes,
            properties,
            java_hosted: false,
        });
    }
    Ok(out)
}

fn java_settings(conf: &Configuration) -> Result<JavaHostSettings, NmError> {
    let java = match conf.get_trimmed(JAVA_HOST_JAVA).filter(|j| !j.is_empty()) {
        Some(j) => PathBuf::from(j),
        None => match std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join("bin").join("java"),
            None => PathBuf::from("java"),
        },
    };
    let dir = conf
        .get_trimmed(JAVA_HOST_DIR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os(JAVA_HOST_DIR_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            let bin = exe.parent()?;
            [bin.join("aux-host"), bin.join("../share/spindle/aux-host")]
                .into_iter()
                .find(|d| d.join("aux-host.jar").is_file())
        });
    let opts = conf
        .get(JAVA_HOST_OPTS)
        .map(|o| o.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let extra_classpath = conf
        .get_trimmed(JAVA_HOST_CLASSPATH)
        .map(|c| {
            c.split(':')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let max_restarts = match conf.get_trimmed(JAVA_HOST_MAX_RESTARTS) {
        Some(v) => v.parse::<u32>().map_err(|_| {
            config_error(
                JAVA_HOST_MAX_RESTARTS,
                format!("'{v}' is not a non-negative integer"),
            )
        })?,
        None => 3,
    };
    Ok(JavaHostSettings {
        java,
        dir,
        opts,
        extra_classpath,
        max_restarts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn names_are_checked_as_hadoop_does() {
        for good in ["mapreduce_shuffle", "spark_shuffle", "_x", "A1", "a"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "1abc", "a-b", "a.b", "a b", "é"] {
            assert!(!valid_name(bad), "{bad}");
        }
        let c = conf(&[
            (AUX_SERVICES, "good,9bad"),
            ("yarn.nodemanager.aux-services.good.class", "x.Good"),
            ("yarn.nodemanager.aux-services.9bad.class", "x.Bad"),
        ]);
        let e = AuxConfig::from_conf(&c, &[]).expect_err("a bad name");
        assert!(
            e.to_string().contains(
                "The auxiliary service name: 9bad is invalid. The valid service name should only \
                 contain a-zA-Z0-9_ and cannot start with numbers."
            ),
            "{e}"
        );
    }

    #[test]
    fn services_are_read_from_the_configuration() {
        let c = conf(&[
            (AUX_SERVICES, " mapreduce_shuffle , spark_shuffle "),
            (
                "yarn.nodemanager.aux-services.mapreduce_shuffle.class",
                SHUFFLE_HANDLER_CLASS,
            ),
            (
                "yarn.nodemanager.aux-services.spark_shuffle.class",
                "org.apache.spark.network.yarn.YarnShuffleService",
            ),
            (
                "yarn.nodemanager.aux-services.spark_shuffle.classpath",
                "/opt/spark/yarn/*",
            ),
            (
                "yarn.nodemanager.aux-services.spark_shuffle.system-classes",
                "java.,org.apache.hadoop.",
            ),
        ]);
        let a = AuxConfig::from_conf(&c, &[]).expect("valid");
        assert_eq!(a.services.len(), 2);
        assert_eq!(a.services[0].class, SHUFFLE_HANDLER_CLASS);
        assert!(a.services[0].may_run_natively());
        assert_eq!(a.services[1].name, "spark_shuffle");
        assert_eq!(
            a.services[1].classpath.as_deref(),
            Some("/opt/spark/yarn/*")
        );
        assert_eq!(
            a.services[1].system_classes.as_deref(),
            Some("java.,org.apache.hadoop.")
        );
        assert!(!a.services[1].may_run_natively());
        assert!(a.properties.iter().any(|(k, _)| k == AUX_SERVICES));

        let none = AuxConfig::from_conf(&conf(&[]), &[]).expect("valid");
        assert!(none.services.is_empty());

        let missing = conf(&[(AUX_SERVICES, "x")]);
        let e = AuxConfig::from_conf(&missing, &[]).expect_err("no class");
        assert!(
            e.to_string()
                .contains("Class name not provided for auxiliary service x"),
            "{e}"
        );
        let remote = conf(&[
            (AUX_SERVICES, "x"),
            ("yarn.nodemanager.aux-services.x.class", "a.B"),
            (
                "yarn.nodemanager.aux-services.x.remote-classpath",
                "hdfs:///x.jar",
            ),
        ]);
        assert!(AuxConfig::from_conf(&remote, &[]).is_err());
    }

    #[test]
    fn the_manifest_is_read_as_hadoop_writes_it() {
        let text = r#"{"services": [
            {"name": "mapreduce_shuffle", "version": "2",
             "configuration": {"properties": {
                "class.name": "org.apache.hadoop.mapred.ShuffleHandler",
                "mapreduce.shuffle.transfer.buffer.size": "102400",
                "mapreduce.shuffle.port": 13563}}},
            {"name": "spark_shuffle",
             "configuration": {"properties": {
                "class.name": "org.apache.spark.network.yarn.YarnShuffleService",
                "system.classes": "java.,org.apache.hadoop."},
               "files": [{"src_file": "file:///opt/spark/yarn/shuffle.jar", "type": "STATIC"}]}}
        ]}"#;
        let s = parse_manifest(text).expect("valid");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].class, SHUFFLE_HANDLER_CLASS);
        assert!(s[0]
            .properties
            .contains(&("mapreduce.shuffle.port".into(), "13563".into())));
        assert_eq!(
            s[1].classpath.as_deref(),
            Some("/opt/spark/yarn/shuffle.jar")
        );
        assert_eq!(
            s[1].system_classes.as_deref(),
            Some("java.,org.apache.hadoop.")
        );
        assert!(parse_manifest("{\"services\": 3}").is_err());
        assert!(parse_manifest(
            r#"{"services":[{"name":"a","configuration":{"files":[{"src_file":"x.tgz","type":"ARCHIVE"}]}}]}"#
        )
        .is_err());
        assert!(parse_manifest("not json").is_err());

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("manifest.json");
        std::fs::write(&path, text).expect("write");
        let c = conf(&[
            (MANIFEST_ENABLED, "true"),
            (MANIFEST, &path.to_string_lossy()),
            // Ignored when the manifest is on, as in Hadoop.
            (AUX_SERVICES, "other"),
        ]);
        let a = AuxConfig::from_conf(&c, &[]).expect("valid");
        assert_eq!(
            a.services
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["mapreduce_shuffle", "spark_shuffle"]
        );
    }
}
