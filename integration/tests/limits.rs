//! Fields without limits, seen through the real Hadoop 3.3.4 clients: oversized
//! submissions are refused with a message naming the field and the limit, and
//! `yarn application -list` keeps working for everyone, its reply within what the
//! client accepts (`ipc.maximum.response.length`).
//!
//! Submissions and kills with diagnostics go through Hadoop's own `YarnClient`
//! (`integration/java/AppClient.java`); no NodeManager runs (the applications stay
//! ACCEPTED until killed).
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::AppList;
use spindle_integration::{CliOutput, Cluster, ClusterBuilder, HadoopClients};

fn start(clients: &HadoopClients, builder: ClusterBuilder) -> Cluster {
    match builder.start(clients) {
        Ok(cluster) => cluster,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    }
}

/// `AppClient <args>` as bob.
fn app_client(cluster: &Cluster, args: &[&str]) -> CliOutput {
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
        .env("HADOOP_USER_NAME", "bob")
        .timeout(Duration::from_secs(180))
        .run(&full)
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run AppClient: {e:#}"),
    }
}

/// `yarn application -list -appStates ALL`, which must succeed, parsed.
#[track_caller]
fn list_all(cluster: &Cluster) -> AppList {
    let out = cluster.yarn(["application", "-list", "-appStates", "ALL"]);
    if !out.success() {
        panic!(
            "yarn application -list failed:\n{out}\n{}",
            cluster.log_report()
        );
    }
    match AppList::parse(&out.stdout) {
        Ok(list) => list,
        Err(e) => panic!("cannot parse the application list: {e:#}\n{out}"),
    }
}

/// The case: seven submissions with 20 MB names made every
/// `getApplications` reply exceed the client's 128 MiB limit, so `yarn application
/// -list` failed for every user. Such a submission is refused with a message naming
/// the field and the limit (nothing is recorded), and the list keeps working.
#[test]
fn oversized_names_are_refused_and_the_list_keeps_working() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, ClusterBuilder::default());
    let ok = app_client(&cluster, &["submit", "--name", "small"]);
    ok.assert_success();
    let small = ok.stdout.trim().to_owned();
    for i in 0..7 {
        let name = format!("big-{i}-");
        let out = app_client(
            &cluster,
            &["submit", "--name", &name, "--name-length", "20000000"],
        );
        out.assert_exit_failure();
        assert!(
            out.stderr
                .contains("org.apache.hadoop.yarn.exceptions.YarnException")
                && out.stderr.contains(
                    "refused: its application name has 20000000 characters, \
                     more than the 4096 allowed"
                ),
            "the refusal should name the field and the limit:\n{out}"
        );
    }
    let list = list_all(&cluster);
    assert_eq!(list.total, 1, "{list:?}");
    assert!(list.find(&small).is_some(), "{list:?}");

    // Hadoop's own tag limit, with its message.
    let tags: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
    let out = app_client(
        &cluster,
        &["submit", "--name", "tagged", "--tags", &tags.join(",")],
    );
    out.assert_exit_failure();
    assert!(
        out.stderr.contains(
            "java.lang.IllegalArgumentException: Too many applicationTags, \
             a maximum of only 10 are allowed!"
        ),
        "{out}"
    );
}

/// Each application's diagnostics are bounded (64 Ki characters), but many of them
/// together can still exceed what a client accepts: with `ipc.maximum.response.length`
/// at 256 KiB (for the RM and the CLI alike), six killed applications with 64 Ki
/// characters of diagnostics each would make a 390 KB `getApplications` reply,
/// which the client refuses. The RM cuts the listed diagnostics to fit, and every
/// application is listed.
#[test]
fn the_list_reply_stays_within_the_clients_limit() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(
        &clients,
        ClusterBuilder::default().rm_property("ipc.maximum.response.length", 256 * 1024),
    );
    let mut ids = Vec::new();
    for i in 0..6 {
        let out = app_client(&cluster, &["submit", "--name", &format!("diag-{i}")]);
        out.assert_success();
        let id = out.stdout.trim().to_owned();
        let killed = app_client(
            &cluster,
            &["kill", "--app", &id, "--diagnostics-length", "65536"],
        );
        killed.assert_success();
        ids.push(id);
    }
    let list = list_all(&cluster);
    assert_eq!(list.total, ids.len(), "{list:?}");
    for id in &ids {
        let row = list.find(id);
        assert_eq!(row.map(|r| r.state.as_str()), Some("KILLED"), "{list:?}");
    }
    // One application's own report still carries its (bounded) diagnostics.
    let out = cluster.yarn(["application", "-status", &ids[0]]);
    out.assert_success();
    assert!(
        out.stdout
            .contains("Diagnostic messages truncated, showing last 65536 chars"),
        "{out}"
    );
}
