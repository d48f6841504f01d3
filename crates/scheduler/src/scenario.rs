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

use std::collections::BTreeMap;
use std::fmt::Write as _;

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};

use crate::config::SchedulerConfig;
use crate::input::{ContainerExit, Input, NodeUpdate, ResourceAsk};
use crate::output::Decisions;
use crate::queue_config::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueRunState, QueueShare,
    QueueTreeConfig, ResourceBound, ResourceCalculatorKind, SchedulerKind,
};
use crate::scheduler::Scheduler;

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

    fn configure(&mut self, args: &[&str]) -> Result<(), String> {
        if self.scheduler.is_some() {
            return Err("config must come before every other command".into());
        }
        let c = &mut self.config;
        for arg in args {
            let (key, value) = split_kv(arg)?;
            match key {
                "min_mem" => c.minimum_allocation.memory_mb = number(key, value)?,
                "min_vcores" => c.minimum_allocation.vcores = number(key, value)?,
                "max_mem" => c.maximum_allocation.memory_mb = number(key, value)?,
                "max_vcores" => c.maximum_allocation.vcores = number(key, value)?,
                "epoch" => c.epoch = number(key, value)?,
                "scheduler" => {
                    let kind = match value {
                        "fifo" => SchedulerKind::Fifo,
                        "capacity" => SchedulerKind::Capacity,
                        "fair" => SchedulerKind::Fair,
                        _ => return Err(format!("unknown scheduler '{value}'")),
                    };
                    c.queues = default_tree(kind);
                }
                "calculator" => {
                    c.queues.resource_calculator = match value {
                        "memory" => ResourceCalculatorKind::Memory,
                        "dominant" => ResourceCalculatorKind::Dominant,
                        _ => return Err(format!("unknown calculator '{value}'")),
                    }
                }
                "node_delay" | "rack_delay" | "node_threshold" | "rack_threshold" | "hb_max"
                | "hb_offswitch" => {
                    delay_or_heartbeat(key, value, &mut c.locality, &mut c.heartbeat)?
                }
                "user_max_apps" => {
                    c.queues.user_max_running_apps_default = Some(number(key, value)?)
                }
                "dynamic" => {
                    c.queues.dynamic_leaf = if boolean(key, value)? {
                        Some(QueueConfig::leaf(
                            "dynamic",
                            QueueShare::Fair {
                                weight: 1.0,
                                min: None,
                                max: None,
                            },
                        ))
                    } else {
                        None
                    }
                }
                "selection" => c.node_selection = value.parse().map_err(|e| format!("{e}"))?,
                "max_nodes" => c.limits.max_nodes = number(key, value)?,
                "max_apps" => c.limits.max_apps = number(key, value)?,
                "max_asks_per_app" => c.limits.max_asks_per_app = number(key, value)?,
                "max_blacklist_per_app" => c.limits.max_blacklist_per_app = number(key, value)?,
                "max_containers_per_pass" => c.limits.max_containers_per_pass = number(key, value)?,
                "max_candidates_per_pick" => c.limits.max_candidates_per_pick = number(key, value)?,
                "packing_threshold" => c.packing.high_memory_threshold = number(key, value)?,
                "packing_min_nodes" => c.packing.min_nodes = number(key, value)?,
                "packing_seed" => c.packing.seed = number(key, value)?,
                _ => return Err(format!("unknown config key '{key}'")),
            }
        }
        Ok(())
    }

    fn command(&mut self, command: &str, args: &[&str]) -> Result<(), String> {
        match command {
            "node" => {
                let (node, opts) = node_and_options(args)?;
                let rack = required(&opts, "rack")?.to_string();
                let capability = Resource::new(
                    number("mem", required(&opts, "mem")?)?,
                    number("vcores", required(&opts, "vcores")?)?,
                );
                only_keys(&opts, &["rack", "mem", "vcores"])?;
                self.input(Input::NodeAdded {
                    node,
                    rack,
                    capability,
                })
            }
            "update" | "heartbeat" => {
                let (node, opts) = node_and_options(args)?;
                let mut update = NodeUpdate::heartbeat();
                if command == "update" {
                    only_keys(&opts, &["mem", "vcores", "healthy", "schedulable"])?;
                    if opts.contains_key("mem") || opts.contains_key("vcores") {
                        let current = self
                            .scheduler()
                            .and_then(|s| s.node(&node))
                            .map_or(Resource::ZERO, |n| n.capability);
                        update.capability = Some(Resource::new(
                            optional(&opts, "mem", current.memory_mb)?,
                            optional(&opts, "vcores", current.vcores)?,
                        ));
                    }
                    update.healthy = opts
                        .get("healthy")
                        .map(|v| boolean("healthy", v))
                        .transpose()?;
                    update.schedulable = opts
                        .get("schedulable")
                        .map(|v| boolean("schedulable", v))
                        .transpose()?;
                } else {
                    only_keys(&opts, &[])?;
                }
                self.input(Input::NodeUpdated { node, update })
            }
            "remove" => {
                let (node, opts) = node_and_options(args)?;
                only_keys(&opts, &[])?;
                self.input(Input::NodeRemoved { node })
            }
            "app" => {
                let (name, rest) = args.split_first().ok_or("app needs a name")?;
                if self.apps.contains_key(*name) {
                    return Err(format!("application '{name}' was already declared"));
                }
                let opts = options(rest)?;
                only_keys(&opts, &["queue", "user", "priority", "unmanaged"])?;
                let number_of_app =
                    i32::try_from(self.apps.len() + 1).map_err(|e| e.to_string())?;
                let attempt = ApplicationAttemptId::new(
                    ApplicationId::new(CLUSTER_TIMESTAMP, number_of_app),
                    1,
                );
                self.apps.insert(name.to_string(), attempt);
                self.names.insert(attempt, name.to_string());
                self.input(Input::AppAdded {
                    attempt,
                    queue: opts.get("queue").copied().unwrap_or("default").to_string(),
                    user: opts.get("user").copied().unwrap_or("user").to_string(),
                    priority: optional(&opts, "priority", 0)?,
                    unmanaged_am: opts
                        .get("unmanaged")
                        .map(|v| boolean("unmanaged", v))
                        .transpose()?
                        .unwrap_or(false),
                })
            }
            "reload" => {
                let opts = options(args)?;
                only_keys(
                    &opts,
                    &[
                        "node_delay",
                        "rack_delay",
                        "node_threshold",
                        "rack_threshold",
                        "hb_max",
                        "hb_offswitch",
                    ],
                )?;
                let (mut locality, mut heartbeat) = self
                    .scheduler()
                    .map(|s| (s.config().locality, s.config().heartbeat))
                    .ok_or("the scheduler is not running")?;
                for (key, value) in &opts {
                    delay_or_heartbeat(key, value, &mut locality, &mut heartbeat)?;
                }
                let queues = self
                    .pending_queues
                    .take()
                    .or_else(|| self.scheduler().map(|s| s.queue_config().clone()))
                    .ok_or("no queue tree to reload")?;
                self.input(Input::QueuesReconfigured {
                    queues: Box::new(queues),
                    locality,
                    heartbeat,
                })
            }
            "priority" => {
                let attempt = self.app_arg(args)?;
                let priority = number("priority", args.get(1).ok_or("priority APP P")?)?;
                if args.len() > 2 {
                    return Err("priority takes an application and a number".into());
                }
                self.input(Input::AppPriorityUpdated { attempt, priority })
            }
            "move" => {
                let attempt = self.app_arg(args)?;
                let queue = args.get(1).ok_or("move APP QUEUE")?.to_string();
                if args.len() > 2 {
                    return Err("move takes an application and a queue".into());
                }
                self.input(Input::AppMoved { attempt, queue })
            }
            "finish" => {
                let attempt = self.app_arg(args)?;
                self.input(Input::AppRemoved { attempt })
            }
            "ask" => self.ask(args),
            "release" => {
                let attempt = self.app_arg(args)?;
                let releases = args[1..]
                    .iter()
                    .map(|c| container_arg(attempt, c, self.config.epoch))
                    .collect::<Result<Vec<_>, _>>()?;
                self.input(Input::AsksUpdated {
                    attempt,
                    asks: Vec::new(),
                    releases,
                    blacklist_add: Vec::new(),
                    blacklist_remove: Vec::new(),
                })
            }
            "blacklist" => {
                let attempt = self.app_arg(args)?;
                let mut blacklist_add = Vec::new();
                let mut blacklist_remove = Vec::new();
                for arg in &args[1..] {
                    if let Some(name) = arg.strip_prefix('+') {
                        blacklist_add.push(name.to_string());
                    } else if let Some(name) = arg.strip_prefix('-') {
                        blacklist_remove.push(name.to_string());
                    } else {
                        return Err(format!("blacklist entries are +NAME or -NAME, not '{arg}'"));
                    }
                }
                self.input(Input::AsksUpdated {
                    attempt,
                    asks: Vec::new(),
                    releases: Vec::new(),
                    blacklist_add,
                    blacklist_remove,
                })
            }
            "complete" | "expire" | "kill" => {
                let attempt = self.app_arg(args)?;
                let c = args.get(1).ok_or("which container? (cN)")?;
                let container = container_arg(attempt, c, self.config.epoch)?;
                let opts = options(&args[2..])?;
                let exit = match command {
                    "complete" => {
                        only_keys(&opts, &["exit"])?;
                        ContainerExit::Finished {
                            exit_status: optional(&opts, "exit", 0)?,
                            diagnostics: String::new(),
                        }
                    }
                    "expire" => {
                        only_keys(&opts, &[])?;
                        ContainerExit::Expired
                    }
                    _ => {
                        only_keys(&opts, &[])?;
                        ContainerExit::KilledByResourceManager {
                            diagnostics: "killed by the scenario".into(),
                        }
                    }
                };
                self.input(Input::ContainerCompleted { container, exit })
            }
            "schedule" => {
                let opts = options(args)?;
                only_keys(&opts, &["max"])?;
                let max = optional(&opts, "max", usize::MAX)?;
                let now = self.now_ms;
                let result = self.sched_mut()?.schedule(now, max);
                self.record(result);
                Ok(())
            }
            "tick" => {
                let ms = args.first().ok_or("tick needs a time in ms")?;
                self.now_ms = number("tick", ms)?;
                self.input(Input::Tick)
            }
            "table" => {
                let attempt = self.app_arg(args)?;
                self.print_table(attempt);
                Ok(())
            }
            "nodes" => {
                self.print_nodes();
                Ok(())
            }
            "apps" => {
                self.print_apps();
                Ok(())
            }
            "queues" => {
                self.print_queues();
                Ok(())
            }
            "counts" => {
                let nodes = self.scheduler().map(|s| s.nodes()).unwrap_or_default();
                let cells: Vec<String> = nodes
                    .iter()
                    .map(|n| format!("{}={}", node_name(&n.id), n.containers.len()))
                    .collect();
                let empty = nodes.iter().filter(|n| n.containers.is_empty()).count();
                let _ = writeln!(self.trace, "  counts: {}", cells.join(" "));
                let _ = writeln!(self.trace, "  empty nodes: {empty} of {}", nodes.len());
                Ok(())
            }
            "headroom" => {
                let attempt = self.app_arg(args)?;
                let room = self
                    .scheduler()
                    .and_then(|s| s.headroom(&attempt))
                    .ok_or("the application is not in the scheduler")?;
                let _ = writeln!(
                    self.trace,
                    "  headroom: {}MB,{}vc",
                    room.memory_mb, room.vcores
                );
                Ok(())
            }
            "order" => {
                let order = self
                    .scheduler()
                    .map(|s| s.serving_order())
                    .unwrap_or_default();
                let names: Vec<String> = order.iter().map(|a| self.app_name(a)).collect();
                let _ = writeln!(self.trace, "  order: {}", names.join(" "));
                Ok(())
            }
            _ => Err(format!("unknown command '{command}'")),
        }
    }

    fn ask(&mut self, args: &[&str]) -> Result<(), String> {
        let attempt = self.app_arg(args)?;
        let mut opts = BTreeMap::new();
        let mut rows = Vec::new();
        for arg in &args[1..] {
            if let Some((k, v)) = arg.split_once('=') {
                opts.insert(k, v);
            } else if let Some((loc, count)) = arg.rsplit_once(':') {
                rows.push((loc.to_string(), number::<i32>("count", count)?));
            } else {
                return Err(format!("expected key=value or LOCATION:COUNT, got '{arg}'"));
            }
        }
        only_keys(&opts, &["pri", "mem", "vcores", "relax", "id"])?;
        let priority: i32 = number("pri", required(&opts, "pri")?)?;
        let capability = Resource::new(
            number("mem", required(&opts, "mem")?)?,
            optional(&opts, "vcores", 1)?,
        );
        let relax = opts
            .get("relax")
            .map(|v| boolean("relax", v))
            .transpose()?
            .unwrap_or(true);
        let id = optional(&opts, "id", -1)?;
        if rows.is_empty() {
            return Err("ask needs at least one LOCATION:COUNT".into());
        }
        let asks = rows
            .into_iter()
            .map(|(loc, n)| {
                ResourceAsk::new(priority, loc, capability, n)
                    .relax(relax)
                    .with_allocation_request_id(id)
            })
            .collect();
        self.input(Input::AsksUpdated {
            attempt,
            asks,
            releases: Vec::new(),
            blacklist_add: Vec::new(),
            blacklist_remove: Vec::new(),
        })
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

    fn record(&mut self, result: Result<Decisions, crate::SchedulerError>) {
        let decisions = match result {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(self.trace, "  error: {e}");
                return;
            }
        };
        let mut lines = Vec::new();
        for a in &decisions.allocations {
            let mut line = format!(
                "alloc {} on {} pri={} {} {}",
                self.container_name(&a.container),
                node_name(&a.node),
                a.priority,
                a.resource,
                a.locality
            );
            if a.allocation_request_id != -1 {
                let _ = write!(line, " id={}", a.allocation_request_id);
            }
            lines.push(line);
        }
        for c in &decisions.completed {
            lines.push(format!(
                "done {} on {} exit={} {}",
                self.container_name(&c.container),
                node_name(&c.node),
                c.exit_status,
                c.cause
            ));
        }
        for action in &decisions.node_actions {
            match action {
                crate::NodeAction::KillContainer { node, container } => lines.push(format!(
                    "kill {} on {}",
                    self.container_name(container),
                    node_name(node)
                )),
            }
        }
        for line in lines {
            let _ = writeln!(self.trace, "  {line}");
        }
    }

    fn print_table(&mut self, attempt: ApplicationAttemptId) {
        let Some(asks) = self.scheduler().and_then(|s| s.asks(&attempt)) else {
            let _ = writeln!(self.trace, "  (no such attempt)");
            return;
        };
        if asks.is_empty() {
            let _ = writeln!(self.trace, "  (no outstanding asks)");
            return;
        }
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for a in asks {
            let mut head = format!("pri={} {}", a.priority, a.capability);
            if a.allocation_request_id != -1 {
                let _ = write!(head, " id={}", a.allocation_request_id);
            }
            let mut cell = format!("{}={}", a.resource_name, a.num_containers);
            if !a.relax_locality {
                cell.push_str("(strict)");
            }
            match groups.last_mut() {
                Some((h, cells)) if *h == head => cells.push(cell),
                _ => groups.push((head, vec![cell])),
            }
        }
        for (head, cells) in groups {
            let _ = writeln!(self.trace, "  {head}: {}", cells.join(" "));
        }
    }

    fn print_nodes(&mut self) {
        let nodes = self.scheduler().map(|s| s.nodes()).unwrap_or_default();
        for n in nodes {
            let containers: Vec<String> = n
                .containers
                .iter()
                .map(|c| self.container_name(c))
                .collect();
            let mut flags = String::new();
            if !n.healthy {
                flags.push_str(" unhealthy");
            }
            if !n.schedulable {
                flags.push_str(" unschedulable");
            }
            let _ = writeln!(
                self.trace,
                "  {} {} used={}/{}MB,{}/{}vc{} [{}]",
                node_name(&n.id),
                n.rack,
                n.used.memory_mb,
                n.capability.memory_mb,
                n.used.vcores,
                n.capability.vcores,
                flags,
                containers.join(", ")
            );
        }
    }

    fn print_apps(&mut self) {
        let apps = self.scheduler().map(|s| s.apps()).unwrap_or_default();
        for a in apps {
            let _ = writeln!(
                self.trace,
                "  {} queue={} used={}MB,{}vc pending={}MB,{}vc containers={}{}",
                self.app_name(&a.attempt),
                a.queue,
                a.used.memory_mb,
                a.used.vcores,
                a.pending.memory_mb,
                a.pending.vcores,
                a.containers.len(),
                if a.blacklist.is_empty() {
                    String::new()
                } else {
                    format!(" blacklist={}", a.blacklist.join(","))
                }
            );
        }
    }

    fn print_queues(&mut self) {
        let queues = self.scheduler().map(|s| s.queues()).unwrap_or_default();
        for q in queues {
            let _ = writeln!(
                self.trace,
                "  {} guaranteed={}MB,{}vc max={}MB,{}vc used={}MB,{}vc am={}MB apps={} running={}{}",
                q.path,
                q.guaranteed.memory_mb,
                q.guaranteed.vcores,
                q.maximum.memory_mb,
                q.maximum.vcores,
                q.used.memory_mb,
                q.used.vcores,
                q.am_used.memory_mb,
                q.apps,
                q.running_apps,
                if q.state == QueueRunState::Stopped {
                    " STOPPED"
                } else {
                    ""
                }
            );
        }
    }

    /// `queue PATH opts...` / `unqueue PATH`: edits the pending tree.
    fn declare_queue(&mut self, command: &str, args: &[&str]) -> Result<(), String> {
        let (path, rest) = args.split_first().ok_or("which queue?")?;
        let started = self.scheduler.is_some();
        let tree = match self.pending_queues.take() {
            Some(t) => t,
            None if started => self
                .scheduler()
                .map(|s| s.queue_config().clone())
                .ok_or("no scheduler")?,
            None => {
                // The first declaration replaces the default leaf.
                let mut t = self.config.queues.clone();
                t.root.children.clear();
                t
            }
        };
        let mut tree = tree;
        let names: Vec<&str> = path.split('.').collect();
        if names.first() != Some(&"root") || names.len() < 2 {
            return Err(format!("queue paths start with root. ('{path}')"));
        }
        let mut parent = &mut tree.root;
        for name in &names[1..names.len() - 1] {
            parent = parent
                .children
                .iter_mut()
                .find(|c| c.name == *name)
                .ok_or_else(|| format!("declare the parent of {path} first"))?;
        }
        let last = names[names.len() - 1];
        if command == "unqueue" {
            let before = parent.children.len();
            parent.children.retain(|c| c.name != last);
            if parent.children.len() == before {
                return Err(format!("no queue {path}"));
            }
            self.pending_queues = Some(tree);
            return Ok(());
        }
        let opts = options(rest)?;
        only_keys(
            &opts,
            &[
                "capacity", "max", "weight", "min", "maxres", "ulf", "mulp", "am", "running",
                "order", "state",
            ],
        )?;
        let kind = tree.kind;
        let index = match parent.children.iter().position(|c| c.name == last) {
            Some(i) => i,
            None => {
                let share = match kind {
                    SchedulerKind::Fair => QueueShare::Fair {
                        weight: 1.0,
                        min: None,
                        max: None,
                    },
                    _ => QueueShare::Capacity {
                        capacity_pct: 0.0,
                        maximum_pct: 100.0,
                    },
                };
                let mut leaf = QueueConfig::leaf(last, share);
                if kind == SchedulerKind::Fair {
                    leaf.ordering = AppOrdering::Fair;
                }
                parent.children.push(leaf);
                parent.children.len() - 1
            }
        };
        let q = &mut parent.children[index];
        let resource = |key: &str, v: &str| -> Result<Resource, String> {
            let (m, c) = v
                .split_once(',')
                .ok_or_else(|| format!("{key} takes MB,VCORES"))?;
            Ok(Resource::new(number(key, m)?, number(key, c)?))
        };
        for (key, value) in &opts {
            let value = *value;
            match (*key, &mut q.share) {
                ("capacity", QueueShare::Capacity { capacity_pct, .. }) => {
                    *capacity_pct = number(key, value)?
                }
                ("max", QueueShare::Capacity { maximum_pct, .. }) => {
                    *maximum_pct = number(key, value)?
                }
                ("weight", QueueShare::Fair { weight, .. }) => *weight = number(key, value)?,
                ("min", QueueShare::Fair { min, .. }) => {
                    *min = Some(ResourceBound::Absolute(resource(key, value)?))
                }
                ("maxres", QueueShare::Fair { max, .. }) => {
                    *max = Some(ResourceBound::Absolute(resource(key, value)?))
                }
                ("ulf", _) => {
                    q.user_limit_factor = if value == "none" {
                        None
                    } else {
                        Some(number(key, value)?)
                    }
                }
                ("mulp", _) => q.minimum_user_limit_percent = number(key, value)?,
                ("am", _) => {
                    q.max_am_share = if value == "none" {
                        None
                    } else {
                        Some(number(key, value)?)
                    }
                }
                ("running", _) => q.max_running_apps = Some(number(key, value)?),
                ("order", _) => {
                    q.ordering = match value {
                        "fifo" => AppOrdering::Fifo,
                        "fair" => AppOrdering::Fair,
                        "drf" => AppOrdering::Drf,
                        _ => return Err(format!("unknown order '{value}'")),
                    }
                }
                ("state", _) => {
                    q.state = match value {
                        "RUNNING" => QueueRunState::Running,
                        "STOPPED" => QueueRunState::Stopped,
                        _ => return Err(format!("unknown state '{value}'")),
                    }
                }
                (key, _) => return Err(format!("{key} does not apply to a {kind} queue")),
            }
        }
        self.pending_queues = Some(tree);
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

/// Applies one delay-rule or per-heartbeat key (`config` and `reload`):
/// `node_delay` / `rack_delay` set the capacity rule (other settings at
/// Hadoop's defaults 40 / -1), `node_threshold` / `rack_threshold` the
/// fair rule (others at -1), `hb_max` / `hb_offswitch` the caps (`none`
/// lifts a cap).
fn delay_or_heartbeat(
    key: &str,
    value: &str,
    locality: &mut LocalityDelay,
    heartbeat: &mut HeartbeatAssignment,
) -> Result<(), String> {
    match key {
        "node_delay" | "rack_delay" => {
            let (mut node, mut rack) = match *locality {
                LocalityDelay::Capacity {
                    node_locality_delay,
                    rack_locality_additional_delay,
                } => (node_locality_delay, rack_locality_additional_delay),
                _ => (40, -1),
            };
            if key == "node_delay" {
                node = number(key, value)?;
            } else {
                rack = number(key, value)?;
            }
            *locality = LocalityDelay::Capacity {
                node_locality_delay: node,
                rack_locality_additional_delay: rack,
            };
        }
        "node_threshold" | "rack_threshold" => {
            let (mut node, mut rack) = match *locality {
                LocalityDelay::Fair {
                    node_threshold,
                    rack_threshold,
                } => (node_threshold, rack_threshold),
                _ => (-1.0, -1.0),
            };
            if key == "node_threshold" {
                node = number(key, value)?;
            } else {
                rack = number(key, value)?;
            }
            *locality = LocalityDelay::Fair {
                node_threshold: node,
                rack_threshold: rack,
            };
        }
        "hb_max" | "hb_offswitch" => {
            let cap = if value == "none" {
                None
            } else {
                Some(number(key, value)?)
            };
            if key == "hb_max" {
                heartbeat.max_containers = cap;
            } else {
                heartbeat.max_off_switch = cap;
            }
        }
        _ => return Err(format!("unknown key '{key}'")),
    }
    Ok(())
}

/// A scheduler of `kind` with `root.default` as its only leaf.
fn default_tree(kind: SchedulerKind) -> QueueTreeConfig {
    let mut tree = QueueTreeConfig::fifo();
    tree.kind = kind;
    if kind == SchedulerKind::Fair {
        let fair = QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: None,
        };
        tree.root.share = fair;
        tree.root.ordering = AppOrdering::Fair;
        let mut leaf = QueueConfig::leaf("default", fair);
        leaf.ordering = AppOrdering::Fair;
        tree.root.children = vec![leaf];
    }
    tree
}

