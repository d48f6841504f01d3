use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationId, NodeId};

use super::LogAggregationStatus::{
    Disabled, Failed, NotStart, Running, RunningWithFailure, Succeeded, TimeOut,
};
use super::*;

const TIMEOUT: u64 = 1_000;

fn enabled() -> LogAggregations {
    LogAggregations::new(LogAggregationConf {
        enabled: true,
        status_timeout_ms: TIMEOUT,
        max_diagnostics: 2,
    })
}

fn app() -> ApplicationId {
    ApplicationId::new(1, 1)
}

fn node(n: i32) -> NodeId {
    NodeId::new(format!("nm{n}"), 45454)
}

#[test]
fn disabled_aggregation_is_disabled_whatever_nodes_report() {
    let mut logs = LogAggregations::new(LogAggregationConf::default());
    logs.ran_on(app(), &node(1));
    logs.report(app(), &node(1), Running, String::new());
    logs.app_ended(app(), 0);
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Disabled);
    assert!(logs.is_empty(), "nothing is kept when disabled");
}

#[test]
fn not_start_until_a_node_reports_then_running_then_succeeded_once_ended() {
    let mut logs = enabled();
    assert_eq!(logs.status(&app()), NotStart);
    logs.ran_on(app(), &node(1));
    logs.ran_on(app(), &node(2));
    assert_eq!(logs.status(&app()), NotStart);
    logs.app_ended(app(), 10);
    assert_eq!(logs.status(&app()), NotStart);
    logs.report(app(), &node(1), Running, String::new());
    assert_eq!(logs.status(&app()), Running);
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Running, "node 2 has not finished");
    logs.report(app(), &node(2), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Succeeded);
    // All succeeded: the per-node reports are let go, as in Hadoop.
    assert!(logs.node_reports(&app()).is_empty());
}

#[test]
fn one_failed_node_makes_the_application_failed_once_all_are_final() {
    let mut logs = enabled();
    for n in 1..=3 {
        logs.ran_on(app(), &node(n));
    }
    logs.app_ended(app(), 0);
    logs.report(
        app(),
        &node(1),
        RunningWithFailure,
        "upload of a file failed".into(),
    );
    assert_eq!(logs.status(&app()), RunningWithFailure);
    logs.report(app(), &node(1), Failed, "final words".into());
    assert_eq!(logs.status(&app()), Running, "two nodes still aggregate");
    logs.report(app(), &node(2), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Running);
    logs.report(app(), &node(3), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Failed);
    // Only the failed node's report is kept, with its failure messages. As
    // in Hadoop, a later report of a node that has one changes its status,
    // and its message only when RUNNING.
    let kept = logs.node_reports(&app());
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, node(1));
    assert_eq!(kept[0].1.status, Failed);
    assert_eq!(kept[0].1.diagnostics, "");
    assert_eq!(
        logs.failure_messages(&app(), &node(1)),
        "upload of a file failed"
    );
    // Final: later reports change nothing.
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Failed);
}

#[test]
fn final_reports_before_the_application_ends_settle_when_it_ends() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Running, "the application still runs");
    logs.app_ended(app(), 5);
    assert_eq!(logs.status(&app()), Succeeded);
}

#[test]
fn running_with_failure_sticks_until_a_final_report() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.ran_on(app(), &node(2));
    logs.app_ended(app(), 0);
    logs.report(app(), &node(1), RunningWithFailure, "a file failed".into());
    assert_eq!(logs.status(&app()), RunningWithFailure);
    // A plain RUNNING does not hide the failure.
    logs.report(app(), &node(1), Running, "rolling".into());
    assert_eq!(logs.status(&app()), RunningWithFailure);
    assert_eq!(logs.failure_messages(&app(), &node(1)), "a file failed");
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Running, "node 2 has not finished");
    logs.report(app(), &node(2), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Succeeded);
}

