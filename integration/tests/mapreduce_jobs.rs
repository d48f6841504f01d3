//! Real Hadoop MapReduce 3.3.4 on Spindle: the stock `yarn jar
//! hadoop-mapreduce-examples-3.3.4.jar` and `mapred job` clients (integration/bin/yarn,
//! integration/bin/mapred, the unshaded jars of integration/setup-maven.sh mapreduce) with
//! conf/mapred-site.xml, the MapReduce AM and its task JVMs in Spindle containers, the
//! reducers fetching map outputs from the NodeManagers' `mapreduce_shuffle`, Hadoop's
//! JobHistoryServer answering for finished jobs.
//!
//! Without the client jars or the MapReduce jars the tests print `SKIP:` and pass, except
//! under CI, where they fail.

mod web_http;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use spindle_integration::mapreduce::{
    aux_host_dir, free_shuffle_port, java_shuffle_properties, job_id_of, shuffle_nodemanager,
    shuffle_nodemanager_on, JobRun,
};
use spindle_integration::{
    wait_for, Cluster, HadoopClients, HadoopConf, HdfsJars, HdfsServer, MapReduce, MapReduceJars,
    NodeManagerSpec,
};

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
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &waiting_maps)
        .expect("mapred-site.xml and a JobHistoryServer");
    let history = mr.history_server().expect("a JobHistoryServer");
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

/// Asserts that a job ran to SUCCEEDED, with everything it printed otherwise.
#[track_caller]
fn assert_succeeded(run: &JobRun, cluster: &Cluster) {
    assert!(
        run.succeeded(),
        "the job did not succeed:\n{}\n{}",
        run.output,
        cluster.log_report()
    );
}

/// `pi 4 1000`: four maps, one reducer; the estimate is printed on stdout.
fn pi(mr: &MapReduce, cluster: &Cluster) -> JobRun {
    let run = mr.examples("pi", &["4", "1000"]).expect("the client runs");
    assert_succeeded(&run, cluster);
    let estimate: f64 = run
        .output
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Estimated value of Pi is "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no estimate of pi:\n{}", run.output));
    assert!(
        (estimate - std::f64::consts::PI).abs() < 0.1,
        "pi 4 1000 estimated {estimate}"
    );
    eprintln!("pi 4 1000: {:?} wall", run.wall);
    run
}

/// Input files for wordcount and the counts it must find.
fn wordcount_input(dir: &Path) -> BTreeMap<String, u64> {
    let words = [
        "spindle",
        "yarn",
        "shuffle",
        "reduce",
        "map",
        "hadoop",
        "ünïcode",
    ];
    let mut expected = BTreeMap::new();
    std::fs::create_dir_all(dir).expect("input dir");
    for file in 0..3u64 {
        let mut text = String::new();
        for line in 0..200u64 {
            let mut fields = Vec::new();
            for (i, word) in words.iter().enumerate() {
                let i = i as u64;
                // A different number of each word per line and file.
                if (line + file + i).is_multiple_of(i + 2) {
                    fields.push(*word);
                    *expected.entry(word.to_string()).or_insert(0) += 1;
                }
            }
            text.push_str(&fields.join(" "));
            text.push('\n');
        }
        std::fs::write(dir.join(format!("part-{file}.txt")), text).expect("input file");
    }
    expected
}

/// wordcount with `reduces` reducers over three files; every word's count is checked.
fn wordcount(mr: &MapReduce, cluster: &Cluster, base: &str, reduces: u32) -> JobRun {
    let local = cluster.root().join("wordcount-input");
    let expected = wordcount_input(&local);
    let input = format!("{base}/wordcount/in");
    let output = format!("{base}/wordcount/out");
    mr.put(&local, &input).expect("input copied");
    let reduces = format!("-Dmapreduce.job.reduces={reduces}");
    let run = mr
        .examples("wordcount", &[&reduces, &input, &output])
        .expect("the client runs");
    assert_succeeded(&run, cluster);
    let text = mr.cat(&format!("{output}/part-r-*")).expect("output read");
    let mut counted = BTreeMap::new();
    for line in text.lines() {
        let (word, count) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("not a wordcount line: {line:?}"));
        let count: u64 = count.parse().expect("a count");
        assert!(
            counted.insert(word.to_string(), count).is_none(),
            "{word} twice"
        );
    }
    assert_eq!(counted, expected, "wordcount's output:\n{text}");
    run
}

