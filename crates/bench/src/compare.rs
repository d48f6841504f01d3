//! Side by side: the same load against Hadoop's ResourceManager and Spindle's,
//! one after the other, and a saturation run that raises the offered load step
//! by step until latency or throughput gives out.
//!
//! [`side_by_side`] starts each RM of a [`Contender`] list in turn (Hadoop's
//! first), runs the same [`RpcBenchOptions`] against it and stops it;
//! [`comparison_table`] prints the figures as one table with the ratios the
//! project's targets are stated in. [`saturate`] does the same with a list of
//! loads of growing size ([`saturation_loads`]) against one start of each RM,
//! and [`find_knee`] says where each RM stopped keeping up.

use std::time::Duration;

use serde::Serialize;
use spindle_ipc::methods::application_master::ALLOCATE;

use crate::RpcBenchReport;
use crate::{progress, run_against, start_target, BenchError, RmTarget, RpcBenchOptions};

/// One RM of a side-by-side run.
#[derive(Debug, Clone)]
pub struct Contender {
    /// A short label, e.g. `Hadoop RM`.
    pub label: String,
    pub target: RmTarget,
}

/// Runs `opts` against each contender in turn: starts it, loads it, stops it.
/// A contender that fails (does not start, falls over) yields its error and the
/// next one still runs.
pub async fn side_by_side(
    opts: &RpcBenchOptions,
    contenders: &[Contender],
) -> Vec<(String, Result<RpcBenchReport, BenchError>)> {
    let mut out = Vec::new();
    for c in contenders {
        let mut o = opts.clone();
        o.target = c.target.clone();
        progress(&o, format_args!("--- {} ---", c.label));
        out.push((c.label.clone(), crate::run(o).await));
    }
    out
}

fn cell_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2} ms"))
}

fn cell_ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}×"))
}

/// Heartbeats per second per core the RM used.
pub fn heartbeats_per_core(r: &RpcBenchReport) -> Option<f64> {
    r.rm_cpu_cores
        .filter(|c| *c > 0.0)
        .map(|c| r.heartbeats_per_sec / c)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
}

/// The ratios the S12 targets are stated in, Spindle over Hadoop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratios {
    /// Spindle's heartbeats per RM core ÷ Hadoop's (target ≥ 10).
    pub heartbeats_per_core: Option<f64>,
    /// Spindle's allocate p99 ÷ Hadoop's (target ≤ 0.1).
    pub allocate_p99: Option<f64>,
    /// Spindle's RSS ÷ Hadoop's (target ≤ 0.2).
    pub rss: Option<f64>,
}

/// Spindle's figures over Hadoop's.
pub fn ratios(hadoop: &RpcBenchReport, spindle: &RpcBenchReport) -> Ratios {
    Ratios {
        heartbeats_per_core: ratio(heartbeats_per_core(spindle), heartbeats_per_core(hadoop)),
        allocate_p99: ratio(spindle.allocate_ms_p99, hadoop.allocate_ms_p99),
        rss: ratio(spindle.rm_rss_mb, hadoop.rm_rss_mb),
    }
}

