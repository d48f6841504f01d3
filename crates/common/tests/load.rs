//! `Configuration::load` against real configuration directories.

use std::fs;
use std::path::Path;

use spindle_common::conf::{keys, ConfError, Configuration};

fn write(dir: &Path, name: &str, text: &str) {
    if let Err(e) = fs::write(dir.join(name), text) {
        panic!("writing {name}: {e}");
    }
}

fn tempdir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    }
}

fn load(dir: &Path) -> Configuration {
    match Configuration::load(Some(dir)) {
        Ok(c) => c,
        Err(e) => panic!("load: {e}"),
    }
}

const CORE_SITE: &str = r#"<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<configuration>
  <property>
    <name>hadoop.tmp.dir</name>
    <value>/data/tmp</value>
    <description>scratch</description>
  </property>
  <property>
    <name>yarn.nodemanager.resource.memory-mb</name>
    <value>2048</value>
  </property>
  <property>
    <name>yarn.admin.acl</name>
    <value>ops</value>
    <final>true</final>
  </property>
</configuration>
"#;

const YARN_SITE: &str = r#"<?xml version="1.0"?>
<configuration>
  <property>
    <name>yarn.resourcemanager.hostname</name>
    <value>rm.example.internal</value>
  </property>
  <property>
    <name>yarn.admin.acl</name>
    <value>*</value>
  </property>
  <property>
    <name>yarn.nodemanager.resource.cpu-vcores</name>
    <value>many</value>
  </property>
</configuration>
"#;

#[test]
fn loads_core_and_yarn_site_in_hadoop_order() {
    let dir = tempdir();
    write(dir.path(), "core-site.xml", CORE_SITE);
    write(dir.path(), "yarn-site.xml", YARN_SITE);
    let conf = load(dir.path());

    // core-site value used by a YARN default.
    assert_eq!(
        conf.get_strings(keys::NM_LOCAL_DIRS),
        vec!["/data/tmp/nm-local-dir".to_string()]
    );
    // yarn-site value used by a YARN default.
    assert_eq!(
        conf.get_socket_addr(keys::RM_ADDRESS).ok(),
        Some(("rm.example.internal".to_string(), 8032))
    );
    // A YARN key in core-site is replaced by yarn-default, as in Hadoop.
    assert_eq!(conf.get_i64(keys::NM_RESOURCE_MEMORY_MB).ok(), Some(-1));
    // ... unless it is final: then neither the default nor yarn-site wins.
    assert_eq!(conf.get(keys::YARN_ADMIN_ACL).as_deref(), Some("ops"));
    assert!(conf.is_final(keys::YARN_ADMIN_ACL));

    let core_path = dir.path().join("core-site.xml").display().to_string();
    let yarn_path = dir.path().join("yarn-site.xml").display().to_string();
    assert_eq!(
        conf.source_of(keys::HADOOP_TMP_DIR),
        Some(format!("{core_path}:6"))
    );
    assert_eq!(
        conf.source_of(keys::RM_HOSTNAME),
        Some(format!("{yarn_path}:5"))
    );
    assert_eq!(
        conf.loaded_resources(),
        &[
            "<built-in core-default.xml>".to_string(),
            core_path,
            "<built-in yarn-default.xml>".to_string(),
            yarn_path.clone(),
        ]
    );

    // Typed errors point into the site file.
    let err = conf
        .get_i32(keys::NM_RESOURCE_CPU_VCORES)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err,
        Some(format!(
            "{yarn_path}:13: property 'yarn.nodemanager.resource.cpu-vcores': value 'many' is not an integer"
        ))
    );
}

#[test]
fn missing_site_files_are_fine() {
    let dir = tempdir();
    let conf = load(dir.path());
    assert_eq!(conf.get(keys::RM_HOSTNAME).as_deref(), Some("0.0.0.0"));
    assert_eq!(conf.loaded_resources().len(), 2);

    write(dir.path(), "yarn-site.xml", YARN_SITE);
    let conf = load(dir.path());
    assert_eq!(
        conf.get(keys::RM_HOSTNAME).as_deref(),
        Some("rm.example.internal")
    );
    assert_eq!(conf.loaded_resources().len(), 3);
}

