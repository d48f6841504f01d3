//! The behavioural differential: one scripted client session run against Hadoop's own
//! ResourceManager and against Spindle's, each step's exit code, stdout and stderr
//! normalised ([`Normaliser`]), then compared line by line ([`compare`]) against a table
//! of known differences ([`KnownDifference`]). The comparison fails on a difference the
//! table does not explain and on a table entry that no longer differs, so the table (and
//! `docs/compatibility.md`, which lists the same entries, [`check_doc`]) stays true.
//!
//! Normalisation takes away only what differs between two runs for reasons that are not
//! behaviour, and keeps what a wrong answer would change:
//!
//! * **Hosts and ports become the role they play** in their own side's run ([`Roles`]):
//!   each side's normaliser knows its RM's addresses, its NodeManagers' and this
//!   machine's names, so `127.0.0.1:40255` on Spindle's side and `127.0.0.1:39045` on
//!   Hadoop's both read `<RM_WEB_ADDRESS>`, while a tracking URL on the RM's admin port
//!   or a node listed under its web address reads differently from Hadoop's.
//! * **Usage figures are checked, not patterned away** ([`AppRun`]): an application's
//!   MB-seconds and vcore-seconds depend on how long its containers ran, so each side's
//!   figure is checked against what the application's resources over the interval it
//!   can have run imply, measured on that side's own run; a figure in range reads the
//!   same on both sides, one out of range (a zero where the app ran) keeps its value.
//! * Ids' cluster timestamps, times and dates, temporary paths, JVM notices, stack
//!   frames and column padding.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::net::{IpAddr, SocketAddr};
use std::time::{SystemTime, UNIX_EPOCH};

use regex::{Captures, Regex};

use crate::cluster::RmAddresses;
use crate::process::CliOutput;

/// Which RM a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// When a step's command ran, in milliseconds since the epoch on this machine's clock
/// (the clock both RMs stamp their reports with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Before the command started.
    pub start_ms: u64,
    /// After it ended.
    pub end_ms: u64,
}

/// Now, in milliseconds since the epoch.
pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
    /// `out` normalised by `normaliser`; `window` is when the command ran (what the
    /// usage figures of a running application are checked against).
    pub fn of(out: &CliOutput, normaliser: &Normaliser, window: Option<Window>) -> Self {
        let exit = match (out.timed_out, out.status, out.signal) {
            (true, _, _) => "timed out".to_owned(),
            (false, Some(code), _) => code.to_string(),
            (false, None, Some(signal)) => format!("signal {signal}"),
            (false, None, None) => "no status".to_owned(),
        };
        Self {
            exit,
            stdout: normaliser.normalise_at(&out.stdout, window),
            stderr: normaliser.normalise_at(&out.stderr, window),
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

// ---- roles of hosts and ports --------------------------------------------------------

/// An address one daemon of the run listens on.
#[derive(Debug, Clone)]
struct Endpoint {
    /// `RM`, `NM1`, …: the host's role is `<{owner}_HOST>`.
    owner: String,
    /// `RM_WEB`, `NM1`, …: the address's role is `<{name}_ADDRESS>`, the port's
    /// `<{name}_PORT>`.
    name: String,
    addr: SocketAddr,
}

/// The role each concrete host, port and address of one side's run plays, so that each
/// side's values are replaced by the same names exactly when they play the same part.
///
/// * An address a daemon of the run listens on (`ip:port`) becomes
///   `<{NAME}_ADDRESS>` (`<RM_WEB_ADDRESS>`, `<NM1_ADDRESS>`, …).
/// * Otherwise a host and a port are named apart: an IP a daemon listens on is
///   `<{OWNER}_HOST>` (the first daemon registered with it: the RM before its
///   NodeManagers), a name of this machine its own role (`<LOCALHOST>`, `<HOSTNAME>`),
///   a port a daemon listens on `<{NAME}_PORT>` whatever the host before it
///   (`http://<HOSTNAME>:<RM_WEB_PORT>/…`, and `<NM1_HOST>:<RM_WEB_PORT>` for a URL that
///   mixes two daemons up).
/// * What no daemon of the run listens on gets a generic name that says so:
///   `<OTHER_IP>`, `<OTHER_PORT>`; an AM's RPC port (`RPC Port : N` of a report) is
///   `<AM_RPC_PORT>` unless it is a known port.
#[derive(Debug, Clone, Default)]
pub struct Roles {
    endpoints: Vec<Endpoint>,
    names: Vec<(String, String)>,
}

impl Roles {
    /// No roles yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `owner`'s service `service` (`None`: its main one) listens on `addr`: the
    /// address is `<{OWNER}[_{SERVICE}]_ADDRESS>`, its port `<…_PORT>`, its IP
    /// `<{OWNER}_HOST>` (unless an earlier daemon has the same IP).
    pub fn endpoint(mut self, owner: &str, service: Option<&str>, addr: SocketAddr) -> Self {
        let name = match service {
            Some(service) => format!("{owner}_{service}"),
            None => owner.to_owned(),
        };
        self.endpoints.push(Endpoint {
            owner: owner.to_owned(),
            name,
            addr,
        });
        self
    }

    /// The ResourceManager's five addresses: `<RM_ADDRESS>` (clients),
    /// `<RM_SCHEDULER_ADDRESS>`, `<RM_TRACKER_ADDRESS>`, `<RM_ADMIN_ADDRESS>`,
    /// `<RM_WEB_ADDRESS>` (its web app, which is also the web proxy when
    /// `yarn.web-proxy.address` is not set); its IP is `<RM_HOST>`.
    pub fn rm(self, rm: &RmAddresses) -> Self {
        self.endpoint("RM", None, rm.client)
            .endpoint("RM", Some("SCHEDULER"), rm.scheduler)
            .endpoint("RM", Some("TRACKER"), rm.resource_tracker)
            .endpoint("RM", Some("ADMIN"), rm.admin)
            .endpoint("RM", Some("WEB"), rm.webapp)
    }

    /// NodeManager number `n` (from 1) on `host`: `<NMn_ADDRESS>` (its container
    /// manager, the node id), `<NMn_WEB_ADDRESS>`, `<NMn_HOST>`.
    pub fn node_manager(self, n: usize, host: IpAddr, port: u16, web_port: u16) -> Self {
        let owner = format!("NM{n}");
        self.endpoint(&owner, None, SocketAddr::new(host, port))
            .endpoint(&owner, Some("WEB"), SocketAddr::new(host, web_port))
    }

    /// A name of this machine printed where a host goes (`localhost`, the host name):
    /// it becomes `<{role}>`.
    pub fn name(mut self, name: &str, role: &str) -> Self {
        let name = name.trim();
        if !name.is_empty() && !self.names.iter().any(|(n, _)| n == name) {
            self.names.push((name.to_owned(), format!("<{role}>")));
        }
        self
    }

    fn name_role(&self, name: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, role)| role.as_str())
    }

    fn address_role(&self, ip: IpAddr, port: u16) -> Option<String> {
        self.endpoints
            .iter()
            .find(|e| e.addr.ip() == ip && e.addr.port() == port)
            .map(|e| format!("<{}_ADDRESS>", e.name))
    }

    fn ip_role(&self, ip: IpAddr) -> String {
        self.endpoints
            .iter()
            .find(|e| e.addr.ip() == ip)
            .map_or_else(
                || "<OTHER_IP>".to_owned(),
                |e| format!("<{}_HOST>", e.owner),
            )
    }

    fn port_role(&self, port: u16) -> Option<String> {
        self.endpoints
            .iter()
            .find(|e| e.addr.port() == port)
            .map(|e| format!("<{}_PORT>", e.name))
    }

    /// `host[:port]` as roles.
    fn host_port(&self, host: &str, port: Option<&str>) -> String {
        let port = port.and_then(|p| p.parse::<u16>().ok());
        match host.parse::<IpAddr>() {
            Ok(ip) => {
                if let Some(role) = port.and_then(|port| self.address_role(ip, port)) {
                    return role;
                }
                let host = self.ip_role(ip);
                match port {
                    Some(port) => format!("{host}:{}", self.port_or_other(port)),
                    None => host,
                }
            }
            Err(_) => {
                let host = self.name_role(host).unwrap_or(host).to_owned();
                match port {
                    Some(port) => format!("{host}:{}", self.port_or_other(port)),
                    None => host,
                }
            }
        }
    }

    fn port_or_other(&self, port: u16) -> String {
        self.port_role(port)
            .unwrap_or_else(|| "<OTHER_PORT>".to_owned())
    }

    /// A pattern matching `host` or `host:port` for an IPv4 address or a name of
    /// this machine.
    fn pattern(&self) -> Regex {
        let mut names: Vec<&str> = self.names.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
        let mut hosts = String::from(r"(?:\d{1,3}\.){3}\d{1,3}");
        for name in names {
            hosts.push('|');
            hosts.push_str(&regex::escape(name));
        }
        Regex::new(&format!(
            r"\b(?P<host>{hosts})\b(?::(?P<port>\d{{1,5}})\b)?"
        ))
        .expect("a valid address pattern")
    }
}

