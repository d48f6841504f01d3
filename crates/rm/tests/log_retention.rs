//! Aggregated log retention against a real RM over `file://`: with
//! `yarn.log-aggregation.retain-seconds` the active RM deletes the old
//! aggregated log directories of applications that ended or that it does
//! not know, only the old node files of running ones, and nothing else
//! (young directories, directories not named by an application, files
//! beside the layout, anything behind a symbolic link). It runs only
//! while the RM is active. The same on a real HDFS, with the layout
//! written by Hadoop 3.3.4's own client.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_integration::{HadoopClients, HadoopConf, HdfsJars, HdfsServer};
use spindle_ipc::methods::application_client::FORCE_KILL_APPLICATION;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{report, submit, RM_ADDRESS_KEYS};

/// An hour: older than the retention the tests use.
const OLD: Duration = Duration::from_secs(3600);
const RETAIN_SECONDS: &str = "600";
const SUFFIX: &str = "logs-tfile";

fn retention_conf(conf: &mut Configuration, root: &Path) {
    conf.set("yarn.log-aggregation-enable", "true");
    conf.set(
        "yarn.nodemanager.remote-app-log-dir",
        root.display().to_string(),
    );
    conf.set("yarn.log-aggregation.retain-seconds", RETAIN_SECONDS);
    conf.set("yarn.log-aggregation.retain-check-interval-seconds", "1");
}

/// Sets `path`'s modification time to `ago` before now.
fn age(path: &Path, ago: Duration) {
    let when = SystemTime::now() - ago;
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("setting the time of {}: {e}", path.display()));
}

/// Creates the file `path` (and its parents) with a modification time
/// `ago` before now.
fn file(path: &Path, ago: Duration) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, b"log").expect("write");
    age(path, ago);
}

/// Creates the directory `path` (and its parents).
fn dir(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).expect("mkdir");
    path.to_path_buf()
}

/// `<root>/<user>/bucket-logs-tfile/<bucket>/<app>`.
fn bucket_app_dir(root: &Path, user: &str, app: ApplicationId) -> PathBuf {
    root.join(user)
        .join(format!("bucket-{SUFFIX}"))
        .join(format!("{:04}", app.id % 10_000))
        .join(app.to_string())
}

/// Waits until `done` holds, or fails the test after a minute.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for two runs that started after this call to finish: an expired
/// directory of an unknown application in the last place a run visits
/// (runs walk in name order) is made and awaited twice. The run that
/// deletes the second one started after the first one was deleted, so it
/// saw everything made before this call.
async fn two_runs(root: &Path, cluster_ts: i64) {
    for n in [9990, 9991] {
        let sentinel = dir(&root
            .join("zzzz")
            .join(format!("bucket-{SUFFIX}"))
            .join("9999")
            .join(ApplicationId::new(cluster_ts, n).to_string()));
        age(&sentinel, OLD);
        wait_until("a run deleted the sentinel", || !sentinel.exists()).await;
    }
}

async fn client(rm: &ResourceManager) -> IpcClient {
    IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection")
}

