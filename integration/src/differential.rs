//! The behavioural differential: one scripted client session run against Hadoop's own
//! ResourceManager and against Spindle's, each step's exit code, stdout and stderr
//! normalised ([`Normaliser`]: ids, times, hosts, ports, paths, JVM log noise), then
//! compared line by line ([`compare`]) against a table of known differences
//! ([`KnownDifference`]). The comparison fails on a difference the table does not
//! explain and on a table entry that no longer differs, so the table (and
//! `docs/compatibility.md`, which lists the same entries) stays true.

use std::fmt::{self, Write as _};

use regex::Regex;

use crate::process::CliOutput;

/// Which RM a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Hadoop 3.3.4's ResourceManager.
    Hadoop,
    /// Spindle's ResourceManager.
    Spindle,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Hadoop => "hadoop",
            Side::Spindle => "spindle",
        })
    }
}

/// Which part of a step's outcome differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The exit code (or how the process ended).
    Exit,
    /// A line of standard output.
    Stdout,
    /// A line of standard error.
    Stderr,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Exit => "exit",
            Part::Stdout => "stdout",
            Part::Stderr => "stderr",
        })
    }
}

/// One step's outcome after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `0`, `255`, … or `signal N` / `timed out`.
    pub exit: String,
    /// Normalised standard output.
    pub stdout: String,
    /// Normalised standard error.
    pub stderr: String,
}

