//! The seed's claims checked on the results, the human tables and the
//! per-client progress chart.

use std::fmt::Write as _;

use spindle_common::markup::escape;

use super::{Claim, Experiment, ExperimentReport, QueryReport, SchemeResult, Size};

/// "About the same" time: within this factor of each other.
pub(super) const ABOUT_THE_SAME: f64 = 2.0;

const CONCURRENT: [&str; 5] = ["intact", "roots", "leaves", "postorder", "normalize"];

fn find<'a>(results: &'a [SchemeResult], label: &str) -> Option<&'a SchemeResult> {
    results.iter().find(|r| r.scheme == label)
}

/// max / min of positive values (1 for fewer than one value).
fn spread(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    if values.is_empty() || min <= 0.0 {
        return 1.0;
    }
    max / min
}

/// Pearson correlation of two equally long series (0 when undefined).
fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 0.0;
    }
    let mean = |v: &[f64]| v[..n].iter().sum::<f64>() / n as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (da, db) = (a[i] - ma, b[i] - mb);
        cov += da * db;
        va += da * da;
        vb += db * db;
    }
    if va <= 0.0 || vb <= 0.0 {
        return 0.0;
    }
    cov / (va.sqrt() * vb.sqrt())
}

/// Each client's completion over the sequential time of its work.
fn stretch(r: &SchemeResult, queries: &[QueryReport], size: Size) -> Vec<f64> {
    r.client_completion_s
        .iter()
        .zip(queries)
        .map(|(c, q)| c / (q.sequential_s * f64::from(size.dags_per_client)))
        .collect()
}

/// Labels of the concurrent schemes, best first by `key` (ties by label
/// order of the seed).
fn ranking(results: &[SchemeResult], key: impl Fn(&SchemeResult) -> f64) -> Vec<(String, f64)> {
    let mut v: Vec<(usize, String, f64)> = CONCURRENT
        .iter()
        .enumerate()
        .filter_map(|(i, l)| find(results, l).map(|r| (i, r.scheme.clone(), key(r))))
        .collect();
    v.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(_, l, k)| (l, k)).collect()
}

fn list(r: &[(String, f64)]) -> String {
    r.iter()
        .map(|(l, v)| format!("{l} {v:.0} s"))
        .collect::<Vec<_>>()
        .join(" < ")
}

