//! The ZooKeeper store against a real ZooKeeper 3.8 server (skipped without its jars,
//! except under CI where that fails).

use std::time::Duration;

use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_integration::{ZooKeeperJars, ZooKeeperServer};

use super::tests::{app, keys};
use super::*;

fn server() -> Option<ZooKeeperServer> {
    let jars = ZooKeeperJars::for_tests()?;
    Some(ZooKeeperServer::start(&jars).expect("ZooKeeper starts"))
}

fn zk_conf(server: &ZooKeeperServer, extra: &[(&str, &str)]) -> StoreConf {
    let mut conf = Configuration::with_defaults();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set("yarn.resourcemanager.store.class", ZK_STORE_CLASS);
    conf.set("hadoop.zk.address", server.connect_string());
    conf.set("hadoop.zk.timeout-ms", "4000");
    for (k, v) in extra {
        conf.set(k, *v);
    }
    StoreConf::from_conf(&conf)
        .expect("store conf")
        .expect("recovery on")
}

fn zk(conf: &StoreConf) -> &ZkStoreConf {
    match &conf.backend {
        StoreBackend::ZooKeeper(zk) => zk,
        other => panic!("not the ZooKeeper store: {other:?}"),
    }
}

/// A plain client on the server, to damage the store as an outsider would.
fn poke(server: &ZooKeeperServer, path: &str, data: &[u8]) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let address = server.connect_string();
    let path = path.to_string();
    let data = data.to_vec();
    rt.block_on(async move {
        let client = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .connect(&address)
            .await
            .expect("connect");
        match client.set_data(&path, &data, None).await {
            Ok(_) => {}
            Err(zookeeper_client::Error::NoNode) => {
                client
                    .create(
                        &path,
                        &data,
                        &zookeeper_client::CreateMode::Persistent
                            .with_acls(zookeeper_client::Acls::anyone_all()),
                    )
                    .await
                    .expect("create");
            }
            Err(e) => panic!("set {path}: {e}"),
        }
    });
}

#[test]
fn round_trip_with_epoch_and_cluster_timestamp() {
    let Some(server) = server() else { return };
    let conf = zk_conf(&server, &[]);
    assert_eq!(zk(&conf).root(), "/rmstore/ZKRMStateRoot");
    let (mut store, recovered) = open(&conf, 1000).expect("open a new store");
    assert_eq!(recovered.epoch, 0);
    assert_eq!(recovered.cluster_ts, 1000);
    assert!(recovered.apps.is_empty() && recovered.keys.is_none());
    let a1 = app("application_1000_0001", "RUNNING");
    let a2 = app("application_1000_0002", "FINISHED");
    store
        .write(&[
            StoreOp::PutKeys(keys()),
            StoreOp::PutApp(Box::new(a1.clone())),
            StoreOp::PutApp(Box::new(a2.clone())),
        ])
        .expect("write");
    let mut a1_done = a1.clone();
    a1_done.state = "FINISHED".into();
    store
        .write(&[
            StoreOp::PutApp(Box::new(a1_done.clone())),
            StoreOp::RemoveApp(
                "application_1000_0002"
                    .parse::<ApplicationId>()
                    .expect("id"),
            ),
        ])
        .expect("update and remove");
    store
        .write(&super::tests::delegation_ops())
        .expect("delegation tokens written");
    drop(store);
    // An earlier clock: the new timestamp still moves past the stored one.
    let (_store, recovered) = open(&conf, 900).expect("reopen");
    assert_eq!(recovered.epoch, 1);
    assert_eq!(recovered.last_cluster_ts, Some(1000));
    assert_eq!(recovered.cluster_ts, 1001);
    assert_eq!(recovered.apps, vec![a1_done]);
    assert_eq!(recovered.keys, Some(keys()));
    super::tests::assert_delegation_kept(&recovered);
}

#[test]
fn a_deposed_rm_cannot_write_once_another_opened_the_store() {
    let Some(server) = server() else { return };
    let conf = zk_conf(&server, &[]);
    let (mut first, _) = open(&conf, 1).expect("first RM opens");
    first
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("the only RM writes");
    let (mut second, recovered) = open(&conf, 2).expect("second RM opens");
    assert_eq!(recovered.epoch, 1);
    let err = first
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0002",
            "RUNNING",
        )))])
        .expect_err("the deposed RM's write fails");
    assert!(err.to_string().contains("fenced"), "{err}");
    second
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_2_0001",
            "RUNNING",
        )))])
        .expect("the new RM writes");
    drop((first, second));
    let (_store, recovered) = open(&conf, 3).expect("reopen");
    let ids: Vec<&str> = recovered.apps.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["application_1_0001", "application_2_0001"]);
}