// ---- usage figures -------------------------------------------------------------------

/// An application of the session whose reports' usage figures are checked: what its
/// containers held over its run (the session's applications run their AM container
/// only), and when the session saw its AM container launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRun {
    /// `application_…_0001` as the RM printed it.
    pub id: String,
    /// Memory the application's containers held together.
    pub memory_mb: u64,
    /// Virtual cores they held together.
    pub vcores: u64,
    /// A time (epoch ms) by which the container had been allocated: the end of the
    /// command that first listed its attempt LAUNCHED.
    pub launched_by_ms: u64,
}

/// How far a container's end may be from its application's `Finish-Time` (the RM
/// records both while it ends the attempt, a few milliseconds apart).
pub const FINISH_SLACK_MS: u64 = 1_000;

/// How old the running figures of Hadoop's report may be: its
/// `SchedulerApplicationAttempt` recomputes a running attempt's MB-seconds at most every
/// 3 s (`MEM_AGGREGATE_ALLOCATION_CACHE_MSECS`) and reports the last value in between.
pub const RUNNING_USAGE_CACHE_MS: u64 = 3_000;

/// The range a usage figure must be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageRange {
    /// The fewest milliseconds the application's containers can have run.
    pub min_ms: u64,
    /// The most.
    pub max_ms: u64,
}

impl UsageRange {
    /// How long `run`'s containers can have run when its report said `start_ms` and
    /// `finish_ms` (0 while it runs), the report asked for within `window`. `None`
    /// when it cannot be told: a running application's report without a window.
    ///
    /// The rule, as Hadoop counts (`RMContainerImpl` adds `resource × (finish −
    /// creation) / 1000` per container when it ends, `SchedulerApplicationAttempt` the
    /// same up to now for live ones): the container was created after the application
    /// started (`Start-Time`) and by the time the session saw it launched; it ended
    /// within [`FINISH_SLACK_MS`] of `Finish-Time`, or, while the application runs, is
    /// counted up to a moment between [`RUNNING_USAGE_CACHE_MS`] before the command
    /// started and its end. So the figure lies between `resource × (earliest end −
    /// latest creation)` and `resource × (latest end − earliest creation)`, within one
    /// unit for the truncation to whole seconds.
    pub fn of(run: &AppRun, start_ms: u64, finish_ms: u64, window: Option<Window>) -> Option<Self> {
        let (end_min, end_max) = if finish_ms > 0 {
            (
                finish_ms.saturating_sub(FINISH_SLACK_MS),
                finish_ms + FINISH_SLACK_MS,
            )
        } else {
            let w = window?;
            (w.start_ms.saturating_sub(RUNNING_USAGE_CACHE_MS), w.end_ms)
        };
        Some(Self {
            min_ms: end_min.saturating_sub(run.launched_by_ms),
            max_ms: end_max.saturating_sub(start_ms),
        })
    }

