use super::*;

fn site(props: &[(&str, &str)]) -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in props {
        xml.push_str(&format!(
            "  <property>\n    <name>{k}</name>\n    <value>{v}</value>\n  </property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    xml
}

fn add(conf: &mut Configuration, name: &str, xml: &str) {
    if let Err(e) = conf.add_resource_str(name, xml) {
        panic!("{name}: {e}");
    }
}

fn err_text<T: std::fmt::Debug>(r: Result<T, ConfError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

/// A configuration with defaults and a fixed user, so tests do not depend
/// on who runs them.
fn conf_as_alice() -> Configuration {
    let mut conf = Configuration::with_defaults();
    conf.set_system_property("user.name", "alice");
    conf
}

// ---------------------------------------------------------------- defaults

#[test]
fn builtin_defaults_parse_and_cover_every_key_constant() {
    let core = Builtin::Core.properties();
    let yarn = Builtin::Yarn.properties();
    assert!(core.len() > 20 && yarn.len() > 100);
    for key in keys::ALL {
        let documented = core.iter().chain(yarn).any(|p| p.name == *key);
        assert!(documented, "{key} is missing from the defaults files");
        let has_value = builtin_default(key).is_some();
        assert_eq!(
            has_value,
            !keys::NO_DEFAULT.contains(key),
            "{key}: default presence does not match keys::NO_DEFAULT"
        );
    }
    // No key is listed twice across the two files.
    let mut names: Vec<&str> = core.iter().chain(yarn).map(|p| p.name.as_str()).collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "duplicate key in the defaults files");
    assert_eq!(total, keys::ALL.len());
}

#[test]
fn builtin_defaults_match_hadoop_3_3() {
    let expected = [
        ("yarn.resourcemanager.hostname", "0.0.0.0"),
        (
            "yarn.resourcemanager.address",
            "${yarn.resourcemanager.hostname}:8032",
        ),
        (
            "yarn.resourcemanager.scheduler.address",
            "${yarn.resourcemanager.hostname}:8030",
        ),
        (
            "yarn.resourcemanager.resource-tracker.address",
            "${yarn.resourcemanager.hostname}:8031",
        ),
        (
            "yarn.resourcemanager.admin.address",
            "${yarn.resourcemanager.hostname}:8033",
        ),
        (
            "yarn.resourcemanager.webapp.address",
            "${yarn.resourcemanager.hostname}:8088",
        ),
        ("yarn.resourcemanager.bind-host", ""),
        ("yarn.scheduler.minimum-allocation-mb", "1024"),
        ("yarn.scheduler.maximum-allocation-mb", "8192"),
        ("yarn.scheduler.minimum-allocation-vcores", "1"),
        ("yarn.scheduler.maximum-allocation-vcores", "4"),
        ("yarn.resourcemanager.nodes.include-path", ""),
        ("yarn.resourcemanager.nodes.exclude-path", ""),
        ("yarn.nm.liveness-monitor.expiry-interval-ms", "600000"),
        (
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
            "1000",
        ),
        ("yarn.resourcemanager.am.max-attempts", "2"),
        ("yarn.am.liveness-monitor.expiry-interval-ms", "600000"),
        ("yarn.resourcemanager.max-completed-applications", "1000"),
        (
            "yarn.resourcemanager.decommissioning-nodes-watcher.poll-interval-secs",
            "20",
        ),
        (
            "yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs",
            "3600",
        ),
        (
            "yarn.resourcemanager.scheduler.class",
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
        ),
        ("yarn.nodemanager.hostname", "0.0.0.0"),
        ("yarn.nodemanager.address", "${yarn.nodemanager.hostname}:0"),
        (
            "yarn.nodemanager.webapp.address",
            "${yarn.nodemanager.hostname}:8042",
        ),
        ("yarn.nodemanager.resource.memory-mb", "-1"),
        ("yarn.nodemanager.resource.cpu-vcores", "-1"),
        (
            "yarn.nodemanager.resource.detect-hardware-capabilities",
            "false",
        ),
        ("yarn.nodemanager.resource.system-reserved-memory-mb", "-1"),
        (
            "yarn.nodemanager.resource.count-logical-processors-as-cores",
            "false",
        ),
        ("yarn.nodemanager.resource.pcores-vcores-multiplier", "1.0"),
        (
            "yarn.nodemanager.local-dirs",
            "${hadoop.tmp.dir}/nm-local-dir",
        ),
        ("yarn.nodemanager.log-dirs", "${yarn.log.dir}/userlogs"),
        ("yarn.nodemanager.disk-health-checker.interval-ms", "120000"),
        (
            "yarn.nodemanager.disk-health-checker.min-healthy-disks",
            "0.25",
        ),
        (
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
            "90.0",
        ),
        (
            "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb",
            "0",
        ),
        ("yarn.nodemanager.disk-health-checker.enable", "true"),
        ("yarn.nodemanager.health-checker.interval-ms", "600000"),
        ("yarn.nodemanager.vmem-pmem-ratio", "2.1"),
        ("yarn.nodemanager.pmem-check-enabled", "true"),
        ("yarn.nodemanager.vmem-check-enabled", "true"),
        ("yarn.log-aggregation-enable", "false"),
        ("yarn.acl.enable", "false"),
        ("yarn.admin.acl", "*"),
        ("hadoop.tmp.dir", "/tmp/hadoop-${user.name}"),
        ("ipc.maximum.data.length", "134217728"),
        ("ipc.client.connection.maxidletime", "10000"),
        ("ipc.server.max.response.size", "1048576"),
        ("ipc.ping.interval", "60000"),
        ("ipc.client.connect.timeout", "20000"),
        ("ipc.client.connect.max.retries", "10"),
        ("hadoop.security.authentication", "simple"),
        (
            "hadoop.security.group.mapping",
            "org.apache.hadoop.security.JniBasedUnixGroupsMappingWithFallback",
        ),
        ("yarn.log.dir", "${hadoop.tmp.dir}/logs"),
    ];
    for (key, value) in expected {
        assert_eq!(builtin_default(key), Some(value), "default of {key}");
    }
    assert_eq!(builtin_default(keys::RM_CLUSTER_ID), None);
    assert_eq!(builtin_default("no.such.key"), None);
}

#[test]
fn defaults_expand_to_usable_values() {
    let conf = conf_as_alice();
    assert_eq!(
        conf.get_socket_addr(keys::RM_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 8032))
    );
    assert_eq!(
        conf.get_socket_addr(keys::RM_SCHEDULER_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 8030))
    );
    assert_eq!(
        conf.get_socket_addr(keys::RM_RESOURCE_TRACKER_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 8031))
    );
    assert_eq!(
        conf.get_socket_addr(keys::RM_ADMIN_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 8033))
    );
    assert_eq!(
        conf.get_socket_addr(keys::RM_WEBAPP_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 8088))
    );
    assert_eq!(
        conf.get_socket_addr(keys::NM_ADDRESS).ok(),
        Some(("0.0.0.0".into(), 0))
    );
    assert_eq!(
        conf.get(keys::HADOOP_TMP_DIR).as_deref(),
        Some("/tmp/hadoop-alice")
    );
    assert_eq!(
        conf.get_strings(keys::NM_LOCAL_DIRS),
        vec!["/tmp/hadoop-alice/nm-local-dir".to_string()]
    );
    assert_eq!(
        conf.get_i64(keys::SCHEDULER_MINIMUM_ALLOCATION_MB).ok(),
        Some(1024)
    );
    assert_eq!(conf.get_i32(keys::NM_RESOURCE_MEMORY_MB).ok(), Some(-1));
    assert_eq!(
        conf.get_u64(keys::IPC_MAXIMUM_DATA_LENGTH).ok(),
        Some(128 * 1024 * 1024)
    );
    assert_eq!(conf.get_bool(keys::YARN_ACL_ENABLE).ok(), Some(false));
    assert_eq!(
        conf.get_f64(keys::NM_DISK_HEALTH_CHECKER_MAX_DISK_UTILIZATION_PER_DISK_PERCENTAGE)
            .ok(),
        Some(90.0)
    );
    assert_eq!(conf.get_f64(keys::NM_VMEM_PMEM_RATIO).ok(), Some(2.1));
    assert_eq!(conf.get(keys::RM_CLUSTER_ID), None);
    assert_eq!(
        conf.get_or(keys::RM_CLUSTER_ID, keys::DEFAULT_RM_CLUSTER_ID),
        "yarn_cluster"
    );
    assert_eq!(
        conf.get(keys::RM_STATE_STORE_MAX_COMPLETED_APPLICATIONS)
            .as_deref(),
        Some("1000")
    );
    assert_eq!(
        conf.source_of(keys::RM_ADDRESS)
            .map(|s| s.starts_with("<built-in yarn-default.xml>:")),
        Some(true)
    );
    assert_eq!(
        conf.loaded_resources(),
        &[
            BUILTIN_CORE_DEFAULTS.to_string(),
            BUILTIN_YARN_DEFAULTS.to_string()
        ]
    );
}