#[test]
fn a_corrupt_record_is_a_clear_error_naming_the_znode() {
    let Some(server) = server() else { return };
    let conf = zk_conf(
        &server,
        &[(
            "yarn.resourcemanager.zk-state-store.parent-path",
            "/corrupt",
        )],
    );
    let (mut store, _) = open(&conf, 1).expect("open");
    store
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("write");
    drop(store);
    let path = "/corrupt/ZKRMStateRoot/SpindleApps/application_1_0001";
    poke(&server, path, b"{not json");
    let err = open(&conf, 2)
        .err()
        .expect("a corrupt record stops the open");
    let msg = err.to_string();
    assert!(msg.contains(path) && msg.contains("malformed"), "{msg}");
}

#[test]
fn a_store_of_a_newer_format_is_refused() {
    let Some(server) = server() else { return };
    let conf = zk_conf(&server, &[]);
    drop(open(&conf, 1).expect("open"));
    let path = "/rmstore/ZKRMStateRoot/SpindleVersion";
    poke(&server, path, format!("{}", FORMAT_VERSION + 1).as_bytes());
    let err = open(&conf, 2).err().expect("a newer store is refused");
    let msg = err.to_string();
    assert!(msg.contains(path) && msg.contains("newer"), "{msg}");
}

#[test]
fn a_record_over_the_znode_limit_is_refused_with_the_application_named() {
    let Some(server) = server() else { return };
    let conf = zk_conf(
        &server,
        &[("yarn.resourcemanager.zk-max-znode-size.bytes", "4096")],
    );
    let (mut store, _) = open(&conf, 1).expect("open");
    let mut big = app("application_1_0007", "FAILED");
    big.diagnostics = "x".repeat(8192);
    let err = store
        .write(&[StoreOp::PutApp(Box::new(big))])
        .expect_err("too big");
    let msg = err.to_string();
    assert!(
        msg.contains("application_1_0007") && msg.contains("zk-max-znode-size.bytes"),
        "{msg}"
    );
    // Nothing half-written: the store still opens, without the application.
    drop(store);
    let (_store, recovered) = open(&conf, 2).expect("reopen");
    assert!(recovered.apps.is_empty());
}

#[test]
fn no_zookeeper_is_a_clear_error() {
    let Some(mut server) = server() else { return };
    let conf = zk_conf(&server, &[("hadoop.zk.timeout-ms", "1000")]);
    server.kill().expect("kill ZooKeeper");
    let err = open(&conf, 1).err().expect("no session, no store");
    let msg = err.to_string();
    assert!(
        msg.contains(&server.connect_string()) && msg.contains("no ZooKeeper session"),
        "{msg}"
    );
}

#[test]
fn format_wipes_the_store() {
    let Some(server) = server() else { return };
    let conf = zk_conf(&server, &[]);
    let (mut store, _) = open(&conf, 1).expect("open");
    store
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("write");
    drop(store);
    assert!(zk_store::format(zk(&conf)).expect("format"));
    assert!(
        !zk_store::format(zk(&conf)).expect("format again"),
        "nothing left"
    );
    let (_store, recovered) = open(&conf, 2).expect("a new store");
    assert_eq!(recovered.epoch, 0);
    assert!(recovered.apps.is_empty());
}

#[test]
#[ignore = "a measurement, run by hand"]
fn measure_open_with_10000_apps() {
    let Some(server) = server() else { return };
    let conf = zk_conf(&server, &[]);
    let (mut store, _) = open(&conf, 1).expect("open");
    let t = std::time::Instant::now();
    for chunk in 0..100 {
        let ops: Vec<StoreOp> = (0..100)
            .map(|i| {
                StoreOp::PutApp(Box::new(app(
                    &format!("application_1_{:04}", chunk * 100 + i + 1),
                    "FINISHED",
                )))
            })
            .collect();
        store.write(&ops).expect("write");
    }
    eprintln!("wrote 10000 apps in 100 writes: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let mut one = app("application_1_99999", "RUNNING");
    for _ in 0..200 {
        one.diagnostics.push('x');
        store
            .write(&[StoreOp::PutApp(Box::new(one.clone()))])
            .expect("write");
    }
    eprintln!("200 single-app writes: {:?} each", t.elapsed() / 200);
    drop(store);
    let t = std::time::Instant::now();
    let (_store, recovered) = open(&conf, 2).expect("reopen");
    eprintln!("open with {} apps: {:?}", recovered.apps.len(), t.elapsed());
}