    /// The figures `amount` of a resource (MB, vcores) held over this range gives.
    pub fn figures(&self, amount: u64) -> (u64, u64) {
        (
            (amount * self.min_ms / 1000).saturating_sub(1),
            amount * self.max_ms / 1000 + 1,
        )
    }
}

/// The placeholder of a usage figure in range.
fn usage_placeholder(run: &AppRun) -> String {
    format!(
        "<{} MB over the run> MB-seconds, <{} vcores over the run> vcore-seconds",
        run.memory_mb, run.vcores
    )
}

// ---- the normaliser ------------------------------------------------------------------

/// Rewrites what differs between two runs of the same session for reasons that are not
/// behaviour (see the module's documentation): one per side, with that side's
/// [`Roles`] and [`AppRun`]s.
#[derive(Debug)]
pub struct Normaliser {
    dropped: Vec<Regex>,
    rules: Vec<(Regex, String)>,
    roles: Roles,
    address: Regex,
    rpc_port: Regex,
    apps: BTreeMap<String, AppRun>,
}

impl Normaliser {
    /// The rules for one side whose hosts and ports play `roles` and whose
    /// applications ran as `apps`.
    pub fn new(roles: Roles, apps: &[AppRun]) -> Self {
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
        let rules = vec![
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
            // Temporary files and directories (each RM has its own).
            (
                re(&format!(
                    r"{}/[^\s'\x22,;)\]]+",
                    regex::escape(std::env::temp_dir().to_string_lossy().trim_end_matches('/'))
                )),
                "<PATH>".into(),
            ),
        ];
        Self {
            dropped,
            rules,
            address: roles.pattern(),
            roles,
            rpc_port: re(r"^(\s*RPC Port : )(\d+)(\s*)$"),
            apps: apps.iter().map(|a| (a.id.clone(), a.clone())).collect(),
        }
    }

    /// [`normalise_at`](Self::normalise_at) without a window: a running
    /// application's usage figures stay as they are.
    pub fn normalise(&self, text: &str) -> String {
        self.normalise_at(text, None)
    }

    /// `text` normalised: usage figures checked ([`UsageRange`]), noise lines
    /// dropped, hosts and ports named by role, the rules applied, runs of blanks
    /// and tabs made one space, lines trimmed, empty lines dropped. `window` is when
    /// the command that printed it ran.
    pub fn normalise_at(&self, text: &str, window: Option<Window>) -> String {
        let text = self.check_usage(text, window);
        let mut out = String::new();
        for line in text.lines() {
            if self.dropped.iter().any(|r| r.is_match(line)) {
                continue;
            }
            let mut line = self.roles_of(line);
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

    /// Hosts, ports and addresses of `line` named by their roles.
    fn roles_of(&self, line: &str) -> String {
        if let Some(c) = self.rpc_port.captures(line) {
            let role = c[2].parse::<u16>().ok().map_or_else(
                || "<AM_RPC_PORT>".to_owned(),
                |p| {
                    self.roles
                        .port_role(p)
                        .unwrap_or_else(|| "<AM_RPC_PORT>".to_owned())
                },
            );
            return format!("{}{role}{}", &c[1], &c[3]);
        }
        self.address
            .replace_all(line, |c: &Captures<'_>| {
                self.roles
                    .host_port(&c["host"], c.name("port").map(|m| m.as_str()))
            })
            .into_owned()
    }

    /// `text` with each application report's `Aggregate Resource Allocation` line
    /// checked against what the application's resources over its run imply: in range,
    /// the figures become [`usage_placeholder`]; out of range they stay, followed by
    /// the range they should be in. Reports of applications not in `apps` (or whose
    /// range cannot be told) keep their figures, compared as they are.
    fn check_usage(&self, text: &str, window: Option<Window>) -> String {
        const ALLOCATION: &str = "Aggregate Resource Allocation : ";
        let mut out = String::with_capacity(text.len());
        let (mut app, mut start, mut finish) = (None::<&AppRun>, None::<u64>, None::<u64>);
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim();
            let field = |name: &str| trimmed.strip_prefix(name).map(str::trim);
            if let Some(id) = field("Application-Id : ") {
                (app, start, finish) = (self.apps.get(id), None, None);
            } else if let Some(ms) = field("Start-Time : ") {
                start = ms.parse().ok();
            } else if let Some(ms) = field("Finish-Time : ") {
                finish = ms.parse().ok();
            } else if let Some(figures) = field(ALLOCATION) {
                let checked = match (app, start, finish, parse_usage(figures)) {
                    (Some(run), Some(start), Some(finish), Some((mb, vcores))) => {
                        UsageRange::of(run, start, finish, window).map(|range| {
                            let (mb_min, mb_max) = range.figures(run.memory_mb);
                            let (vc_min, vc_max) = range.figures(run.vcores);
                            if (mb_min..=mb_max).contains(&mb)
                                && (vc_min..=vc_max).contains(&vcores)
                            {
                                usage_placeholder(run)
                            } else {
                                format!(
                                    "{figures}, not <{} MB over the run> ({mb_min}..{mb_max} \
                                     MB-seconds, {vc_min}..{vc_max} vcore-seconds for \
                                     {:.1}..{:.1} s)",
                                    run.memory_mb,
                                    range.min_ms as f64 / 1000.0,
                                    range.max_ms as f64 / 1000.0
                                )
                            }
                        })
                    }
                    _ => None,
                };
                if let Some(checked) = checked {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    let _ = writeln!(out, "{indent}{ALLOCATION}{checked}");
                    continue;
                }
            }
            out.push_str(line);
        }
        out
    }
}

