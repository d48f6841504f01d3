//! The behavioural differential: the same scripted client session against Hadoop 3.3.4's
//! own ResourceManager (capacity scheduler, one Hadoop NodeManager) and against
//! Spindle's (capacity scheduler, one Spindle NodeManager), both started with the
//! repository's `conf/capacity-scheduler.xml`, driven by the stock `yarn` CLI and by
//! Hadoop's own `YarnClient` (`integration/java/SubmitApp.java`): submit, status, lists,
//! attempts, queue status, node list, a move to a missing queue, kill, a refresh with a
//! file that does not validate and one that changes a capacity and adds a queue, bad
//! requests (unknown and malformed application ids, a missing queue, a submission to a
//! missing queue), and a running application moved to the added queue, given a priority
//! and a lifetime, refused a kill by another user (ACLs are on on both RMs), and killed.
//!
//! Each step's exit code, stdout and stderr are normalised (ids, times, hosts, ports,
//! paths, JVM log noise) and compared line by line. Every difference must be in
//! [`KNOWN`] (the same entries as `docs/compatibility.md`, with the reason), and every
//! entry of [`KNOWN`] must still differ: the test fails either way.
//!
//! Needs the Hadoop client (`integration/setup-clients.sh`) and the Hadoop daemons
//! (`integration/setup-maven.sh yarn-server`); skips without them, except under CI.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use spindle_integration::differential::{compare, KnownDifference, Normaliser, Outcome, Part};
use spindle_integration::hadoop_yarn::default_capacity_scheduler_xml;
use spindle_integration::{
    wait_for, CliOutput, Cluster, ExtraNodeManager, HadoopClients, HadoopConf, HadoopRm, NmKind,
    NodeManagerSpec, YarnServerJars,
};

const CAPACITY_SCHEDULER: &str =
    "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler";

/// A loopback address of the Hadoop NodeManager's own (the Spindle cluster's NM uses
/// 127.0.0.2; the mixed-cluster tests use 127.0.0.77).
const HADOOP_NM_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 79));

/// How long the AM container may take to start on either side.
const AM_START_TIMEOUT: Duration = Duration::from_secs(120);

/// Every difference the session shows between the two RMs, with why. Kept equal to
/// `docs/compatibility.md`.
const KNOWN: &[KnownDifference] = &[
    KnownDifference {
        step: "application -movetoqueue (missing queue)",
        part: Part::Stderr,
        line_prefix: "Caused by: java.security.AccessControlException: ",
        reason: "Hadoop's error reply carries the RM's Java stack trace, so the client \
                 prints the AccessControlException the RM wrapped as a cause as well; \
                 Spindle's reply carries the exception class and message only (the \
                 message itself is the same)",
    },
    KnownDifference {
        step: "application -kill (by another user)",
        part: Part::Stderr,
        line_prefix: "Caused by: java.security.AccessControlException: ",
        reason: "the same: Hadoop's client prints the AccessControlException its RM \
                 wrapped, from the stack trace in the reply; Spindle's reply has none",
    },
    KnownDifference {
        step: "rmadmin -refreshQueues (invalid file)",
        part: Part::Stderr,
        line_prefix: "refreshQueues: java.io.IOException: Failed to re-init queues : ",
        reason: "Spindle's reason names the file, the queue and the key at fault and the \
                 sum it found (\"the capacities of the children of root (default, b) add \
                 up to 110, not 100\"); Hadoop's says \"Illegal capacity of 1.1 for \
                 children of queue root\"",
    },
    KnownDifference {
        step: "rmadmin -refreshQueues (invalid file)",
        part: Part::Stderr,
        line_prefix: "Caused by: ",
        reason: "Hadoop's error reply carries the RM's Java stack trace, whose cause \
                 lines the client prints; Spindle's carries no stack trace",
    },
];

/// One RM and the configuration its clients read.
struct Target<'a> {
    name: &'static str,
    clients: &'a HadoopClients,
    conf_dir: PathBuf,
}