/// teragen → terasort (two reducers) → teravalidate; teravalidate of the unsorted
/// input finds it out of order, so the check can fail. Returns the terasort run.
fn terasort(mr: &MapReduce, cluster: &Cluster, base: &str, rows: u64) -> JobRun {
    let generated = format!("{base}/tera/in");
    let sorted = format!("{base}/tera/sorted");
    let report = format!("{base}/tera/report");
    let unsorted_report = format!("{base}/tera/unsorted-report");
    let rows = rows.to_string();
    let gen = mr
        .examples("teragen", &["-Dmapreduce.job.maps=2", &rows, &generated])
        .expect("the client runs");
    assert_succeeded(&gen, cluster);
    // The tasks find the partition list through the link `_partition.lst` in their
    // working directory, but with fs.defaultFS=file:/// Hadoop's tasks resolve relative
    // paths against the job's working directory (mapreduce.job.working.dir, the
    // client's own by default): point it at the folder TeraSort writes the list to.
    let working_dir = format!("-Dmapreduce.job.working.dir={sorted}");
    let mut args = vec!["-Dmapreduce.job.reduces=2"];
    if base.starts_with("file:") {
        args.push(&working_dir);
    }
    args.extend([generated.as_str(), sorted.as_str()]);
    let sort = mr.examples("terasort", &args).expect("the client runs");
    assert_succeeded(&sort, cluster);
    eprintln!("terasort of {rows} rows: {:?} wall", sort.wall);
    let validate = mr
        .examples("teravalidate", &[&sorted, &report])
        .expect("the client runs");
    assert_succeeded(&validate, cluster);
    let text = mr.cat(&format!("{report}/part-r-*")).expect("report read");
    assert!(text.contains("checksum"), "teravalidate's report:\n{text}");
    assert!(
        !text.contains("misorder") && !text.contains("error"),
        "{text}"
    );
    let unsorted = mr
        .examples("teravalidate", &[&generated, &unsorted_report])
        .expect("the client runs");
    assert_succeeded(&unsorted, cluster);
    let text = mr
        .cat(&format!("{unsorted_report}/part-r-*"))
        .expect("report read");
    assert!(
        text.contains("misorder"),
        "the unsorted input passed:\n{text}"
    );
    sort
}

/// `mapred job -status` of a finished job, answered by the JobHistoryServer.
fn status_of_finished(
    mr: &MapReduce,
    run: &JobRun,
    history: &spindle_integration::mapreduce::HistoryServer,
) {
    let job = run.job_id.as_deref().expect("a job id");
    let status = mr.mapred(&["job", "-status", job]).expect("mapred runs");
    assert!(status.success(), "{status}\n{}", history.log_tail(100));
    assert_eq!(
        status_value(&status.stdout, "Job state"),
        Some("SUCCEEDED"),
        "{status}"
    );
    assert_eq!(
        status_value(&status.stdout, "Number of reduces"),
        Some("2"),
        "{status}"
    );
    assert!(status.stdout.contains("Map input records=1000"), "{status}");
}

/// An uber job (`mapreduce.job.ubertask.enable`: one reducer, few maps) runs its tasks
/// inside the AM's container: no task container, no shuffle service involved.
#[test]
fn an_uber_wordcount_runs_inside_its_am() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let cluster = cluster_with(&clients, &[(4096, 4)]);
    let mut uber = HadoopConf::new();
    uber.set("mapreduce.job.ubertask.enable", true)
        .set("yarn.app.mapreduce.am.resource.mb", 1024)
        .set("yarn.app.mapreduce.am.command-opts", "-Xmx700m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 --add-opens=java.base/java.lang=ALL-UNNAMED");
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &uber)
        .expect("mapred-site.xml and a JobHistoryServer");
    let base = format!("file://{}/data", cluster.root().display());
    let run = wordcount(&mr, &cluster, &base, 1);
    assert!(
        run.output.stderr.contains("running in uber mode : true"),
        "{}",
        run.output
    );
}