async fn kill(client: &IpcClient, id: ApplicationId) {
    let _: pb::KillApplicationResponseProto = client
        .call_method(
            &FORCE_KILL_APPLICATION,
            &pb::KillApplicationRequestProto {
                application_id: Some(app_id_to_pb(&id)),
                diagnostics: None,
            },
        )
        .await
        .expect("kill");
    let killed = Some(pb::YarnApplicationStateProto::Killed as i32);
    let deadline = Instant::now() + Duration::from_secs(60);
    while report(client, id).await.yarn_application_state != killed {
        assert!(Instant::now() < deadline, "{id} was never KILLED");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn old_logs_of_ended_applications_go_and_the_rest_stays() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("logs");
    dir(&root);
    let mut conf = Configuration::with_defaults();
    for key in RM_ADDRESS_KEYS {
        conf.set(key, "127.0.0.1:0");
    }
    retention_conf(&mut conf, &root);
    let rm = ResourceManager::start(&conf, None)
        .await
        .expect("RM starts");
    let client = client(&rm).await;

    // No NodeManager: a submitted application stays ACCEPTED (running).
    let ended = submit(&client, false).await;
    kill(&client, ended).await;
    let running = submit(&client, false).await;
    let ended_recently = submit(&client, false).await;
    kill(&client, ended_recently).await;
    let ts = ended.cluster_timestamp;
    let unknown = ApplicationId::new(ts, 990);
    let unknown_young = ApplicationId::new(ts, 991);
    let behind_link = ApplicationId::new(ts, 992);

    // An ended application, everything old: deleted.
    let ended_dir = bucket_app_dir(&root, "alice", ended);
    file(&ended_dir.join("host1_45454"), OLD);
    file(&ended_dir.join("host2_45454"), OLD);
    // A running application: its old node file goes, its new one and the
    // directory stay.
    let running_dir = bucket_app_dir(&root, "alice", running);
    let running_old = running_dir.join("host1_45454");
    let running_new = running_dir.join("host2_45454");
    file(&running_old, OLD);
    file(&running_new, Duration::ZERO);
    // An ended application with a node file written since the cutoff: kept.
    let recent_dir = bucket_app_dir(&root, "alice", ended_recently);
    file(&recent_dir.join("host1_45454"), OLD);
    file(&recent_dir.join("host2_45454"), Duration::ZERO);
    // An application the RM does not know, in the older layout: deleted.
    let unknown_dir = root.join("bob").join(SUFFIX).join(unknown.to_string());
    file(&unknown_dir.join("host1_45454"), OLD);
    // An unknown application whose directory changed since the cutoff: kept.
    let young_dir = bucket_app_dir(&root, "bob", unknown_young);
    file(&young_dir.join("host1_45454"), OLD);
    // Old things that are no application's directory: kept.
    let not_an_app = root
        .join("alice")
        .join(format!("bucket-{SUFFIX}/0001/notes"));
    file(&not_an_app.join("host1_45454"), OLD);
    let beside = root.join("alice").join("README");
    file(&beside, OLD);
    let outside_file = tmp.path().join("unrelated.log");
    file(&outside_file, OLD);
    // Links out of the root, as a bucket and as an application directory:
    // what they point at is never touched.
    let outside = tmp.path().join("outside");
    let outside_app = outside.join(behind_link.to_string());
    file(&outside_app.join("host1_45454"), OLD);
    let bucket_link = root.join("alice").join(format!("bucket-{SUFFIX}/0993"));
    std::os::unix::fs::symlink(&outside, &bucket_link).expect("symlink");
    let app_link = bucket_app_dir(&root, "alice", behind_link);
    dir(app_link.parent().expect("a bucket"));
    std::os::unix::fs::symlink(&outside_app, &app_link).expect("symlink");
    let old_bucket_link = root.join("bob").join(SUFFIX).join(behind_link.to_string());
    std::os::unix::fs::symlink(&outside_app, &old_bucket_link).expect("symlink");
    // Directories last: adding their entries changed their times.
    for d in [
        &ended_dir,
        &running_dir,
        &recent_dir,
        &unknown_dir,
        &not_an_app,
        &outside_app,
        &outside,
    ] {
        age(d, OLD);
    }

    wait_until("the ended application's logs are deleted", || {
        !ended_dir.exists()
    })
    .await;
    wait_until("the unknown application's logs are deleted", || {
        !unknown_dir.exists()
    })
    .await;
    wait_until("the running application's old node file is deleted", || {
        !running_old.exists()
    })
    .await;
    two_runs(&root, ts).await;

    assert!(running_new.exists(), "the running application's new file");
    assert!(recent_dir.join("host1_45454").exists(), "kept whole");
    assert!(recent_dir.join("host2_45454").exists(), "kept whole");
    assert!(young_dir.join("host1_45454").exists(), "a young directory");
    assert!(
        not_an_app.join("host1_45454").exists(),
        "not an application"
    );
    assert!(beside.exists(), "a file beside the layout");
    assert!(outside_file.exists(), "a file outside the root");
    assert!(
        outside_app.join("host1_45454").exists(),
        "behind a link out of the root"
    );
    // The bucket directory of the ended application stays (Hadoop deletes
    // application directories only).
    assert!(ended_dir.parent().expect("a bucket").exists());
}

fn ha_conf(store: &Path, root: &Path) -> Configuration {
    let mut conf = Configuration::with_defaults();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "spindle.resourcemanager.state-store.path",
        store.display().to_string(),
    );
    conf.set("yarn.resourcemanager.ha.enabled", "true");
    conf.set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2");
    conf.set("yarn.resourcemanager.ha.id", "rm1");
    conf.set(
        "yarn.resourcemanager.ha.automatic-failover.enabled",
        "false",
    );
    for key in RM_ADDRESS_KEYS {
        for id in ["rm1", "rm2"] {
            conf.set(&format!("{key}.{id}"), "127.0.0.1:0");
        }
    }
    retention_conf(&mut conf, root);
    conf
}

/// An expired directory of an unknown application.
fn expired(root: &Path, n: i32) -> PathBuf {
    let d = bucket_app_dir(root, "carol", ApplicationId::new(1, n));
    file(&d.join("host1_45454"), OLD);
    age(&d, OLD);
    d
}

/// Long enough for several runs at the one-second interval. Waited out on
/// purpose: the subject is that nothing is deleted meanwhile, and an RM that
/// is not active makes no run that could be waited for instead.
const SEVERAL_RUNS: Duration = Duration::from_secs(4);

#[tokio::test]
async fn only_an_active_rm_deletes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = dir(&tmp.path().join("logs"));
    let rm = ResourceManager::start(&ha_conf(&tmp.path().join("store"), &root), None)
        .await
        .expect("RM starts");

    let first = expired(&root, 1);
    tokio::time::sleep(SEVERAL_RUNS).await;
    assert!(first.exists(), "a standby RM deleted logs");

    rm.transition_to_active().await.expect("active");
    wait_until("the active RM deleted the expired logs", || !first.exists()).await;

    rm.transition_to_standby().await.expect("standby");
    let second = expired(&root, 2);
    tokio::time::sleep(SEVERAL_RUNS).await;
    assert!(second.exists(), "an RM deleted logs after stepping down");

    // Active again: a new activation runs again.
    rm.transition_to_active().await.expect("active");
    wait_until("the active RM deleted the expired logs", || {
        !second.exists()
    })
    .await;
}

