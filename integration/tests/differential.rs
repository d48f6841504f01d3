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
//! Each step's exit code, stdout and stderr are normalised by each side's own
//! normaliser (ids, times, paths, JVM log noise; hosts and ports named by the role they
//! play in that side's run; usage figures checked against the application's resources
//! over its run) and compared line by line. Every difference must be in [`KNOWN`] (the
//! same entries as `docs/compatibility.md`, with the side that prints the line and the
//! reason), and every entry of [`KNOWN`] must still differ in each of its steps, on each
//! side it names: the test fails either way.
//!
//! Needs the Hadoop client (`integration/setup-clients.sh`) and the Hadoop daemons
//! (`integration/setup-maven.sh yarn-server`); skips without them, except under CI.
//! [`docs_compatibility_lists_the_known_differences`] needs neither.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use spindle_integration::differential::{
    check_doc, compare, epoch_ms, AppRun, KnownDifference, Normaliser, Outcome, Part, Printed,
    Roles, Window, RUNNING_USAGE_CACHE_MS,
};
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

/// What SubmitApp asks for the AM container (the session's applications run nothing
/// else): their usage figures are these over their run.
const AM_MEMORY_MB: u64 = 512;
const AM_VCORES: u64 = 1;

/// How long after its AM container is seen launched an application is first reported
/// (or killed): long enough that its MB-seconds are due on both sides, however old
/// Hadoop's running figures may be ([`RUNNING_USAGE_CACHE_MS`]), so a zero is caught;
/// the check's lower bound is then 1.5 s of the AM container.
const USAGE_SETTLE_MS: u64 = RUNNING_USAGE_CACHE_MS + 1_500;

/// Every difference the session shows between the two RMs: which side prints the line
/// (and how it starts, after normalisation) and why. Kept equal to
/// `docs/compatibility.md`, "Known differences", by id
/// ([`docs_compatibility_lists_the_known_differences`]).
const KNOWN: &[KnownDifference] = &[
    KnownDifference {
        id: "acl-refusal-cause",
        steps: &[
            "application -movetoqueue (missing queue)",
            "application -kill (by another user)",
        ],
        part: Part::Stderr,
        printed: Printed::HadoopOnly("Caused by: java.security.AccessControlException: "),
        reason: "Hadoop's error reply carries the RM's Java stack trace, so the client \
                 prints the AccessControlException the RM wrapped as a cause as well; \
                 Spindle's reply carries the exception class and message only (the \
                 message itself is the same)",
    },
    KnownDifference {
        id: "queue-file-reason",
        steps: &["rmadmin -refreshQueues (invalid file)"],
        part: Part::Stderr,
        printed: Printed::Both {
            hadoop: "refreshQueues: java.io.IOException: Failed to re-init queues : \
                     Illegal capacity of 1.1 for children of queue root",
            spindle: "refreshQueues: java.io.IOException: Failed to re-init queues : \
                      <PATH> queue root: yarn.scheduler.capacity.root.queues: the \
                      capacities of the children of root (default, b) add up to 110, not 100",
        },
        reason: "Spindle's reason names the file, the queue and the key at fault and the \
                 sum it found; Hadoop's says \"Illegal capacity of 1.1 for children of \
                 queue root\"",
    },
    KnownDifference {
        id: "aggregate-usage",
        steps: &[
            "application -status",
            "application -status (killed)",
            "application -status (killed with a message)",
            "application -status (moved)",
        ],
        part: Part::Stdout,
        printed: Printed::Both {
            hadoop: "Aggregate Resource Allocation : <512 MB over the run> MB-seconds, \
                     <1 vcores over the run> vcore-seconds",
            spindle: "Aggregate Resource Allocation : 0 MB-seconds, 0 vcore-seconds, \
                      not <512 MB over the run> (",
        },
        reason: "Spindle does not account an application's aggregate resource usage: \
                 its reports say 0 MB-seconds and 0 vcore-seconds where Hadoop's say \
                 what the AM container held over its run",
    },
    KnownDifference {
        id: "queue-file-cause",
        steps: &["rmadmin -refreshQueues (invalid file)"],
        part: Part::Stderr,
        printed: Printed::HadoopOnly("Caused by: "),
        reason: "Hadoop's error reply carries the RM's Java stack trace, whose cause \
                 lines the client prints; Spindle's carries no stack trace",
    },
];

