//! The seed's task-scheduling experiments in their short form, on the real
//! DAG cores with every invariant checked after every step.

use std::collections::BTreeSet;

use spindle_sim::dagsim::{
    run_experiment, schemes, Experiment, ExperimentOptions, ExperimentReport, TaskQueueScheme,
};

fn run(experiment: Experiment, scheme: TaskQueueScheme, check: bool) -> ExperimentReport {
    let mut o = ExperimentOptions::short(experiment);
    o.task_queue_scheme = scheme;
    o.check_invariants = check;
    run_experiment(&o).unwrap_or_else(|e| panic!("{experiment} fails: {e}"))
}

fn claim<'a>(r: &'a ExperimentReport, starts: &str) -> &'a spindle_sim::dagsim::Claim {
    r.claims
        .iter()
        .find(|c| c.claim.starts_with(starts))
        .unwrap_or_else(|| panic!("no claim starting with {starts:?} in {:?}", r.claims))
}

/// What every run must satisfy, whatever the scheme.
fn check_consistent(r: &ExperimentReport) {
    let expected: Vec<&str> = schemes(if r.experiment == 1 {
        Experiment::One
    } else {
        Experiment::Two
    })
    .iter()
    .map(|s| s.label)
    .collect();
    let got: Vec<&str> = r.results.iter().map(|x| x.scheme.as_str()).collect();
    assert_eq!(got, expected);
    let work: f64 = r.queries.iter().map(|q| q.work_slot_s).sum();
    for q in &r.queries {
        let err = (q.simulated_sequential_s - q.sequential_s).abs() / q.sequential_s;
        assert!(
            err < 0.02,
            "{}: calibrated to {} s for the seed's {} s",
            q.name,
            q.simulated_sequential_s,
            q.sequential_s
        );
    }
    for x in &r.results {
        let last = x.client_completion_s.iter().copied().fold(0.0, f64::max);
        assert_eq!(x.total_time_s, last, "{}", x.scheme);
        assert!(x.utilization > 0.0 && x.utilization <= 1.0, "{}", x.scheme);
        let mut runs = 0usize;
        for c in &x.clients {
            assert_eq!(c.runs.len() as u32, r.dags_per_client, "{}", c.name);
            for w in c.runs.windows(2) {
                assert!(w[1].submitted_s >= w[0].finished_s, "one DAG at a time");
            }
            for run in &c.runs {
                assert!(run.finished_s > run.submitted_s);
            }
            runs += c.runs.len();
        }
        // A lower bound no scheme can beat: all the work on all the slots.
        let total_work = if r.experiment == 1 {
            work * x.clients.len() as f64
        } else {
            work * f64::from(r.dags_per_client)
        };
        assert!(
            x.total_time_s >= total_work / f64::from(r.cluster.slots) - 1e-6,
            "{}: {} s for {} slot-s of work",
            x.scheme,
            x.total_time_s,
            total_work
        );
        assert!(runs > 0);
    }
}

#[test]
fn experiment_1_short_form() {
    let r = run(Experiment::One, TaskQueueScheme::Indexed, true);
    check_consistent(&r);
    assert_eq!(r.cluster.slots, 16);
    // Every client submits the same queries, each in a unique order.
    let fifo = r.result("fifo").expect("fifo ran");
    let mut orders = BTreeSet::new();
    for c in &fifo.clients {
        let order: Vec<&str> = c.runs.iter().map(|x| x.query.as_str()).collect();
        let set: BTreeSet<&str> = order.iter().copied().collect();
        assert_eq!(
            set.len(),
            r.queries.len(),
            "{} runs every query once",
            c.name
        );
        orders.insert(order);
    }
    assert_eq!(orders.len(), fifo.clients.len());
    // The seed's claim (fifo has the shortest total time) is judged on the
    // results; in simulation every scheme keeps the cluster nearly full, so
    // the totals are work-bound and within a few percent of each other
    // (docs/dag-sim.md explains why the claim does not hold here). The
    // verdict and the figures of its detail must be the ones the results
    // give.
    let c = claim(&r, "fifo DAG priority");
    let totals: Vec<f64> = r.results.iter().map(|x| x.total_time_s).collect();
    let (lo, hi) = (
        totals.iter().copied().fold(f64::MAX, f64::min),
        totals.iter().copied().fold(0.0, f64::max),
    );
    let others: Vec<_> = r.results.iter().filter(|x| x.scheme != "fifo").collect();
    assert_eq!(
        c.held,
        others.iter().all(|x| fifo.total_time_s < x.total_time_s),
        "{}",
        c.detail
    );
    let best = others
        .iter()
        .min_by(|a, b| a.total_time_s.total_cmp(&b.total_time_s))
        .expect("five other schemes");
    let expected = format!(
        "fifo {:.0} s; best other: {} {:.0} s; all totals within {:.2}% of each other",
        fifo.total_time_s,
        best.scheme,
        best.total_time_s,
        (hi / lo - 1.0) * 100.0
    );
    assert_eq!(c.detail, expected);
    assert!(hi / lo < 1.03, "totals {totals:?}");
    for x in &r.results {
        assert!(x.utilization > 0.95, "{}: {}", x.scheme, x.utilization);
    }
}

