//! The NodeManager's PUBLIC cache bounded while applications run
//! (`yarn.nodemanager.localizer.cache.target-size-mb`, Hadoop's
//! `ResourceRetentionSet`), on a real Spindle cluster with applications
//! submitted by Hadoop 3.3.4's own `YarnClient`, each AM container given a
//! distinct PUBLIC file: once unheld copies push the cache over its target,
//! the least recently used ones are evicted until it is under it; the copy
//! a running container uses is never evicted (it reads it throughout); an
//! evicted resource is fetched again for a later application.
//!
//! Without the client jars (integration/setup-clients.sh) the test prints
//! `SKIP:` and passes, except under CI, where it fails.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spindle_integration::{AppSubmission, Cluster, HadoopClients, NodeManagerSpec};

const WAIT: Duration = Duration::from_secs(120);
/// Each resource; four of them exceed the 1 MB target, two do not.
const RESOURCE_BYTES: usize = 400_000;
const TARGET_BYTES: u64 = 1 << 20;

/// The text of `path` once it ends with a line break.
#[track_caller]
fn wait_line(cluster: &Cluster, path: &Path) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} was not written:\n{}",
            path.display(),
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Bytes of the files under `dir` (links not followed).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| bytes_under(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

#[track_caller]
fn submit(cluster: &Cluster, app: &AppSubmission) -> String {
    match cluster.submit_app(app) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    }
}

#[test]
fn the_public_cache_stays_under_its_target_without_evicting_what_runs() {
    use std::os::unix::fs::PermissionsExt;
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut spec = NodeManagerSpec::new(4096, 4);
    spec.properties
        .set("yarn.nodemanager.localizer.cache.target-size-mb", 1)
        .set("yarn.nodemanager.localizer.cache.cleanup.interval-ms", 200);
    let cluster = match Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(spec)
        .start(&clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    // PUBLIC resources must be readable by everyone where they are.
    let staging = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let out = staging.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let sources: Vec<PathBuf> = (0..4)
        .map(|i| {
            let p = staging.path().join(format!("r{i}.bin"));
            std::fs::write(&p, vec![b'a' + i as u8; RESOURCE_BYTES]).expect("write");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            p
        })
        .collect();
    let o = out.display();
    // Reads its resource until told to stop, then says whether it was
    // still intact.
    let holder = format!(
        "while [ ! -e {o}/go ]; do cat r.bin > /dev/null || exit 3; sleep 0.1; done; \
         readlink r.bin > {o}/holder.link; cmp r.bin {} && echo same > {o}/holder.done",
        sources[0].display()
    );
    let quick = |name: &str, src: &Path| {
        format!(
            "readlink r.bin > {o}/{name}.link; cmp r.bin {} && echo same > {o}/{name}.done",
            src.display()
        )
    };
    submit(
        &cluster,
        &AppSubmission::new("holder", holder).public_file("r.bin", &sources[0]),
    );
    // Three applications one after the other, each with its own resource.
    let mut copies = Vec::new();
    for (name, src) in [("b", &sources[1]), ("c", &sources[2]), ("d", &sources[3])] {
        submit(
            &cluster,
            &AppSubmission::new(name, quick(name, src)).public_file("r.bin", src),
        );
        assert_eq!(
            wait_line(&cluster, &out.join(format!("{name}.done"))),
            "same\n"
        );
        copies.push(PathBuf::from(
            wait_line(&cluster, &out.join(format!("{name}.link"))).trim(),
        ));
    }
    let cache = cluster.root().join("nm-0/local/filecache");
    for copy in &copies {
        assert!(copy.starts_with(&cache), "{}", copy.display());
    }
    // Four copies (1.6 MB) exceed the target: the least recently used
    // unheld ones (b's, then c's) go, and only as many as needed.
    let deadline = Instant::now() + WAIT;
    while bytes_under(&cache) > TARGET_BYTES || copies[0].exists() || copies[1].exists() {
        assert!(
            Instant::now() < deadline,
            "the cache holds {} bytes (target {TARGET_BYTES}); b's copy there: {}, c's: {}\n{}",
            bytes_under(&cache),
            copies[0].exists(),
            copies[1].exists(),
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        copies[2].exists(),
        "d's copy was evicted though the cache was under its target"
    );
    assert_eq!(bytes_under(&cache), 2 * RESOURCE_BYTES as u64);

    // b's resource again: fetched anew, into another copy.
    submit(
        &cluster,
        &AppSubmission::new("e", quick("e", &sources[1])).public_file("r.bin", &sources[1]),
    );
    assert_eq!(wait_line(&cluster, &out.join("e.done")), "same\n");
    let again = PathBuf::from(wait_line(&cluster, &out.join("e.link")).trim());
    assert!(
        again.starts_with(&cache) && again != copies[0],
        "{}",
        again.display()
    );

    // The holder read its copy all along, and it is still what it was.
    std::fs::write(out.join("go"), "").expect("go");
    assert_eq!(wait_line(&cluster, &out.join("holder.done")), "same\n");
    let held = PathBuf::from(wait_line(&cluster, &out.join("holder.link")).trim());
    assert!(held.starts_with(&cache), "{}", held.display());
}
