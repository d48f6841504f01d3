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
