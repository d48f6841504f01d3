//! The progress bar a run draws on a terminal.

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// A one-line progress bar, redrawn in place (`\r`) and ended with a
/// newline by [`ProgressBar::done`]. Writes nothing without a writer.
pub(super) struct ProgressBar<'a> {
    out: Option<&'a mut dyn Write>,
    target_ms: u64,
    last_pct: i64,
    last_draw: Instant,
}

impl<'a> ProgressBar<'a> {
    pub(super) fn new(out: Option<&'a mut dyn Write>, target_ms: u64) -> ProgressBar<'a> {
        ProgressBar {
            out,
            target_ms: target_ms.max(1),
            last_pct: -1,
            last_draw: Instant::now(),
        }
    }

    fn line(&self, now_ms: u64, done: usize, total: usize) -> String {
        let frac = (now_ms as f64 / self.target_ms as f64).min(1.0);
        let width = 30;
        let filled = (frac * width as f64).round() as usize;
        let secs = now_ms / 1000;
        format!(
            "\rsim [{}{}] {:5.1}%  t={:02}:{:02}:{:02}  apps {done}/{total}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            frac * 100.0,
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        )
    }

    /// Redraws the bar, at most once per 0.1% of progress or half a
    /// second.
    pub(super) fn show(&mut self, now_ms: u64, done: usize, total: usize) {
        if self.out.is_none() {
            return;
        }
        let pct = (now_ms as f64 / self.target_ms as f64 * 1000.0) as i64;
        if pct == self.last_pct && self.last_draw.elapsed().as_millis() < 500 {
            return;
        }
        self.last_pct = pct;
        self.last_draw = Instant::now();
        let line = self.line(now_ms, done, total);
        if let Some(out) = self.out.as_mut() {
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }

    /// Draws the final state and ends the line.
    pub(super) fn done(&mut self, now_ms: u64, done: usize, total: usize) {
        let line = self.line(now_ms, done, total);
        if let Some(out) = self.out.as_mut() {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Whether a progress bar should be drawn when asked for "auto".
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_draws_only_when_given_a_writer_and_ends_its_line() {
        let mut out: Vec<u8> = Vec::new();
        {
            let mut bar = ProgressBar::new(Some(&mut out), 3_600_000);
            bar.show(1_800_000, 1, 4);
            bar.done(3_600_000, 4, 4);
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        let half = format!(
            "\rsim [{}{}]  50.0%  t=00:30:00  apps 1/4",
            "#".repeat(15),
            ".".repeat(15)
        );
        let full = format!("\rsim [{}] 100.0%  t=01:00:00  apps 4/4\n", "#".repeat(30));
        assert_eq!(text, format!("{half}{full}"));

        let mut bar = ProgressBar::new(None, 3_600_000);
        bar.show(1_800_000, 1, 4);
        bar.done(3_600_000, 4, 4);
        assert!(bar.out.is_none());
    }
}