#[test]
fn log_dirs_follow_yarn_log_dir() {
    let mut conf = conf_as_alice();
    conf.system.remove("yarn.log.dir");
    assert_eq!(
        conf.get(keys::NM_LOG_DIRS).as_deref(),
        Some("/tmp/hadoop-alice/logs/userlogs"),
        "fallback through the built-in yarn.log.dir"
    );
    // As with Hadoop's -Dyarn.log.dir, the system property wins over the key.
    conf.set_system_property("yarn.log.dir", "/var/log/spindle");
    assert_eq!(
        conf.get(keys::NM_LOG_DIRS).as_deref(),
        Some("/var/log/spindle/userlogs")
    );
}

// -------------------------------------------------------------- precedence

#[test]
fn later_resources_override_earlier_ones() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "first.xml",
        &site(&[("yarn.resourcemanager.hostname", "rm-a")]),
    );
    add(
        &mut conf,
        "second.xml",
        &site(&[("yarn.resourcemanager.hostname", "rm-b")]),
    );
    assert_eq!(conf.get(keys::RM_HOSTNAME).as_deref(), Some("rm-b"));
    assert_eq!(
        conf.source_of(keys::RM_HOSTNAME).as_deref(),
        Some("second.xml:5")
    );
    // Derived defaults see the override.
    assert_eq!(conf.get(keys::RM_ADDRESS).as_deref(), Some("rm-b:8032"));
    assert_eq!(
        conf.get_socket_addr(keys::RM_WEBAPP_ADDRESS).ok(),
        Some(("rm-b".into(), 8088))
    );
}

