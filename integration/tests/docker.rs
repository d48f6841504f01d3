//! `docker/`: the Dockerfile passes hadolint (and builds and runs where a Docker daemon
//! answers; `docker/check.sh` says plainly when none does), a broken Dockerfile fails the
//! same check, and the compose file describes an RM and two NMs from that one image.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_norway::Value;
use spindle_integration::process::run_with_timeout;

/// Room for the one-time hadolint install, and for an image build where a daemon runs.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3000);

fn repo_root() -> PathBuf {
    spindle_integration::clients::integration_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn check(dockerfile: Option<&Path>) -> spindle_integration::CliOutput {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("docker/check.sh"));
    if let Some(f) = dockerfile {
        cmd.arg(f);
    }
    run_with_timeout(cmd, CHECK_TIMEOUT).expect("docker/check.sh runs")
}

#[test]
fn the_dockerfile_passes_the_check_and_a_broken_one_does_not() {
    let out = check(None);
    assert!(out.success(), "docker/check.sh failed:\n{out}");
    assert!(
        out.stdout.contains("the Dockerfile passes hadolint"),
        "{out}"
    );
    let built = out.stdout.contains("the image builds and runs");
    let not_built = out.stdout.contains("the image was NOT built");
    assert!(
        built != not_built,
        "the check says whether it built the image:\n{out}"
    );
    // Printed for the test log: which of the two this machine did.
    eprintln!("{}", out.stdout);
    if not_built {
        // Machines without a Docker daemon (CI's among them) check the Dockerfile only:
        // the build and run are skipped, and the test runner counts the skip.
        eprintln!("SKIP: no Docker daemon answers: the image was not built and run, only linted");
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let good = std::fs::read_to_string(repo_root().join("docker/Dockerfile")).expect("Dockerfile");
    let broken = dir.path().join("Dockerfile");
    std::fs::write(
        &broken,
        good.replacen("\nCOPY --from=build ", "\nCOPY--from=build ", 1),
    )
    .expect("write the broken copy");
    let out = check(Some(&broken));
    assert!(
        !out.success(),
        "a broken Dockerfile must fail the check:\n{out}"
    );
    assert!(out.stderr.contains("hadolint found problems"), "{out}");
}

fn get<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, key| &v[*key])
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_compose_file_runs_an_rm_and_two_nms_from_one_image_and_one_conf_dir() {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("docker/compose.yaml")).expect("compose.yaml");
    let mut compose: Value = serde_norway::from_str(&text).expect("valid YAML");
    compose.apply_merge().expect("merge keys resolve");
    let services = get(&compose, &["services"]);
    let expected = [
        ("rm", "resourcemanager"),
        ("nm1", "nodemanager"),
        ("nm2", "nodemanager"),
    ];
    for (name, command) in expected {
        let s = &services[name];
        assert!(!s.is_null(), "service {name} missing:\n{text}");
        assert_eq!(strings(&s["command"]), [command], "{name}");
        assert_eq!(s["image"].as_str(), Some("spindle:latest"), "{name}");
        assert_eq!(s["hostname"].as_str(), Some(name), "{name}");
        assert_eq!(s["init"].as_bool(), Some(true), "{name} reaps its children");
        assert_eq!(
            strings(&s["volumes"]),
            ["./conf/cluster:/etc/hadoop/conf:ro"],
            "{name} reads Hadoop's conf dir"
        );
    }
    assert_eq!(
        get(services, &["rm", "build", "dockerfile"]).as_str(),
        Some("docker/Dockerfile")
    );
    assert_eq!(
        get(services, &["rm", "build", "context"]).as_str(),
        Some("..")
    );
    for port in strings(&services["rm"]["ports"]) {
        assert!(
            port.starts_with("127.0.0.1:"),
            "published on loopback only: {port}"
        );
    }
    // The mounted directory is there, and names the RM by its service's host name.
    let site = std::fs::read_to_string(root.join("docker/conf/cluster/yarn-site.xml"))
        .expect("docker/conf/cluster/yarn-site.xml");
    assert!(
        site.contains("<name>yarn.resourcemanager.hostname</name>\n    <value>rm</value>"),
        "{site}"
    );
}
