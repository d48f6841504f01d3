//! The elastic scenario's checks, human tables and chart.

use std::fmt::Write as _;

use spindle_common::markup::escape;
use spindle_dag::autoscaler::ScaleState;

use std::path::{Path, PathBuf};

use super::elastic_report::{
    burst_dags, ElasticClientReport, ElasticReport, ElasticRunReport, ElasticSize, MIN_HOSTS,
};
use super::output::{claims_list, nice_step, query_table, table};
use super::{Claim, DagSimError};

fn s(v: impl ToString) -> String {
    v.to_string()
}

fn opt_s(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.0}"))
}

impl ElasticReport {
    /// The human tables.
    pub fn tables(&self) -> String {
        tables(self)
    }

    /// Workers, nodes and memory usage over time, one panel per run.
    pub fn svg(&self) -> String {
        svg(self)
    }

    /// Writes `dag-sim-elastic.svg` into `dir` (created if missing).
    pub fn write_svg(&self, dir: &Path) -> Result<PathBuf, DagSimError> {
        std::fs::create_dir_all(dir).map_err(|source| DagSimError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join("dag-sim-elastic.svg");
        std::fs::write(&path, self.svg()).map_err(|source| DagSimError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }
}

/// What the scenario is meant to show, judged on the results.
pub(super) fn claims(runs: &[ElasticRunReport], size: ElasticSize) -> Vec<Claim> {
    let mut out = Vec::new();
    let find = |label: &str| runs.iter().find(|r| r.run == label);
    if let Some(a) = find("autoscaling") {
        out.push(Claim {
            claim: "the autoscaler scales out during the burst".into(),
            held: a.scale_outs > 0 && a.first_scale_out_s.is_some_and(|t| t < a.burst_end_s),
            detail: format!(
                "{} scale-outs (the first at {} s) after {} initial request(s); the burst ended \
                 at {:.0} s; peak {} workers on {} nodes",
                a.scale_outs,
                opt_s(a.first_scale_out_s),
                a.initial_requests,
                a.burst_end_s,
                a.peak_workers,
                a.peak_nodes
            ),
        });
        out.push(Claim {
            claim: "after the burst, scale-in empties whole nodes down to \
                    mr3.auto.scale.in.min.hosts"
                .into(),
            held: a.scale_ins > 0
                && a.last_scale_in_s.is_some_and(|t| t >= a.burst_end_s)
                && a.final_nodes == MIN_HOSTS
                && a.final_nodes < a.peak_nodes,
            detail: format!(
                "{} scale-ins from {} s to {} s released {} workers; nodes: peak {}, final {} \
                 (min hosts {MIN_HOSTS}); workers: final {}",
                a.scale_ins,
                opt_s(a.first_scale_in_s),
                opt_s(a.last_scale_in_s),
                a.released_by_scale_in,
                a.peak_nodes,
                a.final_nodes,
                a.final_workers
            ),
        });
        out.push(Claim {
            claim: "workers on released nodes finish the active DAGs before they exit".into(),
            held: a.released_by_scale_in > 0 && a.attempts_killed == 0,
            detail: format!(
                "{} workers left with their nodes, {} of them after serving the DAGs active \
                 at release (up to {:.0} s); {} attempts were killed",
                a.released_by_scale_in,
                a.released_after_waiting,
                a.longest_release_wait_s,
                a.attempts_killed
            ),
        });
    }
    let during: u32 = runs.iter().map(|r| r.requests_during_scale_in).sum();
    out.push(Claim {
        claim: "no new worker is requested while SCALE_IN lasts".into(),
        held: during == 0,
        detail: format!(
            "{during} container requests made during a scale-in, over {} scale-ins in all runs",
            runs.iter().map(|r| r.scale_ins).sum::<u32>()
        ),
    });
    let moves = |label: &str| find(label).map_or(0, |r| r.migrations);
    let (none, fifo, fair) = (
        moves("recycling none"),
        moves("recycling fifo"),
        moves("recycling fair"),
    );
    out.push(Claim {
        claim: "recycling moves workers between the groups of a kind under fifo and fair, \
                never under none"
            .into(),
        held: none == 0 && fifo > 0 && fair > 0,
        detail: format!(
            "migrations: none {none}, fifo {fifo}, fair {fair}, fifo + autoscaling {}",
            moves("recycling fifo + autoscaling")
        ),
    });
    if let (Some(both), Some(fifo)) = (find("recycling fifo + autoscaling"), find("recycling fifo"))
    {
        let from_reserve = both.moves.iter().filter(|m| m.from.is_none()).count();
        out.push(Claim {
            claim: "with autoscaling, a scale-out takes recycled workers before it asks for \
                    containers"
                .into(),
            held: from_reserve > 0 && both.requests_recycled > 0,
            detail: format!(
                "fifo + autoscaling: {} migrations ({from_reserve} from the reserve) took the \
                 place of {} autoscaler requests; {} containers requested (fifo without \
                 autoscaling: {} migrations)",
                both.migrations, both.requests_recycled, both.containers_requested, fifo.migrations
            ),
        });
    }
    // Every client ran all its DAGs (the background client at least one).
    let planned = |r: &ElasticRunReport, c: &ElasticClientReport| -> Option<u32> {
        if r.run != "autoscaling" {
            Some(size.recycling_dags_per_client)
        } else {
            c.name
                .strip_prefix("Beeline ")
                .and_then(|i| i.parse::<u32>().ok())
                .map(|i| burst_dags(&size, i - 1))
        }
    };
    let short: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.clients.iter().filter_map(move |c| {
                let ran = c.runs.len() as u32;
                let ok = planned(r, c).map_or(ran > 0, |p| p == ran);
                (!ok).then(|| format!("{} {} ran {ran} DAGs", r.run, c.name))
            })
        })
        .collect();
    out.push(Claim {
        claim: "every DAG completes".into(),
        held: short.is_empty(),
        detail: if short.is_empty() {
            format!(
                "{} DAGs over {} runs, none failed or killed",
                runs.iter().map(|r| r.dags).sum::<u32>(),
                runs.len()
            )
        } else {
            short.join("; ")
        },
    });
    out
}

