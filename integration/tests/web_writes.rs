//! The RM's REST writes with a client library YARN users use: PyPI's
//! `yarn-api-client` kills an application through
//! `PUT /ws/v1/cluster/apps/{id}/state`, refused for a user the ACLs do not
//! allow (403), done for the owner; the stock `yarn application -status`
//! then shows it KILLED.

use std::process::Command;
use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::process::run_with_timeout;
use spindle_integration::{AppSubmission, Cluster, HadoopClients, NodeManagerSpec};

/// The directory `integration/setup-pip.sh web` installed the packages into.
fn web_pythonpath() -> String {
    let script = spindle_integration::clients::integration_dir().join("setup-pip.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("web")
        .output()
        .expect("setup-pip.sh runs");
    assert!(
        out.status.success(),
        "setup-pip.sh web failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Kills `app` as `user` with yarn-api-client; prints `KILL-OK <data>` or
/// `KILL-REFUSED <error>`. (The library's `ResourceManager` constructor
/// first probes the RM's `/cluster` page; the client is set up on the
/// endpoint directly.)
const KILL: &str = r#"
import json, sys
from yarn_api_client.base import BaseYarnAPI
from yarn_api_client.errors import APIError
from yarn_api_client.resource_manager import ResourceManager

endpoint, app, user = sys.argv[1], sys.argv[2], sys.argv[3]
rm = ResourceManager.__new__(ResourceManager)
BaseYarnAPI.__init__(rm, endpoint, 30)
rm.session.trust_env = False
rm.session.params = {"user.name": user}
try:
    print("KILL-OK " + json.dumps(rm.cluster_application_kill(app).data))
except APIError as e:
    print("KILL-REFUSED " + str(e))
"#;

fn kill_as(pythonpath: &str, endpoint: &str, app: &str, user: &str) -> String {
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", pythonpath)
        .args(["-c", KILL, endpoint, app, user]);
    let out = run_with_timeout(cmd, Duration::from_secs(120)).expect("python3 runs");
    assert!(out.success(), "the yarn-api-client script failed:\n{out}");
    out.stdout
}

#[test]
fn yarn_api_client_kills_an_application_as_its_owner_only() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let pythonpath = web_pythonpath();
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .rm_property("yarn.acl.enable", "true")
        .rm_property("yarn.admin.acl", "nobody")
        .rm_property("yarn.scheduler.capacity.root.acl_administer_queue", " ")
        .start(&clients)
        .expect("cluster starts");
    let endpoint = format!("http://{}", cluster.rm().webapp);
    let app = cluster
        .submit_app(&AppSubmission::new("spindle-it-rest-kill", "sleep 300").user("alice"))
        .unwrap_or_else(|e| panic!("{e:#}\n{}", cluster.log_report()));

    let refused = kill_as(&pythonpath, &endpoint, &app, "mallory");
    assert!(
        refused.contains("KILL-REFUSED")
            && refused.contains("403")
            && refused.contains(&format!(
                "Unauthorized attempt to kill appid {app} by remote user mallory"
            )),
        "a kill by another user should be refused:\n{refused}"
    );
    let status = cluster.yarn(["application", "-status", &app]);
    status.assert_success();
    assert_ne!(
        report_value(&parse_report(&status.stdout), "State"),
        Some("KILLED"),
        "{status}"
    );

    let done = kill_as(&pythonpath, &endpoint, &app, "alice");
    assert!(
        done.contains(r#"KILL-OK {"state": "KILLED"}"#),
        "the owner's kill should succeed:\n{done}\n{}",
        cluster.log_report()
    );
    let status = cluster.yarn(["application", "-status", &app]);
    status.assert_success();
    let report = parse_report(&status.stdout);
    assert_eq!(report_value(&report, "State"), Some("KILLED"), "{status}");
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("KILLED"),
        "{status}"
    );
}

/// Asks yarn-api-client for a new application id and submits Spindle's
/// distributed-shell AM with it; prints `SUBMITTED <id>`.
const SUBMIT: &str = r#"
import json, sys
from yarn_api_client.base import BaseYarnAPI
from yarn_api_client.resource_manager import ResourceManager

endpoint, user, command, conf_dir = sys.argv[1:5]
rm = ResourceManager.__new__(ResourceManager)
BaseYarnAPI.__init__(rm, endpoint, 30)
rm.session.trust_env = False
rm.session.params = {"user.name": user}
new = rm.cluster_new_application().data
app = new["application-id"]
rm.cluster_submit_application({
    "application-id": app,
    "application-name": "spindle-it-rest-submit",
    "application-type": "YARN",
    "queue": "default",
    "max-app-attempts": 1,
    "am-container-spec": {
        "commands": {"command": command},
        "environment": {"entry": [{"key": "HADOOP_CONF_DIR", "value": conf_dir}]},
    },
    "resource": {"memory": 256, "vCores": 1},
})
print("SUBMITTED " + app)
"#;

#[test]
fn yarn_api_client_submits_an_application_that_finishes() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let pythonpath = web_pythonpath();
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start(&clients)
        .expect("cluster starts");
    let endpoint = format!("http://{}", cluster.rm().webapp);
    let exe = spindle_integration::spindle_binary().expect("the spindle binary");
    // Spindle's distributed-shell AM, as its client would launch it.
    let command = format!(
        "{} distributed-shell-am --scheduler-address {} --num-containers 1 --command true \
         --log-dir <LOG_DIR> 1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr",
        exe.display(),
        cluster.rm().scheduler
    );
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", &pythonpath).args([
        "-c",
        SUBMIT,
        &endpoint,
        "alice",
        &command,
        &cluster.conf_dir().display().to_string(),
    ]);
    let out = run_with_timeout(cmd, Duration::from_secs(120)).expect("python3 runs");
    assert!(out.success(), "the submission failed:\n{out}");
    let app = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SUBMITTED "))
        .unwrap_or_else(|| panic!("no application id printed:\n{out}"))
        .trim()
        .to_string();
    let finished =
        spindle_integration::wait_for(Duration::from_secs(180), Duration::from_millis(500), || {
            let status = cluster.yarn(["application", "-status", &app]);
            let report = parse_report(&status.stdout);
            let state = report_value(&report, "State").map(str::to_string);
            matches!(state.as_deref(), Some("FINISHED" | "FAILED" | "KILLED")).then_some(report)
        })
        .unwrap_or_else(|| panic!("{app} never finished:\n{}", cluster.log_report()));
    assert_eq!(
        report_value(&finished, "Final-State"),
        Some("SUCCEEDED"),
        "{finished:?}\n{}",
        cluster.log_report()
    );
    assert_eq!(
        report_value(&finished, "User"),
        Some("alice"),
        "{finished:?}"
    );
    assert_eq!(
        report_value(&finished, "Application-Name"),
        Some("spindle-it-rest-submit"),
        "{finished:?}"
    );
}
