//! The seed's task-scheduling experiments and the elastic scenario
//! (autoscaling and container recycling) in their short form, on the real
//! DAG cores with every invariant checked after every step.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use spindle_sim::dagsim::{
    burst_dags, run_elastic, run_experiment, schemes, ElasticOptions, ElasticReport,
    ElasticRunReport, ElasticSize, Experiment, ExperimentOptions, ExperimentReport,
    TaskQueueScheme,
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

// ----- the elastic scenario: the Autoscaler and recycling -----

/// The short elastic scenario, run once for all the tests below, with every
/// core's invariants (and the driver's) checked after every input.
fn elastic() -> &'static ElasticReport {
    static REPORT: OnceLock<ElasticReport> = OnceLock::new();
    REPORT.get_or_init(|| {
        let mut o = ElasticOptions::short();
        o.check_invariants = true;
        run_elastic(&o).unwrap_or_else(|e| panic!("the elastic scenario fails: {e}"))
    })
}

fn elastic_run<'a>(r: &'a ElasticReport, label: &str) -> &'a ElasticRunReport {
    r.run(label).unwrap_or_else(|| {
        panic!(
            "no run {label}: {:?}",
            r.runs.iter().map(|x| &x.run).collect::<Vec<_>>()
        )
    })
}

#[test]
fn elastic_autoscaler_scales_out_during_the_burst() {
    let r = elastic();
    let size = ElasticSize::short();
    let a = elastic_run(r, "autoscaling");
    assert!(a.autoscaling);
    assert_eq!(a.keys["mr3.enable.auto.scaling"], "true");
    // The group starts empty: the autoscaler's initial request comes first.
    let first = &a.scale_events[0];
    assert_eq!(
        (first.action.as_str(), first.at_s),
        ("initial", 0.0),
        "{first:?}"
    );
    assert_eq!(first.workers, size.initial_workers);
    // Scale-outs, each on a usage at or above ScaleOutThreshold, while the
    // burst runs, ScaleOutGracePeriod (90 s) apart.
    let outs: Vec<_> = a
        .scale_events
        .iter()
        .filter(|e| e.action == "scale-out")
        .collect();
    assert!(!outs.is_empty(), "{:?}", a.scale_events);
    assert_eq!(outs.len() as u32, a.scale_outs);
    for e in &outs {
        assert!(e.at_s < a.burst_end_s, "{e:?}");
        assert!(e.usage_percent.is_some_and(|u| u >= 80.0), "{e:?}");
        assert_eq!(e.workers, size.increment_workers, "{e:?}");
    }
    for w in outs.windows(2) {
        assert!(w[1].at_s - w[0].at_s >= 90.0, "{w:?}");
    }
    // The cluster grew past the initial workers, up to the cap on all
    // workers (mr3.k8s.worker.total.max.memory.gb), on nodes that came.
    assert!(a.peak_workers > size.initial_workers, "{}", a.peak_workers);
    assert!(a.peak_workers <= size.max_workers, "{}", a.peak_workers);
    assert!(a.peak_nodes > r.min_hosts, "{}", a.peak_nodes);
    assert!(a.nodes_provisioned > 1);
    let burst = a
        .timeline
        .iter()
        .filter(|p| p.at_s < a.burst_end_s)
        .map(|p| p.workers[0])
        .max()
        .unwrap_or(0);
    assert_eq!(
        burst, a.peak_workers,
        "the peak is reached during the burst"
    );
}