/// `N MB-seconds, M vcore-seconds`.
fn parse_usage(figures: &str) -> Option<(u64, u64)> {
    let (mb, vcores) = figures.split_once(" MB-seconds, ")?;
    let vcores = vcores.strip_suffix(" vcore-seconds")?;
    Some((mb.trim().parse().ok()?, vcores.trim().parse().ok()?))
}

// ---- comparing -----------------------------------------------------------------------

/// One line (or the exit code) that one side printed and the other did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The step's name.
    pub step: String,
    /// Where it differs.
    pub part: Part,
    /// The side that printed it.
    pub side: Side,
    /// The line (for [`Part::Exit`]: that side's exit code).
    pub text: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.part {
            Part::Exit => write!(f, "[{}] exit on {}: {}", self.step, self.side, self.text),
            _ => write!(
                f,
                "[{}] {} only on {}: {}",
                self.step, self.part, self.side, self.text
            ),
        }
    }
}

/// Which side prints the lines a [`KnownDifference`] explains, and how they start
/// (after normalisation). A line is explained only when it comes from the side named:
/// an entry for a line only Hadoop prints does not excuse a line only Spindle prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printed {
    /// Lines only Hadoop's side prints, starting with this.
    HadoopOnly(&'static str),
    /// Lines only Spindle's side prints, starting with this.
    SpindleOnly(&'static str),
    /// Both sides print the line, differently: Hadoop's starts with `hadoop`, Spindle's
    /// with `spindle`, and both must be seen. For [`Part::Exit`] the two are the exit
    /// codes, matched whole.
    Both {
        hadoop: &'static str,
        spindle: &'static str,
    },
}

impl Printed {
    /// What `docs/compatibility.md` writes for it after the entry's id.
    pub fn label(&self) -> &'static str {
        match self {
            Printed::HadoopOnly(_) => "Hadoop only",
            Printed::SpindleOnly(_) => "Spindle only",
            Printed::Both { .. } => "both, differently",
        }
    }

    /// The sides whose lines the entry must explain to be still true.
    fn sides(&self) -> &'static [Side] {
        match self {
            Printed::HadoopOnly(_) => &[Side::Hadoop],
            Printed::SpindleOnly(_) => &[Side::Spindle],
            Printed::Both { .. } => &[Side::Hadoop, Side::Spindle],
        }
    }

    /// How `side`'s lines start, if the entry is about that side's lines.
    fn prefix(&self, side: Side) -> Option<&'static str> {
        match (self, side) {
            (Printed::HadoopOnly(p), Side::Hadoop) | (Printed::SpindleOnly(p), Side::Spindle) => {
                Some(p)
            }
            (Printed::Both { hadoop, .. }, Side::Hadoop) => Some(hadoop),
            (Printed::Both { spindle, .. }, Side::Spindle) => Some(spindle),
            _ => None,
        }
    }
}

/// A difference the project knows of and accepts (or has not fixed yet), with why.
#[derive(Debug, Clone, Copy)]
pub struct KnownDifference {
    /// The entry's key in `docs/compatibility.md` (several entries may share one, when
    /// the doc explains them in one bullet).
    pub id: &'static str,
    /// The steps that show it; each must still show it.
    pub steps: &'static [&'static str],
    /// Where it differs.
    pub part: Part,
    /// Who prints the lines, and how they start.
    pub printed: Printed,
    /// Why it differs.
    pub reason: &'static str,
}

