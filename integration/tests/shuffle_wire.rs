//! Spindle's native `mapreduce_shuffle` (`spindle-shuffle`) against Hadoop 3.3.4's own
//! MapReduce classes, side by side with Hadoop's own `ShuffleHandler`.
//!
//! integration/java/ShuffleProbe.java writes map outputs as a map task does (`IFile.Writer`,
//! `SpillRecord` with its checksum) in the NodeManager's layout and the job tokens as the MR
//! AM hands them over (`ShuffleHandler.serializeServiceData`). Our server takes those tokens
//! through `add_application`. The probe then starts Hadoop's `ShuffleHandler` on the same
//! directory and fetches from both as Hadoop's `Fetcher` does (`SecureShuffleUtils` hashes
//! keyed by the `JobTokenSecretManager` key, `verifyReply`, `ShuffleHeader.readFields`,
//! `IFile.Reader`): identical bodies for every partition; the same refusal codes for a forged
//! hash, an unknown job, a missing hash, an old version header, POST and bad parameters; a
//! job's token cannot fetch another job's map; a forged request beside a running transfer
//! leaves it intact; reducers that disconnect mid-body leave the server serving.
//!
//! Jars: integration/setup-maven.sh mapreduce (the test prints SKIP without them, except
//! under CI).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use spindle_integration::MavenJars;
use spindle_shuffle::{ShuffleConfig, ShuffleServer};

const USER: &str = "alice";
const APP_A: &str = "application_1700000000000_0007";
const APP_B: &str = "application_1700000000000_0008";
const MAPS_A: u32 = 4;
const MAPS_B: u32 = 2;
const REDUCES: u32 = 3;
/// Records of 1000 bytes in map 0's partition 0 (about 5 MB): larger than socket buffers,
/// so transfers are under way while other requests arrive.
const BIG: u32 = 5000;

/// `$JAVA_HOME/bin/<tool>` when JAVA_HOME is set, else `<tool>` from PATH.
fn java_tool(tool: &str) -> PathBuf {
    match std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join("bin").join(tool),
        None => PathBuf::from(tool),
    }
}

