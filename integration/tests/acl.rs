//! Application ACLs seen through the real Hadoop 3.3.4 clients: with `yarn.acl.enable`,
//! who may kill an application (`yarn application -kill`), who sees its full report
//! and its attempts, and what everybody else is told: Hadoop's exception and message.
//!
//! Submissions (with application ACLs in the AM launch context) go through Hadoop's own
//! `YarnClient` (`integration/java/AppClient.java`); the rest through the `yarn` CLI,
//! as the user `HADOOP_USER_NAME` names. No NodeManager runs: the applications stay
//! ACCEPTED, which is all a kill or a report needs.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::{CliOutput, Cluster, ClusterBuilder, HadoopClients};

const STATE_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(300);

fn property(name: &str, value: &str) -> String {
    format!("  <property><name>{name}</name><value>{value}</value></property>\n")
}

/// One leaf, `default`, open to every submitter and administered by `dave`; the
/// root's ACLs set to nobody (unset, Hadoop's root ACLs let everyone administer
/// every queue).
fn capacity_scheduler_xml() -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "default"),
        ("root.default.capacity", "100"),
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.default.acl_submit_applications", "*"),
        ("root.default.acl_administer_queue", "dave"),
    ] {
        xml.push_str(&property(&format!("yarn.scheduler.capacity.{name}"), value));
    }
    xml.push_str("</configuration>\n");
    xml
}

fn start(clients: &HadoopClients, acl_enabled: bool) -> Cluster {
    let builder = ClusterBuilder::default()
        .rm_property("yarn.acl.enable", acl_enabled)
        .rm_property("yarn.admin.acl", "alice")
        .conf_file("capacity-scheduler.xml", capacity_scheduler_xml());
    match builder.start(clients) {
        Ok(cluster) => cluster,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    }
}

/// `AppClient <args>` as `user`.
fn app_client(cluster: &Cluster, user: &str, args: &[&str]) -> CliOutput {
    let classes = match cluster
        .clients()
        .expect("started with the Hadoop clients")
        .compile_java("AppClient")
    {
        Ok(dir) => dir,
        Err(e) => panic!("cannot compile AppClient: {e:#}"),
    };
    let mut full = vec!["AppClient"];
    full.extend_from_slice(args);
    match cluster
        .yarn_command()
        .classpath(classes)
        .env("HADOOP_USER_NAME", user)
        .run(&full)
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run AppClient: {e:#}"),
    }
}

/// Submits a `sleep 300` application as `user`, with `extra` options; returns its id.
#[track_caller]
fn submit(cluster: &Cluster, user: &str, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["submit", "--name", name];
    args.extend_from_slice(extra);
    let out = app_client(cluster, user, &args);
    if !out.success() {
        panic!(
            "{user} could not submit {name}:\n{out}\n{}",
            cluster.log_report()
        );
    }
    out.stdout.trim().to_owned()
}

/// `yarn <args>` as `user`.
fn yarn_as(cluster: &Cluster, user: &str, args: &[&str]) -> CliOutput {
    match cluster
        .yarn_command()
        .env("HADOOP_USER_NAME", user)
        .run(args)
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run the yarn launcher: {e:#}"),
    }
}

/// `yarn application -status ID` as `user`, parsed.
#[track_caller]
fn status_as(cluster: &Cluster, user: &str, id: &str) -> Vec<(String, String)> {
    let out = yarn_as(cluster, user, &["application", "-status", id]);
    out.assert_success();
    parse_report(&out.stdout)
}

