//! The localization figures of docs/benchmarks.md: Spark's `__spark_libs__` archive (a
//! zip of pyspark's jars directory, stored as Spark stores it, ~338 MB) localized as a
//! PRIVATE archive from `file:` and from a real HDFS (Hadoop 3.3.4's MiniDFSCluster, the
//! file written by the 3.3.4 client), first fetch and cached reuse. Nothing is asserted
//! about time; run by hand, optimised:
//! `cargo test --release -p spindle-nm --test localize_figures -- --ignored --nocapture`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spindle_common::ApplicationId;
use spindle_integration::{HadoopClients, HadoopConf, HdfsJars, HdfsServer};
use spindle_nm::cache_entry::ResourceType;
use spindle_nm::localizer::{LocalResource, Localizer, Visibility};

/// A zip of every file of `dir`, stored (Spark writes its archive at level 0).
fn zip_dir(dir: &Path, out: &Path) -> u64 {
    let mut w = zip::ZipWriter::new(std::fs::File::create(out).expect("create zip"));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the jars dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    for p in names {
        let name = p.file_name().and_then(|n| n.to_str()).expect("a name");
        w.start_file(name, options).expect("entry");
        w.write_all(&std::fs::read(&p).expect("jar"))
            .expect("write");
    }
    w.finish().expect("finish");
    std::fs::metadata(out).expect("zip").len()
}

fn mtime_ms(path: &Path) -> i64 {
    let m = std::fs::metadata(path).expect("metadata");
    m.modified()
        .expect("mtime")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis() as i64
}

async fn timed(
    localizer: &Arc<Localizer>,
    res: &LocalResource,
    app: ApplicationId,
) -> (Duration, bool) {
    let started = Instant::now();
    let got = localizer
        .localize(res, "root", app)
        .await
        .unwrap_or_else(|e| panic!("localizing {}: {e}", res.display()));
    (started.elapsed(), got.from_cache)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn spark_libs_from_file_and_from_hdfs() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let archive = work.path().join("__spark_libs__.zip");
    let bytes = zip_dir(clients.jar_dir(), &archive);

    let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let conf = work.path().join("conf");
    std::fs::create_dir_all(&conf).expect("conf dir");
    let mut core = HadoopConf::new();
    core.set("fs.defaultFS", hdfs.uri());
    core.write(&conf.join("core-site.xml"))
        .expect("core-site.xml");
    let fs = |args: &[&str]| {
        let out = clients
            .yarn()
            .conf_dir(&conf)
            .run(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
            .expect("FsShell runs");
        assert!(out.success(), "hadoop fs {args:?}: {out}");
        out
    };
    fs(&["-mkdir", "-p", "/user/root"]);
    let local = archive.to_string_lossy().to_string();
    fs(&["-put", "-f", &local, "/user/root/__spark_libs__.zip"]);
    let stat = fs(&["-stat", "%b %Y", "/user/root/__spark_libs__.zip"]);
    let mut parts = stat.stdout.split_whitespace();
    let size: i64 = parts.next().and_then(|v| v.parse().ok()).expect("size");
    let hdfs_mtime: i64 = parts.next().and_then(|v| v.parse().ok()).expect("mtime");

    let app: ApplicationId = "application_1795326004599_0001".parse().expect("app id");
    let from_file = LocalResource {
        filesystem: None,
        source: archive.clone(),
        size,
        timestamp: mtime_ms(&archive),
        kind: ResourceType::Archive,
        visibility: Visibility::Private,
        pattern: None,
    };
    let from_hdfs = LocalResource {
        filesystem: Some(hdfs.uri()),
        source: PathBuf::from("/user/root/__spark_libs__.zip"),
        timestamp: hdfs_mtime,
        ..from_file.clone()
    };
    for (what, res) in [("file:", &from_file), ("hdfs:", &from_hdfs)] {
        let dir = tempfile::tempdir_in(work.path()).expect("local dir");
        let localizer = Arc::new(Localizer::new(vec![dir.path().to_path_buf()]));
        let (first, cached_first) = timed(&localizer, res, app).await;
        let (again, cached_again) = timed(&localizer, res, app).await;
        assert!(!cached_first && cached_again);
        println!(
            "FIGURE localize {bytes} bytes ({} MB) archive from {what}: first {:.2} s, cached {:.2} ms",
            bytes / 1_000_000,
            first.as_secs_f64(),
            again.as_secs_f64() * 1000.0
        );
    }
}
