//! README.md's "Try it" walk-through, run as written: the code blocks marked
//! `<!-- readme-test -->` (and the one marked `<!-- readme-test: daemon -->`, started in
//! the background, as a reader starts it in a terminal of its own) are taken from
//! README.md itself, so the README and this test cannot drift apart.
//!
//! They run in one bash session, in order, from the repository's root, after the set-up
//! (the `spindle` binary this test was built with first on `PATH`, the Hadoop clients
//! installed). What differs from a reader's machine, and why:
//! * `HOME` is a fresh temp dir (the blocks write `~/spindle-conf` and the DAG session's
//!   secret there); the client, Maven and pip caches are the installed ones
//!   (`SPINDLE_CLIENT_CACHE`, `SPINDLE_MAVEN_CACHE`, `SPINDLE_PIP_CACHE`).
//! * The blocks run in a network namespace of their own when the machine allows one
//!   (`unshare -rn`), so standalone's fixed default ports cannot collide with anything
//!   else on the machine; otherwise on the machine's loopback, which needs those ports free.
//! * The daemon gets `--conf` with two settings: no disk-use limit for the NodeManager's
//!   dirs (test machines run their disks over Hadoop's 90 %, and a node with no good dir
//!   takes no containers) and its `hadoop.tmp.dir` in the temp dir. Everything else is
//!   standalone's own defaults.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spindle_integration::cluster::DISK_UTILIZATION_KEY;
use spindle_integration::process::run_with_timeout;
use spindle_integration::{clients, spindle_binary, HadoopClients, HadoopConf};

const MARK: &str = "<!-- readme-test -->";
const DAEMON_MARK: &str = "<!-- readme-test: daemon -->";
/// The whole walk-through: Spark alone takes minutes on a loaded two-core machine.
const WALKTHROUGH_TIMEOUT: Duration = Duration::from_secs(1800);
/// Hadoop's default ResourceManager ports, which standalone uses.
const DEFAULT_PORTS: [u16; 7] = [8030, 8031, 8032, 8033, 13562, 10020, 19888];

/// A marked code block of README.md.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    daemon: bool,
    /// 1-based line of the block's first command.
    line: usize,
    text: String,
}

/// The marked `sh` blocks, in order. A mark must be followed by a ```sh fence.
fn marked_blocks(readme: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mark = lines[i].trim();
        if mark != MARK && mark != DAEMON_MARK {
            i += 1;
            continue;
        }
        if lines.get(i + 1).map(|l| l.trim()) != Some("```sh") {
            return Err(format!(
                "README.md:{}: {mark} must be followed by a ```sh block",
                i + 1
            ));
        }
        let start = i + 2;
        let end = (start..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .ok_or_else(|| format!("README.md:{}: the block never closes", i + 2))?;
        blocks.push(Block {
            daemon: mark == DAEMON_MARK,
            line: start + 1,
            text: lines[start..end].join("\n"),
        });
        i = end + 1;
    }
    Ok(blocks)
}

fn repo_root() -> PathBuf {
    clients::integration_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Single-quotes `s` for bash.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The bash script that runs the walk-through.
fn script(blocks: &[Block], work: &Path, standalone_conf: &Path) -> String {
    let bin_dir = spindle_binary()
        .expect("the spindle binary (cargo build -p spindle)")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let cache = clients::cache_dir().expect("the client cache");
    let out = work.join("standalone.stdout");
    let err = work.join("standalone.stderr");
    let mut s = String::from("set -euo pipefail\n");
    s.push_str(&format!(
        "cd {}\n",
        quote(&repo_root().display().to_string())
    ));
    s.push_str(&format!(
        "export PATH={}:\"$PATH\"\n",
        quote(&bin_dir.display().to_string())
    ));
    s.push_str(&format!(
        "export HOME={}\nmkdir -p \"$HOME\"\n",
        quote(&work.join("home").display().to_string())
    ));
    s.push_str(&format!(
        "export SPINDLE_CLIENT_CACHE={}\n",
        quote(&cache.display().to_string())
    ));
    // The Maven and pip caches and the Java aux-service host setup-clients.sh fills are the
    // installed ones too (the walk-through runs without a network).
    let home = std::env::var("HOME").unwrap_or_default();
    for (key, default) in [
        ("SPINDLE_MAVEN_CACHE", ".cache/spindle-maven"),
        ("SPINDLE_PIP_CACHE", ".cache/spindle-python"),
        ("SPINDLE_AUX_HOST_DIR", ".cache/spindle-aux-host"),
    ] {
        let dir = std::env::var(key)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| format!("{home}/{default}"));
        s.push_str(&format!("export {key}={}\n", quote(&dir)));
    }
    if let Ok(jars) = std::env::var("SPINDLE_CLIENT_JARS") {
        if !jars.is_empty() {
            s.push_str(&format!("export SPINDLE_CLIENT_JARS={}\n", quote(&jars)));
        }
    }
    // As the Spark tests do: the driver binds to loopback whatever the host name says.
    s.push_str("export SPARK_LOCAL_IP=127.0.0.1\n");
    s.push_str("unset YARN_CONF_DIR HADOOP_CONF_DIR SPINDLE_DAG_SECRET\n");
    for b in blocks {
        s.push_str(&format!("\necho '==> README.md:{}'\n", b.line));
        if b.daemon {
            s.push_str(&format!(
                "{} --conf {} > {} 2> {} &\n",
                b.text.trim(),
                quote(&standalone_conf.display().to_string()),
                quote(&out.display().to_string()),
                quote(&err.display().to_string())
            ));
            s.push_str("daemon=$!\n");
            s.push_str("trap 'kill -INT $daemon 2>/dev/null || true' EXIT\n");
            s.push_str(&format!(
                "for _ in $(seq 600); do\n\
                 \x20 grep -q 'Spindle standalone is up' {out} && break\n\
                 \x20 kill -0 $daemon 2>/dev/null || {{ echo 'standalone exited'; cat {out} {err}; exit 1; }}\n\
                 \x20 sleep 0.1\n\
                 done\n\
                 grep -q 'Spindle standalone is up' {out} || {{ echo 'standalone did not start'; cat {out} {err}; exit 1; }}\n\
                 cat {out}\n",
                out = quote(&out.display().to_string()),
                err = quote(&err.display().to_string()),
            ));
        } else {
            s.push_str(&b.text);
            s.push('\n');
        }
    }
    // Ctrl-C, as the README says, and standalone's own exit status.
    s.push_str(
        "\necho '==> stopping standalone (SIGINT)'\n\
         trap - EXIT\n\
         kill -INT $daemon\n\
         status=0\n\
         wait $daemon || status=$?\n\
         echo \"standalone exited with status $status\"\n\
         exit $status\n",
    );
    s
}

