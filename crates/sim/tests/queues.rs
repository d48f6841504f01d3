//! Per-queue figures: usage columns and the queue share error, measured
//! on a contended fixed-size cluster with two weighted queues.

mod common;

use spindle_sim::{run, SimError};

const CONTENDED: &str = r#"{
  "name": "contended",
  "sample_interval_s": 10,
  "scheduler": {
    "kind": "KIND",
    "queues": QUEUES
  },
  "cluster": {"pools": [{"count": 4, "memory_mb": 16384, "vcores": 16}]},
  "jobs": [
    {"name": "big", "kind": "spark", "queue": "a",
     "arrivals": [{"periodic_bursts": {"until_s": 1800, "every_s": 300, "jobs": 2}}],
     "executors": {"count": 40, "duration_s": {"mean": 120, "std": 30}}},
    {"name": "small", "kind": "spark", "queue": "b",
     "arrivals": [{"periodic_bursts": {"from_s": 60, "until_s": 1800, "every_s": 300, "jobs": 2}}],
     "executors": {"count": 40, "duration_s": {"mean": 120, "std": 30}}}
  ]
}"#;

fn contended(kind: &str, queues: &str) -> Result<spindle_sim::SimReport, SimError> {
    let json = CONTENDED.replace("KIND", kind).replace("QUEUES", queues);
    let mut o = common::inline(&json)?;
    o.seed = Some(2);
    o.check_invariants = true;
    run(o)
}

#[test]
fn fair_queues_are_measured_against_their_weights() -> Result<(), SimError> {
    let r = contended(
        "fair",
        r#"[{"path": "a", "weight": 3}, {"path": "b", "weight": 1}]"#,
    )?;
    let s = &r.summary;
    assert_eq!(s.apps_completed, s.apps_submitted);
    assert!(s.queue_share_samples > 10, "{}", r.summary_text());
    assert!((0.0..=1.0).contains(&s.queue_share_error_max));
    assert!(s.queue_share_error_mean <= s.queue_share_error_max);
    // Both queues ran, and the columns add up to the cluster's usage.
    assert_eq!(r.queues, ["root.a", "root.b"]);
    for p in &r.series {
        assert_eq!(p.queue_used_mb.iter().sum::<i64>(), p.used_mb);
    }
    assert!(r
        .series
        .iter()
        .any(|p| p.queue_used_mb[0] > 0 && p.queue_used_mb[1] > 0));
    eprintln!("{}", r.summary_text());
    Ok(())
}

#[test]
fn capacity_queues_too() -> Result<(), SimError> {
    let r = contended(
        "capacity",
        r#"[{"path": "a", "capacity": 75, "user_limit_factor": -1}, {"path": "b", "capacity": 25, "user_limit_factor": -1}]"#,
    )?;
    let s = &r.summary;
    assert_eq!(s.apps_completed, s.apps_submitted);
    assert!(s.queue_share_samples > 10, "{}", r.summary_text());
    eprintln!("{}", r.summary_text());
    Ok(())
}

/// The points of an SVG path's `d` attribute (`M x,y L x,y ... [Z]`).
fn path_points(line: &str) -> Vec<(f64, f64)> {
    let d = line
        .split("d=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no d attribute in {line}"));
    d.split_whitespace()
        .filter(|t| *t != "Z")
        .map(|t| {
            let t = t.trim_start_matches(['M', 'L']);
            let (x, y) = t
                .split_once(',')
                .unwrap_or_else(|| panic!("bad point {t} in {line}"));
            let num = |v: &str| {
                v.parse::<f64>()
                    .unwrap_or_else(|e| panic!("bad number {v} in {line}: {e}"))
            };
            (num(x), num(y))
        })
        .collect()
}

#[test]
fn queues_svg_is_written_with_one_stacked_band_per_queue() -> Result<(), SimError> {
    let r = contended(
        "fair",
        r#"[{"path": "a", "weight": 3}, {"path": "b", "weight": 1}]"#,
    )?;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim-queues-svg");
    let _ = std::fs::remove_dir_all(&dir);
    let files = r.write_outputs(&dir)?;
    let svg_path = dir.join("queues.svg");
    assert!(files.contains(&svg_path), "{files:?}");
    let svg = std::fs::read_to_string(&svg_path).map_err(|source| SimError::Io {
        path: svg_path.clone(),
        source,
    })?;
    assert_eq!(svg, r.queues_svg(), "the file holds the chart");
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));

    // One filled band per leaf queue, in the order of the queue columns,
    // each named in the legend.
    let bands: Vec<&str> = svg
        .lines()
        .filter(|l| l.starts_with("<path") && l.contains("fill-opacity="))
        .collect();
    assert_eq!(r.queues, ["root.a", "root.b"]);
    assert_eq!(bands.len(), r.queues.len(), "{svg}");
    let legend: Vec<usize> = r
        .queues
        .iter()
        .map(|q| {
            svg.find(&format!(">{q}</text>"))
                .unwrap_or_else(|| panic!("{q} is not in the legend"))
        })
        .collect();
    assert!(legend[0] < legend[1], "legend in queue order");

    // Stacked: each band runs along the sample times on its top edge and
    // back along its bottom edge; the first sits on the axis, each next
    // one on the top of the one below, and the last one's top is the
    // cluster's memory in use.
    let n = r.series.len();
    let (h, mt, mb) = (380.0, 40.0, 70.0);
    let axis_y = h - mb;
    let max_gb = r
        .series
        .iter()
        .map(|p| p.capacity_mb.max(p.used_mb) as f64 / 1024.0)
        .fold(1.0, f64::max);
    let y_of = |gb: f64| h - mb - (h - mt - mb) * (gb / max_gb).clamp(0.0, 1.0);
    let mut below: Vec<f64> = vec![axis_y; n];
    for band in &bands {
        let pts = path_points(band);
        assert_eq!(pts.len(), 2 * n, "{band}");
        let top: Vec<f64> = pts[..n].iter().map(|p| p.1).collect();
        let mut bottom: Vec<f64> = pts[n..].iter().map(|p| p.1).collect();
        bottom.reverse();
        for (b, want) in bottom.iter().zip(&below) {
            assert!((b - want).abs() < 0.051, "bottom {b}, want {want}: {band}");
        }
        for (t, b) in top.iter().zip(&bottom) {
            assert!(t <= b, "a band's top is above its bottom: {band}");
        }
        below = top;
    }
    for (p, y) in r.series.iter().zip(&below) {
        let want = y_of(p.used_mb as f64 / 1024.0);
        assert!(
            (y - want).abs() < 0.051,
            "top of the stack {y} at t={} ms, want {want} ({} MB used)",
            p.time_ms,
            p.used_mb
        );
    }
    // Both queues show: somewhere each band has height.
    assert!(r.series.iter().any(|p| p.queue_used_mb[0] > 0));
    assert!(r.series.iter().any(|p| p.queue_used_mb[1] > 0));
    Ok(())
}