/// A finished job's tracking URL: the RM's proxy sends the browser to the job's page on
/// the JobHistoryServer (the final tracking URL the AM unregistered with), which serves it.
fn finished_job_through_the_proxy(cluster: &Cluster, mr: &MapReduce, run: &JobRun) {
    let app = run.app_id.as_deref().expect("an application id");
    let job = run.job_id.as_deref().expect("a job id");
    let history = mr
        .history_server()
        .expect("a JobHistoryServer")
        .web_address();
    let done = get(cluster.rm().webapp, &format!("/proxy/{app}/"));
    assert!(matches!(done.status, 302 | 307), "{done}");
    let location = done.header("location").unwrap_or_default();
    // The AM names the history server by the host it resolves its address to
    // (localhost for 127.0.0.1).
    let (authority, path) = location
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
        .unwrap_or_else(|| panic!("not an http URL: {done}"));
    assert!(
        authority.ends_with(&format!(":{}", history.port())),
        "a redirect to the JobHistoryServer ({history}) expected: {done}"
    );
    let path = format!("/{path}");
    assert!(
        path.starts_with(&format!("/jobhistory/job/{job}")),
        "a redirect to the job's history page expected: {done}"
    );
    let answer = get(history, &path);
    assert_eq!(answer.status, 200, "{answer}");
    assert!(answer.text().contains(job), "{answer}");
}

#[test]
fn pi_wordcount_and_terasort_on_file() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let cluster = cluster_with(&clients, &[(4096, 4)]);
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &HadoopConf::new())
        .expect("mapred-site.xml and a JobHistoryServer");
    let history = mr.history_server().expect("a JobHistoryServer");
    let base = format!("file://{}/data", cluster.root().display());
    pi(&mr, &cluster);
    wordcount(&mr, &cluster, &base, 2);
    let sort = terasort(&mr, &cluster, &base, 1000);
    status_of_finished(&mr, &sort, history);
    finished_job_through_the_proxy(&cluster, &mr, &sort);
}

#[test]
fn pi_wordcount_and_terasort_on_hdfs() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let Some(hdfs_jars) = HdfsJars::for_tests() else {
        return;
    };
    let hdfs = HdfsServer::start(&hdfs_jars).expect("HDFS starts");
    let cluster = Cluster::builder()
        .core_property("fs.defaultFS", hdfs.uri())
        .nodemanager(shuffle_nodemanager(4096, 4).expect("a port"))
        .start(&clients)
        .expect("cluster starts");
    let mr = MapReduce::start(
        &cluster,
        &jars,
        "/tmp/hadoop-yarn/staging",
        &HadoopConf::new(),
    )
    .expect("mapred-site.xml and a JobHistoryServer");
    let history = mr.history_server().expect("a JobHistoryServer");
    let base = format!("{}/data", hdfs.uri());
    pi(&mr, &cluster);
    wordcount(&mr, &cluster, &base, 2);
    let sort = terasort(&mr, &cluster, &base, 1000);
    status_of_finished(&mr, &sort, history);
}