impl KnownDifference {
    fn explains(&self, d: &Difference) -> bool {
        if !self.steps.contains(&d.step.as_str()) || self.part != d.part {
            return false;
        }
        match (self.printed.prefix(d.side), self.part) {
            (None, _) => false,
            // Both sides always print an exit code: only a both-sides entry, matched whole.
            (Some(code), Part::Exit) => {
                matches!(self.printed, Printed::Both { .. }) && d.text == code
            }
            (Some(prefix), _) => d.text.starts_with(prefix),
        }
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

/// Every difference between the two outcomes of `step`: each line one side printed and
/// the other did not, and, when the exit codes differ, each side's.
pub fn differences(step: &str, hadoop: &Outcome, spindle: &Outcome) -> Vec<Difference> {
    let mut found = Vec::new();
    if hadoop.exit != spindle.exit {
        for (side, exit) in [(Side::Hadoop, &hadoop.exit), (Side::Spindle, &spindle.exit)] {
            found.push(Difference {
                step: step.to_owned(),
                part: Part::Exit,
                side,
                text: exit.clone(),
            });
        }
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

/// A table entry that explained nothing in one of its steps on one of its sides: the
/// behaviour no longer differs there (or differs otherwise).
#[derive(Debug, Clone, Copy)]
pub struct Stale {
    /// The entry.
    pub known: KnownDifference,
    /// The step where it explained nothing.
    pub step: &'static str,
    /// The side whose lines it explained none of.
    pub side: Side,
}

/// What [`compare`] found.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Differences no table entry explains.
    pub unexplained: Vec<Difference>,
    /// Table entries that explained nothing in a step, on a side.
    pub stale: Vec<Stale>,
    /// Differences the table explains, with the entry's id and reason.
    pub explained: Vec<(Difference, &'static str, &'static str)>,
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
        for s in &self.stale {
            let _ = writeln!(
                out,
                "NO LONGER DIFFERS [{}] {} on {} ({}: {:?}, {})",
                s.step,
                s.known.part,
                s.side,
                s.known.id,
                s.known.printed.prefix(s.side).unwrap_or_default(),
                s.known.reason
            );
        }
        for (d, id, reason) in &self.explained {
            let _ = writeln!(out, "known {d}  -- {id}: {reason}");
        }
        out
    }
}

/// Compares each step's two outcomes (`(step, hadoop, spindle)`) against `known`.
pub fn compare(steps: &[(String, Outcome, Outcome)], known: &[KnownDifference]) -> Comparison {
    let mut comparison = Comparison::default();
    // (entry, step, side) that explained a line.
    let mut used: Vec<(usize, &str, Side)> = Vec::new();
    for (step, hadoop, spindle) in steps {
        for d in differences(step, hadoop, spindle) {
            match known.iter().position(|k| k.explains(&d)) {
                Some(i) => {
                    used.push((i, step.as_str(), d.side));
                    comparison.explained.push((d, known[i].id, known[i].reason));
                }
                None => comparison.unexplained.push(d),
            }
        }
    }
    for (i, k) in known.iter().enumerate() {
        for &step in k.steps {
            for &side in k.printed.sides() {
                if !used.contains(&(i, step, side)) {
                    comparison.stale.push(Stale {
                        known: *k,
                        step,
                        side,
                    });
                }
            }
        }
    }
    comparison
}

// ---- docs/compatibility.md -----------------------------------------------------------

/// The heading of the section of `docs/compatibility.md` that mirrors the table.
pub const KNOWN_SECTION: &str = "## Known differences";

/// One bullet of the doc's "Known differences" section:
/// ``- `id` (Hadoop only) **What**: why…``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocEntry {
    /// The entry's id.
    pub id: String,
    /// `Hadoop only`, `Spindle only` or `both, differently` ([`Printed::label`]).
    pub printed: String,
    /// Its line in the file (from 1).
    pub line: usize,
}

/// The bullets of `markdown`'s "Known differences" section (from its heading to the
/// next `## ` heading; `###` subheadings group bullets within it). Every top-level
/// bullet there must start with its id in backquotes and who prints the line in
/// parentheses; the errors say which do not.
pub fn doc_entries(markdown: &str) -> Result<Vec<DocEntry>, Vec<String>> {
    let bullet = Regex::new(
        r"^- `(?P<id>[a-z0-9][a-z0-9-]*)` \((?P<printed>Hadoop only|Spindle only|both, differently)\) ",
    )
    .expect("a valid pattern");
    let mut in_section = false;
    let mut seen_section = false;
    let (mut entries, mut errors) = (Vec::new(), Vec::new());
    for (n, line) in markdown.lines().enumerate() {
        if line.starts_with("## ") {
            in_section = line.trim_end() == KNOWN_SECTION;
            seen_section |= in_section;
            continue;
        }
        if !in_section || !line.starts_with("- ") {
            continue;
        }
        match bullet.captures(line) {
            Some(c) => entries.push(DocEntry {
                id: c["id"].to_owned(),
                printed: c["printed"].to_owned(),
                line: n + 1,
            }),
            None => errors.push(format!(
                "line {}: a bullet of {KNOWN_SECTION:?} does not start with \
                 \"- `id` (Hadoop only|Spindle only|both, differently) \": {line}",
                n + 1
            )),
        }
    }
    if !seen_section {
        errors.push(format!("no section {KNOWN_SECTION:?}"));
    }
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

/// Whether `markdown` (`docs/compatibility.md`) lists the same differences as `known`:
/// one bullet per id of `known` and none other, each naming the side its entries name.
/// Returns what does not match.
pub fn check_doc(known: &[KnownDifference], markdown: &str) -> Vec<String> {
    let entries = match doc_entries(markdown) {
        Ok(entries) => entries,
        Err(errors) => return errors,
    };
    let mut problems = Vec::new();
    let mut by_id: BTreeMap<&str, &DocEntry> = BTreeMap::new();
    for e in &entries {
        match by_id.entry(e.id.as_str()) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(e);
            }
            std::collections::btree_map::Entry::Occupied(first) => problems.push(format!(
                "line {}: id `{}` is already the bullet of line {}",
                e.line,
                e.id,
                first.get().line
            )),
        }
    }
    for k in known {
        match by_id.get(k.id) {
            None => problems.push(format!(
                "KNOWN entry `{}` ({:?}) has no bullet in {KNOWN_SECTION:?}",
                k.id, k.steps
            )),
            Some(e) if e.printed != k.printed.label() => problems.push(format!(
                "line {}: `{}` says ({}), its KNOWN entry for {:?} is ({})",
                e.line,
                k.id,
                e.printed,
                k.steps,
                k.printed.label()
            )),
            Some(_) => {}
        }
    }
    for e in &entries {
        if !known.iter().any(|k| k.id == e.id) {
            problems.push(format!(
                "line {}: `{}` is in {KNOWN_SECTION:?} but not in KNOWN",
                e.line, e.id
            ));
        }
    }
    problems
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

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("a socket address")
    }

    fn rm_at(ip: &str, first_port: u16) -> RmAddresses {
        let at = |offset: u16| addr(&format!("{ip}:{}", first_port + offset));
        RmAddresses {
            client: at(0),
            scheduler: at(1),
            resource_tracker: at(2),
            admin: at(3),
            webapp: at(4),
        }
    }

    /// Hadoop's side: RM on 127.0.0.1:39040.., its NM at 127.0.0.79:40375 (web 38469).
    fn hadoop_roles() -> Roles {
        Roles::new()
            .rm(&rm_at("127.0.0.1", 39040))
            .node_manager(1, "127.0.0.79".parse().expect("an ip"), 40375, 38469)
            .name("localhost", "LOCALHOST")
            .name("buildhost", "HOSTNAME")
    }

    /// Spindle's side: RM on 127.0.0.1:40250.., its NM at 127.0.0.2:42181 (web 43735).
    fn spindle_roles() -> Roles {
        Roles::new()
            .rm(&rm_at("127.0.0.1", 40250))
            .node_manager(1, "127.0.0.2".parse().expect("an ip"), 42181, 43735)
            .name("localhost", "LOCALHOST")
            .name("buildhost", "HOSTNAME")
    }

    /// Both sides normalised with their own roles, compared with no known differences.
    fn diff(
        hadoop: &str,
        spindle: &str,
        apps: (&[AppRun], &[AppRun]),
        w: Option<Window>,
    ) -> Vec<String> {
        let h = Normaliser::new(hadoop_roles(), apps.0).normalise_at(hadoop, w);
        let s = Normaliser::new(spindle_roles(), apps.1).normalise_at(spindle, w);
        differences("step", &outcome("0", &h, ""), &outcome("0", &s, ""))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn normalises_ids_times_padding_and_names_hosts_and_ports_by_role() {
        let n = Normaliser::new(hadoop_roles(), &[]);
        let text = "2026-11-26 16:10:00,123 WARN util.NativeCodeLoader: Unable to load\n\
            2026-11-26 16:10:00,123 INFO client.DefaultNoHARMFailoverProxyProvider: Connecting to ResourceManager at /127.0.0.1:39040\n\
            \tApplication-Id : application_1764173400123_0001\n\
            \tStart-Time : 1764173400999\n\
            \tAM Host : buildhost\n\
            \tRPC Port : 45678\n\
            \tTracking-URL : http://localhost:39044/proxy/x\n\
            \tat org.apache.hadoop.ipc.Server$Handler.run(Server.java:2976)\n\
            \t... 12 more\n\
            \tAggregate Resource Allocation : 12345 MB-seconds, 6 vcore-seconds\n\
            \tDiagnostics : [Thu Nov 26 16:10:00 UTC 2026] killed at 127.0.0.1, from 10.9.8.7:5\n\
            127.0.0.79:40375\t   RUNNING\t127.0.0.79:38469\t  1\n\n";
        assert_eq!(
            n.normalise(text),
            "<TIME> INFO client.DefaultNoHARMFailoverProxyProvider: Connecting to ResourceManager at /<RM_ADDRESS>\n\
             Application-Id : application_<MS>_0001\n\
             Start-Time : <MS>\n\
             AM Host : <HOSTNAME>\n\
             RPC Port : <AM_RPC_PORT>\n\
             Tracking-URL : http://<LOCALHOST>:<RM_WEB_PORT>/proxy/x\n\
             Aggregate Resource Allocation : 12345 MB-seconds, 6 vcore-seconds\n\
             Diagnostics : [<DATE>] killed at <RM_HOST>, from <OTHER_IP>:<OTHER_PORT>\n\
             <NM1_ADDRESS> RUNNING <NM1_WEB_ADDRESS> 1\n"
        );
        assert_eq!(
            n.normalise("at Thu Nov 26 16:10:00 UTC 2026."),
            "at <DATE>.\n"
        );
        assert_eq!(n.normalise("RPC Port : -1\n"), "RPC Port : -1\n");
    }

    #[test]
    fn the_same_roles_read_the_same_on_both_sides() {
        let hadoop =
            "Tracking-URL : http://buildhost:39044/proxy/application_1764173400123_0001/\n\
                      127.0.0.79:40375 RUNNING 127.0.0.79:38469 1\n";
        let spindle =
            "Tracking-URL : http://buildhost:40254/proxy/application_1764173400555_0001/\n\
                       127.0.0.2:42181 RUNNING 127.0.0.2:43735 1\n";
        assert_eq!(
            diff(hadoop, spindle, (&[], &[]), None),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_wrong_port_in_a_tracking_url_is_a_difference() {
        // Spindle's URL on its admin port, and on a port nothing of its run listens on.
        for wrong in ["40253", "41999"] {
            let found = diff(
                "Tracking-URL : http://buildhost:39044/cluster/app/x\n",
                &format!("Tracking-URL : http://buildhost:{wrong}/cluster/app/x\n"),
                (&[], &[]),
                None,
            );
            assert_eq!(found.len(), 2, "{found:#?}");
            assert!(found[1].contains("only on spindle"), "{found:#?}");
            assert!(
                found[1].ends_with("http://<HOSTNAME>:<RM_ADMIN_PORT>/cluster/app/x")
                    || found[1].ends_with("http://<HOSTNAME>:<OTHER_PORT>/cluster/app/x"),
                "{found:#?}"
            );
        }
        // The right port under another of the machine's names.
        let found = diff(
            "Tracking-URL : http://localhost:39044/cluster/app/x\n",
            "Tracking-URL : http://buildhost:40254/cluster/app/x\n",
            (&[], &[]),
            None,
        );
        assert_eq!(found.len(), 2, "{found:#?}");
    }

    #[test]
    fn a_node_under_the_wrong_address_is_a_difference() {
        let hadoop = "127.0.0.79:40375 RUNNING 127.0.0.79:38469 1\n";
        for spindle in [
            // its web address as its node id
            "127.0.0.2:43735 RUNNING 127.0.0.2:43735 1\n",
            // the RM's host
            "127.0.0.1:42181 RUNNING 127.0.0.2:43735 1\n",
            // a host no daemon of the run has
            "127.0.0.9:42181 RUNNING 127.0.0.2:43735 1\n",
            // the node id as its web address
            "127.0.0.2:42181 RUNNING 127.0.0.2:42181 1\n",
        ] {
            let found = diff(hadoop, spindle, (&[], &[]), None);
            assert_eq!(found.len(), 2, "{spindle}: {found:#?}");
        }
    }

    fn run(id: &str, launched_by_ms: u64) -> AppRun {
        AppRun {
            id: id.to_owned(),
            memory_mb: 512,
            vcores: 1,
            launched_by_ms,
        }
    }

    fn report(id: &str, start: u64, finish: u64, mb: u64, vcores: u64) -> String {
        format!(
            "Application Report :\n\tApplication-Id : {id}\n\tStart-Time : {start}\n\
             \tFinish-Time : {finish}\n\
             \tAggregate Resource Allocation : {mb} MB-seconds, {vcores} vcore-seconds\n\
             \tAggregate Resource Preempted : 0 MB-seconds, 0 vcore-seconds\n"
        )
    }

    #[test]
    fn usage_figures_in_range_read_the_same_and_a_zero_where_a_figure_is_due_does_not() {
        let (h_id, s_id) = (
            "application_1764173400123_0001",
            "application_1764173400555_0001",
        );
        // Hadoop's app started at 100 000, launched by 101 000, killed at 121 255:
        // 512 MB over 19.3..22.3 s.
        let h_run = [run(h_id, 1_764_173_501_000)];
        let s_run = [run(s_id, 1_764_173_601_500)];
        let hadoop = report(h_id, 1_764_173_500_000, 1_764_173_521_255, 10_667, 20);
        let ok = report(s_id, 1_764_173_600_000, 1_764_173_622_100, 10_900, 21);
        assert_eq!(
            diff(&hadoop, &ok, (&h_run, &s_run), None),
            Vec::<String>::new()
        );
        let n = Normaliser::new(spindle_roles(), &s_run);
        assert!(n.normalise(&ok).contains(
            "Aggregate Resource Allocation : <512 MB over the run> MB-seconds, \
             <1 vcores over the run> vcore-seconds\n"
        ));
        for (mb, vcores) in [(0, 0), (10_900, 0), (0, 21), (20_000, 40), (5_000, 10)] {
            let wrong = report(s_id, 1_764_173_600_000, 1_764_173_622_100, mb, vcores);
            let found = diff(&hadoop, &wrong, (&h_run, &s_run), None);
            assert_eq!(found.len(), 2, "{mb}/{vcores}: {found:#?}");
            assert!(
                found[1].contains(&format!(
                    "stdout only on spindle: Aggregate Resource Allocation : {mb} MB-seconds, \
                     {vcores} vcore-seconds, not <512 MB over the run>"
                )),
                "{found:#?}"
            );
        }
        // The preempted figures are compared as they are.
        let preempted = ok.replace("Preempted : 0 MB-seconds", "Preempted : 7 MB-seconds");
        assert_eq!(diff(&hadoop, &preempted, (&h_run, &s_run), None).len(), 2);
    }

    #[test]
    fn a_running_applications_figures_are_checked_against_the_commands_window() {
        let id = "application_1764173400123_0001";
        let runs = [run(id, 1_764_173_501_000)];
        let n = Normaliser::new(hadoop_roles(), &runs);
        // Started at 100 000, launched by 101 000, the report asked for 105 000..106 000:
        // counted up to 102 000..106 000, so 1..6 s of 512 MB.
        let w = Window {
            start_ms: 1_764_173_505_000,
            end_ms: 1_764_173_506_000,
        };
        let status = |mb| report(id, 1_764_173_500_000, 0, mb, mb / 512);
        for mb in [512, 2217, 3072] {
            assert!(
                n.normalise_at(&status(mb), Some(w))
                    .contains("<512 MB over the run>"),
                "{mb}"
            );
        }
        for mb in [0, 300, 4000] {
            let out = n.normalise_at(&status(mb), Some(w));
            assert!(
                out.contains(&format!(
                    "{mb} MB-seconds, {} vcore-seconds, not <512 MB over the run> (511..3073 MB-seconds",
                    mb / 512
                )),
                "{out}"
            );
        }
        // Without a window the figures of a running application stay as they are.
        assert!(n
            .normalise(&status(2217))
            .contains(": 2217 MB-seconds, 4 vcore-seconds"));
    }

    #[test]
    fn line_diff_finds_lines_on_one_side_only() {
        let (a, b) = line_diff("x\ny\nz\n", "x\nq\nz\nw\n");
        assert_eq!(a, vec!["y"]);
        assert_eq!(b, vec!["q", "w"]);
        let (a, b) = line_diff("same\n", "same\n");
        assert!(a.is_empty() && b.is_empty());
    }

    fn known(steps: &'static [&'static str], part: Part, printed: Printed) -> KnownDifference {
        KnownDifference {
            id: "k",
            steps,
            part,
            printed,
            reason: "r",
        }
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
        let diagnostics = known(
            &["status"],
            Part::Stdout,
            Printed::Both {
                hadoop: "Diagnostics : waiting",
                spindle: "Diagnostics :",
            },
        );
        let c = compare(&steps, &[diagnostics]);
        assert_eq!(c.explained.len(), 2, "{}", c.report());
        assert_eq!(c.unexplained.len(), 2, "{}", c.report());
        assert!(c.unexplained.iter().all(|d| d.part == Part::Exit));
        assert!(!c.holds());

        let exit = known(
            &["kill"],
            Part::Exit,
            Printed::Both {
                hadoop: "255",
                spindle: "0",
            },
        );
        assert!(compare(&steps, &[diagnostics, exit]).holds());
        // An exit entry with the codes the other way round explains neither.
        let swapped = known(
            &["kill"],
            Part::Exit,
            Printed::Both {
                hadoop: "0",
                spindle: "255",
            },
        );
        let c = compare(&steps, &[diagnostics, swapped]);
        assert_eq!(c.unexplained.len(), 2, "{}", c.report());

        // An entry that explains nothing any more, and one listed for a step that
        // does not show it.
        let stderr = known(&["kill"], Part::Stderr, Printed::HadoopOnly(""));
        let c = compare(&steps, &[diagnostics, exit, stderr]);
        assert!(c.unexplained.is_empty(), "{}", c.report());
        assert_eq!(c.stale.len(), 1, "{}", c.report());
        assert!(!c.holds());
        let two_steps = known(
            &["status", "kill"],
            Part::Stdout,
            Printed::Both {
                hadoop: "Diagnostics : waiting",
                spindle: "Diagnostics :",
            },
        );
        let c = compare(&steps, &[two_steps, exit]);
        assert_eq!(c.stale.len(), 2, "{}", c.report());
        assert!(c.stale.iter().all(|s| s.step == "kill"));
    }

    #[test]
    fn an_entry_for_one_sides_line_does_not_excuse_the_other_sides() {
        let hadoop_prints = vec![(
            "move".to_owned(),
            outcome(
                "1",
                "",
                "Caused by: java.security.AccessControlException: no\n",
            ),
            outcome("1", "", ""),
        )];
        let spindle_prints = vec![(
            "move".to_owned(),
            outcome("1", "", ""),
            outcome(
                "1",
                "",
                "Caused by: java.security.AccessControlException: no\n",
            ),
        )];
        let hadoop_only = known(
            &["move"],
            Part::Stderr,
            Printed::HadoopOnly("Caused by: java.security.AccessControlException: "),
        );
        assert!(compare(&hadoop_prints, &[hadoop_only]).holds());
        let c = compare(&spindle_prints, &[hadoop_only]);
        assert_eq!(c.unexplained.len(), 1, "{}", c.report());
        assert_eq!(c.unexplained[0].side, Side::Spindle);
        assert_eq!(c.stale.len(), 1, "{}", c.report());

        // A both-sides entry must see both sides' lines.
        let both = known(
            &["move"],
            Part::Stderr,
            Printed::Both {
                hadoop: "Caused by: ",
                spindle: "Caused by: ",
            },
        );
        let c = compare(&hadoop_prints, &[both]);
        assert!(c.unexplained.is_empty(), "{}", c.report());
        assert_eq!(c.stale.len(), 1, "{}", c.report());
        assert_eq!(c.stale[0].side, Side::Spindle);
    }

    const DOC: &str = "# Title\n\n## The session\n\n- not an entry\n\n\
        ## Known differences\n\n### A group\n\n\
        - `acl-cause` (Hadoop only) **Refusals**: the cause\n  lines.\n\
        - `reason` (both, differently) **The reason**: …\n\n\
        ## Refused settings and requests (outside the differential)\n\n\
        - **Security settings** stop the daemons.\n";

    fn doc_known() -> [KnownDifference; 3] {
        [
            KnownDifference {
                id: "acl-cause",
                ..known(&["move"], Part::Stderr, Printed::HadoopOnly("Caused by"))
            },
            KnownDifference {
                id: "acl-cause",
                ..known(&["kill"], Part::Stderr, Printed::HadoopOnly("Caused by"))
            },
            KnownDifference {
                id: "reason",
                ..known(
                    &["refresh"],
                    Part::Stderr,
                    Printed::Both {
                        hadoop: "a",
                        spindle: "b",
                    },
                )
            },
        ]
    }

    #[test]
    fn the_doc_lists_each_known_id_once_with_its_side_and_nothing_else() {
        assert_eq!(check_doc(&doc_known(), DOC), Vec::<String>::new());
        assert_eq!(
            doc_entries(DOC).expect("entries"),
            vec![
                DocEntry {
                    id: "acl-cause".into(),
                    printed: "Hadoop only".into(),
                    line: 11
                },
                DocEntry {
                    id: "reason".into(),
                    printed: "both, differently".into(),
                    line: 13
                },
            ]
        );
        // An entry the doc does not have; a bullet KNOWN does not have.
        let mut fewer = doc_known().to_vec();
        fewer.pop();
        let problems = check_doc(&fewer, DOC);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("`reason` is in"), "{problems:#?}");
        let mut more = doc_known().to_vec();
        more.push(KnownDifference {
            id: "new",
            ..more[0]
        });
        let problems = check_doc(&more, DOC);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("`new`"), "{problems:#?}");
        // The side the doc names must be the entries'.
        let problems = check_doc(
            &doc_known(),
            &DOC.replace("(Hadoop only)", "(Spindle only)"),
        );
        assert_eq!(problems.len(), 2, "{problems:#?}");
        // Bullets without an id, twice the same id, no section at all.
        let problems = check_doc(
            &doc_known(),
            &DOC.replace("- `reason` (both, differently) ", "- "),
        );
        assert_eq!(problems.len(), 1, "{problems:#?}");
        let problems = check_doc(&doc_known(), &DOC.replace("`reason`", "`acl-cause`"));
        assert!(
            problems.iter().any(|p| p.contains("already")),
            "{problems:#?}"
        );
        let problems = check_doc(&doc_known(), &DOC.replace("## Known", "## Unknown"));
        assert!(
            problems.iter().any(|p| p.contains("no section")),
            "{problems:#?}"
        );
    }
}
