//! Side by side with Hadoop's own ResourceManager, end to end: Spark 3.5's pi.py in
//! cluster mode on Hadoop 3.3.4's RM + one Hadoop NM, then on Spindle's RM + one
//! Spindle NM, the same node size, heartbeat interval and capacity-scheduler.xml;
//! five runs each, the median printed as a table.
//!
//! Figures per run, from the RM's own application record (`/ws/v1/cluster/apps/<id>`,
//! the same fields on both): submit → AM launched (`startedTime` → `launchTime`),
//! submit → finished (`startedTime` → `finishedTime`); and the wall time of
//! `spark-submit` from spawn to exit, as a user sees it.
//!
//! A measurement, not a check of speed: `#[ignore]`d (run it with `--ignored`), and it
//! asserts only that every job finished SUCCEEDED with its times recorded.
//! `SIDE_BY_SIDE_RUNS` changes the number of runs per RM (default 5).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use spindle_integration::hadoop_yarn::default_capacity_scheduler_xml;
use spindle_integration::process::run_with_timeout;
use spindle_integration::spark::{self, app_id_in};
use spindle_integration::{
    wait_for, Cluster, ExtraNodeManager, HadoopClients, HadoopRm, NmKind, NodeManagerSpec,
    YarnServerJars,
};

/// The heartbeat interval of both RMs (the Hadoop harness's).
const HEARTBEAT_MS: u64 = 500;

/// A loopback address for the Hadoop NM of its own.
const HADOOP_NM_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 78));

/// One finished pi job, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Timing {
    submit_to_am_ms: f64,
    submit_to_finish_ms: f64,
    spark_submit_wall_ms: f64,
}

/// `GET path` over HTTP/1.0 (no chunked replies), the body as JSON.
fn get_json(addr: SocketAddr, path: &str) -> anyhow::Result<serde_json::Value> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(
        format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n")
            .as_bytes(),
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (_, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no HTTP body in {text:?}"))?;
    Ok(serde_json::from_str(body)?)
}

/// The application's record once it is FINISHED with its times set.
fn finished_app(web: SocketAddr, app: &str) -> Option<serde_json::Value> {
    wait_for(Duration::from_secs(60), Duration::from_millis(250), || {
        let v = get_json(web, &format!("/ws/v1/cluster/apps/{app}")).ok()?;
        let a = v.get("app")?.clone();
        let done = a.get("state").and_then(|s| s.as_str()) == Some("FINISHED")
            && a.get("finishedTime").and_then(|t| t.as_i64()).unwrap_or(0) > 0;
        done.then_some(a)
    })
}

/// Runs pi.py in cluster mode against the RM of `conf_dir`; the job's timings.
fn pi_once(
    clients: &HadoopClients,
    conf_dir: &Path,
    staging: &Path,
    web: SocketAddr,
    logs: &dyn Fn() -> String,
) -> Timing {
    let pi = spark::pi_py(clients);
    let cmd = spark::submit_command_to(
        conf_dir,
        Some(staging),
        clients,
        &["--deploy-mode", "cluster", &pi.display().to_string(), "4"],
    );
    let started = Instant::now();
    let out = run_with_timeout(cmd, Duration::from_secs(420)).expect("spark-submit runs");
    let wall = started.elapsed();
    assert!(out.success(), "spark-submit failed:\n{out}\n{}", logs());
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in:\n{out}"));
    let a = finished_app(web, &app)
        .unwrap_or_else(|| panic!("{app} did not show FINISHED on {web}\n{}", logs()));
    assert_eq!(
        a.get("finalStatus").and_then(|s| s.as_str()),
        Some("SUCCEEDED"),
        "{a}\n{}",
        logs()
    );
    let ms = |k: &str| a.get(k).and_then(|t| t.as_i64()).unwrap_or(0);
    let (start, launch, finish) = (ms("startedTime"), ms("launchTime"), ms("finishedTime"));
    assert!(
        start > 0 && launch >= start && finish >= launch,
        "times of {app}: {a}"
    );
    Timing {
        submit_to_am_ms: (launch - start) as f64,
        submit_to_finish_ms: (finish - start) as f64,
        spark_submit_wall_ms: wall.as_secs_f64() * 1000.0,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn runs() -> usize {
    std::env::var("SIDE_BY_SIDE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5)
}

fn row(label: &str, t: &[Timing]) -> String {
    let col = |f: fn(&Timing) -> f64| {
        let all: Vec<f64> = t.iter().map(f).collect();
        let each: Vec<String> = all.iter().map(|v| format!("{:.1}", v / 1000.0)).collect();
        format!("{:.2} s ({})", median(all) / 1000.0, each.join(", "))
    };
    format!(
        "| {label} | {} | {} | {} |\n",
        col(|t| t.submit_to_am_ms),
        col(|t| t.submit_to_finish_ms),
        col(|t| t.spark_submit_wall_ms)
    )
}

#[test]
#[ignore = "a measurement: run with --ignored"]
fn spark_pi_in_cluster_mode_on_hadoop_rm_and_nm_then_on_spindle() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let n = runs();
    let capacity = default_capacity_scheduler_xml().expect("conf/capacity-scheduler.xml");

    // Hadoop's RM and NM.
    let mut hadoop_times = Vec::new();
    {
        let rm = HadoopRm::start(&jars, &Default::default())
            .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
        let nm = ExtraNodeManager::start(
            &NmKind::Hadoop(jars.clone()),
            HADOOP_NM_HOST,
            rm.yarn_site(),
            rm.core_site(),
            &NodeManagerSpec::new(8192, 8),
        )
        .unwrap_or_else(|e| panic!("Hadoop's NM did not register: {e:#}\n{}", rm.log_tail(100)));
        let logs = || format!("{}\n{}", rm.log_tail(100), nm.log_tail(100));
        for i in 0..n {
            let t = pi_once(
                &clients,
                rm.conf_dir(),
                &rm.root().join(format!("staging-{i}")),
                rm.addresses().webapp,
                &logs,
            );
            eprintln!("Hadoop run {}: {t:?}", i + 1);
            hadoop_times.push(t);
        }
    }

    // Spindle's RM and NM, the same node, heartbeat and queues.
    let mut spindle_times = Vec::new();
    {
        let cluster = Cluster::builder()
            .heartbeat_interval_ms(HEARTBEAT_MS)
            .nodemanager(NodeManagerSpec::new(8192, 8))
            .conf_file("capacity-scheduler.xml", capacity)
            .start(&clients)
            .expect("Spindle's cluster starts");
        let logs = || cluster.log_report();
        for i in 0..n {
            let t = pi_once(
                &clients,
                cluster.conf_dir(),
                &cluster.root().join(format!("staging-{i}")),
                cluster.rm().webapp,
                &logs,
            );
            eprintln!("Spindle run {}: {t:?}", i + 1);
            spindle_times.push(t);
        }
    }

    let mut table = format!(
        "Spark pi.py (cluster mode, 4 slices), median of {n} (each run in brackets), \
         one 8 GiB / 8 vcore node, heartbeat {HEARTBEAT_MS} ms\n\n\
         | RM + NM | submit → AM launched | submit → finished | spark-submit wall |\n\
         |---|---:|---:|---:|\n"
    );
    table.push_str(&row("Hadoop 3.3.4 RM + Hadoop NM", &hadoop_times));
    table.push_str(&row("Spindle RM + Spindle NM", &spindle_times));
    println!("{table}");
    assert_eq!(hadoop_times.len(), n);
    assert_eq!(spindle_times.len(), n);
}