/// One Markdown table: a column per RM (a failed one shows its error), a row
/// per figure; then, when the first column is Hadoop's and the second
/// Spindle's and both ran, the target ratios.
pub fn comparison_table(runs: &[(String, Result<RpcBenchReport, String>)]) -> String {
    let mut s = String::new();
    let header: Vec<&str> = runs.iter().map(|(l, _)| l.as_str()).collect();
    s.push_str(&format!("| | {} |\n", header.join(" | ")));
    s.push_str(&format!("|---|{}\n", "---:|".repeat(runs.len())));
    type Row = (&'static str, fn(&RpcBenchReport) -> String);
    let rows: [Row; 14] = [
        ("version", |r| {
            r.rm_version.clone().unwrap_or_else(|| "?".into())
        }),
        ("NMs / AMs", |r| {
            format!(
                "{} / {} (registered {} / {})",
                r.nms, r.ams, r.nms_registered, r.ams_registered
            )
        }),
        ("heartbeats/s", |r| format!("{:.0}", r.heartbeats_per_sec)),
        ("heartbeat p50", |r| cell_ms(r.heartbeat_ms_p50)),
        ("heartbeat p99", |r| cell_ms(r.heartbeat_ms_p99)),
        ("allocates/s", |r| {
            format!(
                "{:.0} (of {:.0})",
                r.allocates_per_sec, r.target_allocates_per_sec
            )
        }),
        ("allocate p50", |r| cell_ms(r.allocate_ms_p50)),
        ("allocate p99", |r| cell_ms(r.allocate_ms_p99)),
        ("containers/s", |r| {
            format!("{:.1}", r.containers_allocated_per_sec)
        }),
        ("RM CPU cores", |r| {
            r.rm_cpu_cores
                .map_or_else(|| "-".into(), |c| format!("{c:.2}"))
        }),
        ("heartbeats/s per RM core", |r| {
            heartbeats_per_core(r).map_or_else(|| "-".into(), |h| format!("{h:.0}"))
        }),
        ("RM RSS", |r| {
            r.rm_rss_mb
                .map_or_else(|| "-".into(), |m| format!("{m:.0} MiB"))
        }),
        ("errors (hb / alloc / tasks)", |r| {
            format!(
                "{} / {} / {}",
                r.heartbeat_errors, r.allocate_errors, r.task_failures
            )
        }),
        ("bench CPU cores", |r| format!("{:.2}", r.bench_cpu_cores)),
    ];
    for (name, cell) in rows {
        let cells: Vec<String> = runs
            .iter()
            .map(|(_, r)| match r {
                Ok(r) => cell(r),
                Err(_) => "failed".into(),
            })
            .collect();
        s.push_str(&format!("| {name} | {} |\n", cells.join(" | ")));
    }
    for (label, r) in runs {
        if let Err(e) = r {
            s.push_str(&format!("\n{label} failed: {e}\n"));
        }
        if let Ok(r) = r {
            if let Some(e) = &r.first_error {
                s.push_str(&format!("\n{label}, first error: {e}\n"));
            }
        }
    }
    if let [(_, Ok(hadoop)), (_, Ok(spindle)), ..] = runs {
        let r = ratios(hadoop, spindle);
        s.push_str(&format!(
            "\nSpindle ÷ Hadoop: heartbeats per RM core {} (target ≥ 10×), allocate p99 {} \
             (target ≤ 0.10×), RSS {} (target ≤ 0.20×)\n",
            cell_ratio(r.heartbeats_per_core),
            cell_ratio(r.allocate_p99),
            cell_ratio(r.rss)
        ));
    }
    s
}

/// The figures of one saturation step that decide the knee.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFigures {
    pub nms: usize,
    pub offered_heartbeats_per_sec: f64,
    pub offered_allocates_per_sec: f64,
    pub heartbeats_per_sec: f64,
    pub allocates_per_sec: f64,
    pub heartbeat_ms_p99: Option<f64>,
    pub allocate_ms_p99: Option<f64>,
    pub rm_cpu_cores: Option<f64>,
    /// Why the step did not complete (RM fell over, set-up timed out).
    pub failed: Option<String>,
}

impl StepFigures {
    /// Calls completed per second, heartbeats and allocates together.
    pub fn achieved(&self) -> f64 {
        self.heartbeats_per_sec + self.allocates_per_sec
    }

    /// The figures of a completed run at the offered load.
    pub fn from_report(r: &RpcBenchReport) -> StepFigures {
        StepFigures {
            nms: r.nms,
            offered_heartbeats_per_sec: r.nms as f64 * 1000.0
                / r.heartbeat_interval_ms.max(1) as f64,
            offered_allocates_per_sec: r.target_allocates_per_sec,
            heartbeats_per_sec: r.heartbeats_per_sec,
            allocates_per_sec: r.allocates_per_sec,
            heartbeat_ms_p99: r.heartbeat_ms_p99,
            allocate_ms_p99: r.allocate_ms_p99,
            rm_cpu_cores: r.rm_cpu_cores,
            failed: None,
        }
    }
}