/// Two NodeManagers small enough that the maps run on both: each of terasort's two
/// reducers fetches map outputs from both nodes' shuffle ports.
#[test]
fn reducers_fetch_map_outputs_from_two_nodemanagers() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let ports = [
        free_shuffle_port().expect("a port"),
        free_shuffle_port().expect("a port"),
    ];
    let cluster = Cluster::builder()
        .nodemanager(shuffle_nodemanager_on(1536, 4, ports[0]))
        .nodemanager(shuffle_nodemanager_on(1536, 4, ports[1]))
        .start(&clients)
        .expect("cluster starts");
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &HadoopConf::new())
        .expect("mapred-site.xml and a JobHistoryServer");
    let base = format!("file://{}/data", cluster.root().display());
    let generated = format!("{base}/in");
    let sorted = format!("{base}/sorted");
    // Six maps: the AM and five maps fill both nodes at once.
    let gen = mr
        .examples("teragen", &["-Dmapreduce.job.maps=6", "6000", &generated])
        .expect("the client runs");
    assert_succeeded(&gen, &cluster);
    let sort = mr
        .examples(
            "terasort",
            &[
                "-Dmapreduce.job.reduces=2",
                "-Dmapreduce.input.fileinputformat.split.maxsize=100000",
                // See terasort(): the partition list on file:///.
                &format!("-Dmapreduce.job.working.dir={sorted}"),
                &generated,
                &sorted,
            ],
        )
        .expect("the client runs");
    assert_succeeded(&sort, &cluster);
    let app = sort.app_id.as_deref().expect("an application id");
    // The reducers' shuffle logs (syslog.shuffle, a reducer's own) name the shuffle each
    // fetch went to ("host:port freed by fetcher#n" once a fetcher is done with a host).
    let mut reducer_logs = Vec::new();
    for nm in cluster.nodemanagers() {
        let app_logs = nm
            .conf_dir()
            .parent()
            .expect("nm dir")
            .join("logs")
            .join(app);
        for container in std::fs::read_dir(&app_logs).into_iter().flatten().flatten() {
            if let Ok(log) = std::fs::read_to_string(container.path().join("syslog.shuffle")) {
                reducer_logs.push(log);
            }
        }
    }
    assert_eq!(
        reducer_logs.len(),
        2,
        "two reducers' logs\n{}",
        cluster.log_report()
    );
    for (i, nm) in cluster.nodemanagers().iter().enumerate() {
        let shuffle = format!("{}:{}", nm.host(), ports[i]);
        for log in &reducer_logs {
            assert!(
                log.contains(&format!("{shuffle} freed by fetcher#")),
                "a reducer did not fetch from {shuffle}:\n{log}"
            );
        }
    }
}

/// Hadoop's own Java `ShuffleHandler`, hosted in the NodeManager's JVM (S8's host for Java
/// auxiliary services) instead of the native shuffle, serves a real terasort's reducers.
#[test]
fn hadoops_shuffle_handler_hosted_in_the_nodemanagers_jvm_serves_terasort() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let Some(host) = aux_host_dir() else {
        return;
    };
    let mut nm = NodeManagerSpec::new(3072, 4);
    nm.properties = java_shuffle_properties(free_shuffle_port().expect("a port"), &host);
    let cluster = Cluster::builder()
        .nodemanager(nm)
        .start(&clients)
        .expect("cluster starts");
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &HadoopConf::new())
        .expect("mapred-site.xml and a JobHistoryServer");
    let base = format!("file://{}/data", cluster.root().display());
    let generated = format!("{base}/in");
    let sorted = format!("{base}/sorted");
    let gen = mr
        .examples("teragen", &["-Dmapreduce.job.maps=2", "2000", &generated])
        .expect("the client runs");
    assert_succeeded(&gen, &cluster);
    let sort = mr
        .examples(
            "terasort",
            &[
                "-Dmapreduce.job.reduces=2",
                &format!("-Dmapreduce.job.working.dir={sorted}"),
                &generated,
                &sorted,
            ],
        )
        .expect("the client runs");
    assert_succeeded(&sort, &cluster);
    let job = sort.job_id.as_deref().expect("a job id");
    // The JVM's ShuffleHandler got the job's token (its own log line, which the node
    // copies into its log) and served the reducers' fetches.
    let nm_log = std::fs::read_to_string(cluster.log_dir().join("nm-0.stderr")).unwrap_or_default();
    assert!(
        nm_log.contains(&format!("Added token for {job}")),
        "Hadoop's ShuffleHandler in the NodeManager's JVM got {job}'s token\n{}",
        cluster.log_report()
    );
    let validated = mr
        .examples("teravalidate", &[&sorted, &format!("{base}/report")])
        .expect("the client runs");
    assert_succeeded(&validated, &cluster);
}