#[test]
fn final_values_are_not_overridden() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "core-site.xml",
        "<configuration>\n<property>\n<name>k</name>\n<value>first</value>\n<final>true</final>\n</property>\n\
         <property><name>k</name><value>same-file</value></property>\n</configuration>",
    );
    add(&mut conf, "yarn-site.xml", &site(&[("k", "second")]));
    assert_eq!(conf.get("k").as_deref(), Some("first"));
    assert!(conf.is_final("k"));
    assert_eq!(conf.source_of("k").as_deref(), Some("core-site.xml:4"));
    // Code still wins, as in Hadoop.
    conf.set("k", "from-code");
    assert_eq!(conf.get("k").as_deref(), Some("from-code"));
}

#[test]
fn final_without_value_freezes_the_current_value() {
    let mut conf = conf_as_alice();
    add(&mut conf, "a.xml", &site(&[("k", "v1")]));
    add(
        &mut conf,
        "b.xml",
        "<configuration><property><name>k</name><final>true</final></property></configuration>",
    );
    add(&mut conf, "c.xml", &site(&[("k", "v2")]));
    assert_eq!(conf.get("k").as_deref(), Some("v1"));
}

#[test]
fn empty_value_in_site_file_keeps_earlier_value() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "a.xml",
        &site(&[("yarn.nodemanager.resource.memory-mb", "4096")]),
    );
    add(
        &mut conf,
        "b.xml",
        &site(&[("yarn.nodemanager.resource.memory-mb", "")]),
    );
    assert_eq!(conf.get_i64(keys::NM_RESOURCE_MEMORY_MB).ok(), Some(4096));
    assert_eq!(
        conf.source_of(keys::NM_RESOURCE_MEMORY_MB).as_deref(),
        Some("a.xml:5")
    );
}

