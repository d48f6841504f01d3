//! Hadoop SLS inputs run unchanged.

mod common;

use spindle_sim::{run, SimError, SimOptions, WorkloadSource};

fn opts(source: WorkloadSource) -> SimOptions {
    let mut o = SimOptions::new(source);
    o.progress = spindle_sim::Progress::Never;
    o.check_invariants = true;
    o
}

#[test]
fn sample_trace_with_node_file_completes_every_job() -> Result<(), SimError> {
    let r = run(opts(WorkloadSource::SlsTrace {
        trace: common::fixture("inputsls.json"),
        nodes: Some(common::fixture("nodes.json")),
    }))?;
    let s = &r.summary;
    assert_eq!(s.scheduler, "capacity");
    assert_eq!(s.apps_submitted, 2);
    assert_eq!(s.apps_completed, 2, "{}", r.summary_text());
    // 3 + 2 tasks and two AM containers.
    assert_eq!(s.allocations, 7);
    assert_eq!(s.tasks_completed, 5);
    assert_eq!(s.nodes_max, 8);
    // One queue per queue name of the trace.
    assert_eq!(r.queues, ["root.sls_queue_1", "root.sls_queue_2"]);
    // Job 2 arrives at 105.204 s: the run lasts past it.
    assert!(s.sim_time_s > 105.2);
    Ok(())
}

#[test]
fn sample_trace_alone_runs_on_the_hosts_it_names() -> Result<(), SimError> {
    let r = run(opts(WorkloadSource::SlsTrace {
        trace: common::fixture("inputsls.json"),
        nodes: None,
    }))?;
    let s = &r.summary;
    assert_eq!(s.nodes_max, 3, "node1..node3 of /default-rack");
    assert_eq!(s.apps_completed, 2);
    // The hosts exist in the racks the trace names, so maps can be local.
    assert!(s.locality.node_local > 0, "{}", r.summary_text());
    Ok(())
}

#[test]
fn workload_file_can_point_at_sls_inputs() -> Result<(), SimError> {
    let r = run(common::file("conf/sim/sls-sample.json"))?;
    assert_eq!(r.summary.apps_completed, 2);
    Ok(())
}

#[test]
fn synthetic_load_runs_every_job() -> Result<(), SimError> {
    let r = run(opts(WorkloadSource::SlsSynth(common::fixture(
        "syn_generic.json",
    ))))?;
    let s = &r.summary;
    assert_eq!(s.apps_submitted, 10, "num_jobs");
    assert_eq!(s.apps_completed, 10, "{}", r.summary_text());
    assert_eq!(s.nodes_max, 20, "num_nodes");
    // About 5 maps and 5 reduces per job, plus its AM.
    assert!((60..=160).contains(&s.allocations), "{}", s.allocations);
    // Every job arrives in the first minute (time_distribution).
    assert_eq!(r.queues, ["root.sls_queue_1"]);
    Ok(())
}

#[test]
fn malformed_traces_say_where() -> Result<(), SimError> {
    let dir = std::env::temp_dir().join(format!("spindle-sim-sls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|source| SimError::Io {
        path: dir.clone(),
        source,
    })?;
    let write = |name: &str, body: &str| -> Result<std::path::PathBuf, SimError> {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|source| SimError::Io {
            path: p.clone(),
            source,
        })?;
        Ok(p)
    };
    let bad_type = write(
        "bad-type.json",
        "{\"job.id\": \"j1\", \"job.queue.name\": \"q\",\n \"job.tasks\": [{\"duration.ms\": 5}]}\n{\"am.type\": \"flink\", \"job.id\": \"j2\", \"job.queue.name\": \"q\", \"job.tasks\": [{\"duration.ms\": 5}]}",
    )?;
    let nodes = common::fixture("nodes.json");
    let err = run(opts(WorkloadSource::SlsTrace {
        trace: bad_type,
        nodes: Some(nodes.clone()),
    }))
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("job j2 (line 3)") && err.contains("am.type") && err.contains("'flink'"),
        "{err}"
    );
    let no_duration = write(
        "no-duration.json",
        "{\"job.id\": \"j1\", \"job.queue.name\": \"q\", \"job.tasks\": [{\"container.priority\": \"20\"}]}",
    )?;
    let err = run(opts(WorkloadSource::SlsTrace {
        trace: no_duration,
        nodes: Some(nodes),
    }))
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("task #0") && err.contains("positive duration"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
