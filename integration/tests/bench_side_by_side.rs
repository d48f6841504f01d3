//! The side-by-side bench as README documents it: `spindle bench rpc --side-by-side
//! --hadoop-rm-cmd integration/bin/hadoop-yarn --capacity-scheduler
//! conf/capacity-scheduler.xml` starts Hadoop 3.3.4's own ResourceManager, loads it, then
//! Spindle's under the same load, and reports both. A small load here: the figures are
//! for docs/benchmarks.md, this only proves the command works against both RMs.
//!
//! Without Hadoop's server jars (integration/setup-clients.sh) it prints `SKIP:` and
//! passes, except under CI.

use std::process::Command;
use std::time::Duration;

use spindle_integration::clients::integration_dir;
use spindle_integration::cluster::spindle_binary;
use spindle_integration::hadoop_yarn::{launcher, YarnServerJars};
use spindle_integration::process::run_with_timeout;

#[test]
fn side_by_side_loads_hadoops_rm_then_spindles_and_reports_both() {
    let Some(_jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let queues = integration_dir()
        .parent()
        .expect("the repository")
        .join("conf")
        .join("capacity-scheduler.xml");
    let mut cmd = Command::new(binary);
    cmd.env("SPINDLE_LOG", "warn")
        .args(["bench", "rpc", "--side-by-side", "--hadoop-rm-cmd"])
        .arg(launcher())
        .arg("--capacity-scheduler")
        .arg(&queues)
        .args([
            "--nms",
            "20",
            "--ams",
            "2",
            "--allocate-rate",
            "20",
            "--duration-s",
            "3",
            "--warmup-s",
            "1",
            "--json",
        ]);
    let out = run_with_timeout(cmd, Duration::from_secs(300)).expect("the bench runs");
    assert!(out.success(), "{out}");
    let runs: serde_json::Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not one JSON array ({e}):\n{out}"));
    let runs = runs.as_array().expect("an array");
    assert_eq!(runs.len(), 2, "{out}");
    for (run, version) in runs.iter().zip(["Hadoop 3.3.4", "Spindle "]) {
        let report = &run["report"];
        assert!(
            report["rm_version"]
                .as_str()
                .is_some_and(|v| v.starts_with(version)),
            "{version}: {run}"
        );
        assert_eq!(report["nms_registered"], 20, "{run}");
        assert_eq!(report["ams_registered"], 2, "{run}");
        assert_eq!(report["task_failures"], 0, "{run}");
        assert!(
            report["heartbeats"].as_u64().is_some_and(|n| n > 0),
            "{run}"
        );
        assert!(report["allocates"].as_u64().is_some_and(|n| n > 0), "{run}");
        assert!(report["rm_pid"].as_u64().is_some(), "{run}");
    }
}