#[test]
fn experiment_2_short_form_with_indexed_queues() {
    let r = run(Experiment::Two, TaskQueueScheme::Indexed, true);
    check_consistent(&r);
    // Individual queues: each client's total time follows its query's
    // sequential time, and no other scheme is as fair.
    assert!(claim(&r, "individual queues are the fairest").held);
    let ind = r.result("individual").expect("individual ran");
    let order: Vec<f64> = ind.client_completion_s.clone();
    let mut sorted = order.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(
        order, sorted,
        "clients finish in the order of their sequential times"
    );
    // Concurrent: postorder gives the shortest turnaround.
    assert!(
        claim(
            &r,
            "with concurrent DAG priority, postorder gives the shortest turnaround"
        )
        .held
    );
    let post = r.result("postorder").expect("postorder ran");
    for label in ["intact", "roots", "normalize"] {
        let other = r.result(label).expect("ran");
        assert!(post.mean_turnaround_s < other.mean_turnaround_s, "{label}");
    }
}

#[test]
fn experiment_2_short_form_with_strict_priorities() {
    // With mr3.taskattempt.queue.scheme = basic, nothing jumps the queue and
    // the vertex priority schemes act on every task: normalize keeps all
    // clients in step on their first run, and leaves comes second.
    let r = run(Experiment::Two, TaskQueueScheme::Basic, true);
    check_consistent(&r);
    assert!(claim(&r, "concurrent + normalize").held);
    assert!(
        claim(
            &r,
            "with concurrent DAG priority, postorder gives the shortest turnaround"
        )
        .held
    );
    assert!(
        claim(
            &r,
            "with concurrent DAG priority, leaves is the second best"
        )
        .held
    );
    assert!(claim(&r, "individual queues are the fairest").held);
}

#[test]
fn runs_are_deterministic_per_seed() {
    let a = run(Experiment::Two, TaskQueueScheme::Indexed, false).to_json();
    let b = run(Experiment::Two, TaskQueueScheme::Indexed, false).to_json();
    assert_eq!(a, b, "same options, same bytes");
    let mut o = ExperimentOptions::short(Experiment::Two);
    o.seed = 2;
    let c = run_experiment(&o).expect("runs").to_json();
    assert_ne!(a, c, "another seed builds other DAGs");
    let v: serde_json::Value = serde_json::from_str(&a).expect("valid JSON");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 7);
    for x in results {
        assert!(x["total_time_s"].as_f64().is_some());
        assert_eq!(x["client_completion_s"].as_array().map(Vec::len), Some(8));
    }
}

#[test]
fn tables_and_chart_show_every_scheme() {
    let mut o = ExperimentOptions::short(Experiment::One);
    o.size.clients = 3;
    o.size.dags_per_client = 4;
    let r = run_experiment(&o).expect("runs");
    let text = r.tables();
    for s in &r.results {
        assert!(text.contains(&s.scheme));
    }
    assert!(text.contains("The seed's observations:"));
    let dir = std::env::temp_dir().join(format!("spindle-dagsim-test-{}", std::process::id()));
    let path = r.write_svg(&dir).expect("writes the chart");
    let svg = std::fs::read_to_string(&path).expect("readable");
    std::fs::remove_dir_all(&dir).ok();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    for s in &r.results {
        assert!(
            svg.contains(&format!(">{}</text>", s.scheme)),
            "{}",
            s.scheme
        );
    }
    // One block per DAG run per scheme.
    let blocks = svg.matches("<title>").count();
    assert_eq!(blocks, r.results.len() * 3 * 4);
}
