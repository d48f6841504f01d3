//! The MR3-style DAG ApplicationMaster on a real Spindle cluster: `spindle dag
//! session start` submits the AM, `spindle dag submit` runs DAGs on `spindle worker`
//! containers, and the AM drives the TaskScheduler, ContainerScheduler and Autoscaler
//! cores with real events. Spindle's own clients only: these tests need no Hadoop jars.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spindle_integration::process::run_with_timeout;
use spindle_integration::{wait_for, CliOutput, Cluster, NodeManagerSpec};

const CLI_TIMEOUT: Duration = Duration::from_secs(90);

/// A started DAG session on a cluster, stopped when dropped.
struct DagSession<'a> {
    cluster: &'a Cluster,
    app: String,
    stopped: bool,
}

fn spindle_cmd(cluster: &Cluster, args: &[&str]) -> Command {
    let mut cmd = Command::new(cluster.binary());
    // The first words are the subcommand path; `--conf` follows them.
    let split = args
        .iter()
        .position(|a| a.starts_with("--") || a.ends_with(".yaml"))
        .unwrap_or(args.len());
    cmd.args(&args[..split])
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(&args[split..])
        .env(
            "SPINDLE_DAG_SESSION_DIR",
            cluster.root().join("dag-sessions"),
        )
        .env_remove("SPINDLE_DAG_SECRET");
    cmd
}

fn spindle(cluster: &Cluster, args: &[&str]) -> CliOutput {
    match run_with_timeout(spindle_cmd(cluster, args), CLI_TIMEOUT) {
        Ok(out) => out,
        Err(e) => panic!("cannot run spindle {args:?}: {e:#}"),
    }
}

impl<'a> DagSession<'a> {
    fn start(cluster: &'a Cluster, settings: &[&str]) -> DagSession<'a> {
        let mut args = vec!["dag", "session", "start", "--queue", "default"];
        for s in settings {
            args.push("--dag-conf");
            args.push(s);
        }
        let out = spindle(cluster, &args);
        assert!(
            out.success(),
            "session start failed:\n{out}\n{}",
            cluster.log_report()
        );
        let app = out.stdout.trim().to_string();
        assert!(app.starts_with("application_"), "{out}");
        DagSession {
            cluster,
            app,
            stopped: false,
        }
    }

    fn run(&self, args: &[&str]) -> CliOutput {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--session");
        all.push(&self.app);
        spindle(self.cluster, &all)
    }

    fn status(&self) -> String {
        let out = self.run(&["dag", "status"]);
        out.assert_success();
        out.stdout
    }

    /// The AM's stderr (its log), wherever the AM container ran.
    fn am_log(&self) -> String {
        let mut text = String::new();
        for i in 0..self.cluster.nodemanagers().len() {
            let app_dir = self
                .cluster
                .root()
                .join(format!("nm-{i}/logs"))
                .join(&self.app);
            for entry in std::fs::read_dir(&app_dir).into_iter().flatten().flatten() {
                let f = entry.path().join("AppMaster.stderr");
                if let Ok(t) = std::fs::read_to_string(&f) {
                    text.push_str(&t);
                }
            }
        }
        text
    }

    fn stop(&mut self) {
        let out = self.run(&["dag", "session", "stop"]);
        self.stopped = true;
        assert!(out.success(), "session stop failed:\n{out}");
        assert!(out.stdout.contains("FINISHED SUCCEEDED"), "{out}");
    }
}

impl Drop for DagSession<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("===== DAG AM log =====\n{}", self.am_log());
        }
        if !self.stopped {
            let _ = self.run(&["dag", "session", "stop", "--wait-secs", "10"]);
        }
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// Deterministic text: `lines` lines of words drawn from a small vocabulary.
fn text(seed: u64, lines: usize) -> String {
    const WORDS: [&str; 9] = [
        "spindle", "yarn", "dag", "map", "reduce", "shuffle", "a", "worker", "queue",
    ];
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::new();
    for _ in 0..lines {
        let n = 1 + (x >> 60) as usize;
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if i > 0 {
                out.push_str(if x & 1 == 0 { " " } else { "  " });
            }
            out.push_str(WORDS[((x >> 33) % WORDS.len() as u64) as usize]);
        }
        out.push('\n');
    }
    out
}

