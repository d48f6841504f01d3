//! The local dirs at start-up, as Hadoop's `ResourceLocalizationService`
//! leaves them: without recovery the previous run's `usercache`,
//! `filecache` and `nmPrivate` are moved aside (`<name>_DEL_<ms>`) before
//! the node serves and deleted in the background, and the node localizes
//! into fresh caches; with recovery they are kept (only directories an
//! earlier start moved aside are deleted). The log dirs likewise: without
//! recovery each application's log dir is moved aside and deleted
//! (Hadoop's `cleanupLogDirs`), with recovery they are kept.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{clc, container, file_resource, start_node_in, Setup};
use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};
use spindle_common::conf::keys;

const WAIT: Duration = Duration::from_secs(30);

/// What a previous run left in `<dir>/local`: caches with read-only
/// copies, an application's work dir, a pid file, and a directory an
/// earlier start moved aside and did not finish deleting. Answers the
/// files that stand for them.
fn previous_run(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let local = dir.join("local");
    let files = vec![
        local.join("filecache/10/big.jar/lib/a.jar"),
        local.join("usercache/alice/filecache/11/x.txt"),
        local.join("usercache/alice/appcache/application_1_0001/container_1_0001_01_000002/out"),
        local.join("nmPrivate/application_1_0001/container_1_0001_01_000002/c.pid"),
        local.join("filecache_DEL_1234/12/old.txt"),
        dir.join("logs/application_1_0001/container_1_0001_01_000002/stdout"),
    ];
    for f in &files {
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(f, b"old\n").expect("write");
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    }
    for d in [
        local.join("filecache/10/big.jar/lib"),
        local.join("filecache/10/big.jar"),
    ] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    }
    files
}

/// The names in `<dir>/local` and `<dir>/logs` with `_DEL_` in them.
fn moved_aside(dir: &Path) -> Vec<String> {
    ["local", "logs"]
        .iter()
        .flat_map(|d| std::fs::read_dir(dir.join(d)).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("_DEL_"))
        .collect()
}

async fn wait_nothing_moved_aside(dir: &Path) {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = moved_aside(dir);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "not deleted: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_node_without_recovery_starts_from_clean_local_dirs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let old = previous_run(tmp.path());
    let (node, tmp) = start_node_in(tmp, |_| {}, Setup::default()).await;
    // Gone from where they were as soon as the node serves; the moved-aside
    // copies (and what an earlier start moved aside) are deleted in the
    // background.
    for f in old
        .iter()
        .filter(|f| !f.to_string_lossy().contains("_DEL_"))
    {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    wait_nothing_moved_aside(tmp.path()).await;
    for f in &old {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    let logs: Vec<_> = std::fs::read_dir(tmp.path().join("logs"))
        .map(|e| e.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(logs.is_empty(), "the old logs are gone: {logs:?}");
    for d in ["filecache", "usercache", "nmPrivate"] {
        let p = tmp.path().join("local").join(d);
        let names: Vec<_> = std::fs::read_dir(&p)
            .map(|e| e.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(names.is_empty(), "{}: {names:?}", p.display());
    }

    // The node localizes into fresh caches.
    let src = tmp.path().join("staging/data.txt");
    std::fs::create_dir_all(src.parent().expect("parent")).expect("mkdir");
    std::fs::write(&src, "data-line\n").expect("write");
    let id = container(1, 2);
    let mut c = clc(&["cat data.txt > {{PWD}}/seen"]);
    c.local_resources = vec![file_resource(
        "data.txt",
        &src,
        LocalResourceTypeProto::File,
        LocalResourceVisibilityProto::Private,
    )];
    node.start(id, c).expect("started");
    let done = node.wait_done(&id).await;
    assert_eq!(done.exit_status, 0, "{done:?}");
    let seen = done.paths.expect("paths").work_dir.join("seen");
    assert_eq!(std::fs::read_to_string(seen).expect("seen"), "data-line\n");
}

#[tokio::test]
async fn a_node_with_recovery_keeps_its_local_dirs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let old = previous_run(tmp.path());
    let recovery = tmp.path().join("recovery").display().to_string();
    // Recovery needs a fixed port (the NodeId is kept across restarts).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let (_node, tmp) = start_node_in(
        tmp,
        |c| {
            c.set(keys::NM_RECOVERY_ENABLED, "true");
            c.set(keys::NM_RECOVERY_DIR, recovery);
            c.set(keys::NM_ADDRESS, format!("127.0.0.1:{port}"));
        },
        Setup::default(),
    )
    .await;
    // Only what an earlier start moved aside is deleted.
    wait_nothing_moved_aside(tmp.path()).await;
    for f in &old {
        let earlier_leftover = f.to_string_lossy().contains("_DEL_");
        assert_eq!(
            f.exists(),
            !earlier_leftover,
            "{} (kept unless an earlier start moved it aside)",
            f.display()
        );
    }
}