fn node_name(n: &NodeId) -> String {
    if n.port == DEFAULT_NODE_PORT {
        n.host.to_string()
    } else {
        n.to_string()
    }
}

fn parse_node(s: &str) -> Result<NodeId, String> {
    if s.contains(':') {
        s.parse().map_err(|e| format!("{e}"))
    } else {
        Ok(NodeId::new(s, DEFAULT_NODE_PORT))
    }
}

fn container_arg(
    attempt: ApplicationAttemptId,
    s: &str,
    epoch: i64,
) -> Result<ContainerId, String> {
    let seq = s
        .strip_prefix('c')
        .ok_or_else(|| format!("containers are written cN, not '{s}'"))?;
    Ok(ContainerId::with_epoch(
        attempt,
        epoch,
        number("container", seq)?,
    ))
}

fn split_kv(arg: &str) -> Result<(&str, &str), String> {
    arg.split_once('=')
        .ok_or_else(|| format!("expected key=value, got '{arg}'"))
}

fn options<'a>(args: &[&'a str]) -> Result<BTreeMap<&'a str, &'a str>, String> {
    args.iter().map(|a| split_kv(a)).collect()
}

fn node_and_options<'a>(args: &[&'a str]) -> Result<(NodeId, BTreeMap<&'a str, &'a str>), String> {
    let (node, rest) = args.split_first().ok_or("which node?")?;
    Ok((parse_node(node)?, options(rest)?))
}

fn only_keys(opts: &BTreeMap<&str, &str>, allowed: &[&str]) -> Result<(), String> {
    match opts.keys().find(|k| !allowed.contains(k)) {
        Some(k) => Err(format!(
            "unknown option '{k}' (allowed: {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn required<'a>(opts: &BTreeMap<&str, &'a str>, key: &str) -> Result<&'a str, String> {
    opts.get(key)
        .copied()
        .ok_or_else(|| format!("missing {key}=..."))
}

fn optional<T: std::str::FromStr>(
    opts: &BTreeMap<&str, &str>,
    key: &str,
    default: T,
) -> Result<T, String> {
    match opts.get(key) {
        Some(v) => number(key, v),
        None => Ok(default),
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{key}: '{value}' is not a valid number"))
}

fn boolean(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{key}: expected true or false, got '{value}'")),
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