/// Three input files of words for a word count; returns the expected counts.
fn write_word_count_input(input: &Path, output: &Path) -> BTreeMap<String, u64> {
    std::fs::create_dir_all(output).expect("mkdir");
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..3u64 {
        let t = text(i + 1, 200);
        for w in t.split_whitespace() {
            *expected.entry(w.to_string()).or_default() += 1;
        }
        write(&input.join(format!("in-{i}.txt")), &t);
    }
    expected
}

/// The counts the reducers wrote, checking that no word is counted twice.
fn read_word_counts(output: &Path, reducers: u32) -> BTreeMap<String, u64> {
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    for r in 0..reducers {
        let part = std::fs::read_to_string(output.join(format!("part-{r}")))
            .expect("every reducer wrote its part");
        for line in part.lines() {
            let (word, n) = line.split_once(' ').expect("word count");
            let n: u64 = n.parse().expect("a count");
            assert!(
                counted.insert(word.to_string(), n).is_none(),
                "{word} is counted by two reducers"
            );
        }
    }
    counted
}

fn dag_file(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    write(&path, yaml);
    path
}

/// The shipped example, `conf/dag/wordcount.yaml`, as README.md runs it: without its
/// input the map tasks fail (a pipeline fails with its first stage: `tr` cannot read
/// the file), and with only the input files created (no output directory) the DAG
/// succeeds and counts every word.
#[test]
fn the_shipped_word_count_fails_without_input_and_runs_with_only_its_input_created() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    // The example's own paths.
    let base = Path::new("/tmp/spindle-wordcount");
    let _ = std::fs::remove_dir_all(base);
    let example =
        spindle_integration::clients::integration_dir().join("../conf/dag/wordcount.yaml");
    let example = example.display().to_string();
    let session = DagSession::start(
        &cluster,
        &[
            "spindle.dag.worker.memory.mb=512",
            "mr3.am.task.max.failed.attempts=1",
        ],
    );

    let out = session.run(&["dag", "submit", &example, "--wait", "--timeout-secs", "120"]);
    out.assert_exit_failure();
    assert!(
        out.stdout.contains("DAG dag_1 FAILED wordcount")
            && out.stdout.contains("/tmp/spindle-wordcount/input/in-"),
        "the map tasks fail on their missing input:\n{out}"
    );

    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..3 {
        let line = format!("to be or not to be {i}\n");
        for w in line.split_whitespace() {
            *expected.entry(w.to_string()).or_default() += 1;
        }
        write(&base.join(format!("input/in-{i}.txt")), &line);
    }
    let out = session.run(&["dag", "submit", &example, "--wait", "--timeout-secs", "120"]);
    assert!(
        out.success(),
        "the example failed with its input in place:\n{out}"
    );
    assert!(out.stdout.contains("SUCCEEDED wordcount"), "{out}");
    assert_eq!(read_word_counts(&base.join("output"), 2), expected);
    let _ = std::fs::remove_dir_all(base);
}