fn tables(r: &ElasticReport) -> String {
    let mut out = String::new();
    let c = &r.cluster;
    let _ = writeln!(out, "Elastic scenario (seed {}): {}", r.seed, r.description);
    let _ = writeln!(
        out,
        "Cluster: nodes of {} workers x {} slots (a worker: {} MB, {} vcores; a task: {} MB, {} \
         vcore); 1 node at time 0, at most {}; a node takes containers {} s after it is asked \
         for, a worker registers {} s after its container is granted, a node without workers is \
         reclaimed after {} s. DAGs sized for {} workers. Each run ends {} s after its last DAG.",
        c.workers_per_node,
        c.slots_per_worker,
        c.worker_memory_mb,
        c.worker_vcores,
        c.task_memory_mb,
        c.task_vcores,
        c.max_nodes,
        c.node_provisioning_s,
        c.worker_start_s,
        c.empty_node_reclaimed_after_s,
        c.reference_workers,
        c.quiet_period_s
    );
    if let Some(a) = r.runs.first() {
        let _ = writeln!(out, "Keys of the autoscaling run (the others differ only in the scheme, mr3.enable.auto.scaling and spindle.dag.group.max.workers):");
        for (k, v) in &a.keys {
            let _ = writeln!(out, "  {k} = {v}");
        }
    }
    out.push('\n');

    query_table(&mut out, &r.queries);
    out.push('\n');

    let header: Vec<String> = [
        "run",
        "scheme",
        "autoscaling",
        "scale-outs",
        "scale-ins",
        "peak workers",
        "final workers",
        "peak nodes",
        "final nodes",
        "node-s",
        "DAGs",
        "mean turnaround s",
        "burst end s",
        "last DAG s",
        "migrations",
    ]
    .map(s)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|x| {
            vec![
                x.run.clone(),
                x.container_scheduler_scheme.clone(),
                s(if x.autoscaling { "on" } else { "off" }),
                s(x.scale_outs),
                s(x.scale_ins),
                s(x.peak_workers),
                s(x.final_workers),
                s(x.peak_nodes),
                s(x.final_nodes),
                format!("{:.0}", x.node_seconds),
                s(x.dags),
                format!("{:.1}", x.mean_turnaround_s),
                format!("{:.0}", x.burst_end_s),
                format!("{:.0}", x.last_dag_finished_s),
                s(x.migrations),
            ]
        })
        .collect();
    table(&mut out, &header, &rows);
    out.push('\n');

    let _ = writeln!(out, "DAG completion per group:");
    let header: Vec<String> = [
        "run",
        "group",
        "DAGs",
        "mean turnaround s",
        "max turnaround s",
        "last finished s",
    ]
    .map(s)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .flat_map(|x| {
            x.groups.iter().map(move |g| {
                vec![
                    x.run.clone(),
                    g.name.clone(),
                    s(g.dags),
                    format!("{:.1}", g.mean_turnaround_s),
                    format!("{:.0}", g.max_turnaround_s),
                    format!("{:.0}", g.last_finished_s),
                ]
            })
        })
        .collect();
    table(&mut out, &header, &rows);
    out.push('\n');

    let _ = writeln!(out, "Requests, workers and recycling:");
    let header: Vec<String> = [
        "run",
        "requested",
        "withdrawn",
        "taken by recycling",
        "during SCALE_IN",
        "workers started",
        "left by scale-in",
        "graceful stops",
        "migrations",
        "nodes asked",
        "worker-s",
        "slot use",
    ]
    .map(s)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|x| {
            vec![
                x.run.clone(),
                s(x.containers_requested),
                s(x.requests_cancelled),
                s(x.requests_recycled),
                s(x.requests_during_scale_in),
                s(x.workers_started),
                s(x.released_by_scale_in),
                s(x.graceful_stops),
                s(x.migrations),
                s(x.nodes_provisioned),
                format!("{:.0}", x.worker_seconds),
                format!("{:.1}%", x.slot_utilization * 100.0),
            ]
        })
        .collect();
    table(&mut out, &header, &rows);

    for x in r.runs.iter().filter(|x| !x.scale_events.is_empty()) {
        out.push('\n');
        let _ = writeln!(out, "Autoscaler decisions, {}:", x.run);
        let header: Vec<String> = [
            "time s", "group", "action", "workers", "recycled", "usage %", "hosts",
        ]
        .map(s)
        .to_vec();
        let rows: Vec<Vec<String>> = x
            .scale_events
            .iter()
            .map(|e| {
                vec![
                    format!("{:.0}", e.at_s),
                    e.group.clone(),
                    e.action.clone(),
                    s(e.workers),
                    s(e.recycled),
                    e.usage_percent
                        .map_or("-".to_string(), |u| format!("{u:.1}")),
                    if e.hosts.is_empty() {
                        "-".to_string()
                    } else {
                        e.hosts.join(",")
                    },
                ]
            })
            .collect();
        table(&mut out, &header, &rows);
    }

    out.push('\n');
    let _ = writeln!(out, "Worker migrations per scheme:");
    for x in r.runs.iter().filter(|x| x.run.starts_with("recycling")) {
        let from_reserve = x.moves.iter().filter(|m| m.from.is_none()).count();
        let _ = writeln!(
            out,
            "  {}: {} ({} straight from another group, {} from the reserve){}",
            x.run,
            x.migrations,
            x.migrations as usize - from_reserve,
            from_reserve,
            match (x.moves.first(), x.moves.last()) {
                (Some(a), Some(b)) => format!(", from {:.0} s to {:.0} s", a.at_s, b.at_s),
                _ => String::new(),
            }
        );
    }

    out.push('\n');
    claims_list(&mut out, "Checks:", &r.claims);
    out
}