#[track_caller]
fn wait_for_state(cluster: &Cluster, id: &str, state: &str) {
    let deadline = std::time::Instant::now() + STATE_TIMEOUT;
    loop {
        let report = status_as(cluster, "bob", id);
        if report_value(&report, "State") == Some(state) {
            return;
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

/// `yarn application -kill ID` as `user`, which must succeed, and the application is
/// KILLED with the killer named in its diagnostics.
#[track_caller]
fn kill_succeeds(cluster: &Cluster, user: &str, id: &str) {
    let out = yarn_as(cluster, user, &["application", "-kill", id]);
    if !out.success() {
        panic!(
            "{user} could not kill {id}:\n{out}\n{}",
            cluster.log_report()
        );
    }
    wait_for_state(cluster, id, "KILLED");
    let report = status_as(cluster, "bob", id);
    let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
    assert!(
        diagnostics.contains(&format!("killed by user {user}")),
        "{id}: {report:?}"
    );
}

/// With `yarn.acl.enable`, `yarn.admin.acl=alice` and `dave` administering the queue:
/// mallory cannot kill bob's application and the CLI prints Hadoop's refusal (a
/// YarnException carrying `java.security.AccessControlException: User mallory cannot
/// perform operation MODIFY_APP on <id>`), and the application keeps running. Its
/// owner, the administrator, a user in the application's MODIFY_APP ACL and the
/// queue's administrator may kill it.
#[test]
fn kill_is_refused_without_modify_app_and_allowed_to_those_hadoop_allows() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, true);
    let with_acl = submit(&cluster, "bob", "acl-carol", &["--modify-acl", "carol"]);
    wait_for_state(&cluster, &with_acl, "ACCEPTED");

    let refused = yarn_as(&cluster, "mallory", &["application", "-kill", &with_acl]);
    refused.assert_exit_failure();
    let expected = format!(
        "org.apache.hadoop.yarn.exceptions.YarnException: java.security.AccessControlException: \
         User mallory cannot perform operation MODIFY_APP on {with_acl}"
    );
    assert!(
        refused.stderr.contains(&expected),
        "the CLI should print Hadoop's refusal ({expected}):\n{refused}"
    );
    let report = status_as(&cluster, "bob", &with_acl);
    assert_eq!(
        report_value(&report, "State"),
        Some("ACCEPTED"),
        "mallory's kill must change nothing: {report:?}"
    );

    // In the application's own MODIFY_APP ACL.
    kill_succeeds(&cluster, "carol", &with_acl);
    // The owner, the administrator (yarn.admin.acl), the queue's administrator.
    for killer in ["bob", "alice", "dave"] {
        let id = submit(&cluster, "bob", &format!("acl-{killer}"), &[]);
        wait_for_state(&cluster, &id, "ACCEPTED");
        kill_succeeds(&cluster, killer, &id);
    }
}

/// With `yarn.acl.enable`, a caller without VIEW_APP gets the application's report
/// with what Hadoop hides blanked (`RMAppImpl.createAndGetApplicationReport` with
/// `allowAccess=false`: diagnostics N/A, no attempt, host N/A) and is refused its
/// attempts with Hadoop's YarnException; a user in the VIEW_APP ACL sees everything.
#[test]
fn reports_and_attempts_follow_view_app() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, true);
    let id = submit(&cluster, "bob", "acl-view", &["--view-acl", "victor"]);
    wait_for_state(&cluster, &id, "ACCEPTED");
    let full = status_as(&cluster, "bob", &id);
    assert_eq!(report_value(&full, "Diagnostics"), Some(""), "{full:?}");

    let hidden = status_as(&cluster, "mallory", &id);
    assert_eq!(report_value(&hidden, "User"), Some("bob"), "{hidden:?}");
    assert_eq!(
        report_value(&hidden, "State"),
        Some("ACCEPTED"),
        "{hidden:?}"
    );
    assert_eq!(
        report_value(&hidden, "Diagnostics"),
        Some("N/A"),
        "{hidden:?}"
    );
    assert_eq!(
        report_value(&hidden, "Tracking-URL"),
        Some("N/A"),
        "{hidden:?}"
    );
    assert_eq!(report_value(&hidden, "AM Host"), Some("N/A"), "{hidden:?}");

    let attempts = yarn_as(&cluster, "mallory", &["applicationattempt", "-list", &id]);
    attempts.assert_exit_failure();
    let expected = format!("User mallory does not have privilege to see this application {id}");
    assert!(
        attempts.stderr.contains(&expected),
        "the CLI should print Hadoop's refusal ({expected}):\n{attempts}"
    );
    for viewer in ["bob", "victor", "alice", "dave"] {
        let out = yarn_as(&cluster, viewer, &["applicationattempt", "-list", &id]);
        out.assert_success();
        assert!(
            out.stdout
                .contains("Total number of application attempts :1"),
            "{viewer} should see the attempt:\n{out}"
        );
    }
}

/// Without `yarn.acl.enable` (Hadoop's default) nothing is checked: anyone may kill.
#[test]
fn without_acl_enable_anyone_may_kill() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, false);
    let id = submit(&cluster, "bob", "acl-off", &[]);
    wait_for_state(&cluster, &id, "ACCEPTED");
    kill_succeeds(&cluster, "mallory", &id);
}