/// A measurement, not a check: teragen and terasort of `$SPINDLE_TERASORT_ROWS` rows
/// (100 bytes each; default 1,000,000 = 100 MB) on two NodeManagers, printing the wall
/// times, the shuffle volume and the JobHistoryServer's average phase times. Run it with
/// `cargo test -p spindle-integration --test mapreduce_jobs terasort_wall_times -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run it by name with --ignored"]
fn terasort_wall_times() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = MapReduceJars::for_tests() else {
        return;
    };
    let rows: u64 = std::env::var("SPINDLE_TERASORT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    // SPINDLE_SHUFFLE=java: Hadoop's own ShuffleHandler in the NodeManagers' Java host
    // instead of the native shuffle, for the side-by-side figure.
    let java = std::env::var("SPINDLE_SHUFFLE").is_ok_and(|v| v == "java");
    let cluster = if java {
        let Some(host) = aux_host_dir() else {
            return;
        };
        let mut builder = Cluster::builder();
        for _ in 0..2 {
            let mut nm = NodeManagerSpec::new(4096, 4);
            nm.properties = java_shuffle_properties(free_shuffle_port().expect("a port"), &host);
            builder = builder.nodemanager(nm);
        }
        builder.start(&clients).expect("cluster starts")
    } else {
        cluster_with(&clients, &[(4096, 4), (4096, 4)])
    };
    let mut sized = HadoopConf::new();
    sized
        .set("mapreduce.map.memory.mb", 1024)
        .set("mapreduce.reduce.memory.mb", 1024)
        .set(
            "mapreduce.map.java.opts",
            "-Xmx800m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true",
        )
        .set(
            "mapreduce.reduce.java.opts",
            "-Xmx800m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true",
        )
        .set("mapreduce.task.io.sort.mb", 200)
        // Reducers start once every map is done, so that their shuffle phase is the
        // fetching alone, not the wait for maps.
        .set("mapreduce.job.reduce.slowstart.completedmaps", "1.0");
    let mr = MapReduce::start(&cluster, &jars, &file_staging(&cluster), &sized)
        .expect("mapred-site.xml and a JobHistoryServer")
        .timeout(Duration::from_secs(1800));
    let base = format!("file://{}/data", cluster.root().display());
    let generated = format!("{base}/in");
    let sorted = format!("{base}/sorted");
    let pi_run = mr.examples("pi", &["4", "1000"]).expect("the client runs");
    assert_succeeded(&pi_run, &cluster);
    let gen = mr
        .examples(
            "teragen",
            &["-Dmapreduce.job.maps=4", &rows.to_string(), &generated],
        )
        .expect("the client runs");
    assert_succeeded(&gen, &cluster);
    let sort = mr
        .examples(
            "terasort",
            &[
                "-Dmapreduce.job.reduces=2",
                &format!("-Dmapreduce.job.working.dir={sorted}"),
                &generated,
                &sorted,
            ],
        )
        .expect("the client runs");
    assert_succeeded(&sort, &cluster);
    let shuffled = sort
        .output
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Reduce shuffle bytes="))
        .unwrap_or("?")
        .to_string();
    // The phases as the JobHistoryServer reports them (`avgShuffleTime` and the others,
    // in ms), once it has moved the job's history in.
    let history = mr
        .history_server()
        .expect("a JobHistoryServer")
        .web_address();
    let job = sort.job_id.as_deref().expect("a job id");
    let phases = wait_for(WAIT, POLL, || {
        let r = get(history, &format!("/ws/v1/history/mapreduce/jobs/{job}"));
        let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
        let job = v.get("job")?;
        let ms = |k: &str| job.get(k).and_then(serde_json::Value::as_i64).unwrap_or(-1);
        Some(format!(
            "avg map {} ms, avg shuffle {} ms, avg merge {} ms, avg reduce {} ms",
            ms("avgMapTime"),
            ms("avgShuffleTime"),
            ms("avgMergeTime"),
            ms("avgReduceTime")
        ))
    })
    .unwrap_or_else(|| "no history".to_string());
    eprintln!(
        "MEASURED ({} shuffle) pi 4 1000: {:?}; teragen {rows} rows: {:?}; terasort: {:?}, reduce shuffle bytes {shuffled}; {phases}",
        if java { "Hadoop's Java" } else { "native" },
        pi_run.wall, gen.wall, sort.wall
    );
}