#[test]
fn nodes_without_a_final_report_time_out_after_the_timeout() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.ran_on(app(), &node(2));
    logs.ran_on(app(), &node(3));
    logs.report(app(), &node(1), Running, String::new());
    // The time-out counts from the application's end, not from the start.
    logs.expire(10 * TIMEOUT);
    assert_eq!(logs.status(&app()), Running);
    logs.app_ended(app(), 100);
    logs.report(app(), &node(2), Succeeded, String::new());
    logs.expire(100 + TIMEOUT);
    assert_eq!(logs.status(&app()), Running, "not past the deadline yet");
    logs.expire(101 + TIMEOUT);
    assert_eq!(logs.status(&app()), TimeOut);
    let reports = logs.node_reports(&app());
    let statuses: Vec<_> = reports.iter().map(|(_, r)| r.status).collect();
    assert_eq!(statuses, vec![TimeOut, Succeeded, TimeOut]);
    // TIME_OUT is final: a late SUCCEEDED changes nothing.
    logs.report(app(), &node(1), Succeeded, String::new());
    assert_eq!(logs.status(&app()), TimeOut);
}

#[test]
fn a_failed_node_wins_over_timed_out_ones() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.ran_on(app(), &node(2));
    logs.app_ended(app(), 0);
    logs.report(app(), &node(1), Failed, String::new());
    logs.expire(TIMEOUT + 1);
    assert_eq!(logs.status(&app()), Failed);
}

#[test]
fn an_application_no_node_ran_stays_not_start() {
    let mut logs = enabled();
    logs.app_ended(app(), 0);
    logs.expire(TIMEOUT * 5);
    assert_eq!(logs.status(&app()), NotStart);
    // A node reporting late still counts (Hadoop takes reports of any node).
    logs.report(app(), &node(4), Succeeded, String::new());
    assert_eq!(logs.status(&app()), Succeeded);
}

#[test]
fn nodes_are_added_only_while_the_application_runs_and_once_each() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.ran_on(app(), &node(1));
    logs.report(app(), &node(1), Running, "one".into());
    logs.ran_on(app(), &node(1));
    assert_eq!(logs.node_reports(&app()).len(), 1);
    assert_eq!(logs.node_reports(&app())[0].1.status, Running);
    logs.app_ended(app(), 0);
    logs.ran_on(app(), &node(2));
    assert_eq!(logs.node_reports(&app()).len(), 1);
}

#[test]
fn running_messages_keep_the_newest_few() {
    let mut logs = enabled();
    for m in ["a", "b", "c"] {
        logs.report(app(), &node(1), Running, m.into());
    }
    assert_eq!(logs.node_reports(&app())[0].1.diagnostics, "b\nc");
    let long = "x".repeat(MAX_DIAGNOSTIC_CHARS * 2);
    logs.report(app(), &node(2), Failed, long);
    let kept = &logs.node_reports(&app())[1].1.diagnostics;
    assert_eq!(kept.chars().count(), MAX_DIAGNOSTIC_CHARS);
}

#[test]
fn forgetting_an_application_drops_its_reports() {
    let mut logs = enabled();
    logs.ran_on(app(), &node(1));
    logs.app_ended(app(), 0);
    logs.forget(&app());
    assert!(logs.is_empty());
    logs.expire(TIMEOUT * 2);
    assert_eq!(logs.status(&app()), NotStart);
}

#[test]
fn settings_come_from_the_configuration_with_hadoop_defaults() {
    let conf = Configuration::with_defaults();
    assert_eq!(
        LogAggregationConf::from_conf(&conf).expect("defaults"),
        LogAggregationConf::default()
    );
    let mut conf = Configuration::with_defaults();
    conf.set(ENABLED_KEY, "true");
    conf.set(STATUS_TIMEOUT_KEY, "0");
    conf.set(MAX_DIAGNOSTICS_KEY, "3");
    let read = LogAggregationConf::from_conf(&conf).expect("settings");
    assert!(read.enabled);
    assert_eq!(read.status_timeout_ms, DEFAULT_STATUS_TIMEOUT_MS);
    assert_eq!(read.max_diagnostics, 3);
    conf.set(STATUS_TIMEOUT_KEY, "2500");
    let read = LogAggregationConf::from_conf(&conf).expect("settings");
    assert_eq!(read.status_timeout_ms, 2500);
    conf.set(STATUS_TIMEOUT_KEY, "soon");
    assert!(LogAggregationConf::from_conf(&conf).is_err());
}