#[test]
fn programmatic_values_win_over_later_resources() {
    let mut conf = conf_as_alice();
    conf.set(keys::RM_HOSTNAME, "from-code");
    add(
        &mut conf,
        "late.xml",
        &site(&[("yarn.resourcemanager.hostname", "from-file")]),
    );
    assert_eq!(conf.get(keys::RM_HOSTNAME).as_deref(), Some("from-code"));
    assert_eq!(
        conf.source_of(keys::RM_HOSTNAME).as_deref(),
        Some("programmatic")
    );
    assert!(conf
        .origin_of(keys::RM_HOSTNAME)
        .is_some_and(Origin::is_programmatic));
    conf.unset(keys::RM_HOSTNAME);
    assert_eq!(conf.get(keys::RM_HOSTNAME), None);
    assert_eq!(
        conf.get(keys::RM_ADDRESS).as_deref(),
        Some("${yarn.resourcemanager.hostname}:8032")
    );
}

#[test]
fn malformed_resource_changes_nothing() {
    let mut conf = conf_as_alice();
    let bad = "<configuration>\n<property><name>yarn.resourcemanager.hostname</name><value>x</value></property>\n<property>\n</configuration>\n";
    let msg = err_text(conf.add_resource_str("/etc/spindle/yarn-site.xml", bad));
    assert!(msg.starts_with("/etc/spindle/yarn-site.xml:4:"), "{msg}");
    assert!(msg.contains("malformed XML"), "{msg}");
    assert_eq!(conf.get(keys::RM_HOSTNAME).as_deref(), Some("0.0.0.0"));
    assert_eq!(conf.loaded_resources().len(), 2);
}

#[test]
fn keys_lists_every_layer_sorted() {
    let mut conf = Configuration::empty();
    add(&mut conf, "a.xml", &site(&[("b.key", "1"), ("a.key", "2")]));
    conf.set("c.key", "3");
    conf.set("a.key", "4");
    let keys: Vec<&str> = conf.keys().collect();
    assert_eq!(keys, vec!["a.key", "b.key", "c.key"]);
    assert!(
        Configuration::with_defaults().keys().count() >= keys::ALL.len() - keys::NO_DEFAULT.len()
    );
}

#[test]
fn keys_are_trimmed() {
    let mut conf = Configuration::empty();
    conf.set("  spaced.key ", "v");
    assert_eq!(conf.get("spaced.key").as_deref(), Some("v"));
    assert_eq!(conf.get(" spaced.key").as_deref(), Some("v"));
}

// --------------------------------------------------------------- expansion

#[test]
fn user_name_and_java_properties_expand() {
    let mut conf = Configuration::empty();
    conf.set_system_property("user.name", "bob");
    conf.set_system_property("user.home", "/home/bob");
    conf.set("k", "${user.name}@${user.home}:${java.io.tmpdir}");
    assert_eq!(conf.get("k").as_deref(), Some("bob@/home/bob:/tmp"));
}

#[test]
fn real_user_name_is_used_by_default() {
    let conf = Configuration::with_defaults();
    let user = conf.system_property("user.name").map(str::to_string);
    assert!(user.as_deref().is_some_and(|u| !u.is_empty()));
    assert_eq!(
        conf.get(keys::HADOOP_TMP_DIR),
        user.map(|u| format!("/tmp/hadoop-{u}"))
    );
}

#[test]
fn system_properties_shadow_keys_of_the_same_name() {
    let mut conf = Configuration::empty();
    conf.set_system_property("user.name", "carol");
    conf.set("user.name", "not-used");
    conf.set("k", "${user.name}");
    assert_eq!(conf.get("k").as_deref(), Some("carol"));
}