impl Target<'_> {
    fn yarn(&self, args: &[&str]) -> CliOutput {
        self.clients
            .yarn()
            .conf_dir(&self.conf_dir)
            .run(args)
            .unwrap_or_else(|e| panic!("cannot run the yarn launcher: {e:#}"))
    }

    /// The `yarn` CLI as another user (`HADOOP_USER_NAME`, SIMPLE authentication).
    fn yarn_as(&self, user: &str, args: &[&str]) -> CliOutput {
        self.clients
            .yarn()
            .conf_dir(&self.conf_dir)
            .env("HADOOP_USER_NAME", user)
            .run(args)
            .unwrap_or_else(|e| panic!("cannot run the yarn launcher: {e:#}"))
    }

    /// Hadoop's YarnClient submits an application whose AM sleeps.
    fn submit(&self, name: &str, queue: &str) -> CliOutput {
        let classes = self
            .clients
            .compile_java("SubmitApp")
            .unwrap_or_else(|e| panic!("compiling SubmitApp: {e:#}"));
        self.clients
            .yarn()
            .conf_dir(&self.conf_dir)
            .classpath(classes)
            .run([
                "SubmitApp",
                "--name",
                name,
                "--queue",
                queue,
                "--command",
                "sleep 600",
                "--memory-mb",
                "512",
            ])
            .unwrap_or_else(|e| panic!("cannot run SubmitApp: {e:#}"))
    }

    /// `integration/java/AppClient.java` (Hadoop's YarnClient) with `args`.
    fn app_client(&self, args: &[&str]) -> CliOutput {
        let classes = self
            .clients
            .compile_java("AppClient")
            .unwrap_or_else(|e| panic!("compiling AppClient: {e:#}"));
        let mut full = vec!["AppClient"];
        full.extend_from_slice(args);
        self.clients
            .yarn()
            .conf_dir(&self.conf_dir)
            .classpath(classes)
            .run(full)
            .unwrap_or_else(|e| panic!("cannot run AppClient: {e:#}"))
    }

    fn write_queues(&self, xml: &str) {
        let path = self.conf_dir.join("capacity-scheduler.xml");
        std::fs::write(&path, xml).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

fn capacity_xml(properties: &[(&str, &str)]) -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in properties {
        xml.push_str(&format!(
            "  <property><name>yarn.scheduler.capacity.{name}</name><value>{value}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    xml
}

/// Two queues: `default` at 70 %, a new `b` at 30 %; nobody administers the root
/// queue (unset, Hadoop lets everyone, which would make every user an
/// administrator of every application).
fn two_queues() -> String {
    capacity_xml(&[
        ("maximum-am-resource-percent", "0.1"),
        ("root.acl_administer_queue", " "),
        ("root.queues", "default,b"),
        ("root.default.capacity", "70"),
        ("root.default.maximum-capacity", "100"),
        ("root.default.user-limit-factor", "1"),
        ("root.b.capacity", "30"),
        ("root.b.maximum-capacity", "50"),
    ])
}

/// Capacities adding up to 110 %: both RMs must refuse it and keep their queues.
fn invalid_queues() -> String {
    capacity_xml(&[
        ("root.queues", "default,b"),
        ("root.default.capacity", "80"),
        ("root.b.capacity", "30"),
    ])
}

/// A step's name, what it printed, and whether its stdout lines are in no defined
/// order (application lists: Hadoop's come from a hash map).
struct Step {
    name: &'static str,
    out: CliOutput,
    unordered: bool,
}

fn step(name: &'static str, out: CliOutput) -> Step {
    Step {
        name,
        out,
        unordered: false,
    }
}

fn unordered(name: &'static str, out: CliOutput) -> Step {
    Step {
        name,
        out,
        unordered: true,
    }
}

/// The application id SubmitApp printed.
fn app_id(out: &CliOutput) -> Option<String> {
    out.stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("application_"))
        .map(str::to_owned)
}

/// Waits until the RM lists `app`'s attempt LAUNCHED (both RMs reach it once the NM has
/// started the AM container): a precondition, not compared.
fn wait_launched(t: &Target<'_>, app: &str) -> Result<(), String> {
    let mut last = None;
    let launched = wait_for(AM_START_TIMEOUT, Duration::from_millis(500), || {
        let out = t.yarn(&["applicationattempt", "-list", app]);
        let launched = out
            .stdout
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("LAUNCHED"));
        last = Some(out);
        launched.then_some(())
    });
    match launched {
        Some(()) => Ok(()),
        None => Err(format!(
            "{}: the AM container of {app} was not launched within {AM_START_TIMEOUT:?}; last attempt list:\n{}",
            t.name,
            last.map(|o| o.to_string()).unwrap_or_default()
        )),
    }
}

/// The scripted session. Returns its steps, or why it could not go on (with the
/// steps so far).
fn session(t: &Target<'_>) -> Result<Vec<Step>, (String, Vec<Step>)> {
    let mut steps = Vec::new();
    let submitted = t.submit("differential", "default");
    let app = app_id(&submitted);
    steps.push(step("submit (YarnClient)", submitted));
    let Some(app) = app else {
        return Err((format!("{}: the submission printed no id", t.name), steps));
    };
    if let Err(why) = wait_launched(t, &app) {
        return Err((why, steps));
    }
    let app = app.as_str();
    steps.push(step(
        "application -status",
        t.yarn(&["application", "-status", app]),
    ));
    steps.push(unordered(
        "application -list",
        t.yarn(&["application", "-list"]),
    ));
    steps.push(unordered(
        "application -list -appStates ACCEPTED",
        t.yarn(&["application", "-list", "-appStates", "ACCEPTED"]),
    ));
    steps.push(unordered(
        "application -list -appStates FINISHED,KILLED",
        t.yarn(&["application", "-list", "-appStates", "FINISHED,KILLED"]),
    ));
    steps.push(step(
        "applicationattempt -list",
        t.yarn(&["applicationattempt", "-list", app]),
    ));
    steps.push(step(
        "queue -status default",
        t.yarn(&["queue", "-status", "default"]),
    ));
    steps.push(step("node -list -all", t.yarn(&["node", "-list", "-all"])));
    steps.push(step(
        "application -movetoqueue (missing queue)",
        t.yarn(&["application", "-movetoqueue", app, "-queue", "nosuch"]),
    ));
    steps.push(step(
        "application -kill",
        t.yarn(&["application", "-kill", app]),
    ));
    steps.push(step(
        "application -status (killed)",
        t.yarn(&["application", "-status", app]),
    ));
    steps.push(step(
        "application -kill (already killed)",
        t.yarn(&["application", "-kill", app]),
    ));
    // A second application, killed through YarnClient with a message.
    let second = t.submit("differential-2", "default");
    let Some(second_id) = app_id(&second) else {
        steps.push(step("submit a second application (YarnClient)", second));
        return Err((
            format!("{}: the second submission printed no id", t.name),
            steps,
        ));
    };
    steps.push(step("submit a second application (YarnClient)", second));
    if let Err(why) = wait_launched(t, &second_id) {
        return Err((why, steps));
    }
    steps.push(step(
        "kill with a message (YarnClient)",
        t.app_client(&["kill", "--app", &second_id, "--diagnostics-length", "12"]),
    ));
    steps.push(step(
        "application -status (killed with a message)",
        t.yarn(&["application", "-status", &second_id]),
    ));
    steps.push(step(
        "application -status (unknown id)",
        t.yarn(&["application", "-status", "application_1000000000000_9999"]),
    ));
    steps.push(step(
        "application -kill (unknown id)",
        t.yarn(&["application", "-kill", "application_1000000000000_9999"]),
    ));
    steps.push(step(
        "application -status (malformed id)",
        t.yarn(&["application", "-status", "application_x_1"]),
    ));
    steps.push(step(
        "queue -status (missing queue)",
        t.yarn(&["queue", "-status", "nosuch"]),
    ));
    steps.push(step(
        "submit to a missing queue (YarnClient)",
        t.submit("differential-missing-queue", "nosuch"),
    ));
    t.write_queues(&invalid_queues());
    steps.push(step(
        "rmadmin -refreshQueues (invalid file)",
        t.yarn(&["rmadmin", "-refreshQueues"]),
    ));
    steps.push(step(
        "queue -status default (after the refused refresh)",
        t.yarn(&["queue", "-status", "default"]),
    ));
    t.write_queues(&two_queues());
    steps.push(step(
        "rmadmin -refreshQueues",
        t.yarn(&["rmadmin", "-refreshQueues"]),
    ));
    steps.push(step(
        "queue -status default (after the refresh)",
        t.yarn(&["queue", "-status", "default"]),
    ));
    steps.push(step(
        "queue -status b (added by the refresh)",
        t.yarn(&["queue", "-status", "b"]),
    ));
    steps.push(unordered(
        "application -list -appStates ALL",
        t.yarn(&["application", "-list", "-appStates", "ALL"]),
    ));
    // A third application, moved to the new queue `b` while its AM container runs,
    // then given a priority and a lifetime, and killed there.
    let third = t.submit("differential-3", "default");
    let Some(third_id) = app_id(&third) else {
        steps.push(step("submit a third application (YarnClient)", third));
        return Err((
            format!("{}: the third submission printed no id", t.name),
            steps,
        ));
    };
    steps.push(step("submit a third application (YarnClient)", third));
    if let Err(why) = wait_launched(t, &third_id) {
        return Err((why, steps));
    }
    let third = third_id.as_str();
    steps.push(step(
        "application -movetoqueue (to b)",
        t.yarn(&["application", "-movetoqueue", third, "-queue", "b"]),
    ));
    steps.push(step(
        "application -status (moved)",
        t.yarn(&["application", "-status", third]),
    ));
    steps.push(step(
        "queue -status b (after the move)",
        t.yarn(&["queue", "-status", "b"]),
    ));
    steps.push(step(
        "queue -status default (after the move)",
        t.yarn(&["queue", "-status", "default"]),
    ));
    steps.push(step(
        "application -updatePriority",
        t.yarn(&["application", "-appId", third, "-updatePriority", "3"]),
    ));
    steps.push(step(
        "application -updateLifetime",
        t.yarn(&["application", "-appId", third, "-updateLifetime", "3600"]),
    ));
    steps.push(step(
        "application -kill (by another user)",
        t.yarn_as("mallory", &["application", "-kill", third]),
    ));
    steps.push(step(
        "application -kill (moved)",
        t.yarn(&["application", "-kill", third]),
    ));
    Ok(steps)
}

fn host_names() -> Vec<String> {
    let mut names = Vec::new();
    for file in ["/etc/hostname", "/proc/sys/kernel/hostname"] {
        if let Ok(name) = std::fs::read_to_string(file) {
            let name = name.trim().to_owned();
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

fn outcome(s: &Step, normaliser: &Normaliser) -> Outcome {
    let mut o = Outcome::of(&s.out, normaliser);
    if s.unordered {
        let mut lines: Vec<&str> = o.stdout.lines().collect();
        lines.sort_unstable();
        o.stdout = lines.iter().map(|l| format!("{l}\n")).collect();
    }
    o
}

#[test]
fn one_client_session_against_hadoop_rm_and_spindle_rm_differs_only_as_documented() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let queues = default_capacity_scheduler_xml().expect("conf/capacity-scheduler.xml");
    let spec = NodeManagerSpec::new(8192, 8);

    let cluster = Cluster::builder()
        .rm_property("yarn.resourcemanager.scheduler.class", CAPACITY_SCHEDULER)
        .rm_property("yarn.scheduler.maximum-allocation-mb", 8192)
        .rm_property("yarn.scheduler.maximum-allocation-vcores", 8)
        .rm_property("yarn.acl.enable", "true")
        .rm_property("yarn.admin.acl", " ")
        .conf_file("capacity-scheduler.xml", queues)
        .nodemanager(spec.clone())
        .start(&clients)
        .unwrap_or_else(|e| panic!("Spindle's RM did not start: {e:#}"));
    // ACLs on, on both: only the RM's own user administers.
    let mut hadoop_conf = HadoopConf::new();
    hadoop_conf
        .set("yarn.acl.enable", "true")
        .set("yarn.admin.acl", " ");
    let rm = HadoopRm::start(&jars, &hadoop_conf)
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        HADOOP_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &spec,
    )
    .unwrap_or_else(|e| panic!("Hadoop's NM did not register: {e:#}\n{}", rm.log_tail(200)));
    let logs = || {
        format!(
            "{}\n===== Hadoop RM =====\n{}\n===== Hadoop NM =====\n{}",
            cluster.log_report(),
            rm.log_tail(200),
            nm.log_tail(100)
        )
    };

    let hadoop = Target {
        name: "hadoop",
        clients: &clients,
        conf_dir: rm.conf_dir().to_path_buf(),
    };
    let spindle = Target {
        name: "spindle",
        clients: &clients,
        conf_dir: cluster.conf_dir().to_path_buf(),
    };
    let (hadoop_steps, spindle_steps) = std::thread::scope(|scope| {
        let h = scope.spawn(|| session(&hadoop));
        let s = scope.spawn(|| session(&spindle));
        (
            h.join().expect("the Hadoop session"),
            s.join().expect("the Spindle session"),
        )
    });
    let dump = |steps: &[Step]| {
        steps
            .iter()
            .map(|s| format!("== {} ==\n{}", s.name, s.out))
            .collect::<String>()
    };
    let hadoop_steps =
        hadoop_steps.unwrap_or_else(|(why, steps)| panic!("{why}\n{}\n{}", dump(&steps), logs()));
    let spindle_steps =
        spindle_steps.unwrap_or_else(|(why, steps)| panic!("{why}\n{}\n{}", dump(&steps), logs()));
    assert_eq!(hadoop_steps.len(), spindle_steps.len());

    let normaliser = Normaliser::new(&host_names());
    let steps: Vec<(String, Outcome, Outcome)> = hadoop_steps
        .iter()
        .zip(&spindle_steps)
        .map(|(h, s)| {
            (
                h.name.to_owned(),
                outcome(h, &normaliser),
                outcome(s, &normaliser),
            )
        })
        .collect();

    let comparison = compare(&steps, KNOWN);
    let mut report = comparison.report();
    if !comparison.holds() {
        for (name, h, s) in &steps {
            if comparison.unexplained.iter().any(|d| &d.step == name) {
                report.push_str(&format!(
                    "\n===== step {name} =====\n-- hadoop --\n{h}-- spindle --\n{s}"
                ));
            }
        }
    }
    eprintln!("{report}");
    // Hadoop's side did what the session means (so two equal failures cannot pass).
    let by_name = |name: &str| {
        steps
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, h, _)| h)
            .unwrap_or_else(|| panic!("no step {name}"))
    };
    for (name, needle) in [
        ("application -status", "State : ACCEPTED"),
        ("application -status (killed)", "State : KILLED"),
        ("queue -status default", "Capacity : 100.00%"),
        (
            "queue -status default (after the refresh)",
            "Capacity : 70.00%",
        ),
        (
            "queue -status b (added by the refresh)",
            "Capacity : 30.00%",
        ),
        ("node -list -all", "RUNNING"),
        ("applicationattempt -list", "LAUNCHED"),
        (
            "application -status (killed with a message)",
            "with diagnostic message: dddddddddddd",
        ),
        (
            "application -movetoqueue (to b)",
            "Successfully completed move.",
        ),
        ("application -status (moved)", "Queue : b"),
    ] {
        let o = by_name(name);
        assert!(
            o.exit == "0" && o.stdout.contains(needle),
            "Hadoop's RM: step {name} did not print {needle:?}:\n{o}"
        );
    }
    let refused = by_name("application -kill (by another user)");
    assert!(
        refused.exit != "0"
            && refused
                .stderr
                .contains("User mallory cannot perform operation MODIFY_APP"),
        "Hadoop's RM: another user's kill was not refused:\n{refused}"
    );

    assert!(
        comparison.holds(),
        "the RMs differ other than as listed in KNOWN (and docs/compatibility.md):\n{report}"
    );
}