#[test]
fn elastic_scale_in_after_the_burst_releases_nodes_down_to_min_hosts() {
    let r = elastic();
    let size = ElasticSize::short();
    let a = elastic_run(r, "autoscaling");
    assert_eq!(
        a.keys["mr3.auto.scale.in.min.hosts"],
        r.min_hosts.to_string()
    );
    let ins: Vec<_> = a
        .scale_events
        .iter()
        .filter(|e| e.action == "scale-in")
        .collect();
    assert!(!ins.is_empty(), "{:?}", a.scale_events);
    assert_eq!(ins.len() as u32, a.scale_ins);
    let last_out = a
        .scale_events
        .iter()
        .filter(|e| e.action != "scale-in")
        .map(|e| e.at_s)
        .fold(0.0, f64::max);
    for e in &ins {
        // After every scale-out, on a usage at or below ScaleInThreshold;
        // one whole node at a time (mr3.auto.scale.in.num.decrement.hosts = 1).
        assert!(e.at_s > last_out, "{e:?}");
        assert!(e.usage_percent.is_some_and(|u| u <= 50.0), "{e:?}");
        assert_eq!(e.hosts.len(), 1, "{e:?}");
        assert_eq!(e.workers, size.workers_per_node, "{e:?}");
    }
    assert!(
        ins.iter().all(|e| e.at_s >= a.burst_end_s),
        "scale-in after the burst ({} s): {ins:?}",
        a.burst_end_s
    );
    // Node by node down to mr3.auto.scale.in.min.hosts, and no further.
    assert_eq!(a.scale_ins, a.peak_nodes - r.min_hosts);
    assert_eq!(a.final_nodes, r.min_hosts);
    assert_eq!(a.timeline.last().map(|p| p.nodes), Some(r.min_hosts));
    assert_eq!(a.final_workers, r.min_hosts * size.workers_per_node);
    assert_eq!(a.released_by_scale_in, a.scale_ins * size.workers_per_node);
    // The released workers finished the DAGs active at release time (the
    // background client's, which runs through the scale-ins): they waited,
    // and no attempt was killed.
    let background = a
        .clients
        .iter()
        .find(|c| c.name == "background")
        .expect("a background client");
    assert!(background.completion_s > a.last_scale_in_s.unwrap_or(f64::MAX));
    assert!(a.released_after_waiting > 0, "{a:?}");
    assert!(a.longest_release_wait_s > 0.0);
    assert_eq!(a.attempts_killed, 0);
    // Scale-in ends in STABLE: the last state change is out of SCALE_IN.
    assert_eq!(
        a.state_changes.last().map(|s| s.state.as_str()),
        Some("STABLE")
    );
}

#[test]
fn elastic_requests_no_worker_while_scale_in_lasts() {
    let r = elastic();
    let mut scale_in_spans = 0;
    for run in &r.runs {
        assert_eq!(run.requests_during_scale_in, 0, "{}", run.run);
        for g in &run.groups {
            let changes: Vec<_> = run
                .state_changes
                .iter()
                .filter(|s| s.group == g.name)
                .collect();
            for (i, c) in changes.iter().enumerate() {
                if c.state != "SCALE_IN" {
                    continue;
                }
                scale_in_spans += 1;
                let end = changes.get(i + 1).map_or(run.end_s, |n| n.at_s);
                let requests: Vec<_> = run
                    .scale_events
                    .iter()
                    .filter(|e| e.group == g.name && e.action != "scale-in" && e.action != "cancel")
                    .filter(|e| e.at_s >= c.at_s && e.at_s < end)
                    .collect();
                assert!(
                    requests.is_empty(),
                    "{} {}: requests during SCALE_IN {}-{end} s: {requests:?}",
                    run.run,
                    g.name,
                    c.at_s
                );
            }
        }
    }
    assert!(scale_in_spans > 0, "some scale-in to check");
}

#[test]
fn elastic_every_dag_completes() {
    let r = elastic();
    let size = ElasticSize::short();
    assert_eq!(r.runs.len(), 5);
    for run in &r.runs {
        let mut planned = 0;
        for (i, c) in run.clients.iter().enumerate() {
            let per_client = if run.run != "autoscaling" {
                size.recycling_dags_per_client
            } else if c.name == "background" {
                c.runs.len() as u32
            } else {
                burst_dags(&size, i as u32)
            };
            assert!(per_client > 0, "{} {}", run.run, c.name);
            planned += per_client;
            assert_eq!(c.runs.len() as u32, per_client, "{} {}", run.run, c.name);
            for w in c.runs.windows(2) {
                assert!(w[1].submitted_s >= w[0].finished_s, "one DAG at a time");
            }
            assert!(c.runs.iter().all(|x| x.finished_s > x.submitted_s));
        }
        let total: u32 = run.groups.iter().map(|g| g.dags).sum();
        assert_eq!(total, run.dags, "{}", run.run);
        assert_eq!(run.dags, planned, "{}", run.run);
        assert!(
            run.end_s - run.last_dag_finished_s > 900.0 - 1e-6,
            "{}: the quiet period",
            run.run
        );
        assert_eq!(run.attempts_killed, 0, "{}", run.run);
    }
    assert!(r.claims.iter().all(|c| c.held), "{:#?}", r.claims);
}

