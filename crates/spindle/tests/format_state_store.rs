//! `spindle resourcemanager --format-state-store`, as README documents it:
//! the store named by the configuration is wiped and the command exits
//! without serving.

use std::process::Command;

#[test]
fn format_state_store_wipes_the_configured_store_and_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("rmstore").join("spindle.redb");
    std::fs::create_dir_all(store.parent().expect("parent")).expect("mkdir");
    std::fs::write(&store, b"an earlier store").expect("write");
    std::fs::write(
        dir.path().join("yarn-site.xml"),
        format!(
            "<configuration>\
             <property><name>yarn.resourcemanager.recovery.enabled</name><value>true</value></property>\
             <property><name>spindle.resourcemanager.state-store.path</name><value>{}</value></property>\
             </configuration>",
            store.display()
        ),
    )
    .expect("yarn-site.xml");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["resourcemanager", "--format-state-store", "--conf"])
            .arg(dir.path())
            .output()
            .expect("spindle runs")
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("state store {} wiped", store.display())),
        "{stdout}"
    );
    assert!(!store.exists(), "the store file is gone");
    // Again: nothing to wipe, said so.
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("did not exist"), "{stdout}");
}

#[test]
fn format_state_store_wipes_the_zookeeper_store() {
    let Some(jars) = spindle_integration::ZooKeeperJars::for_tests() else {
        return;
    };
    let server = spindle_integration::ZooKeeperServer::start(&jars).expect("ZooKeeper starts");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("yarn-site.xml"),
        format!(
            "<configuration>\
             <property><name>yarn.resourcemanager.recovery.enabled</name><value>true</value></property>\
             <property><name>yarn.resourcemanager.store.class</name>\
             <value>org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore</value></property>\
             <property><name>hadoop.zk.address</name><value>{}</value></property>\
             </configuration>",
            server.connect_string()
        ),
    )
    .expect("yarn-site.xml");
    // A store with something in it, as an RM leaves it.
    let mut conf = spindle_common::conf::Configuration::with_defaults();
    conf.add_resource(&dir.path().join("yarn-site.xml"))
        .expect("conf");
    let store_conf = spindle_rm::store::StoreConf::from_conf(&conf)
        .expect("store conf")
        .expect("recovery on");
    let (_, recovered) = spindle_rm::store::open(&store_conf, 1).expect("open");
    assert_eq!(recovered.epoch, 0);
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["resourcemanager", "--format-state-store", "--conf"])
            .arg(dir.path())
            .output()
            .expect("spindle runs")
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let place = format!(
        "state store zookeeper {}/rmstore/ZKRMStateRoot",
        server.connect_string()
    );
    assert!(stdout.contains(&format!("{place} wiped")), "{stdout}");
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{place} did not exist")),
        "{stdout}"
    );
    // A new store starts over.
    let (_, recovered) = spindle_rm::store::open(&store_conf, 2).expect("open");
    assert_eq!(recovered.epoch, 0);
}