/// Compiles the probe against the MapReduce jars once per source change.
fn compile_probe(jars: &MavenJars) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("java/ShuffleProbe.java");
    let text = std::fs::read(&source).expect("probe source");
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    jars.dir().hash(&mut hasher);
    let root = jars
        .dir()
        .parent()
        .expect("jar dir has a parent")
        .join("mapreduce-classes");
    let out = root.join(format!("ShuffleProbe-{:016x}", hasher.finish()));
    if out.join("ShuffleProbe.class").is_file() {
        return out;
    }
    std::fs::create_dir_all(&root).expect("classes root");
    let scratch = tempfile::Builder::new()
        .prefix(".ShuffleProbe-")
        .tempdir_in(&root)
        .expect("scratch");
    let status = std::process::Command::new(java_tool("javac"))
        .args(["-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(scratch.path())
        .arg("-cp")
        .arg(jars.classpath().expect("classpath"))
        .arg(&source)
        .status()
        .expect("javac runs (a JDK is needed)");
    assert!(status.success(), "compiling {} failed", source.display());
    if std::fs::rename(scratch.path(), &out).is_err() {
        assert!(out.join("ShuffleProbe.class").is_file(), "moving classes");
    }
    out
}

/// Runs the probe with a deadline; returns its stdout, panicking with its output on failure.
async fn probe(jars: &MavenJars, classes: &Path, args: &[String]) -> String {
    let mut cp = std::ffi::OsString::from(classes);
    cp.push(":");
    cp.push(jars.classpath().expect("classpath"));
    let child = tokio::process::Command::new(java_tool("java"))
        .args(["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .arg("-cp")
        .arg(cp)
        .arg("ShuffleProbe")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java runs");
    let out = tokio::time::timeout(Duration::from_secs(600), child.wait_with_output())
        .await
        .expect("the probe finished within its deadline")
        .expect("probe output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ShuffleProbe {} failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        args.join(" "),
        out.status
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hadoops_fetcher_classes_read_our_shuffle_as_javas() {
    let Some(jars) = MavenJars::for_tests("mapreduce", "hadoop-mapreduce-client-shuffle") else {
        return;
    };
    let classes = compile_probe(&jars);
    let local = tempfile::tempdir().expect("local dir");
    let dir = local.path().to_string_lossy().into_owned();
    for (app, maps) in [(APP_A, MAPS_A), (APP_B, MAPS_B)] {
        let args: Vec<String> = vec![
            "setup".into(),
            dir.clone(),
            USER.into(),
            app.into(),
            maps.to_string(),
            REDUCES.to_string(),
            BIG.to_string(),
        ];
        let listed = probe(&jars, &classes, &args).await;
        assert_eq!(listed.lines().count(), maps as usize, "{listed}");
    }

    let mut config = ShuffleConfig::new(vec![local.path().to_path_buf()]);
    config.bind_host = "127.0.0.1".into();
    config.port = 0;
    let server = ShuffleServer::start(config).await.expect("shuffle starts");
    for app in [APP_A, APP_B] {
        let token = std::fs::read(local.path().join(format!("{app}.token"))).expect("token");
        server
            .add_application(app, USER, &token)
            .expect("Hadoop's service data is accepted");
    }

    let args: Vec<String> = vec![
        "check".into(),
        server.port().to_string(),
        dir.clone(),
        USER.into(),
        APP_A.into(),
        APP_B.into(),
        MAPS_A.to_string(),
        REDUCES.to_string(),
        BIG.to_string(),
    ];
    let report = probe(&jars, &classes, &args).await;
    println!("{report}");
    assert!(report.contains("ALL PASSED"), "{report}");
    for check in [
        "reduce 0: spindle's body equals java's",
        "forged hash (job B's key): spindle 401, java 401",
        "unknown job: spindle 401, java 401",
        "no UrlHash: spindle 401, java 401",
        "old shuffle version: spindle 400, java 400",
        "POST: spindle 405, java 405",
        "bad escape in the query: spindle 500, java 500",
        "foreign map: spindle answers 500",
        "forged during a transfer: 401",
        "after abandoned transfers a whole fetch succeeds",
    ] {
        assert!(report.contains(check), "missing '{check}' in:\n{report}");
    }
    let stats = server.stats();
    assert!(stats.outputs_ok > 0 && stats.refused >= 9, "{stats:?}");
}

/// A JVM running the probe with the JIT's full tiers (for the figures), stdout piped.
fn probe_process(jars: &MavenJars, classes: &Path, args: &[String]) -> tokio::process::Command {
    let mut cp = std::ffi::OsString::from(classes);
    cp.push(":");
    cp.push(jars.classpath().expect("classpath"));
    let mut cmd = tokio::process::Command::new(java_tool("java"));
    cmd.args(["-Xmx1g", "-cp"])
        .arg(cp)
        .arg("ShuffleProbe")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// One `ShuffleProbe bench` run against `port`: (MB/s, p50 ms, p99 ms).
async fn bench_once(
    jars: &MavenJars,
    classes: &Path,
    port: u16,
    dir: &str,
    shape: (u32, u32),
    parallel: u32,
    rounds: u32,
) -> (f64, f64, f64) {
    let args: Vec<String> = vec![
        "bench".into(),
        port.to_string(),
        dir.into(),
        APP_A.into(),
        shape.0.to_string(),
        shape.1.to_string(),
        parallel.to_string(),
        rounds.to_string(),
    ];
    let out = probe_process(jars, classes, &args)
        .output()
        .await
        .expect("bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("bench "))
        .expect("a bench line");
    let field = |name: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("mb_per_s"), field("p50_ms"), field("p99_ms"))
}

/// The figures of docs/benchmarks.md ("The native shuffle"): the same map outputs (written
/// by Hadoop's IFile writer, in the page cache) served by our shuffle and by Hadoop's own
/// ShuffleHandler in a JVM of its own, fetched by the same Fetcher-like Java client (one
/// request per reduce for all maps, as Fetcher asks a host). Run in release:
///   cargo test --release -p spindle-integration --test shuffle_wire figures -- --ignored --nocapture
/// Shape: SHUFFLE_FIG_MAPS (16) × SHUFFLE_FIG_REDUCES (8) partitions of SHUFFLE_FIG_KB
/// (8000) records of 1000 bytes, about 1 GB; SHUFFLE_FIG_PARALLEL (4) reducers at once;
/// SHUFFLE_FIG_TRANSFER_TO=false serves through the buffer instead of sendfile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run by hand for docs/benchmarks.md"]
async fn figures_native_and_hadoop_shuffle_side_by_side() {
    let Some(jars) = MavenJars::for_tests("mapreduce", "hadoop-mapreduce-client-shuffle") else {
        return;
    };
    let env = |k: &str, d: u32| -> u32 {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (maps, reduces, kb) = (
        env("SHUFFLE_FIG_MAPS", 16),
        env("SHUFFLE_FIG_REDUCES", 8),
        env("SHUFFLE_FIG_KB", 8000),
    );
    let parallel = env("SHUFFLE_FIG_PARALLEL", 4);
    let classes = compile_probe(&jars);
    let local = tempfile::tempdir().expect("local dir");
    let dir = local.path().to_string_lossy().into_owned();
    let setup: Vec<String> = vec![
        "setup-bulk".into(),
        dir.clone(),
        USER.into(),
        APP_A.into(),
        maps.to_string(),
        reduces.to_string(),
        kb.to_string(),
    ];
    probe(&jars, &classes, &setup).await;

    let mut config = ShuffleConfig::new(vec![local.path().to_path_buf()]);
    config.bind_host = "127.0.0.1".into();
    config.port = 0;
    // SHUFFLE_FIG_TRANSFER_TO=false: the buffered copy instead of sendfile
    // (mapreduce.shuffle.transferTo.allowed=false), the first design's figures.
    config.transfer_to = std::env::var("SHUFFLE_FIG_TRANSFER_TO").map_or(true, |v| v != "false");
    let server = ShuffleServer::start(config).await.expect("shuffle starts");
    let token = std::fs::read(local.path().join(format!("{APP_A}.token"))).expect("token");
    server.add_application(APP_A, USER, &token).expect("token");

    let serve: Vec<String> = vec!["serve".into(), dir.clone(), USER.into(), APP_A.into()];
    let mut java = probe_process(&jars, &classes, &serve)
        .spawn()
        .expect("java shuffle starts");
    let stdout = java.stdout.take().expect("stdout");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let java_port: u16 = loop {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("the Java shuffle starts within its deadline")
            .expect("read")
            .expect("a port line");
        if let Some(p) = line.strip_prefix("java ShuffleHandler on port ") {
            break p.trim().parse().expect("port");
        }
    };

    let shape = (maps, reduces);
    let mb = f64::from(maps) * f64::from(reduces) * f64::from(kb) / 1000.0;
    println!(
        "{maps} maps x {reduces} reduces x {kb} KB = {mb:.0} MB per round; {parallel} reducers at once"
    );
    // A warm-up round each (the JVMs' JIT), then three measured runs of two rounds each,
    // alternating.
    for port in [server.port(), java_port] {
        bench_once(&jars, &classes, port, &dir, shape, parallel, 1).await;
    }
    for run in 1..=3 {
        for (who, port) in [("spindle", server.port()), ("hadoop", java_port)] {
            let (mbps, p50, p99) =
                bench_once(&jars, &classes, port, &dir, shape, parallel, 2).await;
            println!("run {run} {who:8} {mbps:8.1} MB/s  fetch p50 {p50:7.1} ms  p99 {p99:7.1} ms");
        }
    }
    let _ = java.kill().await;
}
