//! RM restart with recovery on (issue S9), with the real Hadoop 3.3.4 CLI:
//! the RM process is killed with SIGKILL and started again on the same store.
//! Without the client jars (integration/setup-clients.sh) the test prints
//! `SKIP:` and passes, except under CI, where it fails.

use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value, AppList};
use spindle_integration::cluster::wait_until;
use spindle_integration::{AppSubmission, CliOutput, Cluster, HadoopClients};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(300);

fn app_list(cluster: &Cluster) -> (AppList, CliOutput) {
    let out = cluster.yarn(["application", "-list", "-appStates", "ALL"]);
    out.assert_success();
    match AppList::parse(&out.stdout) {
        Ok(list) => (list, out),
        Err(e) => panic!("cannot parse the application list: {e:#}\n{out}"),
    }
}

fn status(cluster: &Cluster, id: &str) -> (Vec<(String, String)>, CliOutput) {
    let out = cluster.yarn(["application", "-status", id]);
    (parse_report(&out.stdout), out)
}

#[test]
fn without_work_preserving_recovery_applications_survive_a_kill_9_of_the_resourcemanager() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut cluster = match Cluster::builder()
        .nodemanagers(1)
        .rm_property("yarn.resourcemanager.recovery.enabled", true)
        // This test is about the restart without work-preserving recovery:
        // the unfinished application gets a new attempt.
        .rm_property(
            "yarn.resourcemanager.work-preserving-recovery.enabled",
            false,
        )
        .start(&clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };

    // One application killed (finished), one whose AM runs.
    let submit = |name: &str| match cluster.submit_app(&AppSubmission::new(name, "sleep 300")) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    };
    let killed = submit("restart-killed");
    let running = submit("restart-running");
    cluster
        .yarn(["application", "-kill", killed.as_str()])
        .assert_success();

    if let Err(e) = cluster.kill_rm() {
        panic!("kill -9 of the RM: {e:#}");
    }
    if let Err(e) = cluster.restart_rm(TIMEOUT) {
        panic!(
            "the RM did not start again: {e:#}\n{}",
            cluster.log_report()
        );
    }

    // Both are listed again; the killed one as it ended.
    let (list, out) = app_list(&cluster);
    assert_eq!(
        list.find(&killed).map(|a| a.state.as_str()),
        Some("KILLED"),
        "{out}\n{}",
        cluster.log_report()
    );
    assert!(list.find(&running).is_some(), "{out}");
    let (report, out) = status(&cluster, &killed);
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("KILLED"),
        "{out}"
    );

    // The unfinished one runs again in a second attempt (its first AM is
    // killed when its NodeManager re-registers).
    let mut last = String::new();
    let second = wait_until(TIMEOUT, POLL, || {
        let out = cluster.yarn(["applicationattempt", "-list", running.as_str()]);
        last = out.to_string();
        out.success()
            && out
                .stdout
                .contains("Total number of application attempts :2")
    });
    assert!(
        second,
        "no second attempt:\n{last}\n{}",
        cluster.log_report()
    );
    // Its AM container is of the new RM epoch (1), as Hadoop's ids are.
    let attempt = format!(
        "{}_000002",
        running.replacen("application_", "appattempt_", 1)
    );
    let epoch_one = wait_until(TIMEOUT, POLL, || {
        let out = cluster.yarn(["applicationattempt", "-status", attempt.as_str()]);
        last = out.to_string();
        out.success() && out.stdout.contains("AMContainer : container_e01_")
    });
    assert!(epoch_one, "no epoch in the AM container's id:\n{last}");

    cluster
        .yarn(["application", "-kill", running.as_str()])
        .assert_success();
    let (report, out) = status(&cluster, &running);
    assert_eq!(report_value(&report, "State"), Some("KILLED"), "{out}");
}