/// `hadoop fs <args>` with Hadoop 3.3.4's own client, as this process's
/// user (the RM's, and the minicluster's superuser).
fn hadoop_fs(clients: &HadoopClients, conf_dir: &Path, args: &[&str]) {
    let out = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
        .expect("FsShell runs");
    assert!(out.success(), "hadoop fs {args:?}: {out}");
}

/// Whether `path` exists on `fs`; any error but "not found" fails the test.
async fn exists(fs: &dyn spindle_fs::FileSystem, path: &str) -> bool {
    match fs.status(path).await {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("status of {path}: {e}"),
    }
}

async fn wait_until_gone(fs: &dyn spindle_fs::FileSystem, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while exists(fs, path).await {
        assert!(Instant::now() < deadline, "{path} was never deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// On a real HDFS (Hadoop 3.3.4's MiniDFSCluster), with a layout written by
/// Hadoop's own client and a retention of 0 seconds (everything written
/// before a run is expired, except a file dated in the future): the ended
/// and the unknown application's directories go, the running
/// application's old node file goes and its future one stays, a file
/// beside the layout stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_hdfs_written_by_hadoop_s_client() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let conf_dir = tempfile::tempdir().expect("tmp");
    let mut core = HadoopConf::new();
    core.set("fs.defaultFS", hdfs.uri());
    core.write(&conf_dir.path().join("core-site.xml"))
        .expect("core-site.xml");

    let mut conf = Configuration::with_defaults();
    for key in RM_ADDRESS_KEYS {
        conf.set(key, "127.0.0.1:0");
    }
    conf.set("fs.defaultFS", hdfs.uri());
    conf.set("yarn.log-aggregation-enable", "true");
    conf.set("yarn.nodemanager.remote-app-log-dir", "/tmp/logs");
    conf.set("yarn.log-aggregation.retain-seconds", "0");
    conf.set("yarn.log-aggregation.retain-check-interval-seconds", "1");
    let rm = ResourceManager::start(&conf, None)
        .await
        .expect("RM starts");
    let client = client(&rm).await;
    let ended = submit(&client, false).await;
    kill(&client, ended).await;
    let running = submit(&client, false).await;
    let unknown = ApplicationId::new(ended.cluster_timestamp, 990);

    // Built aside, dated, then moved into place in one rename.
    let bucket = |app: ApplicationId| {
        format!(
            "/staging/alice/bucket-{SUFFIX}/{:04}/{app}",
            app.id % 10_000
        )
    };
    let (ended_dir, running_dir) = (bucket(ended), bucket(running));
    let unknown_dir = format!("/staging/bob/{SUFFIX}/{unknown}");
    hadoop_fs(
        &clients,
        conf_dir.path(),
        &[
            "-mkdir",
            "-p",
            &ended_dir,
            &running_dir,
            &unknown_dir,
            "/tmp",
        ],
    );
    let (running_old, running_future) = (
        format!("{running_dir}/host1_45454"),
        format!("{running_dir}/host2_45454"),
    );
    hadoop_fs(
        &clients,
        conf_dir.path(),
        &[
            "-touchz",
            &format!("{ended_dir}/host1_45454"),
            &running_old,
            &running_future,
            &format!("{unknown_dir}/host1_45454"),
            "/staging/alice/README",
        ],
    );
    hadoop_fs(
        &clients,
        conf_dir.path(),
        &["-touch", "-m", "-t", "20990101:000000", &running_future],
    );
    hadoop_fs(&clients, conf_dir.path(), &["-mv", "/staging", "/tmp/logs"]);

    let fs = spindle_fs::FileSystems::default()
        .get(&hdfs.uri(), None)
        .expect("an HDFS client");
    let fs = &*fs;
    let placed = |p: &str| p.replacen("/staging", "/tmp/logs", 1);
    wait_until_gone(fs, &placed(&ended_dir)).await;
    wait_until_gone(fs, &placed(&unknown_dir)).await;
    wait_until_gone(fs, &placed(&running_old)).await;
    // Two more runs, each started after the last deletion it waits for.
    for n in [9990, 9991] {
        let sentinel = format!(
            "/tmp/logs/zzzz/bucket-{SUFFIX}/9999/{}",
            ApplicationId::new(ended.cluster_timestamp, n)
        );
        fs.mkdirs(&sentinel, 0o770).await.expect("mkdirs");
        wait_until_gone(fs, &sentinel).await;
    }
    assert!(
        exists(fs, &placed(&running_future)).await,
        "dated in the future"
    );
    assert!(
        exists(fs, &placed(&running_dir)).await,
        "a running application's directory"
    );
    assert!(
        exists(fs, "/tmp/logs/alice/README").await,
        "beside the layout"
    );
}
