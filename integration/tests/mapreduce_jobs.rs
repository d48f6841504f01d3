//! Real Hadoop MapReduce 3.3.4 on Spindle: the stock `yarn jar
//! hadoop-mapreduce-examples-3.3.4.jar` and `mapred job` clients (integration/bin/yarn,
//! integration/bin/mapred, the unshaded jars of integration/setup-maven.sh mapreduce) with
//! conf/mapred-site.xml, the MapReduce AM and its task JVMs in Spindle containers, the
//! reducers fetching map outputs from the NodeManagers' `mapreduce_shuffle`.
//!
//! Without the client jars or the MapReduce jars the tests print `SKIP:` and pass, except
//! under CI, where they fail.

mod web_http;

use std::time::Duration;

use spindle_integration::mapreduce::{job_id_of, shuffle_nodemanager, JobRun};
use spindle_integration::{wait_for, Cluster, HadoopClients, HadoopConf, MapReduce, MapReduceJars};

use web_http::get;

const POLL: Duration = Duration::from_millis(300);
const WAIT: Duration = Duration::from_secs(300);

fn cluster_with(clients: &HadoopClients, nms: &[(u64, u32)]) -> Cluster {
    let mut builder = Cluster::builder();
    for &(memory_mb, vcores) in nms {
        builder = builder.nodemanager(shuffle_nodemanager(memory_mb, vcores).expect("a port"));
    }
    builder.start(clients).expect("cluster starts")
}

fn file_staging(cluster: &Cluster) -> String {
    format!("file://{}", cluster.root().join("staging").display())
}

fn running_app(cluster: &Cluster) -> Option<String> {
    let list = cluster.yarn(["application", "-list", "-appStates", "RUNNING"]);
    list.stdout
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("application_") && w.matches('_').count() == 2)
        .map(str::to_string)
}

/// A value of `mapred job -status`'s "Name: value" lines.
fn status_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(name)?.trim().strip_prefix(':'))
        .map(str::trim)
}

/// A job that cannot get its first map container (a map needs the whole node, the AM
/// holds part of it) stays RUNNING with its AM up: the AM answers `mapred job -status`
/// and `-list` over its client protocol, its web services come back through the RM's
/// proxy, and `mapred job -kill` ends it through the AM.
#[test]
fn a_running_job_answers_through_its_am_and_the_rm_proxy() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let cluster = cluster_with(&clients, &[(1024, 4)]);
    let mut waiting_maps = HadoopConf::new();
    waiting_maps.set("mapreduce.map.memory.mb", 1024);
    let mut mr = MapReduce::new(&cluster, &jars, &file_staging(&cluster), &waiting_maps)
        .expect("mapred-site.xml");
    let history = mr
        .start_history_server()
        .expect("the JobHistoryServer starts");
    let client = mr.examples_in_background("pi", &["2", "10"]);
    let app = wait_for(WAIT, POLL, || running_app(&cluster))
        .unwrap_or_else(|| panic!("the pi job never ran:\n{}", cluster.log_report()));
    let job = job_id_of(&app).expect("a job id");

    // The AM's REST API through the RM's web proxy, once the AM registered its web app.
    let web = cluster.rm().webapp;
    let jobs = wait_for(WAIT, POLL, || {
        let reply = web_http::try_request(
            web,
            "GET",
            &format!("/proxy/{app}/ws/v1/mapreduce/jobs"),
            &[("Accept", "application/json")],
        )
        .ok()?;
        (reply.status == 200)
            .then(|| serde_json::from_slice::<serde_json::Value>(&reply.body).ok())
            .flatten()
    })
    .unwrap_or_else(|| {
        let last = get(web, &format!("/proxy/{app}/ws/v1/mapreduce/jobs"));
        panic!(
            "the MapReduce AM's web services never came through the proxy; last:\n{last}\n{}",
            cluster.log_report()
        )
    });
    let listed = &jobs["jobs"]["job"][0];
    assert_eq!(listed["id"], job.as_str(), "{jobs}");
    assert_eq!(listed["state"], "RUNNING", "{jobs}");
    assert_eq!(listed["mapsTotal"], 2, "{jobs}");
    let info = get(web, &format!("/proxy/{app}/ws/v1/mapreduce/info"));
    assert_eq!(info.status, 200, "{info}");
    assert!(info.text().contains(&app), "{info}");

    // `mapred job -status` asks the AM (the application report names its RPC address).
    let status = mr.mapred(&["job", "-status", &job]).expect("mapred runs");
    status.assert_success();
    assert_eq!(
        status_value(&status.stdout, "Job state"),
        Some("RUNNING"),
        "{status}"
    );
    assert_eq!(
        status_value(&status.stdout, "Number of maps"),
        Some("2"),
        "{status}"
    );
    let list = mr.mapred(&["job", "-list"]).expect("mapred runs");
    list.assert_success();
    assert!(list.stdout.contains(&job), "{list}");

    // Killed through the AM: the client's wait ends, the application is KILLED.
    let kill = mr.mapred(&["job", "-kill", &job]).expect("mapred runs");
    kill.assert_success();
    assert!(kill.stdout.contains(&format!("Killed job {job}")), "{kill}");
    let run: JobRun = client.join().expect("client thread").expect("client runs");
    assert!(
        !run.succeeded(),
        "a killed job is no success:\n{}",
        run.output
    );
    assert_eq!(run.job_id.as_deref(), Some(job.as_str()), "{}", run.output);
    let report = cluster.yarn(["application", "-status", &app]);
    report.assert_success();
    assert!(report.stdout.contains("KILLED"), "{report}");
    // Finished: the JobHistoryServer answers from the history the AM wrote.
    let after = mr.mapred(&["job", "-status", &job]).expect("mapred runs");
    assert!(after.success(), "{after}\n{}", history.log_tail(100));
    assert_eq!(
        status_value(&after.stdout, "Job state"),
        Some("KILLED"),
        "{after}"
    );
}