/// Why a step ends the saturation run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Breach {
    /// A p99 latency passed the limit (which call, its p99 in ms).
    Latency { call: &'static str, p99_ms: f64 },
    /// Calls completed per second grew by less than the minimum over the step
    /// before (the gain, a fraction; may be negative).
    NoGrowth { gain: f64 },
    /// The step did not complete.
    Failed(String),
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breach::Latency { call, p99_ms } => write!(f, "{call} p99 {p99_ms:.2} ms"),
            Breach::NoGrowth { gain } => {
                write!(
                    f,
                    "throughput gain {:+.1}% over the step before",
                    gain * 100.0
                )
            }
            Breach::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

/// Where an RM stopped keeping up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    /// The last step within bounds (`None`: the first step already breached).
    pub knee: Option<usize>,
    /// The first step that breached, and how (`None`: every step was within
    /// bounds; the knee lies beyond the highest load offered).
    pub breach: Option<(usize, Breach)>,
}

/// Whether step `i` of `steps` breaches: a failure, a p99 above `p99_limit_ms`,
/// or (from the second step on) a gain in calls completed per second below
/// `min_gain` over the step before.
pub fn breach_of(
    steps: &[StepFigures],
    i: usize,
    p99_limit_ms: f64,
    min_gain: f64,
) -> Option<Breach> {
    let s = steps.get(i)?;
    if let Some(e) = &s.failed {
        return Some(Breach::Failed(e.clone()));
    }
    for (call, p99) in [
        ("heartbeat", s.heartbeat_ms_p99),
        (ALLOCATE.name, s.allocate_ms_p99),
    ] {
        if let Some(p99) = p99.filter(|p| *p > p99_limit_ms) {
            return Some(Breach::Latency { call, p99_ms: p99 });
        }
    }
    if i > 0 {
        let before = steps[i - 1].achieved();
        if before > 0.0 {
            let gain = s.achieved() / before - 1.0;
            if gain < min_gain {
                return Some(Breach::NoGrowth { gain });
            }
        }
    }
    None
}

/// The knee of a saturation run: the last step before the first breach.
pub fn find_knee(steps: &[StepFigures], p99_limit_ms: f64, min_gain: f64) -> Knee {
    for i in 0..steps.len() {
        if let Some(b) = breach_of(steps, i, p99_limit_ms, min_gain) {
            return Knee {
                knee: i.checked_sub(1),
                breach: Some((i, b)),
            };
        }
    }
    Knee {
        knee: steps.len().checked_sub(1),
        breach: None,
    }
}

/// The loads of a saturation run: `steps` copies of `base`, the NMs and the
/// allocate rate multiplied by `growth` from one to the next.
pub fn saturation_loads(base: &RpcBenchOptions, steps: usize, growth: f64) -> Vec<RpcBenchOptions> {
    let mut out = Vec::with_capacity(steps);
    let mut factor = 1.0;
    for _ in 0..steps {
        let mut o = base.clone();
        o.nms = ((base.nms as f64) * factor).round().max(1.0) as usize;
        o.allocate_rate = base.allocate_rate * factor;
        out.push(o);
        factor *= growth;
    }
    out
}

/// The p99 latency above which a step is past the knee, in ms.
pub const KNEE_P99_MS: f64 = 10.0;
/// The smallest gain in calls completed per second a step must bring.
pub const KNEE_MIN_GAIN: f64 = 0.05;

