//! A small text language for driving a [`Scheduler`] step by step and
//! getting back a readable trace: the scheduler's scenario tests are
//! written in it, and the simulator and benchmarks can reuse it.
//!
//! One command per line; `#` starts a comment. After every command the
//! scheduler's invariants are checked, and a violation stops the run.
//!
//! ```text
//! config  key=value...            before any other command: min_mem, min_vcores,
//!                                 max_mem, max_vcores, epoch, selection,
//!                                 max_nodes, max_apps, max_asks_per_app,
//!                                 max_blacklist_per_app, max_containers_per_pass,
//!                                 max_candidates_per_pick, packing_threshold
//!                                 (a fraction), packing_min_nodes, packing_seed,
//!                                 scheduler (fifo|capacity|fair; resets the queues
//!                                 to root.default), calculator (memory|dominant),
//!                                 node_delay, rack_delay (capacity delay rule),
//!                                 node_threshold, rack_threshold (fair delay rule),
//!                                 hb_max, hb_offswitch (containers per heartbeat),
//!                                 user_max_apps (fair default per-user running limit),
//!                                 dynamic (true: fair leaves are created on demand)
//! queue   PATH [capacity=PCT] [max=PCT] [weight=W] [min=MB,VC] [maxres=MB,VC]
//!         [ulf=F|none] [mulp=PCT] [am=FRACTION|none] [running=N] [order=fifo|fair|drf]
//!         [state=RUNNING|STOPPED]  declares (or changes) a queue; parents first. Before
//!                                 the first other command it shapes the initial tree;
//!                                 after it, it edits a pending tree that `reload` applies.
//!                                 The first `queue` line drops the default leaf.
//! unqueue PATH                    removes a queue from the pending tree
//! reload  [node_delay=N] [rack_delay=N] [node_threshold=F] [rack_threshold=F]
//!         [hb_max=N|none] [hb_offswitch=N|none]
//!                                 applies the pending tree (refreshQueues) with the
//!                                 delay rule and per-heartbeat caps in force, changed
//!                                 as given (keys as in `config`)
//! node    NODE rack=R mem=MB vcores=N
//! update  NODE [mem=MB] [vcores=N] [healthy=BOOL] [schedulable=BOOL]
//! heartbeat NODE                  a heartbeat: schedules on the node
//! remove  NODE
//! app     APP [queue=Q] [user=U] [priority=P] [unmanaged=BOOL]
//! priority APP P                  the application's priority changes
//! move    APP QUEUE               the application moves to another leaf
//! finish  APP                     the attempt ends
//! ask     APP pri=P mem=MB [vcores=N] [relax=BOOL] [id=N] LOC:COUNT...
//! release APP cN...
//! blacklist APP [+NAME]... [-NAME]...
//! complete APP cN [exit=CODE]     the NM reports the container finished
//! expire  APP cN                  the RM expires an unlaunched container
//! kill    APP cN                  the RM kills the container
//! schedule [max=N]                a continuous-scheduling pass
//! tick    MS                      the clock moves to MS
//! table   APP                     prints the attempt's request table
//! headroom APP                    prints what the attempt may still be given
//! nodes | apps | queues | order   print state
//! counts                          containers per node, and how many nodes are empty
//! ```
//!
//! `NODE` is `host` (port 8041) or `host:port`; applications are named
//! in the script and numbered in order of appearance
//! (`application_1_0001`, ...), attempt 1; containers are `cN`, their
//! sequence number within the attempt. Every line of the script is echoed
//! as `> line`, followed by what the scheduler decided, indented.
//!
//! The files: `commands.rs` runs each command; `config.rs` the `config`
//! keys (and the delay and heartbeat keys `reload` shares);
//! `queues.rs` the `queue` / `unqueue` edits of the pending tree;
//! `render.rs` how decisions and state are printed in the trace;
//! `args.rs` the words of a line (nodes, containers, `key=value`s,
//! numbers).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use spindle_common::{ApplicationAttemptId, ContainerId};

use crate::config::SchedulerConfig;
use crate::input::Input;
use crate::queue_config::QueueTreeConfig;
use crate::scheduler::Scheduler;

mod args;
mod commands;
mod config;
mod queues;
mod render;

/// The NodeManager port used when a script names a node by host only.
pub const DEFAULT_NODE_PORT: i32 = 8041;

/// Cluster timestamp of the application ids a script creates.
pub const CLUSTER_TIMESTAMP: i64 = 1;