#[test]
fn elastic_recycling_moves_workers_under_fifo_and_fair_not_under_none_and_feeds_scale_outs() {
    let r = elastic();
    let none = elastic_run(r, "recycling none");
    assert_eq!(none.keys["mr3.container.scheduler.scheme"], "none");
    assert_eq!(none.migrations, 0);
    assert!(none.moves.is_empty());
    for label in ["recycling fifo", "recycling fair"] {
        let x = elastic_run(r, label);
        assert!(!x.autoscaling);
        assert_eq!(
            x.groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(),
            ["etl", "reports"]
        );
        assert!(x.migrations > 0, "{label}");
        assert_eq!(x.moves.len() as u32, x.migrations);
        // The first group's workers went to the second: reused instead of
        // new containers (and new nodes) for it.
        assert!(
            x.moves.iter().all(|m| m.to == "reports"),
            "{label}: {:?}",
            x.moves
        );
        assert!(
            x.containers_requested < none.containers_requested,
            "{label}: {} requests, none: {}",
            x.containers_requested,
            none.containers_requested
        );
        let reports = |run: &ElasticRunReport| run.groups[1].mean_turnaround_s;
        assert!(
            reports(x) < reports(none),
            "{label}: recycled workers are there at once"
        );
    }
    // With autoscaling on, an autoscaled group's need is its autoscaler's
    // outstanding requests: when `reports`' autoscaler asks for workers,
    // the reserve `etl` left goes to it first, each worker in place of a
    // container request.
    let both = elastic_run(r, "recycling fifo + autoscaling");
    assert!(both.autoscaling);
    assert!(both.migrations > 0, "{:?}", both.moves);
    assert_eq!(both.moves.len() as u32, both.migrations);
    assert!(
        both.moves
            .iter()
            .all(|m| m.to == "reports" && m.from.is_none()),
        "from the reserve to reports: {:?}",
        both.moves
    );
    let asked: Vec<_> = both
        .scale_events
        .iter()
        .filter(|e| e.action == "initial" || e.action == "scale-out")
        .collect();
    for m in &both.moves {
        // At the moment reports' autoscaler asked, which put it in
        // SCALE_OUT.
        assert!(
            asked
                .iter()
                .any(|e| e.group == "reports" && e.at_s == m.at_s && e.recycled > 0),
            "{m:?}: {asked:?}"
        );
        let state = both
            .state_changes
            .iter()
            .rev()
            .find(|s| s.group == "reports" && s.at_s <= m.at_s)
            .map(|s| s.state.as_str());
        assert_eq!(state, Some("SCALE_OUT"), "{m:?}");
    }
    let recycled: u32 = asked.iter().map(|e| e.recycled).sum();
    assert_eq!(recycled, both.migrations);
    assert_eq!(both.requests_recycled, both.migrations);
    // Without recycling, every worker the autoscalers asked for would be
    // a container request; the recycled ones were not.
    let decided: u32 = asked.iter().map(|e| e.workers).sum();
    assert_eq!(both.containers_requested + recycled, decided);
    assert!(
        both.containers_requested < decided,
        "{} containers requested for {decided} workers asked for",
        both.containers_requested
    );
    assert!(both.workers_started < decided);
}

#[test]
fn elastic_reports_are_deterministic_and_rendered() {
    let a = run_elastic(&ElasticOptions::short()).expect("runs");
    let b = run_elastic(&ElasticOptions::short()).expect("runs");
    assert_eq!(a.to_json(), b.to_json(), "same options, same bytes");
    assert_eq!(a.tables(), b.tables());
    assert_eq!(a.svg(), b.svg());
    // Checking invariants changes nothing.
    assert_eq!(a.to_json(), elastic().to_json());
    let mut o = ElasticOptions::short();
    o.seed = 2;
    assert_ne!(a.to_json(), run_elastic(&o).expect("runs").to_json());

    let v: serde_json::Value = serde_json::from_str(&a.to_json()).expect("valid JSON");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 5);
    for x in runs {
        for key in [
            "scale_outs",
            "scale_ins",
            "peak_workers",
            "final_workers",
            "peak_nodes",
            "final_nodes",
            "node_seconds",
            "migrations",
            "mean_turnaround_s",
            "clients",
            "scale_events",
            "keys",
        ] {
            assert!(x.get(key).is_some(), "{} lacks {key}", x["run"]);
        }
        assert!(x.get("timeline").is_none(), "the timeline is for the chart");
    }
    let text = a.tables();
    for x in &a.runs {
        assert!(text.contains(&x.run), "{}", x.run);
    }
    assert!(text.contains("Checks:"));
    let svg = a.svg();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    for x in &a.runs {
        assert!(svg.contains(&format!(">{}</text>", x.run)), "{}", x.run);
    }
    assert!(svg.contains("SCALE_OUT") && svg.contains("SCALE_IN"));
}