/// A command's output and when it ran.
struct Ran {
    out: CliOutput,
    window: Window,
}

fn timed(run: impl FnOnce() -> CliOutput) -> Ran {
    let start_ms = epoch_ms();
    let out = run();
    Ran {
        out,
        window: Window {
            start_ms,
            end_ms: epoch_ms(),
        },
    }
}

/// One RM and the configuration its clients read.
struct Target<'a> {
    name: &'static str,
    clients: &'a HadoopClients,
    conf_dir: PathBuf,
}

impl Target<'_> {
    fn yarn(&self, args: &[&str]) -> Ran {
        timed(|| {
            self.clients
                .yarn()
                .conf_dir(&self.conf_dir)
                .run(args)
                .unwrap_or_else(|e| panic!("cannot run the yarn launcher: {e:#}"))
        })
    }

    /// The `yarn` CLI as another user (`HADOOP_USER_NAME`, SIMPLE authentication).
    fn yarn_as(&self, user: &str, args: &[&str]) -> Ran {
        timed(|| {
            self.clients
                .yarn()
                .conf_dir(&self.conf_dir)
                .env("HADOOP_USER_NAME", user)
                .run(args)
                .unwrap_or_else(|e| panic!("cannot run the yarn launcher: {e:#}"))
        })
    }

    /// Hadoop's YarnClient submits an application whose AM sleeps.
    fn submit(&self, name: &str, queue: &str) -> Ran {
        let classes = self
            .clients
            .compile_java("SubmitApp")
            .unwrap_or_else(|e| panic!("compiling SubmitApp: {e:#}"));
        let memory = AM_MEMORY_MB.to_string();
        let vcores = AM_VCORES.to_string();
        timed(|| {
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
                    &memory,
                    "--vcores",
                    &vcores,
                ])
                .unwrap_or_else(|e| panic!("cannot run SubmitApp: {e:#}"))
        })
    }

    /// `integration/java/AppClient.java` (Hadoop's YarnClient) with `args`.
    fn app_client(&self, args: &[&str]) -> Ran {
        let classes = self
            .clients
            .compile_java("AppClient")
            .unwrap_or_else(|e| panic!("compiling AppClient: {e:#}"));
        let mut full = vec!["AppClient"];
        full.extend_from_slice(args);
        timed(|| {
            self.clients
                .yarn()
                .conf_dir(&self.conf_dir)
                .classpath(classes)
                .run(full)
                .unwrap_or_else(|e| panic!("cannot run AppClient: {e:#}"))
        })
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

/// A step's name, what it printed and when, and whether its stdout lines are in no
/// defined order (application lists: Hadoop's come from a hash map).
struct Step {
    name: &'static str,
    ran: Ran,
    unordered: bool,
}

fn step(name: &'static str, ran: Ran) -> Step {
    Step {
        name,
        ran,
        unordered: false,
    }
}

fn unordered(name: &'static str, ran: Ran) -> Step {
    Step {
        name,
        ran,
        unordered: true,
    }
}

/// The application id SubmitApp printed.
fn app_id(ran: &Ran) -> Option<String> {
    ran.out
        .stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("application_"))
        .map(str::to_owned)
}

/// Waits until the RM lists `app`'s attempt LAUNCHED (both RMs reach it once the NM has
/// started the AM container): a precondition, not compared. Then waits until
/// [`USAGE_SETTLE_MS`] after, and returns the application's [`AppRun`].
fn wait_launched(t: &Target<'_>, app: &str) -> Result<AppRun, String> {
    let mut last = None;
    let launched = wait_for(AM_START_TIMEOUT, Duration::from_millis(500), || {
        let ran = t.yarn(&["applicationattempt", "-list", app]);
        let launched = ran
            .out
            .stdout
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("LAUNCHED"));
        let launched_by_ms = ran.window.end_ms;
        last = Some(ran.out);
        launched.then_some(launched_by_ms)
    });
    let Some(launched_by_ms) = launched else {
        return Err(format!(
            "{}: the AM container of {app} was not launched within {AM_START_TIMEOUT:?}; last attempt list:\n{}",
            t.name,
            last.map(|o| o.to_string()).unwrap_or_default()
        ));
    };
    let settled = launched_by_ms + USAGE_SETTLE_MS;
    if let Some(wait) = settled.checked_sub(epoch_ms()) {
        std::thread::sleep(Duration::from_millis(wait));
    }
    Ok(AppRun {
        id: app.to_owned(),
        memory_mb: AM_MEMORY_MB,
        vcores: AM_VCORES,
        launched_by_ms,
    })
}