/// Starts the RM of `target` once, runs the first load once unmeasured (a
/// warm-up), then `loads` in turn until a step breaches (see [`find_knee`]);
/// the RM is stopped at the end.
pub async fn saturate(
    target: &RmTarget,
    loads: &[RpcBenchOptions],
) -> Result<(Option<String>, Vec<StepFigures>), BenchError> {
    let Some(first) = loads.first() else {
        return Ok((None, Vec::new()));
    };
    let mut first = first.clone();
    first.target = target.clone();
    let heartbeat_ms = first.heartbeat_interval.as_millis() as u64;
    let (mut child, addresses, pid, version) = start_target(&first, heartbeat_ms).await?;
    // The first load once more, unmeasured: a freshly started JVM compiles its hot
    // paths during the first minute, which would put a cold Hadoop RM past the knee
    // at any load.
    progress(
        &first,
        format_args!("saturation warm-up: the first load, unmeasured"),
    );
    if let Err(e) = run_against(&first, &addresses, pid, child.as_mut()).await {
        if let Some(c) = child {
            c.stop(Duration::from_secs(10)).await;
        }
        return Err(e);
    }
    let mut steps = Vec::new();
    for (i, o) in loads.iter().enumerate() {
        progress(
            o,
            format_args!(
                "saturation step {}: {} NMs, {:.0} allocate/s",
                i + 1,
                o.nms,
                o.allocate_rate
            ),
        );
        let figures = match run_against(o, &addresses, pid, child.as_mut()).await {
            Ok(r) => StepFigures::from_report(&r),
            Err(BenchError::Interrupted) => {
                if let Some(c) = child {
                    c.stop(Duration::from_secs(10)).await;
                }
                return Err(BenchError::Interrupted);
            }
            Err(e) => StepFigures {
                nms: o.nms,
                offered_heartbeats_per_sec: o.nms as f64 / o.heartbeat_interval.as_secs_f64(),
                offered_allocates_per_sec: o.allocate_rate,
                heartbeats_per_sec: 0.0,
                allocates_per_sec: 0.0,
                heartbeat_ms_p99: None,
                allocate_ms_p99: None,
                rm_cpu_cores: None,
                failed: Some(e.to_string()),
            },
        };
        steps.push(figures);
        if breach_of(&steps, i, KNEE_P99_MS, KNEE_MIN_GAIN).is_some() {
            break;
        }
    }
    if let Some(c) = child {
        c.stop(Duration::from_secs(10)).await;
    }
    Ok((version, steps))
}

/// A saturation run's steps and knee as a Markdown table and a summary line.
pub fn saturation_table(label: &str, version: Option<&str>, steps: &[StepFigures]) -> String {
    let mut s = format!(
        "{label} ({}): saturation steps\n\n| step | NMs | offered hb/s | hb/s | hb p99 | offered alloc/s | alloc/s | alloc p99 | RM CPU | verdict |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        version.unwrap_or("?")
    );
    for (i, st) in steps.iter().enumerate() {
        let verdict = breach_of(steps, i, KNEE_P99_MS, KNEE_MIN_GAIN)
            .map_or_else(|| "within bounds".to_string(), |b| b.to_string());
        s.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {} | {} | {} |\n",
            i + 1,
            st.nms,
            st.offered_heartbeats_per_sec,
            st.heartbeats_per_sec,
            cell_ms(st.heartbeat_ms_p99),
            st.offered_allocates_per_sec,
            st.allocates_per_sec,
            cell_ms(st.allocate_ms_p99),
            st.rm_cpu_cores
                .map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            verdict
        ));
    }
    let knee = find_knee(steps, KNEE_P99_MS, KNEE_MIN_GAIN);
    s.push_str(&format!("\n{label} knee: {}\n", knee_line(steps, &knee)));
    s
}