// ----- the chart -----

const GROUP_COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

fn state_colour(s: ScaleState) -> &'static str {
    match s {
        ScaleState::Stable => "#f2f2f2",
        ScaleState::ScaleOut => "#b7e4b0",
        ScaleState::ScaleIn => "#f9c98a",
    }
}

fn polyline(points: &[(f64, f64)], stroke: &str, width: f64, dash: Option<&str>) -> String {
    let mut d = String::new();
    for (i, (x, y)) in points.iter().enumerate() {
        let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
    }
    format!(
        "<path d=\"{d}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"{}/>",
        dash.map_or(String::new(), |d| format!(" stroke-dasharray=\"{d}\""))
    )
}

/// A step line: the value holds until the next point.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, out.last().map_or(y, |p: &(f64, f64)| p.1)));
        }
        out.push((x, y));
    }
    out
}

/// Stretches of one group's autoscaler state: (from, to, state).
fn state_spans(run: &ElasticRunReport, g: usize) -> Vec<(f64, f64, ScaleState)> {
    let t = &run.timeline;
    let mut out = Vec::new();
    let mut k = 0;
    while k < t.len() {
        let state = t[k].states.get(g).copied().flatten();
        let mut j = k + 1;
        while j < t.len() && t[j].states.get(g).copied().flatten() == state {
            j += 1;
        }
        if let Some(st) = state {
            out.push((t[k].at_s, t.get(j).map_or(run.end_s, |p| p.at_s), st));
        }
        k = j;
    }
    out
}