#[test]
fn env_references_expand() {
    // Names unique to this test; edition 2021 keeps set_var safe.
    std::env::set_var("SPINDLE_CONF_TEST_ENV_SET", "from-env");
    std::env::remove_var("SPINDLE_CONF_TEST_ENV_UNSET");
    let mut conf = Configuration::empty();
    conf.set("a", "${env.SPINDLE_CONF_TEST_ENV_SET}/x");
    conf.set("b", "${env.SPINDLE_CONF_TEST_ENV_UNSET:-fallback}");
    conf.set("c", "${env.SPINDLE_CONF_TEST_ENV_UNSET}");
    conf.set("d", "${env.SPINDLE_CONF_TEST_ENV_UNSET-dash}");
    assert_eq!(conf.get("a").as_deref(), Some("from-env/x"));
    assert_eq!(conf.get("b").as_deref(), Some("fallback"));
    assert_eq!(
        conf.get("c").as_deref(),
        Some("${env.SPINDLE_CONF_TEST_ENV_UNSET}")
    );
    assert_eq!(conf.get("d").as_deref(), Some("dash"));
    // An unset variable falls back to a key literally named env.NAME.
    conf.set("env.SPINDLE_CONF_TEST_ENV_UNSET", "key-value");
    assert_eq!(conf.get("c").as_deref(), Some("key-value"));
}

#[test]
fn expansion_is_recursive_and_leaves_unknowns() {
    let mut conf = Configuration::empty();
    add(
        &mut conf,
        "a.xml",
        &site(&[
            ("base", "/data"),
            ("mid", "${base}/yarn"),
            ("leaf", "${mid}/local,${nope}"),
        ]),
    );
    assert_eq!(
        conf.get("leaf").as_deref(),
        Some("/data/yarn/local,${nope}")
    );
    assert_eq!(conf.get_raw("leaf"), Some("${mid}/local,${nope}"));
}

#[test]
fn cycles_are_left_unexpanded_and_typed_getters_report_them() {
    let mut conf = Configuration::empty();
    add(
        &mut conf,
        "cyc.xml",
        &site(&[("a", "${b}"), ("b", "${a}"), ("self", "x${self}")]),
    );
    assert_eq!(conf.get("a").as_deref(), Some("${b}"));
    assert_eq!(conf.get("self").as_deref(), Some("x${self}"));
    let msg = err_text(conf.get_i64("a"));
    assert!(
        msg.starts_with("cyc.xml:5: property 'a': value '${b}' cannot be expanded"),
        "{msg}"
    );
    assert!(msg.contains("cycle"), "{msg}");
}

#[test]
fn get_or_expands_its_default() {
    let mut conf = Configuration::empty();
    conf.set("dir", "/base");
    assert_eq!(conf.get_or("missing", "${dir}/sub"), "/base/sub");
    assert_eq!(conf.get_or("dir", "unused"), "/base");
}

// ----------------------------------------------------------- typed getters