/// A script that could not be run: bad syntax, an unknown name, or a
/// broken scheduler invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scenario line {line}: {message}")]
pub struct ScenarioError {
    pub line: usize,
    pub message: String,
}

/// Runs a whole script and returns its trace.
pub fn run(script: &str) -> Result<String, ScenarioError> {
    let mut scenario = Scenario::new();
    for (index, line) in script.lines().enumerate() {
        scenario.step(line).map_err(|message| ScenarioError {
            line: index + 1,
            message,
        })?;
    }
    Ok(scenario.into_trace())
}

/// A script being run line by line.
#[derive(Debug)]
pub struct Scenario {
    config: SchedulerConfig,
    /// The queue tree being declared (initial, or pending a `reload`).
    pending_queues: Option<QueueTreeConfig>,
    scheduler: Option<Scheduler>,
    now_ms: u64,
    apps: BTreeMap<String, ApplicationAttemptId>,
    names: BTreeMap<ApplicationAttemptId, String>,
    trace: String,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario::new()
    }
}

impl Scenario {
    pub fn new() -> Scenario {
        Scenario {
            config: SchedulerConfig::default(),
            pending_queues: None,
            scheduler: None,
            now_ms: 0,
            apps: BTreeMap::new(),
            names: BTreeMap::new(),
            trace: String::new(),
        }
    }

    /// The scheduler, once a command other than `config` has run.
    pub fn scheduler(&self) -> Option<&Scheduler> {
        self.scheduler.as_ref()
    }

    /// The scheduler itself, for tests that corrupt its state on purpose to show
    /// that [`Scheduler::check_invariants`] notices.
    #[cfg(test)]
    pub(crate) fn scheduler_mut(&mut self) -> Option<&mut Scheduler> {
        self.scheduler.as_mut()
    }

    /// The trace so far.
    pub fn trace(&self) -> &str {
        &self.trace
    }

    pub fn into_trace(self) -> String {
        self.trace
    }

    /// Runs one line. Scheduler errors are part of the trace; the `Err`
    /// case is for scripts that cannot go on.
    pub fn step(&mut self, line: &str) -> Result<(), String> {
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            return Ok(());
        }
        let _ = writeln!(self.trace, "> {text}");
        let words: Vec<&str> = text.split_whitespace().collect();
        let (command, args) = match words.split_first() {
            Some((c, a)) => (*c, a),
            None => return Ok(()),
        };
        if command == "config" {
            return self.configure(args);
        }
        if command == "queue" || command == "unqueue" {
            self.declare_queue(command, args)?;
            if let Some(s) = &self.scheduler {
                s.check_invariants().map_err(|e| e.to_string())?;
            }
            return Ok(());
        }
        if self.scheduler.is_none() {
            if let Some(queues) = self.pending_queues.take() {
                self.config.queues = queues;
            }
            let scheduler = Scheduler::new(self.config.clone()).map_err(|e| e.to_string())?;
            self.scheduler = Some(scheduler);
        }
        self.command(command, args)?;
        if let Some(s) = &self.scheduler {
            s.check_invariants().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn sched_mut(&mut self) -> Result<&mut Scheduler, String> {
        self.scheduler
            .as_mut()
            .ok_or_else(|| "the scheduler is not running".to_string())
    }

    fn input(&mut self, input: Input) -> Result<(), String> {
        let now = self.now_ms;
        let result = self.sched_mut()?.handle(now, input);
        self.record(result);
        Ok(())
    }

    fn app_arg(&self, args: &[&str]) -> Result<ApplicationAttemptId, String> {
        let name = args.first().ok_or("which application?")?;
        self.apps
            .get(*name)
            .copied()
            .ok_or_else(|| format!("unknown application '{name}' (declare it with 'app')"))
    }

    fn app_name(&self, attempt: &ApplicationAttemptId) -> String {
        self.names
            .get(attempt)
            .cloned()
            .unwrap_or_else(|| attempt.to_string())
    }

    fn container_name(&self, c: &ContainerId) -> String {
        format!("{} c{}", self.app_name(&c.attempt), c.sequence())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_the_line() {
        let err = run("node h1 rack=/r mem=1024 vcores=1\nbogus\n").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("scenario line 2: unknown command 'bogus'")
        );
        let err = run("app a1\nask a1 pri=1 mem=x *:1").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("scenario line 2: mem: 'x' is not a valid number")
        );
        let err = run("nodes\nconfig epoch=1").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("scenario line 2: config must come before every other command")
        );
        assert!(run("release a9 c1").is_err());
        assert!(run("config ordering=lottery").is_err());
    }
}
