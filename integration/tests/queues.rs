//! Queues seen through the real Hadoop 3.3.4 clients: submit ACLs of the capacity
//! scheduler, and the fair scheduler's allocation file (placement rules, running-app
//! limits, queue reports) — each submission made by Hadoop's own `YarnClient`, each
//! state read back with the `yarn` CLI.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value, AppList};
use spindle_integration::{AppSubmission, Cluster, HadoopClients, NodeManagerSpec};

/// Time for an application to reach a state (every poll starts a JVM: ~1 s).
const STATE_TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(300);

fn start(clients: &HadoopClients, builder: spindle_integration::ClusterBuilder) -> Cluster {
    match builder
        .nodemanager(NodeManagerSpec::new(8192, 8))
        .start(clients)
    {
        Ok(cluster) => cluster,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    }
}

fn property(name: &str, value: &str) -> String {
    format!("  <property><name>{name}</name><value>{value}</value></property>\n")
}

/// `yarn application -status ID`, parsed.
fn app_report(cluster: &Cluster, id: &str) -> Vec<(String, String)> {
    let out = cluster.yarn(["application", "-status", id]);
    out.assert_success();
    parse_report(&out.stdout)
}

/// Polls `yarn application -status` until the application is in `state`.
#[track_caller]
fn wait_for_state(cluster: &Cluster, id: &str, state: &str) -> Vec<(String, String)> {
    let deadline = std::time::Instant::now() + STATE_TIMEOUT;
    loop {
        let report = app_report(cluster, id);
        if report_value(&report, "State") == Some(state) {
            return report;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "{id} did not reach {state} within {STATE_TIMEOUT:?}: {report:?}\n{}",
                cluster.log_report()
            );
        }
        std::thread::sleep(POLL);
    }
}

#[track_caller]
fn submit(cluster: &Cluster, app: &AppSubmission) -> String {
    match cluster.submit_app(app) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    }
}

/// With `yarn.acl.enable`, a user outside a queue's `acl_submit_applications` (and
/// outside every ancestor's) is refused at submission with Hadoop's
/// AccessControlException, while a listed user is accepted into the same queue.
#[test]
fn submit_acl_refuses_users_outside_the_queue_acl() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.b.capacity", "50"),
        // Unset, root's ACLs would let everyone in everywhere (Hadoop's default "*").
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.a.acl_submit_applications", "alice"),
        ("root.b.acl_submit_applications", "bob"),
    ] {
        xml.push_str(&property(&format!("yarn.scheduler.capacity.{name}"), value));
    }
    xml.push_str("</configuration>\n");
    let cluster = start(
        &clients,
        Cluster::builder()
            .rm_property("yarn.acl.enable", "true")
            .conf_file("capacity-scheduler.xml", xml),
    );

    let refused = cluster.submit_app(
        &AppSubmission::new("spindle-it-acl-refused", "sleep 1")
            .user("mallory")
            .queue("a"),
    );
    let err = match refused {
        Ok(id) => panic!(
            "mallory is not in root.a's submit ACL, yet {id} was accepted: {:?}",
            app_report(&cluster, &id)
        ),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("org.apache.hadoop.security.AccessControlException"),
        "the client should see Hadoop's AccessControlException:\n{err}"
    );
    assert!(
        err.contains("User mallory does not have permission to submit application_")
            && err.contains(" to queue a"),
        "the refusal should carry Hadoop's message:\n{err}"
    );

    // bob may submit to b only; alice to a.
    let b_refused = cluster.submit_app(
        &AppSubmission::new("spindle-it-acl-wrong-queue", "sleep 1")
            .user("bob")
            .queue("a"),
    );
    assert!(b_refused.is_err(), "bob is not in root.a's submit ACL");
    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-acl-allowed", "sleep 1")
            .user("alice")
            .queue("a"),
    );
    // Its AM ("sleep 1") never registers, so the attempt fails as in Hadoop; what
    // matters here is that the RM accepted it into root.a and ran its AM container.
    let report = wait_for_state(&cluster, &id, "FAILED");
    assert_eq!(report_value(&report, "User"), Some("alice"), "{report:?}");
    assert_eq!(report_value(&report, "Queue"), Some("a"), "{report:?}");
    let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
    assert!(
        diagnostics.contains("AM Container for appattempt_") && !diagnostics.contains("permission"),
        "alice's AM container should have run: {report:?}"
    );

    // Refused submissions leave nothing behind.
    let out = cluster.yarn(["application", "-list", "-appStates", "ALL"]);
    out.assert_success();
    let list = AppList::parse(&out.stdout).expect("application list parses");
    assert_eq!(list.total, 1, "only alice's application exists:\n{out}");
}