#[test]
fn word_count_dag_gives_the_right_counts() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("wordcount");
    let input = work.join("input");
    let output = work.join("output");
    let expected = write_word_count_input(&input, &output);
    let yaml = format!(
        r#"
name: wordcount
vertices:
  - name: map
    tasks: 3
    memory_mb: 256
    command: >-
      tr -s ' ' '\n' < {input}/in-{{task}}.txt |
      awk -v n="$SPINDLE_NUM_PARTITIONS" -v out="$SPINDLE_OUTPUT_DIR"
      'NF {{ print > (out "/part-" (length($0) % n)) }}'
  - name: reduce
    tasks: 2
    memory_mb: 256
    command: >-
      cat $SPINDLE_INPUT_DIR/map/*/part-{{task}} 2>/dev/null | sort | uniq -c |
      awk '{{ print $2, $1 }}' > {output}/part-{{task}}
edges:
  - from: map
    to: reduce
    kind: all-to-all
"#,
        input = input.display(),
        output = output.display()
    );
    let dag = dag_file(&work, "wordcount", &yaml);

    let mut session = DagSession::start(
        &cluster,
        &[
            "spindle.dag.worker.memory.mb=512",
            "spindle.dag.queue.status.interval.secs=1",
        ],
    );
    let dag_path = dag.display().to_string();
    let out = session.run(&["dag", "submit", &dag_path, "--wait", "--timeout-secs", "60"]);
    assert!(out.success(), "the DAG failed:\n{out}");
    assert!(
        out.stdout.contains("DAG dag_1 SUCCEEDED wordcount"),
        "{out}"
    );

    assert_eq!(read_word_counts(&output, 2), expected);

    let status = session.status();
    assert!(
        status.contains("DAG dag_1 SUCCEEDED wordcount") && status.contains("5/5 tasks"),
        "{status}"
    );
    assert!(status.contains("DAGScheduler All-In-One"), "{status}");
    // The session is found without --session too (the newest RUNNING one).
    let found = spindle(&cluster, &["dag", "status", "dag_1"]);
    found.assert_success();
    assert!(found.stdout.contains("SUCCEEDED"), "{found}");
    assert!(
        session.am_log().contains("DAGScheduler All-In-One"),
        "the AM logs the periodic status line"
    );
    session.stop();
}

/// The pids of the `spindle worker` processes of this cluster.
fn worker_pids(cluster: &Cluster) -> Vec<u32> {
    let root = cluster.root().display().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.get(1).map(String::as_str) == Some("worker")
            && args.iter().any(|a| a.starts_with(&root))
        {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn outputs_lost_with_their_workers_are_made_again() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("lost");
    let input = work.join("input");
    let output = work.join("output");
    let expected = write_word_count_input(&input, &output);
    // The reducers also wait for a slow `gate` task, so the map outputs sit
    // on the workers for a while: the time to kill every worker.
    let yaml = format!(
        r#"
name: lossy
vertices:
  - name: map
    tasks: 3
    memory_mb: 256
    command: >-
      tr -s ' ' '\n' < {input}/in-{{task}}.txt |
      awk -v n="$SPINDLE_NUM_PARTITIONS" -v out="$SPINDLE_OUTPUT_DIR"
      'NF {{ print > (out "/part-" (length($0) % n)) }}'
  - name: gate
    tasks: 1
    memory_mb: 256
    command: sleep 8
  - name: reduce
    tasks: 2
    memory_mb: 256
    command: >-
      cat $SPINDLE_INPUT_DIR/map/*/part-{{task}} 2>/dev/null | sort | uniq -c |
      awk '{{ print $2, $1 }}' > {output}/part-{{task}}
edges:
  - {{from: map, to: reduce, kind: all-to-all}}
  - {{from: gate, to: reduce, kind: all-to-all}}
"#,
        input = input.display(),
        output = output.display()
    );
    let dag = dag_file(&work, "lossy", &yaml);
    let mut session = DagSession::start(
        &cluster,
        &[
            "spindle.dag.worker.memory.mb=512",
            "mr3.am.task.max.failed.attempts=1",
        ],
    );
    let path = dag.display().to_string();
    let out = session.run(&["dag", "submit", &path]);
    assert!(out.success() && out.stdout.contains("dag_1"), "{out}");
    // Once the three maps have succeeded (and the gate still runs), every
    // worker dies.
    let maps_done = wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
        let out = session.run(&["dag", "status", "dag_1"]);
        out.stdout.contains(": 3/6 tasks").then_some(())
    });
    assert!(
        maps_done.is_some(),
        "the maps finish:\n{}",
        session.status()
    );
    let pids = worker_pids(&cluster);
    assert!(!pids.is_empty(), "workers run");
    for pid in &pids {
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success(), "kill {pid}");
    }
    // New workers come, the lost map outputs are made again, and the
    // reducers count every word once; not one attempt is held against its
    // task (the retry limit is 1).
    let done = wait_for(Duration::from_secs(90), Duration::from_millis(300), || {
        let out = session.run(&["dag", "status", "dag_1"]);
        (!out.stdout.contains(" RUNNING ")).then_some(out.stdout)
    });
    let final_status = done.unwrap_or_else(|| panic!("dag_1 does not end:\n{}", session.status()));
    assert!(
        final_status.contains("DAG dag_1 SUCCEEDED lossy") && final_status.contains("6/6 tasks"),
        "{final_status}\n{}",
        session.status()
    );
    assert_eq!(read_word_counts(&output, 2), expected);
    let status = session.status();
    assert!(counter(&status, "lost") >= pids.len() as u64, "{status}");
    assert!(
        status.contains("(0 failed"),
        "no attempt counted as a failure:\n{status}"
    );
    session.stop();
}