/// Whether this machine gives an unprivileged network namespace with a loopback.
fn netns_available() -> bool {
    Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_readme_marks_every_example_the_walkthrough_runs() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let blocks = marked_blocks(&readme).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        blocks.iter().filter(|b| b.daemon).count(),
        1,
        "one daemon block: {blocks:#?}"
    );
    assert!(blocks[0].daemon, "the daemon starts first: {blocks:#?}");
    assert_eq!(blocks[0].text.trim(), "spindle standalone");
    let all: String = blocks
        .iter()
        .map(|b| b.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for example in [
        "integration/bin/yarn node -list",
        "spindle distributed-shell",
        "spark-submit\" --master yarn --deploy-mode cluster",
        "examples/src/main/python/pi.py",
        "spindle dag submit conf/dag/wordcount.yaml --wait",
        "spindle sim ",
        "spindle bench scheduler",
    ] {
        assert!(
            all.contains(example),
            "README's walk-through lacks {example:?}"
        );
    }
    // A mark without its block is an error, not a silently skipped example.
    assert!(marked_blocks("<!-- readme-test -->\nspindle sim\n").is_err());
    assert!(marked_blocks("<!-- readme-test -->\n```sh\nspindle sim\n").is_err());
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let Some(_clients) = HadoopClients::for_tests() else {
        return;
    };
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let blocks = marked_blocks(&readme).unwrap_or_else(|e| panic!("{e}"));
    let work = tempfile::Builder::new()
        .prefix("spindle-readme-")
        .tempdir()
        .expect("temp dir");
    let conf = work.path().join("standalone-conf");
    std::fs::create_dir_all(&conf).expect("mkdir");
    let mut yarn = HadoopConf::new();
    yarn.set(DISK_UTILIZATION_KEY, 100);
    yarn.write(&conf.join("yarn-site.xml"))
        .expect("yarn-site.xml");
    let mut core = HadoopConf::new();
    core.set("hadoop.tmp.dir", work.path().join("hadoop-tmp").display());
    core.write(&conf.join("core-site.xml"))
        .expect("core-site.xml");
    let _ = std::fs::remove_dir_all("/tmp/spindle-wordcount");

    let path = work.path().join("walkthrough.sh");
    std::fs::write(&path, script(&blocks, work.path(), &conf)).expect("script");
    let isolated = netns_available();
    let cmd = if isolated {
        let mut c = Command::new("unshare");
        c.args(["-rn", "bash", "-c", "ip link set lo up && exec bash \"$0\""])
            .arg(&path);
        c
    } else {
        for port in DEFAULT_PORTS {
            assert!(
                std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
                "no network namespace here, and port {port}, which standalone uses by default, is taken"
            );
        }
        let mut c = Command::new("bash");
        c.arg(&path);
        c
    };
    let out = run_with_timeout(cmd, WALKTHROUGH_TIMEOUT).expect("the walk-through runs");
    // The walk-through's output, for the test log.
    eprintln!(
        "README walk-through ({}):\n{out}",
        if isolated {
            "in its own network namespace"
        } else {
            "on this machine's loopback"
        }
    );
    assert!(out.success(), "the README walk-through failed:\n{out}");
    let text = format!("{}\n{}", out.stdout, out.stderr);
    for (what, needle) in [
        (
            "standalone's defaults",
            "standalone defaults: yarn.nodemanager.vmem-check-enabled=false",
        ),
        ("the node list", "Total Nodes:1"),
        ("the distributed shell", "Distributed shell succeeded"),
        ("Spark", "final status: SUCCEEDED"),
        ("yarn logs of the Spark job", "Pi is roughly"),
        ("the DAG", "SUCCEEDED wordcount"),
        ("the word counts", "to 6"),
        ("the DAG session's stop", "FINISHED SUCCEEDED"),
        ("the simulation", "packing saves"),
        ("the benchmark", "scheduler bench: 1000 nodes, 1000 apps"),
        ("standalone's exit", "standalone exited with status 0"),
    ] {
        assert!(text.contains(needle), "{what}: {needle:?} missing:\n{out}");
    }
    let _ = std::fs::remove_dir_all("/tmp/spindle-wordcount");
}