const FAIR_ALLOCATIONS: &str = r#"<?xml version="1.0"?>
<allocations>
  <queue name="etl">
    <weight>3</weight>
  </queue>
  <queue name="adhoc">
    <weight>1</weight>
    <maxRunningApps>1</maxRunningApps>
  </queue>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>
"#;

/// The fair scheduler, chosen by class name, runs from an unchanged allocation file:
/// the `specified` rule places applications in existing queues and `reject` refuses
/// the rest with Hadoop's reason; `maxRunningApps` keeps a second application of a
/// queue ACCEPTED (not running) until the first one ends; `yarn queue -status` reports
/// the fair queues.
#[test]
fn fair_scheduler_places_and_limits_applications_by_its_allocation_file() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(
        &clients,
        Cluster::builder()
            .rm_property(
                "yarn.resourcemanager.scheduler.class",
                "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
            )
            .rm_property("yarn.scheduler.fair.allocation.file", "fair-scheduler.xml")
            .conf_file("fair-scheduler.xml", FAIR_ALLOCATIONS),
    );

    for queue in ["root.etl", "root.adhoc"] {
        let out = cluster.yarn(["queue", "-status", queue]);
        out.assert_success()
            .assert_stdout_contains("Queue Information : ");
        let report = parse_report(&out.stdout);
        assert_eq!(report_value(&report, "State"), Some("RUNNING"), "{out}");
    }

    // Placed by `specified` into the existing queue. (Its AM, "sleep 1", never
    // registers, so the attempt fails as in Hadoop; the queue is what is checked.)
    let etl = submit(
        &cluster,
        &AppSubmission::new("spindle-it-fair-etl", "sleep 1")
            .user("carol")
            .queue("etl"),
    );
    let report = wait_for_state(&cluster, &etl, "FAILED");
    assert_eq!(
        report_value(&report, "Queue"),
        Some("root.etl"),
        "{report:?}"
    );

    // An unknown queue falls through to `reject`: the application fails at once, and
    // YarnClient.submitApplication reports it with Hadoop 3.3's reason.
    let rejected = cluster.submit_app(
        &AppSubmission::new("spindle-it-fair-rejected", "sleep 1")
            .user("carol")
            .queue("nowhere"),
    );
    let err = match rejected {
        Ok(id) => panic!(
            "the reject rule should refuse, yet {id} was accepted: {:?}",
            app_report(&cluster, &id)
        ),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("Reject application application_")
            && err.contains("submitted by user carol application rejected by placement rules."),
        "the client should see the placement policy's refusal:\n{err}"
    );

    // maxRunningApps=1: the second adhoc application gets no AM container while the
    // first one runs, and gets one as soon as the first ends.
    let first = submit(
        &cluster,
        &AppSubmission::new("spindle-it-fair-adhoc-1", "sleep 60")
            .user("dave")
            .queue("adhoc"),
    );
    let second = submit(
        &cluster,
        &AppSubmission::new("spindle-it-fair-adhoc-2", "sleep 60")
            .user("dave")
            .queue("adhoc"),
    );
    wait_for_am_container(&cluster, &first);
    // An application submitted after the second one, in another queue, gets its AM: the
    // scheduler has placed containers since the second arrived (an observed order, not a
    // pause), and the second still has none.
    let later = submit(
        &cluster,
        &AppSubmission::new("spindle-it-fair-etl-later", "sleep 60")
            .user("carol")
            .queue("etl"),
    );
    wait_for_am_container(&cluster, &later);
    let attempts = cluster.yarn(["applicationattempt", "-list", &second]);
    attempts.assert_success();
    assert!(
        !attempts.stdout.contains("container_"),
        "the queue's second application must not run while the first does:\n{attempts}"
    );
    let out = cluster.yarn(["queue", "-status", "root.adhoc"]);
    out.assert_success();
    let adhoc = parse_report(&out.stdout);
    let current = report_value(&adhoc, "Current Capacity").unwrap_or_default();
    assert!(
        current.ends_with('%') && current != "0.00%" && current != ".00%",
        "root.adhoc runs an AM, so its current capacity is above zero:\n{out}"
    );
    cluster
        .yarn(["application", "-kill", &first])
        .assert_success();
    wait_for_am_container(&cluster, &second);
    let report = app_report(&cluster, &second);
    assert_eq!(
        report_value(&report, "Queue"),
        Some("root.adhoc"),
        "{report:?}"
    );
    for app in [&second, &later] {
        cluster.yarn(["application", "-kill", app]).assert_success();
    }
}