enum Mark {
    Line { dashed: bool },
    Triangle,
    Box,
}

/// One panel per run: workers per group, reserve and nodes over time on
/// the autoscaler's state bands (one strip per autoscaled group, and the
/// whole panel tinted when there is one), and below it the memory in use
/// by running attempts with each autoscaler's window usage and the
/// thresholds (80% and 50%).
fn svg(r: &ElasticReport) -> String {
    const W: f64 = 1000.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 210.0;
    const TOP_H: f64 = 170.0;
    const GAP: f64 = 14.0;
    const MEM_H: f64 = 70.0;
    const STRIP: f64 = 11.0;
    let plot_w = W - LEFT - RIGHT;
    let scaled_groups = |run: &ElasticRunReport| -> Vec<usize> {
        (0..run.groups.len())
            .filter(|&g| {
                run.timeline
                    .iter()
                    .any(|p| p.states.get(g).copied().flatten().is_some())
            })
            .collect()
    };
    let panel_h = |run: &ElasticRunReport| {
        30.0 + STRIP * scaled_groups(run).len() as f64 + TOP_H + GAP + MEM_H + 40.0
    };
    let height = 40.0 + r.runs.iter().map(panel_h).sum::<f64>();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {W:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">spindle dag sim \
         --experiment elastic (seed {}): workers, nodes and memory usage over time</text>",
        W / 2.0,
        r.seed
    );
    let mut oy = 40.0;
    for run in &r.runs {
        let scaled = scaled_groups(run);
        let strips_top = oy + 26.0;
        let top = strips_top + STRIP * scaled.len() as f64 + 4.0;
        let base = top + TOP_H;
        let mem_top = base + GAP;
        let mem_base = mem_top + MEM_H;
        let end = run.end_s.max(1.0);
        let x = |t: f64| LEFT + plot_w * (t / end).clamp(0.0, 1.0);
        let max_count = run
            .timeline
            .iter()
            .map(|p| p.nodes.max(p.workers.iter().sum::<u32>() + p.reserve))
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let ystep = nice_step(max_count / 5.0).max(1.0);
        let ytop = (max_count / ystep).ceil() * ystep;
        let y = |v: f64| base - TOP_H * (v / ytop).clamp(0.0, 1.0);
        let ym = |v: f64| mem_base - MEM_H * v.clamp(0.0, 1.0);
        let colour = |g: usize| GROUP_COLOURS[g % GROUP_COLOURS.len()];
        let _ = writeln!(
            out,
            "<text x=\"{LEFT:.1}\" y=\"{:.1}\" font-size=\"13\" font-weight=\"bold\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{} scale-outs, {} scale-ins, \
             {} migrations, {:.0} node-s</text>",
            oy + 16.0,
            escape(&run.run),
            LEFT + plot_w,
            oy + 16.0,
            run.scale_outs,
            run.scale_ins,
            run.migrations,
            run.node_seconds
        );
        // The autoscalers' states.
        for (k, &g) in scaled.iter().enumerate() {
            let sy = strips_top + STRIP * k as f64;
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"9\">{}</text>",
                LEFT - 4.0,
                sy + 8.0,
                escape(&run.groups[g].name)
            );
            for (t0, t1, st) in state_spans(run, g) {
                let (x0, x1) = (x(t0), x(t1));
                let _ = writeln!(
                    out,
                    "<rect x=\"{x0:.1}\" y=\"{sy:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                     fill=\"{}\" stroke=\"#ccc\" stroke-width=\"0.3\"><title>{}: {st} \
                     {t0:.0}-{t1:.0} s</title></rect>",
                    (x1 - x0).max(0.5),
                    STRIP - 2.0,
                    state_colour(st),
                    escape(&run.groups[g].name)
                );
                if scaled.len() == 1 && st != ScaleState::Stable {
                    let _ = writeln!(
                        out,
                        "<rect x=\"{x0:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                         fill=\"{}\" fill-opacity=\"0.6\"/>",
                        (x1 - x0).max(0.5),
                        mem_base - top,
                        state_colour(st)
                    );
                }
            }
        }
        // Grid and axes.
        let mut v = 0.0;
        while v <= ytop + 1e-9 {
            let yy = y(v);
            let _ = writeln!(
                out,
                "<line x1=\"{LEFT:.1}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
                LEFT + plot_w,
                LEFT - 4.0,
                yy + 4.0
            );
            v += ystep;
        }
        for frac in [0.0, 0.5, 0.8, 1.0] {
            let yy = ym(frac);
            let _ = writeln!(
                out,
                "<line x1=\"{LEFT:.1}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ccc\"{}/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>",
                LEFT + plot_w,
                if frac == 0.5 || frac == 0.8 {
                    " stroke-dasharray=\"4 3\""
                } else {
                    ""
                },
                LEFT - 4.0,
                yy + 4.0,
                frac * 100.0
            );
        }
        let tstep = nice_step(end / 8.0);
        let mut t = 0.0;
        while t <= end + 1e-9 {
            let xx = x(t);
            let _ = writeln!(
                out,
                "<line x1=\"{xx:.1}\" y1=\"{mem_base:.1}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#000\"/>\
                 <text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t:.0}</text>",
                mem_base + 4.0,
                mem_base + 16.0
            );
            t += tstep;
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">s</text>\
             <path d=\"M{LEFT:.1},{top:.1} L{LEFT:.1},{base:.1} L{:.1},{base:.1}\" fill=\"none\" stroke=\"#000\"/>\
             <path d=\"M{LEFT:.1},{mem_top:.1} L{LEFT:.1},{mem_base:.1} L{:.1},{mem_base:.1}\" fill=\"none\" stroke=\"#000\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1} {:.1})\">count</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1} {:.1})\">memory</text>",
            LEFT + plot_w + 6.0,
            mem_base + 16.0,
            LEFT + plot_w,
            LEFT + plot_w,
            LEFT - 38.0,
            (top + base) / 2.0,
            LEFT - 38.0,
            (top + base) / 2.0,
            LEFT - 38.0,
            (mem_top + mem_base) / 2.0,
            LEFT - 38.0,
            (mem_top + mem_base) / 2.0
        );
        // The end of the burst and the last DAG.
        let mut marks = vec![("last DAG", run.last_dag_finished_s)];
        if run.burst_end_s < run.last_dag_finished_s {
            marks.push(("burst over", run.burst_end_s));
        }
        for (what, t) in marks {
            let xl = x(t);
            let _ = writeln!(
                out,
                "<line x1=\"{xl:.1}\" y1=\"{top:.1}\" x2=\"{xl:.1}\" y2=\"{mem_base:.1}\" \
                 stroke=\"#555\" stroke-dasharray=\"2 2\"><title>{what} at {t:.0} s</title></line>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"#555\">{what}</text>",
                xl + 3.0,
                top + 10.0
            );
        }
        // Lines.
        let nodes: Vec<(f64, f64)> = run
            .timeline
            .iter()
            .map(|p| (x(p.at_s), y(f64::from(p.nodes))))
            .collect();
        out.push_str(&polyline(&steps(&nodes), "#000", 2.0, None));
        out.push('\n');
        for g in 0..run.groups.len() {
            let pts: Vec<(f64, f64)> = run
                .timeline
                .iter()
                .map(|p| {
                    (
                        x(p.at_s),
                        y(f64::from(p.workers.get(g).copied().unwrap_or(0))),
                    )
                })
                .collect();
            out.push_str(&polyline(&steps(&pts), colour(g), 1.6, None));
            out.push('\n');
        }
        let has_reserve = run.timeline.iter().any(|p| p.reserve > 0);
        if has_reserve {
            let pts: Vec<(f64, f64)> = run
                .timeline
                .iter()
                .map(|p| (x(p.at_s), y(f64::from(p.reserve))))
                .collect();
            out.push_str(&polyline(&steps(&pts), "#888", 1.2, Some("4 2")));
            out.push('\n');
        }
        for m in &run.moves {
            let xx = x(m.at_s);
            let _ = writeln!(
                out,
                "<path d=\"M{xx:.1},{base:.1} l-3,6 l6,0 z\" fill=\"#ff7f0e\"><title>{} to {} at \
                 {:.0} s</title></path>",
                escape(&m.worker),
                escape(&m.to),
                m.at_s
            );
        }
        let mem: Vec<(f64, f64)> = run
            .timeline
            .iter()
            .map(|p| (x(p.at_s), ym(p.memory_usage)))
            .collect();
        out.push_str(&polyline(&mem, "#17becf", 1.2, None));
        out.push('\n');
        for &g in &scaled {
            // One line per stretch the group's autoscaler measured.
            let mut segment: Vec<(f64, f64)> = Vec::new();
            for p in &run.timeline {
                match p.window_usage.get(g).copied().flatten() {
                    Some(u) => segment.push((x(p.at_s), ym(u))),
                    None if !segment.is_empty() => {
                        out.push_str(&polyline(&segment, colour(g), 1.4, Some("5 2")));
                        out.push('\n');
                        segment.clear();
                    }
                    None => {}
                }
            }
            if !segment.is_empty() {
                out.push_str(&polyline(&segment, colour(g), 1.4, Some("5 2")));
                out.push('\n');
            }
        }
        // Legend.
        let lx = LEFT + plot_w + 14.0;
        let mut ly = top + 6.0;
        let mut items: Vec<(String, Mark, String)> =
            vec![("#000".into(), Mark::Line { dashed: false }, "nodes".into())];
        for (g, group) in run.groups.iter().enumerate() {
            items.push((
                colour(g).into(),
                Mark::Line { dashed: false },
                format!("workers of {}", group.name),
            ));
        }
        if has_reserve {
            items.push((
                "#888".into(),
                Mark::Line { dashed: true },
                "workers in the reserve".into(),
            ));
        }
        if !run.moves.is_empty() {
            items.push((
                "#ff7f0e".into(),
                Mark::Triangle,
                "a worker migration".into(),
            ));
        }
        items.push((
            "#17becf".into(),
            Mark::Line { dashed: false },
            "memory in use by tasks".into(),
        ));
        for &g in &scaled {
            items.push((
                colour(g).into(),
                Mark::Line { dashed: true },
                format!("window usage of {}", run.groups[g].name),
            ));
        }
        if !scaled.is_empty() {
            for st in [ScaleState::ScaleOut, ScaleState::ScaleIn] {
                items.push((state_colour(st).into(), Mark::Box, st.to_string()));
            }
        }
        for (c, mark, label) in items {
            let sym = match mark {
                Mark::Line { dashed } => format!(
                    "<line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{c}\" \
                     stroke-width=\"2\"{}/>",
                    lx + 18.0,
                    if dashed { " stroke-dasharray=\"4 2\"" } else { "" }
                ),
                Mark::Triangle => format!(
                    "<path d=\"M{:.1},{:.1} l-4,8 l8,0 z\" fill=\"{c}\"/>",
                    lx + 9.0,
                    ly - 4.0
                ),
                Mark::Box => format!(
                    "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"18\" height=\"10\" fill=\"{c}\"/>",
                    ly - 5.0
                ),
            };
            let _ = writeln!(
                out,
                "{sym}<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                lx + 22.0,
                ly + 4.0,
                escape(&label)
            );
            ly += 15.0;
        }
        oy += panel_h(run);
    }
    out.push_str("</svg>\n");
    out
}
