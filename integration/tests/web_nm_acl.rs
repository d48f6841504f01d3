//! Application ACLs on the NodeManager, end to end: an application submitted
//! through Hadoop's own `YarnClient` (`integration/java/AppClient.java`) with a
//! VIEW_APP ACL, on a cluster with `yarn.acl.enable`; the ResourceManager hands the
//! ACLs to the NodeManager in the AM's launch context, and the node's log endpoints
//! let the owner, an admin and the viewer read the running AM's stdout and refuse
//! everyone else with Hadoop's message. Once the application is killed, the node's
//! aggregated log file carries the ACLs, as Hadoop's own `AggregatedLogFormat`
//! reader (`integration/java/AggregatedLogTool.java`) reads them.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

mod web_http;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spindle_integration::logs::final_aggregation_status;
use spindle_integration::{CliOutput, Cluster, HadoopClients, NodeManagerSpec};
use web_http::get;

const TIMEOUT: Duration = Duration::from_secs(120);
const MARK: &str = "spindle-nm-acl-am-stdout";

/// `AppClient <args>` as `user`.
fn app_client(cluster: &Cluster, clients: &HadoopClients, user: &str, args: &[&str]) -> CliOutput {
    let classes = match clients.compile_java("AppClient") {
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

/// Every regular file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn the_node_enforces_and_aggregates_the_acls_of_a_yarn_client_submission() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let remote = tempfile::tempdir().expect("a temp dir");
    let root = remote.path().join("app-logs");
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .rm_property("yarn.acl.enable", "true")
        .rm_property("yarn.admin.acl", "admin1")
        .rm_property("yarn.log-aggregation-enable", "true")
        .rm_property(
            "yarn.nodemanager.remote-app-log-dir",
            format!("file://{}", root.display()),
        )
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start(&clients)
        .expect("cluster starts");

    let command = format!("echo {MARK} 1><LOG_DIR>/stdout; sleep 300");
    let out = app_client(
        &cluster,
        &clients,
        "bob",
        &[
            "submit",
            "--name",
            "nm-acl",
            "--command",
            &command,
            "--view-acl",
            "viewer1",
            "--modify-acl",
            "modder1",
        ],
    );
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let app = out.stdout.trim().to_string();

    // The AM container on the node, once it wrote its marker.
    let nm = cluster.nodemanager(0);
    let web = SocketAddr::new(nm.host(), nm.web_port());
    let deadline = Instant::now() + TIMEOUT;
    let container = loop {
        let r = get(web, "/ws/v1/node/containers");
        let found = r.text().split('"').find_map(|s| {
            (s.starts_with("container_") && s.contains(&app["application_".len()..]))
                .then(|| s.to_string())
        });
        if let Some(id) = found {
            let r = get(
                web,
                &format!("/ws/v1/node/containerlogs/{id}/stdout?user.name=bob"),
            );
            if r.status == 200 && r.text().contains(MARK) {
                break id;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no AM container of {app} wrote its stdout: {r}\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(300));
    };

    for reader in ["bob", "admin1", "viewer1"] {
        let r = get(
            web,
            &format!("/ws/v1/node/containerlogs/{container}/stdout?user.name={reader}"),
        );
        assert_eq!(r.status, 200, "{reader}: {r}");
        assert!(r.text().contains(MARK), "{reader}: {r}");
        let r = get(
            web,
            &format!("/node/containerlogs/{container}/bob/stdout?start=0&user.name={reader}"),
        );
        assert_eq!(r.status, 200, "{reader}: {r}");
        assert!(r.text().contains(MARK), "{reader}: {r}");
    }
    for (query, who) in [
        ("?user.name=mallory", "mallory"),
        ("?user.name=modder1", "modder1"),
        ("", "dr.who"),
    ] {
        let want = format!("User [{who}] is not authorized to view the logs for application {app}");
        let r = get(
            web,
            &format!("/ws/v1/node/containerlogs/{container}/stdout{query}"),
        );
        assert_eq!(r.status, 500, "{who}: {r}");
        assert_eq!(r.text(), want, "{who}");
        let r = get(
            web,
            &format!("/ws/v1/node/containers/{container}/logs{query}"),
        );
        assert_eq!(r.status, 500, "{who}: {r}");
        assert!(r.text().contains(&want), "{who}: {r}");
        let r = get(
            web,
            &format!("/node/containerlogs/{container}/bob/stdout{query}"),
        );
        assert_eq!(r.status, 403, "{who}: {r}");
        assert!(
            r.text().contains(&want) && !r.text().contains(MARK),
            "{who}: {r}"
        );
    }

    // Killed by its owner, the application's logs are aggregated with its ACLs.
    let killed = app_client(&cluster, &clients, "bob", &["kill", "--app", &app]);
    assert!(killed.success(), "{killed}\n{}", cluster.log_report());
    let (status, report) = final_aggregation_status(&cluster, &app, TIMEOUT);
    assert_eq!(status, "SUCCEEDED", "{report}\n{}", cluster.log_report());
    let uploaded: Vec<PathBuf> = files_below(&root.join("bob"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&app))
        .collect();
    assert_eq!(uploaded.len(), 1, "{uploaded:?}");
    let classes = match clients.compile_java("AggregatedLogTool") {
        Ok(dir) => dir,
        Err(e) => panic!("cannot compile AggregatedLogTool: {e:#}"),
    };
    let dump = clients
        .yarn()
        .classpath(classes)
        .run([
            "AggregatedLogTool".as_ref(),
            "dump".as_ref(),
            uploaded[0].as_os_str(),
        ])
        .expect("run AggregatedLogTool dump");
    dump.assert_success();
    assert!(
        dump.stdout.contains("acl\tMODIFY_APP\tmodder1\n")
            && dump.stdout.contains("acl\tVIEW_APP\tviewer1\n")
            && dump.stdout.contains("owner\tbob\n"),
        "{}",
        dump.stdout
    );
    // File contents are dumped in hex.
    let mark_hex: String = MARK.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(dump.stdout.contains(&mark_hex), "{}", dump.stdout);
}