/// The knee in one sentence.
pub fn knee_line(steps: &[StepFigures], knee: &Knee) -> String {
    let at = |i: usize| {
        let st = &steps[i];
        format!(
            "step {} — offered {:.0} heartbeats/s + {:.0} allocates/s, achieved {:.0} + {:.0}, p99 {} / {}",
            i + 1,
            st.offered_heartbeats_per_sec,
            st.offered_allocates_per_sec,
            st.heartbeats_per_sec,
            st.allocates_per_sec,
            cell_ms(st.heartbeat_ms_p99),
            cell_ms(st.allocate_ms_p99)
        )
    };
    match (&knee.knee, &knee.breach) {
        (_, None) if steps.is_empty() => "no steps ran".into(),
        (Some(k), None) => format!(
            "not reached; the highest load offered was within bounds: {}",
            at(*k)
        ),
        (Some(k), Some((b, why))) => format!("{} (step {} breached: {why})", at(*k), b + 1),
        (None, Some((_, why))) => format!("already past at the lowest load offered ({why})"),
        (None, None) => "no steps ran".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(nms: usize, hb: f64, alloc: f64, hb_p99: f64, alloc_p99: f64) -> StepFigures {
        StepFigures {
            nms,
            offered_heartbeats_per_sec: nms as f64,
            offered_allocates_per_sec: alloc,
            heartbeats_per_sec: hb,
            allocates_per_sec: alloc,
            heartbeat_ms_p99: Some(hb_p99),
            allocate_ms_p99: Some(alloc_p99),
            rm_cpu_cores: Some(0.5),
            failed: None,
        }
    }

    #[test]
    fn the_knee_is_the_step_before_latency_passes_the_limit() {
        let steps = vec![
            step(1000, 1000.0, 100.0, 1.0, 2.0),
            step(2000, 2000.0, 200.0, 3.0, 4.0),
            step(4000, 3990.0, 400.0, 4.0, 12.5),
        ];
        let k = find_knee(&steps, 10.0, 0.05);
        assert_eq!(k.knee, Some(1));
        assert_eq!(
            k.breach,
            Some((
                2,
                Breach::Latency {
                    call: ALLOCATE.name,
                    p99_ms: 12.5
                }
            ))
        );
    }

    #[test]
    fn the_knee_is_where_throughput_stops_growing() {
        let steps = vec![
            step(1000, 1000.0, 100.0, 1.0, 1.0),
            step(2000, 2000.0, 200.0, 1.0, 1.0),
            // 2,200 → 2,250 calls/s: +2.3 %, below the 5 % asked for.
            step(4000, 2050.0, 200.0, 2.0, 2.0),
        ];
        let k = find_knee(&steps, 10.0, 0.05);
        assert_eq!(k.knee, Some(1));
        match k.breach {
            Some((2, Breach::NoGrowth { gain })) => assert!((gain - 50.0 / 2200.0).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_or_slow_first_step_has_no_knee_and_all_good_steps_have_no_breach() {
        let mut failed = step(1000, 0.0, 0.0, 0.0, 0.0);
        failed.failed = Some("the ResourceManager exited".into());
        let k = find_knee(&[failed], 10.0, 0.05);
        assert_eq!(k.knee, None);
        assert!(matches!(k.breach, Some((0, Breach::Failed(_)))));
        let slow = find_knee(&[step(10, 10.0, 1.0, 11.0, 1.0)], 10.0, 0.05);
        assert_eq!(slow.knee, None);
        let good = vec![step(1, 1.0, 1.0, 1.0, 1.0), step(2, 2.0, 2.0, 1.0, 1.0)];
        let k = find_knee(&good, 10.0, 0.05);
        assert_eq!(
            k,
            Knee {
                knee: Some(1),
                breach: None
            }
        );
        assert!(
            knee_line(&good, &k).starts_with("not reached"),
            "{}",
            knee_line(&good, &k)
        );
        assert_eq!(
            find_knee(&[], 10.0, 0.05),
            Knee {
                knee: None,
                breach: None
            }
        );
    }

    #[test]
    fn loads_grow_geometrically() {
        let mut base = RpcBenchOptions::new(RmTarget::Existing {
            addresses: crate::RmAddresses::hadoop_defaults("127.0.0.1"),
            pid: None,
        });
        base.nms = 1000;
        base.allocate_rate = 500.0;
        let loads = saturation_loads(&base, 4, 2.0);
        let nms: Vec<usize> = loads.iter().map(|o| o.nms).collect();
        let rates: Vec<f64> = loads.iter().map(|o| o.allocate_rate).collect();
        assert_eq!(nms, vec![1000, 2000, 4000, 8000]);
        assert_eq!(rates, vec![500.0, 1000.0, 2000.0, 4000.0]);
    }

    fn report(version: &str, hb: f64, cpu: f64, alloc_p99: f64, rss: f64) -> RpcBenchReport {
        RpcBenchReport {
            rm_version: Some(version.into()),
            nms: 10000,
            ams: 100,
            nms_registered: 10000,
            ams_registered: 100,
            heartbeat_interval_ms: 1000,
            target_allocates_per_sec: 5000.0,
            setup_s: 1.0,
            warmup_s: 1.0,
            duration_s: 10.0,
            heartbeats: (hb * 10.0) as u64,
            heartbeats_per_sec: hb,
            heartbeat_ms_p50: Some(0.5),
            heartbeat_ms_p99: Some(2.0),
            heartbeat_ms_max: Some(3.0),
            heartbeat_errors: 0,
            allocates: 50000,
            allocates_per_sec: 5000.0,
            allocate_ms_p50: Some(0.4),
            allocate_ms_p99: Some(alloc_p99),
            allocate_ms_max: Some(alloc_p99),
            allocate_errors: 0,
            containers_allocated: 4000,
            containers_allocated_per_sec: 400.0,
            containers_released: 0,
            containers_completed: 0,
            nm_resyncs: 0,
            task_failures: 0,
            first_error: None,
            rm_cpu_cores: Some(cpu),
            rm_rss_mb: Some(rss),
            rm_pid: Some(1),
            bench_cpu_cores: 0.8,
            cpus: 2,
            idle_apps: 0,
            web: Vec::new(),
        }
    }

    #[test]
    fn the_table_has_a_column_per_rm_and_the_target_ratios() {
        let hadoop = report("Hadoop 3.3.4", 9000.0, 1.5, 20.0, 800.0);
        let spindle = report("Spindle 0.1.0", 10000.0, 0.1, 1.0, 40.0);
        let r = ratios(&hadoop, &spindle);
        // 100,000 vs 6,000 heartbeats per core.
        assert!((r.heartbeats_per_core.unwrap_or(0.0) - 100000.0 / 6000.0).abs() < 1e-9);
        assert_eq!(r.allocate_p99, Some(0.05));
        assert_eq!(r.rss, Some(0.05));
        let t = comparison_table(&[
            ("Hadoop RM".into(), Ok(hadoop)),
            ("Spindle RM".into(), Ok(spindle)),
        ]);
        assert!(
            t.starts_with("| | Hadoop RM | Spindle RM |\n|---|---:|---:|\n"),
            "{t}"
        );
        assert!(
            t.contains("| version | Hadoop 3.3.4 | Spindle 0.1.0 |"),
            "{t}"
        );
        assert!(
            t.contains("| heartbeats/s per RM core | 6000 | 100000 |"),
            "{t}"
        );
        assert!(t.contains("| allocate p99 | 20.00 ms | 1.00 ms |"), "{t}");
        assert!(t.contains("| RM RSS | 800 MiB | 40 MiB |"), "{t}");
        assert!(t.contains("heartbeats per RM core 16.67×"), "{t}");
        assert!(t.contains("allocate p99 0.05×"), "{t}");
        // A failed RM keeps its column, says why, and no ratio is made up.
        let t = comparison_table(&[
            ("Hadoop RM".into(), Err("it fell over".into())),
            (
                "Spindle RM".into(),
                Ok(report("Spindle 0.1.0", 1.0, 0.1, 1.0, 40.0)),
            ),
        ]);
        assert!(t.contains("| heartbeats/s | failed | 1 |"), "{t}");
        assert!(t.contains("Hadoop RM failed: it fell over"), "{t}");
        assert!(!t.contains("Spindle ÷ Hadoop"), "{t}");
    }

    #[test]
    fn the_hadoop_version_comes_from_the_startup_banner() {
        let log = "12:00 INFO ResourceManager - STARTUP_MSG: \nSTARTUP_MSG:   host = x/127.0.0.1\nSTARTUP_MSG:   version = 3.3.4\n";
        assert_eq!(
            crate::rm_process::hadoop_version_in_log(log),
            Some("3.3.4".into())
        );
        assert_eq!(crate::rm_process::hadoop_version_in_log("nothing"), None);
    }
}