impl Outcome {
    /// `out` normalised by `normaliser`.
    pub fn of(out: &CliOutput, normaliser: &Normaliser) -> Self {
        let exit = match (out.timed_out, out.status, out.signal) {
            (true, _, _) => "timed out".to_owned(),
            (false, Some(code), _) => code.to_string(),
            (false, None, Some(signal)) => format!("signal {signal}"),
            (false, None, None) => "no status".to_owned(),
        };
        Self {
            exit,
            stdout: normaliser.normalise(&out.stdout),
            stderr: normaliser.normalise(&out.stderr),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  exit: {}", self.exit)?;
        for (name, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            writeln!(f, "  {name}:")?;
            for line in text.lines() {
                writeln!(f, "    |{line}")?;
            }
        }
        Ok(())
    }
}

/// Rewrites what differs between two runs of the same session for reasons that are
/// not behaviour: cluster timestamps and times, host names and ports, temporary paths,
/// figures that grow with time (MB-seconds), JVM log lines, column padding.
#[derive(Debug)]
pub struct Normaliser {
    dropped: Vec<Regex>,
    rules: Vec<(Regex, String)>,
}

impl Normaliser {
    /// The rules; `host_names` are this machine's names, each replaced by `<HOST>`.
    pub fn new(host_names: &[String]) -> Self {
        let re = |s: &str| Regex::new(s).expect("a valid built-in pattern");
        // Lines the JVM or the client's logging print on both sides alike, or that
        // name the machine's environment rather than the RM's behaviour.
        let dropped = vec![
            re(r"WARN util\.NativeCodeLoader"),
            re(r"^Picked up (JAVA_TOOL_OPTIONS|_JAVA_OPTIONS)"),
            re(r"^SLF4J: "),
            // Stack frames: where in Hadoop's (or the client's) code an exception
            // was thrown is not behaviour; the exception lines stay.
            re(r"^\s+at [\w$.<>/]+\(.*\)\s*$"),
            re(r"^\s+\.\.\. \d+ more\s*$"),
        ];
        let mut rules: Vec<(Regex, String)> = host_names
            .iter()
            .filter(|name| !name.is_empty() && name.as_str() != "localhost")
            .map(|name| {
                (
                    re(&format!(r"\b{}\b", regex::escape(name))),
                    "<HOST>".to_owned(),
                )
            })
            .collect();
        rules.extend([
            // log4j's time stamps: 2026-11-26 16:10:00,123; ISO 8601 times as
            // application timeouts carry them: 2026-11-26T16:10:00.123+0000
            (
                re(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(,\d{3}|\.\d{3}[+-]\d{4})?"),
                "<TIME>".into(),
            ),
            // java.util.Date's toString: Thu Nov 26 16:10:00 UTC 2026
            (
                re(
                    r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [A-Z]{2,5}([+-]\d{2}:?\d{2})? \d{4}",
                ),
                "<DATE>".into(),
            ),
            // Epoch milliseconds: start/finish times, cluster timestamps inside ids.
            (re(r"(^|\D)1\d{12}(\D|$)"), "${1}<MS>${2}".into()),
            // Addresses: 127.0.0.x:port, /127.0.0.1:port, bare hosts.
            (
                re(r"(<HOST>|localhost|127\.0\.0\.\d{1,3}):\d{1,5}"),
                "<HOST>:<PORT>".into(),
            ),
            (re(r"localhost|127\.0\.0\.\d{1,3}"), "<HOST>".into()),
            // Figures that grow with the time an application ran.
            (
                re(r"\d+ MB-seconds, \d+ vcore-seconds"),
                "<N> MB-seconds, <N> vcore-seconds".into(),
            ),
            // Temporary files and directories (each RM has its own).
            (
                re(&format!(
                    r"{}/[^\s'\x22,;)\]]+",
                    regex::escape(std::env::temp_dir().to_string_lossy().trim_end_matches('/'))
                )),
                "<PATH>".into(),
            ),
        ]);
        Self { dropped, rules }
    }

    /// `text` normalised: noise lines dropped, the rules applied, runs of blanks and
    /// tabs made one space, lines trimmed, empty lines dropped.
    pub fn normalise(&self, text: &str) -> String {
        let mut out = String::new();
        for line in text.lines() {
            if self.dropped.iter().any(|r| r.is_match(line)) {
                continue;
            }
            let mut line = line.to_owned();
            for (pattern, replacement) in &self.rules {
                line = pattern
                    .replace_all(&line, replacement.as_str())
                    .into_owned();
            }
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            if !line.is_empty() {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

/// One line (or the exit code) that differs between the two sides of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The step's name.
    pub step: String,
    /// Where it differs.
    pub part: Part,
    /// The side the line is printed by (for [`Part::Exit`]: `Hadoop`, and the text
    /// names both codes).
    pub side: Side,
    /// The line (for [`Part::Exit`]: `hadoop X, spindle Y`).
    pub text: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.part {
            Part::Exit => write!(f, "[{}] exit: {}", self.step, self.text),
            _ => write!(
                f,
                "[{}] {} only on {}: {}",
                self.step, self.part, self.side, self.text
            ),
        }
    }
}

/// A difference the project knows of and accepts (or has not fixed yet), with why.
#[derive(Debug, Clone, Copy)]
pub struct KnownDifference {
    /// The step's name.
    pub step: &'static str,
    /// Where it differs.
    pub part: Part,
    /// For stdout/stderr: the differing lines it explains start with this (after
    /// normalisation); ignored for [`Part::Exit`].
    pub line_prefix: &'static str,
    /// Why it differs.
    pub reason: &'static str,
}

impl KnownDifference {
    fn explains(&self, d: &Difference) -> bool {
        self.step == d.step
            && self.part == d.part
            && (self.part == Part::Exit || d.text.starts_with(self.line_prefix))
    }
}

/// The lines only `a` has and the lines only `b` has, by a longest common subsequence
/// (the sessions' outputs are a few dozen lines).
pub fn line_diff<'t>(a: &'t str, b: &'t str) -> (Vec<&'t str>, Vec<&'t str>) {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            only_a.push(a[i]);
            i += 1;
        } else {
            only_b.push(b[j]);
            j += 1;
        }
    }
    (only_a, only_b)
}

/// Every difference between the two outcomes of `step`.
pub fn differences(step: &str, hadoop: &Outcome, spindle: &Outcome) -> Vec<Difference> {
    let mut found = Vec::new();
    if hadoop.exit != spindle.exit {
        found.push(Difference {
            step: step.to_owned(),
            part: Part::Exit,
            side: Side::Hadoop,
            text: format!("hadoop {}, spindle {}", hadoop.exit, spindle.exit),
        });
    }
    for (part, h, s) in [
        (Part::Stdout, &hadoop.stdout, &spindle.stdout),
        (Part::Stderr, &hadoop.stderr, &spindle.stderr),
    ] {
        let (only_h, only_s) = line_diff(h, s);
        for (side, lines) in [(Side::Hadoop, only_h), (Side::Spindle, only_s)] {
            for line in lines {
                found.push(Difference {
                    step: step.to_owned(),
                    part,
                    side,
                    text: line.to_owned(),
                });
            }
        }
    }
    found
}

/// What [`compare`] found.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Differences no table entry explains.
    pub unexplained: Vec<Difference>,
    /// Table entries that explained nothing: the behaviour no longer differs.
    pub stale: Vec<KnownDifference>,
    /// Differences the table explains, with the entry's reason.
    pub explained: Vec<(Difference, &'static str)>,
}

impl Comparison {
    /// True when every difference is known and every known difference was seen.
    pub fn holds(&self) -> bool {
        self.unexplained.is_empty() && self.stale.is_empty()
    }

    /// A report of every difference, the unexplained first.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for d in &self.unexplained {
            let _ = writeln!(out, "UNEXPLAINED {d}");
        }
        for k in &self.stale {
            let _ = writeln!(
                out,
                "NO LONGER DIFFERS [{}] {} {:?} ({})",
                k.step, k.part, k.line_prefix, k.reason
            );
        }
        for (d, reason) in &self.explained {
            let _ = writeln!(out, "known {d}  -- {reason}");
        }
        out
    }
}