#[test]
fn fifo_container_scheduling_recycles_workers_between_groups() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("recycle");
    let group_dag = |name: &str, group: &str| {
        let yaml = format!(
            "name: {name}\ngroup: {{name: {group}, worker_memory_mb: 512, worker_vcores: 1}}\n\
             vertices:\n  - {{name: one, tasks: 2, memory_mb: 256, command: \"sleep 1\"}}\n"
        );
        dag_file(&work, name, &yaml).display().to_string()
    };
    let (etl, adhoc) = (group_dag("etl", "etl"), group_dag("adhoc", "adhoc"));
    let mut session = DagSession::start(
        &cluster,
        &[
            "mr3.container.scheduler.scheme=fifo",
            "spindle.dag.worker.memory.mb=512",
        ],
    );
    let out = session.run(&["dag", "submit", &etl, "--wait", "--timeout-secs", "60"]);
    assert!(
        out.success() && out.stdout.contains("SUCCEEDED etl"),
        "{out}"
    );
    let before = session.status();
    assert_eq!(counter(&before, "recycled"), 0, "{before}");
    // The etl group's workers are idle with nothing to serve: under fifo the
    // next group of the same kind in need takes them instead of new
    // containers.
    let out = session.run(&["dag", "submit", &adhoc, "--wait", "--timeout-secs", "60"]);
    assert!(
        out.success() && out.stdout.contains("SUCCEEDED adhoc"),
        "{out}"
    );
    let after = session.status();
    assert!(counter(&after, "recycled") >= 1, "{after}");
    assert_eq!(
        counter(&after, "workers started"),
        counter(&before, "workers started"),
        "adhoc ran on recycled workers, none new:\n{before}\n{after}"
    );
    // Its DAG over, the group is released and its workers wait in the reserve.
    assert!(after.contains("[reserve]"), "{after}");
    session.stop();
}