#[test]
fn no_conf_dir_means_defaults_only() {
    let conf = match Configuration::load(None) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        conf.get_i64(keys::SCHEDULER_MAXIMUM_ALLOCATION_MB).ok(),
        Some(8192)
    );
    assert_eq!(
        conf.get_i32(keys::SCHEDULER_MAXIMUM_ALLOCATION_VCORES).ok(),
        Some(4)
    );
}

#[test]
fn missing_or_bogus_conf_dir_is_an_error() {
    let dir = tempdir();
    let missing = dir.path().join("nope");
    match Configuration::load(Some(&missing)) {
        Err(e @ ConfError::ConfDir { .. }) => {
            assert!(e.to_string().contains("no such directory"), "{e}");
            assert!(e.to_string().contains("nope"), "{e}");
        }
        other => panic!("expected ConfDir error, got {other:?}"),
    }
    write(dir.path(), "plain-file", "x");
    let file = dir.path().join("plain-file");
    match Configuration::load(Some(&file)) {
        Err(e @ ConfError::ConfDir { .. }) => {
            assert!(e.to_string().contains("not a directory"), "{e}")
        }
        other => panic!("expected ConfDir error, got {other:?}"),
    }
}

#[test]
fn malformed_site_file_names_path_line_and_column() {
    let dir = tempdir();
    write(
        dir.path(),
        "yarn-site.xml",
        "<configuration>\n  <property>\n    <name>a</name>\n    <value>1</valu>\n  </property>\n</configuration>\n",
    );
    let path = dir.path().join("yarn-site.xml").display().to_string();
    match Configuration::load(Some(dir.path())) {
        Err(e @ ConfError::Xml { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("{path}:4:")), "{msg}");
            assert!(msg.contains("malformed XML"), "{msg}");
        }
        other => panic!("expected an XML error, got {other:?}"),
    }
}

#[test]
fn unreadable_site_file_is_an_error() {
    let dir = tempdir();
    // A directory where the file should be cannot be read as a file,
    // whoever runs the test (permissions would not stop root).
    if let Err(e) = fs::create_dir(dir.path().join("core-site.xml")) {
        panic!("{e}");
    }
    match Configuration::load(Some(dir.path())) {
        Err(e @ ConfError::Io { .. }) => {
            assert!(
                e.to_string()
                    .contains("core-site.xml: cannot read configuration file"),
                "{e}"
            );
        }
        other => panic!("expected an Io error, got {other:?}"),
    }
}

#[test]
fn xinclude_is_rejected_with_position() {
    let dir = tempdir();
    write(
        dir.path(),
        "yarn-site.xml",
        "<configuration xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n\n  <xi:include href=\"more.xml\"/>\n</configuration>\n",
    );
    match Configuration::load(Some(dir.path())) {
        Err(e @ ConfError::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("yarn-site.xml:3:3: XInclude"), "{msg}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn add_resource_requires_the_file() {
    let dir = tempdir();
    let mut conf = Configuration::with_defaults();
    match conf.add_resource(&dir.path().join("capacity-scheduler.xml")) {
        Err(e @ ConfError::Io { .. }) => {
            assert!(e.to_string().contains("capacity-scheduler.xml"), "{e}")
        }
        other => panic!("expected Io error, got {other:?}"),
    }
    write(
        dir.path(),
        "capacity-scheduler.xml",
        "<configuration><property><name>yarn.scheduler.capacity.root.queues</name><value>default</value></property></configuration>",
    );
    if let Err(e) = conf.add_resource(&dir.path().join("capacity-scheduler.xml")) {
        panic!("{e}");
    }
    assert_eq!(
        conf.get_strings("yarn.scheduler.capacity.root.queues"),
        vec!["default"]
    );
}