/// What a session printed, and its applications that ran.
type Session = (Vec<Step>, Vec<AppRun>);

/// The scripted session. Returns its steps and the applications that ran, or why it
/// could not go on (with the steps so far).
fn session(t: &Target<'_>) -> Result<Session, (String, Vec<Step>)> {
    let mut steps = Vec::new();
    let mut runs = Vec::new();
    let submitted = t.submit("differential", "default");
    let app = app_id(&submitted);
    steps.push(step("submit (YarnClient)", submitted));
    let Some(app) = app else {
        return Err((format!("{}: the submission printed no id", t.name), steps));
    };
    match wait_launched(t, &app) {
        Ok(run) => runs.push(run),
        Err(why) => return Err((why, steps)),
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
    match wait_launched(t, &second_id) {
        Ok(run) => runs.push(run),
        Err(why) => return Err((why, steps)),
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
    match wait_launched(t, &third_id) {
        Ok(run) => runs.push(run),
        Err(why) => return Err((why, steps)),
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
    Ok((steps, runs))
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

/// The roles of this machine's names: `localhost`, and its host name.
fn machine_names(roles: Roles) -> Roles {
    host_names()
        .iter()
        .fold(roles.name("localhost", "LOCALHOST"), |roles, name| {
            roles.name(name, "HOSTNAME")
        })
}

fn outcome(s: &Step, normaliser: &Normaliser) -> Outcome {
    let mut o = Outcome::of(&s.ran.out, normaliser, Some(s.ran.window));
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
            .map(|s| format!("== {} ==\n{}", s.name, s.ran.out))
            .collect::<String>()
    };
    let (hadoop_steps, hadoop_runs) =
        hadoop_steps.unwrap_or_else(|(why, steps)| panic!("{why}\n{}\n{}", dump(&steps), logs()));
    let (spindle_steps, spindle_runs) =
        spindle_steps.unwrap_or_else(|(why, steps)| panic!("{why}\n{}\n{}", dump(&steps), logs()));
    assert_eq!(hadoop_steps.len(), spindle_steps.len());

    // Each side's hosts and ports by the part they play in its own run. The clients run
    // on the RM's host, so the client address a kill diagnostic names is <RM_HOST>.
    // Neither side sets yarn.web-proxy.address: each RM's web app is its proxy.
    let hadoop_roles = machine_names(Roles::new().rm(rm.addresses()).node_manager(
        1,
        nm.host(),
        nm.port(),
        nm.web_port(),
    ));
    let spindle_roles = machine_names(
        cluster
            .nodemanagers()
            .iter()
            .enumerate()
            .fold(Roles::new().rm(cluster.rm()), |roles, (i, n)| {
                roles.node_manager(i + 1, n.host(), n.port(), n.web_port())
            }),
    );
    let hadoop_normaliser = Normaliser::new(hadoop_roles, &hadoop_runs);
    let spindle_normaliser = Normaliser::new(spindle_roles, &spindle_runs);
    let steps: Vec<(String, Outcome, Outcome)> = hadoop_steps
        .iter()
        .zip(&spindle_steps)
        .map(|(h, s)| {
            (
                h.name.to_owned(),
                outcome(h, &hadoop_normaliser),
                outcome(s, &spindle_normaliser),
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

/// `docs/compatibility.md`'s "Known differences" has one bullet per id of [`KNOWN`],
/// naming the side its entries name, and no other (the page's other sections are not
/// checked). Needs neither Hadoop nor a build of Spindle.
#[test]
fn docs_compatibility_lists_the_known_differences() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs")
        .join("compatibility.md");
    let doc = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let problems = check_doc(KNOWN, &doc);
    assert!(
        problems.is_empty(),
        "{} and KNOWN (integration/tests/differential.rs) differ:\n{}",
        path.display(),
        problems.join("\n")
    );
}