#[test]
fn two_clients_share_a_session_under_capacity_scheduling() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("capacity");
    let sleepy = |name: &str| {
        format!(
            "name: {name}\nvertices:\n  - name: work\n    tasks: 6\n    memory_mb: 256\n    command: \"sleep 1.5\"\n  - name: sum\n    tasks: 1\n    memory_mb: 256\n    command: \"true\"\nedges:\n  - {{from: work, to: sum, kind: all-to-all}}\n"
        )
    };
    let high = dag_file(&work, "high", &sleepy("urgent"));
    let low = dag_file(&work, "low", &sleepy("batch"));
    let session = DagSession::start(
        &cluster,
        &[
            "mr3.dag.queue.scheme=capacity",
            "mr3.dag.queue.capacity.specs=high=80,default=20",
            "spindle.dag.worker.memory.mb=512",
            "spindle.dag.group.max.workers=2",
            "spindle.dag.queue.status.interval.secs=1",
        ],
    );
    let (high_path, low_path) = (high.display().to_string(), low.display().to_string());
    let both_queues_busy = std::thread::scope(|s| {
        let a = s
            .spawn(|| session.run(&["dag", "submit", &high_path, "--dag-queue", "high", "--wait"]));
        let b = s.spawn(|| session.run(&["dag", "submit", &low_path, "--wait"]));
        // While both run, the status line names both queues with work in each.
        let seen = wait_for(Duration::from_secs(40), Duration::from_millis(300), || {
            let status = session.run(&["dag", "status"]).stdout;
            let line = status
                .lines()
                .find(|l| l.contains("DAGScheduler"))?
                .to_string();
            let queues = queue_figures(&line);
            let busy = |q: &str| {
                queues
                    .get(q)
                    .is_some_and(|&(pending, usage)| pending + usage > 0)
            };
            (busy("high") && busy("default")).then_some(line)
        });
        let (a, b) = (a.join().expect("client a"), b.join().expect("client b"));
        assert!(a.success(), "the high DAG failed:\n{a}");
        assert!(b.success(), "the default DAG failed:\n{b}");
        assert!(
            a.stdout.contains("SUCCEEDED urgent") && a.stdout.contains("queue high"),
            "{a}"
        );
        assert!(
            b.stdout.contains("SUCCEEDED batch") && b.stdout.contains("queue default"),
            "{b}"
        );
        seen
    });
    let line = both_queues_busy.expect("a status line with both queues busy");
    assert!(
        line.contains("high = ") && line.contains("default = "),
        "{line}"
    );
    let status = session.status();
    assert!(status.contains("high = 0/0%, default = 0/0%"), "{status}");
}

#[test]
fn a_task_that_always_fails_fails_its_dag_after_the_retry_limit() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("failing");
    let dag = dag_file(
        &work,
        "failing",
        "name: doomed\nvertices:\n  - name: ok\n    tasks: 1\n    memory_mb: 256\n    command: \"echo fine > $SPINDLE_OUTPUT_DIR/x\"\n  - name: bad\n    tasks: 2\n    memory_mb: 256\n    command: \"echo \\\"cannot open input {task}\\\" >&2; exit 3\"\nedges:\n  - {from: ok, to: bad, kind: all-to-all}\n",
    );
    let mut session = DagSession::start(
        &cluster,
        &[
            "mr3.am.task.max.failed.attempts=2",
            "spindle.dag.worker.memory.mb=512",
        ],
    );
    let path = dag.display().to_string();
    let out = session.run(&["dag", "submit", &path, "--wait", "--timeout-secs", "60"]);
    out.assert_exit_failure();
    assert!(out.stdout.contains("DAG dag_1 FAILED doomed"), "{out}");
    assert!(
        out.stdout.contains("of vertex 'bad' failed 2 attempts")
            && out.stdout.contains("mr3.am.task.max.failed.attempts = 2")
            && out.stdout.contains("exited with status 3")
            && out.stdout.contains("cannot open input"),
        "the reason names the task, the limit and the error:\n{out}"
    );
    // The session survives a failed DAG and runs the next one.
    let good = dag_file(
        &work,
        "good",
        "name: fine\nvertices:\n  - {name: one, tasks: 1, memory_mb: 256, command: \"true\"}\n",
    );
    let good = good.display().to_string();
    let out = session.run(&["dag", "submit", &good, "--wait", "--timeout-secs", "60"]);
    assert!(out.success(), "{out}");
    let killed = dag_file(
        &work,
        "slow",
        "name: slow\nvertices:\n  - {name: s, tasks: 1, memory_mb: 256, command: \"sleep 60\"}\n",
    );
    let killed = killed.display().to_string();
    let out = session.run(&["dag", "submit", &killed]);
    assert!(out.success() && out.stdout.contains("dag_3"), "{out}");
    let out = session.run(&["dag", "kill", "dag_3"]);
    assert!(out.success(), "{out}");
    let state = wait_for(Duration::from_secs(20), Duration::from_millis(300), || {
        let out = session.run(&["dag", "status", "dag_3"]);
        out.stdout.contains("KILLED").then_some(out.stdout)
    });
    assert!(state.is_some(), "dag_3 is killed");
    session.stop();
}