#[test]
fn integer_errors_name_file_line_and_key() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "/etc/spindle/yarn-site.xml",
        &site(&[("yarn.nodemanager.resource.memory-mb", "lots")]),
    );
    let msg = err_text(conf.get_i64(keys::NM_RESOURCE_MEMORY_MB));
    assert_eq!(
        msg,
        "/etc/spindle/yarn-site.xml:5: property 'yarn.nodemanager.resource.memory-mb': value 'lots' is not an integer"
    );
    match conf.get_i32(keys::NM_RESOURCE_MEMORY_MB) {
        Err(e @ ConfError::InvalidValue { .. }) => {
            assert_eq!(e.key(), Some(keys::NM_RESOURCE_MEMORY_MB))
        }
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

#[test]
fn integer_forms() {
    let mut conf = Configuration::empty();
    add(
        &mut conf,
        "n.xml",
        &site(&[
            ("dec", " 42 "),
            ("neg", "-7"),
            ("plus", "+5"),
            ("hex", "0x1F"),
            ("neghex", "-0X10"),
            ("big", "3000000000"),
            ("huge", "99999999999999999999"),
            ("float", "1.5"),
            ("empty", " "),
        ]),
    );
    assert_eq!(conf.get_i64("dec").ok(), Some(42));
    assert_eq!(conf.get_i32("neg").ok(), Some(-7));
    assert_eq!(conf.get_i64("plus").ok(), Some(5));
    assert_eq!(conf.get_i64("hex").ok(), Some(31));
    assert_eq!(conf.get_i64("neghex").ok(), Some(-16));
    assert_eq!(conf.get_i64("big").ok(), Some(3_000_000_000));
    assert_eq!(conf.get_u64("big").ok(), Some(3_000_000_000));
    assert!(err_text(conf.get_i32("big")).contains("out of range for a 32-bit integer"));
    assert!(err_text(conf.get_i64("huge")).contains("out of range for a 64-bit integer"));
    assert!(err_text(conf.get_u64("neg")).ends_with("value '-7' must not be negative"));
    assert!(err_text(conf.get_i64("float")).ends_with("value '1.5' is not an integer"));
    assert!(err_text(conf.get_i64("empty")).ends_with("value '' is not an integer"));
}

#[test]
fn missing_keys_are_errors_naming_the_key() {
    let conf = Configuration::with_defaults();
    let msg = err_text(conf.get_i64("yarn.no.such.key"));
    assert_eq!(
        msg,
        "property 'yarn.no.such.key' is not set and has no default"
    );
    assert!(matches!(
        conf.get_bool(keys::RM_CLUSTER_ID),
        Err(ConfError::Missing { .. })
    ));
    assert!(matches!(
        conf.get_socket_addr("nope"),
        Err(ConfError::Missing { .. })
    ));
    assert!(conf.get_strings("nope").is_empty());
}

#[test]
fn errors_mention_the_unexpanded_value() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "y.xml",
        &site(&[("yarn.resourcemanager.hostname", "rm:1")]),
    );
    let msg = err_text(conf.get_socket_addr(keys::RM_ADDRESS));
    assert!(msg.starts_with("<built-in yarn-default.xml>:"), "{msg}");
    assert!(
        msg.ends_with(
            "property 'yarn.resourcemanager.address': value 'rm:1:8032' is not a host:port address: \
             IPv6 addresses must be written as [address]:port (expanded from '${yarn.resourcemanager.hostname}:8032')"
        ),
        "{msg}"
    );
}

#[test]
fn floats() {
    let mut conf = Configuration::empty();
    add(
        &mut conf,
        "f.xml",
        &site(&[
            ("a", "2.5"),
            ("b", "1e3"),
            ("c", "0.75f"),
            ("d", "3d"),
            ("e", "two"),
            ("g", "1.0.0"),
        ]),
    );
    assert_eq!(conf.get_f64("a").ok(), Some(2.5));
    assert_eq!(conf.get_f64("b").ok(), Some(1000.0));
    assert_eq!(conf.get_f64("c").ok(), Some(0.75));
    assert_eq!(conf.get_f64("d").ok(), Some(3.0));
    assert!(err_text(conf.get_f64("e")).ends_with("value 'two' is not a number"));
    assert!(err_text(conf.get_f64("g")).ends_with("is not a number"));
}

#[test]
fn booleans() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "b.xml",
        &site(&[
            ("t", "TRUE"),
            ("f", " False "),
            ("yarn.acl.enable", " "),
            ("no.default", " "),
            ("bad", "yes"),
        ]),
    );
    assert_eq!(conf.get_bool("t").ok(), Some(true));
    assert_eq!(conf.get_bool("f").ok(), Some(false));
    // Whitespace-only value: Hadoop falls back to the default.
    assert_eq!(conf.get_bool(keys::YARN_ACL_ENABLE).ok(), Some(false));
    assert!(err_text(conf.get_bool("no.default")).contains("is empty; expected true or false"));
    assert_eq!(
        err_text(conf.get_bool("bad")),
        "b.xml:21: property 'bad': value 'yes' is not a boolean (expected true or false)"
    );
}

#[test]
fn string_lists() {
    let mut conf = Configuration::empty();
    conf.set("dirs", " /a, /b ,,\n  /c\n,");
    conf.set("blank", "  ");
    assert_eq!(conf.get_strings("dirs"), vec!["/a", "/b", "/c"]);
    assert!(conf.get_strings("blank").is_empty());
}