/// Polls `yarn applicationattempt -list` until the application's attempt has an AM
/// container.
#[track_caller]
fn wait_for_am_container(cluster: &Cluster, id: &str) {
    let deadline = std::time::Instant::now() + STATE_TIMEOUT;
    loop {
        let out = cluster.yarn(["applicationattempt", "-list", id]);
        out.assert_success();
        if out.stdout.contains("container_") {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "{id} got no AM container within {STATE_TIMEOUT:?}:\n{out}\n{}",
                cluster.log_report()
            );
        }
        std::thread::sleep(POLL);
    }
}

/// `yarn queue -status <queue>`'s "Current Capacity".
fn current_capacity(cluster: &Cluster, queue: &str) -> String {
    let out = cluster.yarn(["queue", "-status", queue]);
    out.assert_success();
    report_value(&parse_report(&out.stdout), "Current Capacity")
        .unwrap_or_default()
        .to_string()
}

/// `yarn application -movetoqueue` and `-changeQueue` move a running application
/// between leaves with Hadoop's answers: the report shows the new queue and the AM
/// container's usage leaves the old leaf for the new one; a queue that does not exist
/// and a parent queue are refused with Hadoop's messages, and the application stays.
/// Then `-updateLifetime` sets its lifetime, which the report shows and the RM
/// enforces.
#[test]
fn applications_move_between_queues_and_get_a_lifetime_through_the_cli() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.b.capacity", "50"),
    ] {
        xml.push_str(&property(&format!("yarn.scheduler.capacity.{name}"), value));
    }
    xml.push_str("</configuration>\n");
    let cluster = start(
        &clients,
        Cluster::builder().conf_file("capacity-scheduler.xml", xml),
    );
    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-move", "sleep 600").queue("a"),
    );
    wait_for_am_container(&cluster, &id);
    let idle = |c: &str| c == "0.00%" || c == ".00%";
    assert!(!idle(&current_capacity(&cluster, "a")), "a runs the AM");
    assert!(idle(&current_capacity(&cluster, "b")), "b runs nothing");

    let out = cluster.yarn(["application", "-movetoqueue", &id, "-queue", "nosuch"]);
    out.assert_exit_failure();
    assert!(
        out.stderr
            .contains("The specified Queue: nosuch doesn't exist"),
        "{out}"
    );
    let out = cluster.yarn(["application", "-movetoqueue", &id, "-queue", "root"]);
    out.assert_exit_failure();
    assert!(
        out.stderr
            .contains("The specified Queue: root is not a Leaf Queue."),
        "{out}"
    );
    assert_eq!(report_value(&app_report(&cluster, &id), "Queue"), Some("a"));

    let out = cluster.yarn(["application", "-movetoqueue", &id, "-queue", "b"]);
    out.assert_success()
        .assert_stdout_contains(&format!("Moving application {id} to queue b"))
        .assert_stdout_contains("Successfully completed move.");
    let report = app_report(&cluster, &id);
    assert_eq!(report_value(&report, "Queue"), Some("b"), "{report:?}");
    // (Its AM is `sleep`, which never registers: ACCEPTED, AM container running.)
    assert_eq!(
        report_value(&report, "State"),
        Some("ACCEPTED"),
        "{report:?}"
    );
    assert!(
        idle(&current_capacity(&cluster, "a")),
        "the AM's usage left a"
    );
    assert!(!idle(&current_capacity(&cluster, "b")), "and went to b");

    // The newer option, by full path.
    let out = cluster.yarn(["application", "-appId", &id, "-changeQueue", "root.a"]);
    out.assert_success()
        .assert_stdout_contains("Successfully completed move.");
    assert_eq!(
        report_value(&app_report(&cluster, &id), "Queue"),
        Some("root.a")
    );
    assert!(!idle(&current_capacity(&cluster, "a")), "back in a");
    assert!(
        idle(&current_capacity(&cluster, "b")),
        "b runs nothing again"
    );

    // A lifetime: reported, then enforced (the RM kills the application when it
    // passes, as Hadoop's lifetime monitor does).
    let out = cluster.yarn(["application", "-appId", &id, "-updateLifetime", "3600"]);
    out.assert_success().assert_stdout_contains(&format!(
        "Successfully updated LIFETIME of an application {id}. New expiry time is "
    ));
    let timeout = report_value(&app_report(&cluster, &id), "TimeoutType")
        .unwrap_or_default()
        .to_string();
    assert!(
        timeout.starts_with("LIFETIME\tExpiryTime : ") && !timeout.contains("UNLIMITED"),
        "{timeout}"
    );
    let out = cluster.yarn(["application", "-appId", &id, "-updateLifetime", "2"]);
    out.assert_success();
    let report = wait_for_state(&cluster, &id, "KILLED");
    assert_eq!(
        report_value(&report, "Diagnostics"),
        Some("Application is killed by ResourceManager as it has exceeded the lifetime period."),
        "{report:?}"
    );
}