/// The `queue = pending/usage%` figures of a status line.
fn queue_figures(line: &str) -> BTreeMap<String, (u64, u64)> {
    let Some((_, queues)) = line.split_once("MB: ") else {
        return BTreeMap::new();
    };
    queues
        .split(", ")
        .filter_map(|q| {
            let (name, figures) = q.split_once(" = ")?;
            let (pending, usage) = figures.split_once('/')?;
            Some((
                name.trim().to_string(),
                (
                    pending.parse().ok()?,
                    usage.trim_end_matches('%').parse().ok()?,
                ),
            ))
        })
        .collect()
}

/// Parses `name N` out of the status' counters line. A missing counters line, or a
/// label not followed by a number, is a test failure (a renamed counter must not read
/// as 0).
#[track_caller]
fn counter(status: &str, name: &str) -> u64 {
    let Some(line) = status.lines().find(|l| l.starts_with("Counters:")) else {
        panic!("no Counters line in the status:\n{status}");
    };
    line.match_indices(name)
        .find_map(|(at, _)| {
            let rest = line[at + name.len()..].strip_prefix(' ')?;
            rest.split_whitespace()
                .next()?
                .trim_end_matches([',', ';', ')'])
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no counter {name:?} followed by a number in:\n{line}"))
}

#[test]
fn counters_are_read_by_label_and_a_missing_label_is_an_error() {
    let status = "Session s\nCounters: containers requested 4 (initial 1, scale-out 3), \
                  scale-outs 2, scale-ins 0; attempts 9 (1 failed, 0 lost input)\n";
    assert_eq!(counter(status, "containers requested"), 4);
    assert_eq!(counter(status, "(initial"), 1);
    assert_eq!(counter(status, "scale-out"), 3);
    assert_eq!(counter(status, "scale-outs"), 2);
    assert_eq!(counter(status, "scale-ins"), 0);
    assert_eq!(counter(status, "attempts"), 9);
    for missing in ["recycled", "workers started"] {
        let read = std::panic::catch_unwind(|| counter(status, missing));
        assert!(
            read.is_err(),
            "{missing} is not in the line, yet it read as a number"
        );
    }
    assert!(std::panic::catch_unwind(|| counter("no counters here", "lost")).is_err());
}

#[test]
fn autoscaling_scales_out_under_load_and_in_after_it() {
    // Three small nodes: each fits one worker of two 256 MB slots (and one the 256 MB AM
    // too).
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(200)
        .nodemanager(NodeManagerSpec::new(768, 4))
        .nodemanager(NodeManagerSpec::new(768, 4))
        .nodemanager(NodeManagerSpec::new(768, 4))
        .start_without_clients()
        .expect("cluster starts");
    let work = cluster.root().join("autoscale");
    // Long enough on the one initial worker (12 tasks of 3 s, two at a time) that the
    // scale-out grace period of the initial request ends while it still runs.
    let burst = dag_file(
        &work,
        "burst",
        "name: burst\nvertices:\n  - {name: load, tasks: 12, memory_mb: 256, command: \"sleep 3\"}\n",
    );
    let mut session = DagSession::start(
        &cluster,
        &[
            "spindle.dag.worker.memory.mb=512",
            "spindle.dag.worker.vcores=2",
            "mr3.enable.auto.scaling=true",
            "mr3.check.memory.usage.event.interval.secs=1",
            "mr3.memory.usage.check.window.length.secs=2",
            "mr3.auto.scale.out.threshold.percent=70",
            "mr3.auto.scale.in.threshold.percent=20",
            "mr3.auto.scale.out.grace.period.secs=3",
            "mr3.auto.scale.in.delay.after.scale.out.secs=1",
            "mr3.auto.scale.in.grace.period.secs=2",
            "mr3.auto.scale.in.min.hosts=1",
            "mr3.auto.scale.out.num.initial.containers=1",
            "mr3.auto.scale.out.num.increment.containers=2",
            "mr3.auto.scale.in.num.decrement.hosts=1",
        ],
    );
    let hosts_of = |status: &str| -> Vec<(String, String)> {
        status
            .lines()
            .filter_map(|l| l.strip_prefix("Worker "))
            .filter_map(|l| {
                let (worker, rest) = l.split_once(" on ")?;
                let (host, _) = rest.split_once(' ')?;
                Some((worker.to_string(), host.to_string()))
            })
            .collect()
    };
    // Every worker seen, with its node: the status is polled through the burst and
    // after it.
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let path = burst.display().to_string();
    let out = session.run(&["dag", "submit", &path]);
    assert!(out.success(), "the burst was not submitted:\n{out}");
    let after_burst = wait_for(Duration::from_secs(90), Duration::from_millis(300), || {
        let status = session.status();
        seen.extend(hosts_of(&status));
        status
            .lines()
            .any(|l| l.starts_with("DAG dag_1 ") && !l.contains(" RUNNING "))
            .then_some(status)
    })
    .unwrap_or_else(|| panic!("the burst did not end:\n{}", session.status()));
    assert!(
        after_burst.contains("DAG dag_1 SUCCEEDED"),
        "the burst failed:\n{after_burst}"
    );
    // The counters tell the request for the empty group ("initial") from scale-outs
    // triggered by usage over the threshold: at least one of those, for two workers.
    assert!(
        counter(&after_burst, "(initial") >= 1,
        "the empty group asked for its initial worker:\n{after_burst}"
    );
    assert!(
        counter(&after_burst, "scale-outs") >= 1 && counter(&after_burst, "scale-out") >= 2,
        "the burst triggered a scale-out:\n{after_burst}"
    );
    assert!(
        counter(&after_burst, "workers started") >= 2,
        "more workers started than the initial one:\n{after_burst}"
    );
    let log = session.am_log();
    assert!(
        log.contains("scale-out: requesting workers"),
        "the AM logs its scale-out"
    );
    // After the burst, scale-in empties nodes until one is left.
    let released = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        let status = session.status();
        let workers = hosts_of(&status);
        seen.extend(workers.iter().cloned());
        let workers = workers.len();
        (counter(&status, "released by scale-in") >= 1 && workers <= 1).then_some(status)
    });
    let status = released.unwrap_or_else(|| {
        panic!(
            "scale-in did not release the emptied nodes:\n{}",
            session.status()
        )
    });
    assert!(status.contains("autoscaling"), "{status}");
    // The nodes the AM released ("scale-in: releasing nodes H1,H2 (…)") are empty,
    // each of their workers was released (not lost), and every worker seen there
    // is gone.
    let log = session.am_log();
    let released_hosts: BTreeSet<String> = log
        .lines()
        .filter_map(|l| l.split_once("scale-in: releasing nodes ").map(|(_, r)| r))
        .filter_map(|r| r.split_once(" (").map(|(hosts, _)| hosts))
        .flat_map(|hosts| hosts.split(','))
        .map(|h| h.trim().to_string())
        .collect();
    assert!(
        !released_hosts.is_empty(),
        "the AM logs its scale-in:\n{log}"
    );
    let remaining = hosts_of(&status);
    for (worker, host) in &remaining {
        assert!(
            !released_hosts.contains(host),
            "worker {worker} is still on released node {host}:\n{status}"
        );
    }
    let emptied: Vec<&(String, String)> = seen
        .iter()
        .filter(|(_, host)| released_hosts.contains(host))
        .collect();
    assert!(
        !emptied.is_empty(),
        "scale-in released nodes that ran workers: {released_hosts:?}, seen {seen:?}"
    );
    for (worker, _) in &emptied {
        assert!(
            !remaining.iter().any(|(w, _)| w == worker),
            "worker {worker} of an emptied node is still there:\n{status}"
        );
    }
    assert!(
        counter(&status, "released by scale-in") >= emptied.len() as u64,
        "every worker of the emptied nodes was released by scale-in ({emptied:?}):\n{status}"
    );
    assert_eq!(counter(&status, "lost"), 0, "no worker was lost:\n{status}");
    session.stop();
}