#[test]
fn socket_addresses() {
    let mut conf = Configuration::empty();
    conf.set("plain", " rm.example:8032 ");
    conf.set("v6", "[::1]:8030");
    conf.set("uri", "hdfs://nn.example:8020/path");
    conf.set("noport", "rm.example");
    conf.set("badport", "rm.example:99999");
    conf.set("nohost", ":8032");
    assert_eq!(
        conf.get_socket_addr("plain").ok(),
        Some(("rm.example".into(), 8032))
    );
    assert_eq!(conf.get_socket_addr("v6").ok(), Some(("::1".into(), 8030)));
    assert_eq!(
        conf.get_socket_addr("uri").ok(),
        Some(("nn.example".into(), 8020))
    );
    assert_eq!(
        err_text(conf.get_socket_addr("noport")),
        "programmatic: property 'noport': value 'rm.example' is not a host:port address: no port (expected host:port)"
    );
    assert!(err_text(conf.get_socket_addr("badport"))
        .contains("port '99999' is not a number between 0 and 65535"));
    assert!(err_text(conf.get_socket_addr("nohost")).contains("no host"));
}

#[test]
fn parse_host_port_cases() {
    assert_eq!(parse_host_port("h:1"), Ok(("h".into(), 1)));
    assert_eq!(parse_host_port("[fe80::1]:0"), Ok(("fe80::1".into(), 0)));
    assert!(parse_host_port("[fe80::1]").is_err());
    assert!(parse_host_port("[fe80::1:80").is_err());
    assert!(parse_host_port("h:").is_err());
    assert!(parse_host_port("h:-1").is_err());
    assert!(parse_host_port("").is_err());
}

#[test]
fn bind_addresses() {
    let mut conf = conf_as_alice();
    conf.set(keys::RM_HOSTNAME, "rm.example");
    assert_eq!(
        conf.get_bind_addr(keys::RM_BIND_HOST, keys::RM_ADDRESS)
            .ok(),
        Some(("rm.example".into(), 8032))
    );
    conf.set(keys::RM_BIND_HOST, " 0.0.0.0 ");
    assert_eq!(
        conf.get_bind_addr(keys::RM_BIND_HOST, keys::RM_SCHEDULER_ADDRESS)
            .ok(),
        Some(("0.0.0.0".into(), 8030))
    );
    conf.set(keys::RM_BIND_HOST, "[::]");
    assert_eq!(
        conf.get_bind_addr(keys::RM_BIND_HOST, keys::RM_ADMIN_ADDRESS)
            .ok(),
        Some(("::".into(), 8033))
    );
}

#[test]
fn invalid_value_helper_names_origin() {
    let mut conf = conf_as_alice();
    add(
        &mut conf,
        "y.xml",
        &site(&[("yarn.scheduler.minimum-allocation-mb", "0")]),
    );
    let e = conf.invalid_value(keys::SCHEDULER_MINIMUM_ALLOCATION_MB, "must be positive");
    assert_eq!(
        e.to_string(),
        "y.xml:5: property 'yarn.scheduler.minimum-allocation-mb': value '0' must be positive"
    );
    let missing = conf.invalid_value("nope", "whatever");
    assert!(matches!(missing, ConfError::Missing { .. }));
}

// ------------------------------------------------------------ conf dir

#[test]
fn conf_dir_resolution_order() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let both: &'static [(&'static str, &'static str)] =
        &[("YARN_CONF_DIR", "/yarn"), ("HADOOP_CONF_DIR", "/hadoop")];
    assert_eq!(
        resolve_conf_dir_with(Some(PathBuf::from("/cli")), env(both)),
        Some(PathBuf::from("/cli"))
    );
    assert_eq!(
        resolve_conf_dir_with(None, env(both)),
        Some(PathBuf::from("/yarn"))
    );
    assert_eq!(
        resolve_conf_dir_with(Some(PathBuf::new()), env(both)),
        Some(PathBuf::from("/yarn"))
    );
    let hadoop_only: &'static [(&'static str, &'static str)] =
        &[("YARN_CONF_DIR", ""), ("HADOOP_CONF_DIR", "/hadoop")];
    assert_eq!(
        resolve_conf_dir_with(None, env(hadoop_only)),
        Some(PathBuf::from("/hadoop"))
    );
    assert_eq!(resolve_conf_dir_with(None, env(&[])), None);
}