/// The seed's observations, judged on the results.
pub(super) fn claims(
    experiment: Experiment,
    results: &[SchemeResult],
    queries: &[QueryReport],
    size: Size,
) -> Vec<Claim> {
    let mut out = Vec::new();
    match experiment {
        Experiment::One => {
            if let Some(fifo) = find(results, "fifo") {
                let others: Vec<&SchemeResult> =
                    results.iter().filter(|r| r.scheme != "fifo").collect();
                let best_other = others
                    .iter()
                    .min_by(|a, b| a.total_time_s.total_cmp(&b.total_time_s));
                let held = others.iter().all(|r| fifo.total_time_s < r.total_time_s);
                out.push(Claim {
                    claim: "fifo DAG priority yields the shortest total time (highest throughput)"
                        .into(),
                    held,
                    detail: format!(
                        "fifo {:.0} s; best other: {}; all totals within {:.2}% of each other",
                        fifo.total_time_s,
                        best_other.map_or("none".to_string(), |r| format!(
                            "{} {:.0} s",
                            r.scheme, r.total_time_s
                        )),
                        (spread(&results.iter().map(|r| r.total_time_s).collect::<Vec<_>>()) - 1.0)
                            * 100.0
                    ),
                });
            }
        }
        Experiment::Two => {
            if let Some(ind) = find(results, "individual") {
                let spreads: Vec<(String, f64)> = results
                    .iter()
                    .map(|r| (r.scheme.clone(), spread(&stretch(r, queries, size))))
                    .collect();
                let own = spread(&stretch(ind, queries, size));
                let held = spreads.iter().all(|(l, s)| l == "individual" || own < *s);
                let seq: Vec<f64> = queries.iter().map(|q| q.sequential_s).collect();
                out.push(Claim {
                    claim: "individual queues are the fairest: each client's total time is \
                            roughly proportional to its query's sequential time"
                        .into(),
                    held,
                    detail: format!(
                        "max/min of completion / (runs x sequential time): {}; correlation of \
                         completion with sequential time: individual {:.3}, fifo {:.3}",
                        spreads
                            .iter()
                            .map(|(l, s)| format!("{l} {s:.2}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        correlation(&ind.client_completion_s, &seq),
                        find(results, "fifo")
                            .map_or(0.0, |f| correlation(&f.client_completion_s, &seq)),
                    ),
                });
                if let Some(norm) = find(results, "normalize") {
                    let first = |r: &SchemeResult| {
                        spread(
                            &r.clients
                                .iter()
                                .map(|c| c.first_turnaround_s)
                                .collect::<Vec<_>>(),
                        )
                    };
                    let (n, i) = (first(norm), first(ind));
                    out.push(Claim {
                        claim: "concurrent + normalize gives a completely different result: \
                                every client spends about the same time on its first run"
                            .into(),
                        held: n <= ABOUT_THE_SAME,
                        detail: format!(
                            "max/min of first-run turnaround: normalize {n:.2} (about the same \
                             means at most {ABOUT_THE_SAME:.1}), individual {i:.2}"
                        ),
                    });
                }
            }
            let by_total = ranking(results, |r| r.total_time_s);
            let by_turnaround = ranking(results, |r| r.mean_turnaround_s);
            let first = |r: &[(String, f64)]| r.first().map(|x| x.0.clone());
            let second = |r: &[(String, f64)]| r.get(1).map(|x| x.0.clone());
            out.push(Claim {
                claim: "with concurrent DAG priority, postorder gives the highest throughput"
                    .into(),
                held: first(&by_total).as_deref() == Some("postorder"),
                detail: format!("total time: {}", list(&by_total)),
            });
            out.push(Claim {
                claim: "with concurrent DAG priority, postorder gives the shortest turnaround"
                    .into(),
                held: first(&by_turnaround).as_deref() == Some("postorder"),
                detail: format!("mean turnaround: {}", list(&by_turnaround)),
            });
            out.push(Claim {
                claim: "with concurrent DAG priority, leaves is the second best choice".into(),
                held: second(&by_total).as_deref() == Some("leaves")
                    && second(&by_turnaround).as_deref() == Some("leaves"),
                detail: format!(
                    "second by total time: {}, by mean turnaround: {}",
                    second(&by_total).unwrap_or_default(),
                    second(&by_turnaround).unwrap_or_default()
                ),
            });
        }
    }
    out
}

fn row(out: &mut String, cells: &[String], widths: &[usize]) {
    let mut line = String::new();
    for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
        if i == 0 {
            let _ = write!(line, "{c:<w$}");
        } else {
            let _ = write!(line, "  {c:>w$}");
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

pub(super) fn table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    row(out, header, &widths);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    row(out, &rule, &widths);
    for r in rows {
        row(out, r, &widths);
    }
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

/// A heading, then each claim with whether it held and its figures.
pub(super) fn claims_list(out: &mut String, heading: &str, claims: &[Claim]) {
    let _ = writeln!(out, "{heading}");
    for c in claims {
        let _ = writeln!(
            out,
            "  [{}] {}\n        {}",
            if c.held { "held" } else { "did not hold" },
            c.claim,
            c.detail
        );
    }
}

/// The query table: each query's shape, its seed and simulated sequential
/// times and its work.
pub(super) fn query_table(out: &mut String, queries: &[QueryReport]) {
    let header: Vec<String> = [
        "query",
        "vertices",
        "tasks",
        "sequential (seed) s",
        "sequential (sim) s",
        "work slot-s",
    ]
    .map(s)
    .to_vec();
    let rows: Vec<Vec<String>> = queries
        .iter()
        .map(|q| {
            vec![
                q.name.clone(),
                s(q.vertices),
                s(q.tasks),
                format!("{:.1}", q.sequential_s),
                format!("{:.1}", q.simulated_sequential_s),
                format!("{:.0}", q.work_slot_s),
            ]
        })
        .collect();
    table(out, &header, &rows);
}

pub(super) fn tables(r: &ExperimentReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Experiment {}: {} (seed {})",
        r.experiment, r.description, r.seed
    );
    let _ = writeln!(
        out,
        "Cluster: {} workers x {} slots = {} concurrent tasks of {} MB, {} vcore",
        r.cluster.workers,
        r.cluster.slots_per_worker,
        r.cluster.slots,
        r.cluster.task_memory_mb,
        r.cluster.task_vcores
    );
    out.push('\n');
    query_table(&mut out, &r.queries);
    out.push('\n');

    let header: Vec<String> = [
        "scheme",
        "queue",
        "DAG priority",
        "vertex priority",
        "total s",
        "DAGs/h",
        "mean turnaround s",
        "utilization",
    ]
    .map(s)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .results
        .iter()
        .map(|x| {
            vec![
                x.scheme.clone(),
                x.queue_scheme.clone(),
                x.dag_priority_scheme.clone(),
                x.vertex_priority_scheme.clone(),
                format!("{:.0}", x.total_time_s),
                format!("{:.1}", x.throughput_dags_per_hour),
                format!("{:.1}", x.mean_turnaround_s),
                format!("{:.1}%", x.utilization * 100.0),
            ]
        })
        .collect();
    table(&mut out, &header, &rows);
    out.push('\n');

    let _ = writeln!(out, "Completion time of each client (s):");
    let clients = r.results.first().map_or(0, |x| x.clients.len());
    let mut header = vec![s("scheme")];
    header.extend((1..=clients).map(|i| format!("B{i}")));
    let rows: Vec<Vec<String>> = r
        .results
        .iter()
        .map(|x| {
            let mut v = vec![x.scheme.clone()];
            v.extend(x.client_completion_s.iter().map(|c| format!("{c:.0}")));
            v
        })
        .collect();
    table(&mut out, &header, &rows);

    if r.experiment == 2 {
        out.push('\n');
        let _ = writeln!(
            out,
            "Completion / ({} x sequential time) of each client, and first-run turnaround (s):",
            r.dags_per_client
        );
        let mut header = vec![s("scheme")];
        header.extend((1..=clients).map(|i| format!("B{i}")));
        header.extend((1..=clients).map(|i| format!("first B{i}")));
        let rows: Vec<Vec<String>> = r
            .results
            .iter()
            .map(|x| {
                let mut v = vec![x.scheme.clone()];
                v.extend(x.client_completion_s.iter().zip(&r.queries).map(|(c, q)| {
                    format!("{:.2}", c / (q.sequential_s * f64::from(r.dags_per_client)))
                }));
                v.extend(
                    x.clients
                        .iter()
                        .map(|c| format!("{:.0}", c.first_turnaround_s)),
                );
                v
            })
            .collect();
        table(&mut out, &header, &rows);
    }

    out.push('\n');
    claims_list(&mut out, "The seed's observations:", &r.claims);
    out
}

// ----- the chart -----

/// A round axis step (1, 2 or 5 times a power of ten) of at least `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= raw)
        .unwrap_or(10.0 * p)
}

/// One colour per query, evenly spread around the hue circle.
fn colour(i: usize, n: usize) -> String {
    let hue = (i * 360) / n.max(1);
    let light = if i.is_multiple_of(2) { 52 } else { 66 };
    format!("hsl({hue},65%,{light}%)")
}

/// Panels side by side (four per row), one per scheme: a column per
/// client from 0 up to its completion, one block per DAG in the query's
/// colour, every panel on the same time scale (the seed's "progress of
/// every Beeline client").
pub(super) fn progress_svg(r: &ExperimentReport) -> String {
    const PANEL_H: f64 = 360.0;
    const TOP: f64 = 50.0;
    const AXIS: f64 = 56.0;
    const BOTTOM: f64 = 30.0;
    const PER_ROW: usize = 4;
    let clients = r.results.first().map_or(0, |x| x.clients.len());
    let col = if clients > 10 { 12.0 } else { 20.0 };
    let panel_w = AXIS + 20.0 + col * clients as f64;
    let panels = r.results.len();
    let rows = panels.div_ceil(PER_ROW).max(1);
    let cols = panels.clamp(1, PER_ROW);
    let names: Vec<&str> = r.queries.iter().map(|q| q.name.as_str()).collect();
    let legend_rows = names.len().div_ceil(6);
    let width = (panel_w * cols as f64).max(640.0);
    let height = TOP + rows as f64 * (PANEL_H + BOTTOM + 30.0) + 20.0 * legend_rows as f64 + 20.0;
    let max_t = r
        .results
        .iter()
        .map(|x| x.total_time_s)
        .fold(0.0, f64::max)
        .max(1.0);
    let step = nice_step(max_t / 6.0);
    let top_t = (max_t / step).ceil() * step;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.0}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">Experiment {}: \
         progress of every client (y: elapsed time, s)</text>",
        width / 2.0,
        r.experiment
    );
    for (p, x) in r.results.iter().enumerate() {
        let ox = (p % PER_ROW) as f64 * panel_w;
        let oy = TOP + (p / PER_ROW) as f64 * (PANEL_H + BOTTOM + 30.0);
        let plot_x = ox + AXIS;
        let base = oy + PANEL_H;
        let y = |t: f64| base - PANEL_H * (t / top_t).clamp(0.0, 1.0);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
            plot_x + col * clients as f64 / 2.0,
            oy - 8.0,
            escape(&x.scheme)
        );
        let mut t = 0.0;
        while t <= top_t + 1e-9 {
            let yy = y(t);
            let _ = writeln!(
                out,
                "<line x1=\"{plot_x:.1}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t:.0}</text>",
                plot_x + col * clients as f64,
                plot_x - 4.0,
                yy + 4.0
            );
            t += step;
        }
        for (c, client) in x.clients.iter().enumerate() {
            let cx = plot_x + col * c as f64 + 1.0;
            for run in &client.runs {
                let q = names.iter().position(|n| *n == run.query).unwrap_or(0);
                let (y0, y1) = (y(run.finished_s), y(run.submitted_s));
                let _ = writeln!(
                    out,
                    "<rect x=\"{cx:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                     fill=\"{}\" stroke=\"white\" stroke-width=\"0.4\"><title>{}: {} \
                     {:.0}-{:.0} s</title></rect>",
                    col - 2.0,
                    (y1 - y0).max(0.3),
                    colour(q, names.len()),
                    escape(&client.name),
                    escape(&run.query),
                    run.submitted_s,
                    run.finished_s
                );
            }
            if clients <= 16 {
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9\">{}</text>",
                    cx + col / 2.0 - 1.0,
                    base + 12.0,
                    c + 1
                );
            }
        }
        let _ = writeln!(
            out,
            "<path d=\"M{plot_x:.1},{:.1} L{plot_x:.1},{base:.1} L{:.1},{base:.1}\" fill=\"none\" stroke=\"#000\"/>",
            oy,
            plot_x + col * clients as f64
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">total {:.0} s</text>",
            plot_x + col * clients as f64 / 2.0,
            base + 26.0,
            x.total_time_s
        );
    }
    let ly = TOP + rows as f64 * (PANEL_H + BOTTOM + 30.0);
    for (i, n) in names.iter().enumerate() {
        let lx = 20.0 + (i % 6) as f64 * 105.0;
        let yy = ly + (i / 6) as f64 * 20.0;
        let _ = writeln!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{yy:.1}\">{}</text>",
            yy - 10.0,
            colour(i, names.len()),
            lx + 16.0,
            escape(n)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_steps() {
        assert_eq!(spread(&[2.0, 4.0, 3.0]), 2.0);
        assert_eq!(spread(&[]), 1.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(nice_step(130.0), 200.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_ne!(colour(0, 17), colour(1, 17));
        assert!((correlation(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-12);
        assert!((correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(correlation(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
    }
}