/// Compares each step's two outcomes (`(step, hadoop, spindle)`) against `known`.
pub fn compare(steps: &[(String, Outcome, Outcome)], known: &[KnownDifference]) -> Comparison {
    let mut comparison = Comparison::default();
    let mut used = vec![false; known.len()];
    for (step, hadoop, spindle) in steps {
        for d in differences(step, hadoop, spindle) {
            match known.iter().position(|k| k.explains(&d)) {
                Some(i) => {
                    used[i] = true;
                    comparison.explained.push((d, known[i].reason));
                }
                None => comparison.unexplained.push(d),
            }
        }
    }
    comparison.stale = known
        .iter()
        .zip(used)
        .filter(|(_, used)| !used)
        .map(|(k, _)| *k)
        .collect();
    comparison
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(exit: &str, stdout: &str, stderr: &str) -> Outcome {
        Outcome {
            exit: exit.into(),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn normalises_ids_times_hosts_and_padding() {
        let n = Normaliser::new(&["buildhost".to_owned()]);
        let text = "2026-11-26 16:10:00,123 WARN util.NativeCodeLoader: Unable to load\n\
            2026-11-26 16:10:00,123 INFO client.DefaultNoHARMFailoverProxyProvider: Connecting to ResourceManager at /127.0.0.1:40123\n\
            \tApplication-Id : application_1764173400123_0001\n\
            \tStart-Time : 1764173400999\n\
            \tAM Host : buildhost\n\
            \tTracking-URL : http://buildhost:8088/proxy/x\n\
            \tat org.apache.hadoop.ipc.Server$Handler.run(Server.java:2976)\n\
            \t... 12 more\n\
            \tAggregate Resource Allocation : 12345 MB-seconds, 6 vcore-seconds\n\
            \tDiagnostics : [Thu Nov 26 16:10:00 UTC 2026] launched\n\
            127.0.0.77:41001\t   RUNNING\t127.0.0.77:8042\t  1\n\n";
        assert_eq!(
            n.normalise(text),
            "<TIME> INFO client.DefaultNoHARMFailoverProxyProvider: Connecting to ResourceManager at /<HOST>:<PORT>\n\
             Application-Id : application_<MS>_0001\n\
             Start-Time : <MS>\n\
             AM Host : <HOST>\n\
             Tracking-URL : http://<HOST>:<PORT>/proxy/x\n\
             Aggregate Resource Allocation : <N> MB-seconds, <N> vcore-seconds\n\
             Diagnostics : [<DATE>] launched\n\
             <HOST>:<PORT> RUNNING <HOST>:<PORT> 1\n"
        );
        assert_eq!(
            n.normalise("at Thu Nov 26 16:10:00 UTC 2026."),
            "at <DATE>.\n"
        );
    }

    #[test]
    fn line_diff_finds_lines_on_one_side_only() {
        let (a, b) = line_diff("x\ny\nz\n", "x\nq\nz\nw\n");
        assert_eq!(a, vec!["y"]);
        assert_eq!(b, vec!["q", "w"]);
        let (a, b) = line_diff("same\n", "same\n");
        assert!(a.is_empty() && b.is_empty());
    }

    #[test]
    fn unexplained_and_stale_entries_both_fail_the_comparison() {
        let steps = vec![
            (
                "status".to_owned(),
                outcome("0", "State : ACCEPTED\nDiagnostics : waiting\n", ""),
                outcome("0", "State : ACCEPTED\nDiagnostics :\n", ""),
            ),
            (
                "kill".to_owned(),
                outcome("255", "", "no such app\n"),
                outcome("0", "", "no such app\n"),
            ),
        ];
        let known = [KnownDifference {
            step: "status",
            part: Part::Stdout,
            line_prefix: "Diagnostics",
            reason: "r",
        }];
        let c = compare(&steps, &known);
        assert_eq!(c.explained.len(), 2, "{}", c.report());
        assert_eq!(c.unexplained.len(), 1, "{}", c.report());
        assert_eq!(c.unexplained[0].part, Part::Exit);
        assert!(!c.holds());

        let stale = [
            known[0],
            KnownDifference {
                step: "kill",
                part: Part::Exit,
                line_prefix: "",
                reason: "r",
            },
            KnownDifference {
                step: "kill",
                part: Part::Stderr,
                line_prefix: "",
                reason: "r",
            },
        ];
        let c = compare(&steps, &stale);
        assert!(c.unexplained.is_empty(), "{}", c.report());
        assert_eq!(c.stale.len(), 1, "{}", c.report());
        assert!(!c.holds());
        assert!(compare(&steps, &stale[..2]).holds());
    }
}
