use std::path::Path;

use spindle_common::ids::ApplicationId;

use super::redb_store::{META, VERSION_KEY};
use super::*;

pub(super) fn app(id: &str, state: &str) -> StoredApp {
    StoredApp {
        id: id.into(),
        user: "alice".into(),
        name: "job".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        tags: vec!["t".into()],
        priority: 0,
        am_memory_mb: 1024,
        am_vcores: 1,
        max_attempts: 2,
        unmanaged_am: false,
        keep_containers: false,
        acls: vec![("VIEW_APP".into(), "*".into())],
        state: state.into(),
        final_status: "UNDEFINED".into(),
        diagnostics: String::new(),
        submit_ms: 1,
        start_ms: 1,
        launch_ms: 0,
        finish_ms: 0,
        am_host: "N/A".into(),
        am_rpc_port: -1,
        tracking_url: String::new(),
        lifetime_expiry_ms: None,
        failed_attempts: 0,
        launch: Some(StoredLaunch {
            environment: vec![("A".into(), "b".into())],
            tokens: Some(vec![1, 2, 3]),
            forwarded: vec![9, 9],
        }),
        attempts: vec![StoredAttempt {
            id: id.replacen("application", "appattempt", 1) + "_000001",
            state: "RUNNING".into(),
            final_status: "UNDEFINED".into(),
            am_container: None,
            am_node: Some("host:1234".into()),
            host: "host".into(),
            rpc_port: 1,
            tracking_url: String::new(),
            diagnostics: String::new(),
            start_ms: 2,
            finish_ms: 0,
        }],
    }
}

pub(super) fn keys() -> StoredKeys {
    let s = |id: i32| StoredSecret {
        current: (id, vec![id as u8; 20]),
        previous: Some((id - 1, vec![0; 20])),
    };
    StoredKeys {
        amrm: s(5),
        container_token: s(7),
        nm_token: s(9),
    }
}

fn open(path: &Path, ts: i64) -> (RedbStore, Recovered) {
    RedbStore::open(path, ts).expect("store opens")
}

#[test]
fn round_trip_with_epoch_and_cluster_timestamp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub/dir/store.redb");
    let (mut store, first) = open(&path, 1000);
    assert_eq!(first.epoch, 0);
    assert_eq!(first.cluster_ts, 1000);
    assert!(first.apps.is_empty() && first.keys.is_none());
    let a = app("application_1000_0001", "RUNNING");
    let b = app("application_1000_0002", "ACCEPTED");
    store
        .write(&[
            StoreOp::PutApp(Box::new(a.clone())),
            StoreOp::PutApp(Box::new(b)),
            StoreOp::PutKeys(keys()),
        ])
        .expect("written");
    store
        .write(&delegation_ops())
        .expect("delegation tokens written");
    store
        .write(&[StoreOp::RemoveApp(
            "application_1000_0002"
                .parse::<ApplicationId>()
                .expect("id"),
        )])
        .expect("removed");
    assert_eq!(store.app_count().expect("count"), 1);
    drop(store);
    // A start in the same millisecond (or a clock that went back) still
    // gets a later cluster timestamp.
    let (store, second) = open(&path, 900);
    assert_eq!(second.epoch, 1);
    assert_eq!(second.last_cluster_ts, Some(1000));
    assert_eq!(second.cluster_ts, 1001);
    assert_eq!(second.apps, vec![a]);
    assert_eq!(second.keys, Some(keys()));
    assert_delegation_kept(&second);
    drop(store);
    let (_, third) = open(&path, 5000);
    assert_eq!((third.epoch, third.cluster_ts), (2, 5000));
}

/// Delegation-token keys, two tokens written, one renewed, one cancelled.
pub(super) fn delegation_ops() -> Vec<StoreOp> {
    let token = |sequence, renew_date_ms| {
        StoreOp::PutDelegationToken(StoredDelegationToken {
            sequence,
            identifier: vec![sequence as u8; 12],
            renew_date_ms,
        })
    };
    vec![
        StoreOp::PutDelegationKeys(StoredDelegationKeys {
            keys: vec![StoredDelegationKey {
                id: 3,
                bytes: vec![7; 20],
                expiry_ms: 99,
            }],
            current: 3,
            rolled_ms: 5,
            sequence: 2,
        }),
        token(1, 10),
        token(2, 10),
        token(1, 20),
        StoreOp::RemoveDelegationToken(2),
    ]
}

/// What [`delegation_ops`] leaves.
pub(super) fn assert_delegation_kept(recovered: &Recovered) {
    let keys = recovered.delegation_keys.as_ref().expect("delegation keys");
    assert_eq!((keys.current, keys.sequence, keys.keys.len()), (3, 2, 1));
    assert_eq!(
        recovered.delegation_tokens,
        vec![StoredDelegationToken {
            sequence: 1,
            identifier: vec![1; 12],
            renew_date_ms: 20,
        }]
    );
}

#[test]
fn corrupt_file_is_a_clear_error_and_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let garbage = vec![0x5au8; 8192];
    std::fs::write(&path, &garbage).expect("write");
    let err = RedbStore::open(&path, 1).expect_err("a corrupt store is refused");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("format-state-store"), "{msg}");
    assert_eq!(std::fs::read(&path).expect("still there"), garbage);
}

#[test]
fn truncated_store_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let (mut store, _) = open(&path, 1);
    store
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("written");
    drop(store);
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() / 3]).expect("truncate");
    let err = RedbStore::open(&path, 2).expect_err("a truncated store is refused");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn newer_format_version_is_refused_and_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let (mut store, _) = open(&path, 1);
    store
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("written");
    drop(store);
    {
        let db = redb::Database::create(&path).expect("db");
        let txn = db.begin_write().expect("txn");
        {
            let mut meta = txn.open_table(META).expect("meta");
            let newer = u64::from(FORMAT_VERSION + 1).to_le_bytes();
            meta.insert(VERSION_KEY, newer.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    }
    let err = RedbStore::open(&path, 2).expect_err("a newer store is refused");
    let msg = err.to_string();
    assert!(msg.contains("format version 2"), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    // Nothing was lost: the version put back, the application is there.
    {
        let db = redb::Database::create(&path).expect("db");
        let txn = db.begin_write().expect("txn");
        {
            let mut meta = txn.open_table(META).expect("meta");
            let ours = u64::from(FORMAT_VERSION).to_le_bytes();
            meta.insert(VERSION_KEY, ours.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    }
    let (_, back) = open(&path, 3);
    assert_eq!(back.apps.len(), 1);
}

#[test]
fn format_wipes_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    assert!(!format(&path).expect("nothing to wipe"));
    let (mut store, _) = open(&path, 1);
    store
        .write(&[StoreOp::PutApp(Box::new(app(
            "application_1_0001",
            "RUNNING",
        )))])
        .expect("written");
    drop(store);
    assert!(format(&path).expect("wiped"));
    let (_, fresh) = open(&path, 2);
    assert_eq!(fresh.epoch, 0);
    assert!(fresh.apps.is_empty());
}

#[test]
fn stats_count_writes_and_quantiles() {
    let stats = StoreStats::default();
    for us in [10u64, 10, 10, 10, 5000] {
        stats.record(1, std::time::Duration::from_micros(us), true);
    }
    stats.record(2, std::time::Duration::from_micros(3), false);
    let f = stats.figures();
    assert_eq!((f.writes, f.ops, f.failures, f.max_us), (6, 7, 1, 5000));
    assert_eq!(f.p50_us, 16);
    assert_eq!(f.p99_us, 8192);
}
