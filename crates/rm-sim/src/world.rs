//! The simulated world: an event queue on a simulated clock, one or two RMs
//! over a shared store, NodeManagers, ApplicationMasters and clients, the
//! faults, and the invariants checked after every step.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{AmRmTokenIdentifier, ContainerTokenIdentifier};
use spindle_common::states::FinalStatus;
use spindle_rm::access::Caller;
use spindle_rm::acl::Acl;
use spindle_rm::amrm::{AllocateReply, AllocateRequest};
use spindle_rm::cluster::nodes::{
    ContainerStatus, Health, Heartbeat, NodeAction, NodeConfig, Registration,
};
use spindle_rm::command::{
    Allocate, AmLaunchFailed, AmLaunched, Command, FinishApplicationMaster, KillApplication,
    NewApplication, NodeHeartbeat, NodeRegistration, RegisterApplicationMaster, RegisterNode,
    Reply, SubmitApplication, Tick,
};
use spindle_rm::core::Persistence;
use spindle_rm::hosts::HostLists;
use spindle_rm::keys::KeyRolling;
use spindle_rm::launch::{AmLaunchContext, Effect};
use spindle_rm::queue_files::capacity;
use spindle_rm::refusal::Refusal;
use spindle_rm::state::{RmState, Settings};
use spindle_rm::state_build::{FromStore, StateConf};
use spindle_rm::submission::Submission;
use spindle_rm::time::Now;
use spindle_scheduler::{ResourceAsk, SchedulerConfig, ANY};

use crate::store::MemStore;

/// Wall-clock milliseconds at simulated time 0.
const WALL_BASE_MS: u64 = 1_800_000_000_000;
/// How long a caller waits for an answer before sending again.
const RPC_TIMEOUT_MS: u64 = 3_000;
/// How long a caller waits after a standby or unreachable RM.
const RETRY_MS: u64 = 500;
const HEARTBEAT_MS: u64 = 1_000;
const NM_EXPIRY_MS: u64 = 10_000;
const AM_EXPIRY_MS: u64 = 20_000;
const TICK_MS: u64 = 1_000;
/// A deposed active's ZooKeeper session ends this long after it was deposed.
const SESSION_MS: u64 = 10_000;
const NODE_MB: i64 = 8_192;
const NODE_VCORES: i32 = 8;
const USER: &str = "sim";

/// How long a run is.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Events of the fault phase.
    pub steps: u64,
    /// Simulated time the liveness phase may take to end every application.
    pub liveness_ms: u64,
    /// Print every traced event to stderr as it happens (to study a seed).
    pub verbose: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            steps: 3_000,
            liveness_ms: 900_000,
            verbose: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub seed: u64,
    pub ha: bool,
    pub nodes: usize,
    pub events: u64,
    pub sim_ms: u64,
    pub commands: u64,
    pub apps: usize,
    pub apps_acknowledged: usize,
    pub apps_ended: usize,
    pub containers_granted: usize,
    pub rm_restarts: u32,
    pub failovers: u32,
    pub store_failures: u32,
    pub store_writes: u64,
    pub messages_lost: u64,
    pub messages_duplicated: u64,
    pub messages_delayed: u64,
    pub nm_partitions: u32,
    pub nm_crashes: u32,
    pub am_crashes: u32,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}: {} events, {:.0} s simulated, {} commands; {} nodes{}; {}/{} applications \
             acknowledged and ended ({} submitted), {} containers granted; faults: {} RM \
             restarts, {} failovers, {} store write failures ({} writes), {} messages lost, {} \
             duplicated, {} delayed, {} NM partitions, {} NM crashes, {} AM crashes",
            self.seed,
            self.events,
            self.sim_ms as f64 / 1000.0,
            self.commands,
            self.nodes,
            if self.ha { ", HA pair" } else { "" },
            self.apps_ended,
            self.apps_acknowledged,
            self.apps,
            self.containers_granted,
            self.rm_restarts,
            self.failovers,
            self.store_failures,
            self.store_writes,
            self.messages_lost,
            self.messages_duplicated,
            self.messages_delayed,
            self.nm_partitions,
            self.nm_crashes,
            self.am_crashes,
        )
    }
}

/// A broken invariant: the seed that replays it, where, and the events
/// before it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub seed: u64,
    pub event: u64,
    pub sim_ms: u64,
    pub what: String,
    pub trace: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: invariant broken at event {} ({} ms): {}",
            self.seed, self.event, self.sim_ms, self.what
        )?;
        writeln!(f, "replay: spindle rm-sim --seed {}", self.seed)?;
        writeln!(f, "the last events:")?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// Runs the simulation of `seed`.
pub fn run(seed: u64, options: Options) -> Result<Report, Failure> {
    let mut world = World::new(seed, options);
    let result = world.run();
    world.report.store_writes = world.store.writes;
    match result {
        Ok(()) => Ok(world.report),
        Err(what) => Err(Failure {
            seed,
            event: world.report.events,
            sim_ms: world.now_ms,
            what,
            trace: world.trace.iter().cloned().collect(),
        }),
    }
}

// ---- actors and events ----------------------------------------------------------

/// Who sends commands to the RM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Actor {
    Client(usize),
    Nm(usize),
    Am(ApplicationAttemptId),
}

/// What a caller hears back.
#[derive(Debug)]
enum Answer {
    /// The reply, and the activation (generation) that answered.
    Reply(Box<Reply>, u64),
    /// The RM is standby (Hadoop's StandbyException): try the other one.
    Standby,
}

#[derive(Debug)]
enum Event {
    /// A command reaches RM `rm`.
    Request {
        rm: usize,
        from: Actor,
        call: u64,
        command: Box<Command>,
    },
    /// An answer reaches its caller.
    Answer {
        to: Actor,
        call: u64,
        answer: Answer,
    },
    /// An actor's timer (at the time it was set for): its next action, or
    /// a resend. Each actor has one timer; an earlier setting replaces it.
    Wake(Actor, u64),
    /// RM `rm`'s ticker (of activation `generation`).
    Tick { rm: usize, generation: u64 },
    /// The launcher of RM `rm` (activation `generation`) starts an AM container.
    Launch {
        rm: usize,
        generation: u64,
        effect: Box<Effect>,
    },
    /// A container's process ends on its node.
    ContainerExit {
        nm: usize,
        container: ContainerId,
        exit: i32,
    },
    /// RM `rm` becomes active (start, restart, or failover).
    Activate(usize),
    /// RM `rm` (activation `generation`), deposed, loses its ZooKeeper session.
    SessionEnds { rm: usize, generation: u64 },
    /// A NodeManager comes back (after a partition or a crash).
    NmBack(usize),
    /// Inject a fault.
    Fault,
}

/// One outstanding call of an actor.
#[derive(Debug, Clone)]
struct Call {
    id: u64,
    command: Command,
    sent_ms: u64,
}

// ---- the RMs --------------------------------------------------------------------

struct Active {
    state: RmState,
    persistence: Persistence,
    epoch: u64,
    generation: u64,
}

#[derive(Default)]
struct RmSlot {
    active: Option<Active>,
    /// The process is up (standby when `active` is `None`).
    up: bool,
}

// ---- NodeManagers -----------------------------------------------------------------

#[derive(Debug, Clone)]
struct NmContainer {
    attempt: ApplicationAttemptId,
    resource: Resource,
    am: bool,
    /// `None` while it runs.
    exit: Option<i32>,
}

#[derive(Debug)]
struct Nm {
    id: NodeId,
    /// Which RM it talks to.
    rm: usize,
    /// Down (crashed) or cut off: it sends nothing until `NmBack`.
    away: bool,
    registered: bool,
    response_id: i32,
    containers: BTreeMap<ContainerId, NmContainer>,
    call: Option<Call>,
}

// ---- ApplicationMasters and clients ---------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AmPhase {
    Registering,
    Running,
    Finishing,
    Done,
}

#[derive(Debug)]
struct Am {
    attempt: ApplicationAttemptId,
    app: usize,
    rm: usize,
    phase: AmPhase,
    response_id: i32,
    /// Tasks still to run successfully.
    tasks_left: usize,
    /// Task containers started and not heard of as completed.
    running: BTreeMap<ContainerId, usize>,
    /// Granted but not yet started (their node was away): given back.
    to_release: Vec<ContainerId>,
    /// Completed containers heard of, with the RM activation that told
    /// (each once per activation).
    completed: BTreeMap<(ContainerId, u64), i32>,
    /// The ask count the RM's table holds, as far as the AM knows (`None`:
    /// send it whole, after registering again).
    asks_sent: Option<i32>,
    /// The key id of the AMRMToken the AM holds (0 until an allocate answer
    /// hands it one).
    amrm_key_id: i32,
    node: usize,
    am_container: ContainerId,
    call: Option<Call>,
    /// When the AM last asked the nodes after its running containers.
    checked_ms: u64,
    /// Running containers its nodes did not have at the last check: lost if
    /// they are still missing (and unreported) at the next.
    missing: BTreeSet<ContainerId>,
    /// Containers given up as lost: their task ran again. A success the RM
    /// reports for one of them after all still counts.
    lost: BTreeSet<ContainerId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ClientPhase {
    Waiting,
    GettingId,
    Submitting(ApplicationId),
    Acknowledged(ApplicationId),
}

#[derive(Debug)]
struct Client {
    phase: ClientPhase,
    rm: usize,
    queue: &'static str,
    tasks: usize,
    task_mb: i64,
    keep_containers: bool,
    max_attempts: i32,
    /// Kill the application once it is acknowledged.
    kill: bool,
    killed: bool,
    call: Option<Call>,
}

// ---- the world ---------------------------------------------------------------------

struct World {
    options: Options,
    rng: StdRng,
    now_ms: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    conf: StateConf,
    ha: bool,
    store: MemStore,
    rms: Vec<RmSlot>,
    generation: u64,
    nms: Vec<Nm>,
    clients: Vec<Client>,
    ams: BTreeMap<ApplicationAttemptId, Am>,
    /// Every container id ever granted (to an AM or for an AM container).
    granted: BTreeSet<ContainerId>,
    /// Applications whose submission a client saw acknowledged.
    acknowledged: BTreeMap<ApplicationId, usize>,
    /// When each actor's timer fires.
    wakes: BTreeMap<Actor, u64>,
    /// The last delivery time on each connection (caller, RM, direction):
    /// a connection delivers in order, as TCP does; only different
    /// connections (callers, or a caller after a resend) overtake each other.
    channels: BTreeMap<(Actor, usize, bool), u64>,
    faults_on: bool,
    next_call: u64,
    trace: VecDeque<String>,
    report: Report,
}

const TRACE: usize = 60;

fn scenario_conf(rng: &mut StdRng) -> StateConf {
    let mut conf = Configuration::with_defaults();
    for (k, v) in [
        ("root.queues", "a,b"),
        ("root.a.capacity", "60"),
        ("root.b.capacity", "40"),
        ("root.a.maximum-capacity", "100"),
        ("root.b.maximum-capacity", "100"),
    ] {
        conf.set(&format!("{}{k}", capacity::PREFIX), v);
    }
    let queue_file = capacity::from_conf(&conf, capacity::FILE_NAME)
        .unwrap_or_else(|e| panic!("the simulation's queues: {e}"));
    let min = Resource::new(1024, 1);
    let max = Resource::new(NODE_MB, NODE_VCORES);
    StateConf {
        scheduler: SchedulerConfig {
            queues: queue_file.tree.clone(),
            locality: queue_file.locality,
            heartbeat: queue_file.heartbeat,
            minimum_allocation: min,
            maximum_allocation: max,
            ..SchedulerConfig::default()
        },
        nodes: NodeConfig {
            liveness_expiry_ms: NM_EXPIRY_MS,
            heartbeat_interval_ms: HEARTBEAT_MS as i64,
            min_allocation: min,
            default_graceful_timeout_ms: 10_000,
            default_rack: "/default-rack".into(),
        },
        hosts: HostLists::default(),
        settings: Settings {
            am_expiry_ms: AM_EXPIRY_MS,
            work_preserving: rng.random_bool(0.8),
            scheduling_wait_ms: 2_000,
            ..Settings::new(0)
        },
        queue_file,
        max_completed: 10_000,
        am_max_attempts: 2,
        key_rolling: KeyRolling {
            // Keys roll during the run (every minute or two), so tokens
            // under rolled keys and the activation delay are exercised.
            amrm_interval_ms: rng.random_range(30_000..120_000),
            container_interval_ms: rng.random_range(30_000..120_000),
            nm_interval_ms: rng.random_range(30_000..120_000),
            activation_delay_ms: 15_000,
            ..KeyRolling::daily(0)
        },
        container_token_expiry_ms: 60_000,
        scheduler_service: "127.0.0.1:8030".into(),
    }
}

impl World {
    fn new(seed: u64, options: Options) -> World {
        let mut rng = StdRng::seed_from_u64(seed);
        let conf = scenario_conf(&mut rng);
        let ha = rng.random_bool(0.5);
        let nodes = rng.random_range(2..=5);
        let apps = rng.random_range(3..=8);
        let mut world = World {
            options,
            rng,
            now_ms: 0,
            seq: 0,
            events: BTreeMap::new(),
            conf,
            ha,
            store: MemStore::default(),
            rms: (0..if ha { 2 } else { 1 })
                .map(|_| RmSlot::default())
                .collect(),
            generation: 0,
            nms: Vec::new(),
            clients: Vec::new(),
            ams: BTreeMap::new(),
            granted: BTreeSet::new(),
            acknowledged: BTreeMap::new(),
            wakes: BTreeMap::new(),
            channels: BTreeMap::new(),
            faults_on: true,
            next_call: 0,
            trace: VecDeque::new(),
            report: Report {
                seed,
                ha,
                nodes,
                apps,
                ..Report::default()
            },
        };
        for i in 0..nodes {
            world.nms.push(Nm {
                id: NodeId::new(format!("host{i}"), 45_454),
                rm: 0,
                away: false,
                registered: false,
                response_id: 0,
                containers: BTreeMap::new(),
                call: None,
            });
            let at = world.rng.random_range(0..2_000);
            world.wake_at(Actor::Nm(i), at);
        }
        for i in 0..apps {
            let client = Client {
                phase: ClientPhase::Waiting,
                rm: 0,
                queue: if world.rng.random_bool(0.5) { "a" } else { "b" },
                tasks: world.rng.random_range(0..=6),
                task_mb: if world.rng.random_bool(0.5) {
                    1024
                } else {
                    2048
                },
                keep_containers: world.rng.random_bool(0.3),
                max_attempts: world.rng.random_range(1..=3),
                kill: world.rng.random_bool(0.15),
                killed: false,
                call: None,
            };
            world.clients.push(client);
            let at = world.rng.random_range(1_000..60_000);
            world.wake_at(Actor::Client(i), at);
        }
        world.rms[0].up = true;
        world.at(0, Event::Activate(0));
        if ha {
            world.rms[1].up = true;
        }
        let first_fault = world.rng.random_range(2_000..20_000);
        world.at(first_fault, Event::Fault);
        world
    }

    fn at(&mut self, ms: u64, event: Event) {
        self.seq += 1;
        self.events.insert((ms, self.seq), event);
    }

    fn after(&mut self, delay_ms: u64, event: Event) {
        self.at(self.now_ms + delay_ms, event);
    }

    /// Sets `actor`'s timer to `ms`, unless it is set earlier already.
    fn wake_at(&mut self, actor: Actor, ms: u64) {
        if self
            .wakes
            .get(&actor)
            .is_some_and(|&t| t <= ms && t >= self.now_ms)
        {
            return;
        }
        self.wakes.insert(actor, ms);
        self.at(ms, Event::Wake(actor, ms));
    }

    fn wake_in(&mut self, actor: Actor, delay_ms: u64) {
        self.wake_at(actor, self.now_ms + delay_ms);
    }

    fn now(&self) -> Now {
        Now {
            mono_ms: self.now_ms,
            wall_ms: WALL_BASE_MS + self.now_ms,
        }
    }

    fn note(&mut self, line: String) {
        if self.options.verbose {
            eprintln!("{:>8} ms  {line}", self.now_ms);
        }
        if self.trace.len() == TRACE {
            self.trace.pop_front();
        }
        self.trace
            .push_back(format!("{:>8} ms  {line}", self.now_ms));
    }

    fn run(&mut self) -> Result<(), String> {
        let mut liveness_deadline = None;
        while let Some(((ms, seq), event)) = self.events.pop_first() {
            let _ = seq;
            self.now_ms = ms;
            self.report.events += 1;
            self.report.sim_ms = ms;
            if self.faults_on && self.report.events >= self.options.steps {
                // The liveness phase: no more faults; every acknowledged
                // application must end in time.
                self.faults_on = false;
                liveness_deadline = Some(ms + self.options.liveness_ms);
                self.note("faults stop; liveness phase".into());
                self.heal();
            }
            self.step(event)?;
            self.check()?;
            if let Some(deadline) = liveness_deadline {
                if self.all_done() && self.nothing_held() {
                    return Ok(());
                }
                if ms > deadline && self.all_done() {
                    return Err(format!(
                        "liveness: every application ended, but {} s after the faults \
                         stopped the scheduler still holds containers no node runs: {}",
                        self.options.liveness_ms / 1000,
                        self.unfinished().join("")
                    ));
                }
                if ms > deadline {
                    return Err(format!(
                        "liveness: {} of {} acknowledged applications have not ended {} s \
                         after the faults stopped: {}",
                        self.acknowledged.len() - self.ended_count(),
                        self.acknowledged.len(),
                        self.options.liveness_ms / 1000,
                        self.unfinished().join(", ")
                    ));
                }
            }
        }
        Err("the event queue ran dry".into())
    }

    fn step(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::Request {
                rm,
                from,
                call,
                command,
            } => self.request(rm, from, call, *command),
            Event::Answer { to, call, answer } => self.answer(to, call, answer),
            Event::Wake(actor, at) => {
                if self.wakes.get(&actor) == Some(&at) {
                    self.wakes.remove(&actor);
                    self.wake(actor)?;
                }
                Ok(())
            }
            Event::Tick { rm, generation } => {
                if self.generation_of(rm) == Some(generation) {
                    self.handle(rm, None, 0, Command::Tick(Tick))?;
                    self.after(TICK_MS, Event::Tick { rm, generation });
                }
                Ok(())
            }
            Event::Launch {
                rm,
                generation,
                effect,
            } => self.launch(rm, generation, *effect),
            Event::ContainerExit {
                nm,
                container,
                exit,
            } => {
                self.container_exit(nm, container, exit);
                Ok(())
            }
            Event::Activate(rm) => self.activate(rm),
            Event::SessionEnds { rm, generation } => {
                if self.generation_of(rm) == Some(generation) {
                    self.note(format!("rm{rm}: its ZooKeeper session ends: standby"));
                    self.step_down(rm);
                }
                Ok(())
            }
            Event::NmBack(i) => {
                if self.nms[i].away {
                    self.note(format!("{}: back", self.nms[i].id));
                    self.nms[i].away = false;
                    self.nms[i].call = None;
                    self.wake_in(Actor::Nm(i), 10);
                }
                Ok(())
            }
            Event::Fault => {
                if self.faults_on {
                    self.fault();
                    let next = self.rng.random_range(3_000..25_000);
                    self.after(next, Event::Fault);
                }
                Ok(())
            }
        }
    }

    // ---- the RMs ---------------------------------------------------------------

    fn generation_of(&self, rm: usize) -> Option<u64> {
        self.rms[rm].active.as_ref().map(|a| a.generation)
    }

    /// The RM whose store writes succeed, if it is serving.
    fn owner(&self) -> Option<usize> {
        let fence = self.store.fence()?;
        (0..self.rms.len()).find(|&i| {
            self.rms[i]
                .active
                .as_ref()
                .is_some_and(|a| a.epoch == fence)
        })
    }

    fn activate(&mut self, rm: usize) -> Result<(), String> {
        if !self.rms[rm].up || self.rms[rm].active.is_some() {
            return Ok(());
        }
        let now = self.now();
        let recovered = self.store.open(now.wall_ms as i64);
        let epoch = recovered.epoch;
        let key_seed = self.rng.random();
        let built = self
            .conf
            .build(
                Acl::parse("*"),
                now,
                Some(FromStore {
                    recovered,
                    max_completed: 10_000,
                }),
                key_seed,
            )
            .map_err(|e| format!("rm{rm}: the state could not be built: {e}"))?;
        self.generation += 1;
        let generation = self.generation;
        self.note(format!(
            "rm{rm}: active, epoch {epoch}, recovery {:?}",
            built.recovery
        ));
        let mut active = Active {
            persistence: Persistence::new(built.keys, built.keys_stored),
            state: built.state,
            epoch,
            generation,
        };
        // What recovery changed is stored before the first command.
        let due = active.persistence.due(&mut active.state);
        if !due.ops.is_empty() {
            if let Err(e) = self.store.write(epoch, &due.ops) {
                self.note(format!("rm{rm}: the first write failed ({e}): standby"));
                self.schedule_recovery(rm);
                return Ok(());
            }
            active.persistence.written(&due);
        }
        // Every acknowledged submission survives the restart or failover.
        let admin = Caller::user(USER);
        for app in self.acknowledged.keys() {
            if active.state.app_report(app, &admin).is_err() {
                return Err(format!(
                    "rm{rm} (epoch {epoch}) recovered without acknowledged application {app}"
                ));
            }
        }
        self.rms[rm].active = Some(active);
        self.after(TICK_MS, Event::Tick { rm, generation });
        // The other RM, if it thought itself active, is deposed: it carries
        // on until a store write fails or its session ends.
        for other in 0..self.rms.len() {
            if other != rm {
                if let Some(g) = self.generation_of(other) {
                    let end = self.rng.random_range(1_000..SESSION_MS);
                    self.after(
                        end,
                        Event::SessionEnds {
                            rm: other,
                            generation: g,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// Drops the RM's state (it becomes standby, or stays down).
    fn step_down(&mut self, rm: usize) {
        if self.rms[rm].active.take().is_some() {
            self.schedule_recovery(rm);
        }
    }

    /// After an RM stopped serving: with HA the other takes over after the
    /// election's delay; without, the RM is started again.
    fn schedule_recovery(&mut self, rm: usize) {
        let next = if self.ha { 1 - rm } else { rm };
        if self.ha && self.rms[next].active.is_some() {
            return;
        }
        let delay = self.rng.random_range(1_000..8_000);
        self.rms[next].up = true;
        self.after(delay, Event::Activate(next));
    }

    /// Handles `command` on RM `rm` as its owner task does: the command,
    /// then its changes written to the store before the answer leaves. An
    /// RM that is not active answers standby; a failed write makes it stop
    /// serving and nothing is answered.
    fn handle(
        &mut self,
        rm: usize,
        from: Option<Actor>,
        call: u64,
        command: Command,
    ) -> Result<(), String> {
        let now = self.now();
        let name = command.name();
        let Some(active) = self.rms[rm].active.as_mut() else {
            if let Some(to) = from {
                if self.rms[rm].up {
                    self.send_answer(to, call, Answer::Standby);
                }
            }
            return Ok(());
        };
        self.report.commands += 1;
        let shown = self.options.verbose.then(|| format!("{command:?}"));
        let (reply, effects) = active.state.handle(now, command);
        if let Some(shown) = shown {
            if !matches!(reply, Reply::Tick) {
                let mut shown = shown;
                shown.truncate(600);
                let mut answered = format!("{reply:?}");
                answered.truncate(600);
                eprintln!(
                    "{:>8} ms  rm{rm} <- {from:?}: {shown}\n{:>8}     -> {answered}",
                    self.now_ms, ""
                );
            }
        }
        let Some(active) = self.rms[rm].active.as_mut() else {
            return Ok(());
        };
        active
            .state
            .check_invariants()
            .map_err(|e| format!("rm{rm} after {name} from {from:?}: {e}"))?;
        let due = active.persistence.due(&mut active.state);
        let epoch = active.epoch;
        let generation = active.generation;
        if !due.ops.is_empty() {
            match self.store.write(epoch, &due.ops) {
                Ok(()) => {
                    if self.store.fence() != Some(epoch) {
                        return Err(format!(
                            "rm{rm} (epoch {epoch}) wrote while the store belongs to {:?}",
                            self.store.fence()
                        ));
                    }
                    if let Some(a) = self.rms[rm].active.as_mut() {
                        a.persistence.written(&due);
                    }
                }
                Err(e) => {
                    self.note(format!("rm{rm}: store write failed after {name}: {e}"));
                    self.step_down(rm);
                    return Ok(());
                }
            }
        }
        if let Some(to) = from {
            self.send_answer(to, call, Answer::Reply(Box::new(reply), generation));
        }
        for effect in effects {
            let delay = self.rng.random_range(20..500);
            self.after(
                delay,
                Event::Launch {
                    rm,
                    generation,
                    effect: Box::new(effect),
                },
            );
        }
        Ok(())
    }

    fn request(
        &mut self,
        rm: usize,
        from: Actor,
        call: u64,
        command: Command,
    ) -> Result<(), String> {
        if !self.rms[rm].up {
            // Connection refused: the caller's timer resends.
            return Ok(());
        }
        self.handle(rm, Some(from), call, command)
    }

    /// The RM's launcher: starts the AM container on its node, then tells
    /// the RM how it went.
    fn launch(&mut self, rm: usize, generation: u64, effect: Effect) -> Result<(), String> {
        if self.generation_of(rm) != Some(generation) {
            // The activation that asked is gone: so is its launcher.
            return Ok(());
        }
        let Effect::LaunchAm {
            attempt,
            node,
            container_token,
            ..
        } = effect;
        let token = ContainerTokenIdentifier::decode(&container_token.identifier)
            .map_err(|e| format!("an AM container token does not decode: {e}"))?;
        let container = token.container;
        if !self.granted.insert(container) {
            return Err(format!(
                "AM container {container} of {attempt} was granted before"
            ));
        }
        self.report.containers_granted += 1;
        let nm = self.nms.iter().position(|n| n.id == node);
        let outcome = match nm {
            Some(i) if !self.nms[i].away && self.nms[i].registered => {
                self.nms[i].containers.insert(
                    container,
                    NmContainer {
                        attempt,
                        resource: token.resource,
                        am: true,
                        exit: None,
                    },
                );
                self.start_am(attempt, i, container);
                Command::AmLaunched(AmLaunched { attempt })
            }
            _ => Command::AmLaunchFailed(AmLaunchFailed {
                attempt,
                reason: format!("{node} did not answer"),
            }),
        };
        self.handle(rm, None, 0, outcome)
    }

    // ---- the network -------------------------------------------------------------

    /// A message's travel time, and whether it is lost or duplicated.
    fn travel(&mut self) -> (Option<u64>, bool) {
        let mut delay = self.rng.random_range(1..20);
        if !self.faults_on {
            return (Some(delay), false);
        }
        if self.rng.random_bool(0.03) {
            self.report.messages_lost += 1;
            return (None, false);
        }
        if self.rng.random_bool(0.08) {
            self.report.messages_delayed += 1;
            delay += self.rng.random_range(100..4_000);
        }
        let dup = self.rng.random_bool(0.02);
        if dup {
            self.report.messages_duplicated += 1;
        }
        (Some(delay), dup)
    }

    fn send_request(&mut self, rm: usize, from: Actor, command: Command) -> Call {
        self.next_call += 1;
        let call = Call {
            id: self.next_call,
            command,
            sent_ms: self.now_ms,
        };
        self.resend(rm, from, &call);
        call
    }

    /// When a message sent now with `delay` arrives on connection `key`:
    /// never before the last one sent on it.
    fn in_order(&mut self, key: (Actor, usize, bool), delay: u64) -> u64 {
        let at = (self.now_ms + delay).max(self.channels.get(&key).map_or(0, |t| t + 1));
        self.channels.insert(key, at);
        at
    }

    fn resend(&mut self, rm: usize, from: Actor, call: &Call) {
        let (delay, dup) = self.travel();
        let Some(delay) = delay else { return };
        let copies = if dup { 2 } else { 1 };
        for _ in 0..copies {
            let at = self.in_order((from, rm, true), delay);
            self.at(
                at,
                Event::Request {
                    rm,
                    from,
                    call: call.id,
                    command: Box::new(call.command.clone()),
                },
            );
        }
    }

    fn send_answer(&mut self, to: Actor, call: u64, answer: Answer) {
        // A duplicated answer would change nothing: a caller takes the
        // answer to its outstanding call once (duplicated requests are what
        // the RM must survive).
        let (delay, _) = self.travel();
        let Some(delay) = delay else { return };
        let rm = 0;
        let at = self.in_order((to, rm, false), delay);
        self.at(at, Event::Answer { to, call, answer });
    }

    fn answer(&mut self, to: Actor, call: u64, answer: Answer) -> Result<(), String> {
        let pending = match to {
            Actor::Nm(i) => self
                .nms
                .get_mut(i)
                .and_then(|n| n.call.take_if(|c| c.id == call)),
            Actor::Am(a) => self
                .ams
                .get_mut(&a)
                .and_then(|am| am.call.take_if(|c| c.id == call)),
            Actor::Client(i) => self
                .clients
                .get_mut(i)
                .and_then(|c| c.call.take_if(|c| c.id == call)),
        };
        let Some(pending) = pending else {
            // Late, duplicated, or for an actor that is gone.
            return Ok(());
        };
        match answer {
            Answer::Standby => {
                // The failover proxy sends the same call to the other RM
                // (HA), after a pause: the call stays outstanding, unchanged,
                // so an RM that answered it before replays its answer.
                let other = |rm: usize| if self.rms.len() == 2 { 1 - rm } else { rm };
                let again = Some(Call {
                    sent_ms: self.now_ms.saturating_sub(RPC_TIMEOUT_MS),
                    ..pending
                });
                match to {
                    Actor::Nm(i) => {
                        self.nms[i].rm = other(self.nms[i].rm);
                        self.nms[i].call = again;
                    }
                    Actor::Am(a) => {
                        if let Some(am) = self.ams.get_mut(&a) {
                            am.rm = other(am.rm);
                            am.call = again;
                        }
                    }
                    Actor::Client(i) => {
                        self.clients[i].rm = other(self.clients[i].rm);
                        self.clients[i].call = again;
                    }
                }
                self.wake_in(to, RETRY_MS);
                Ok(())
            }
            Answer::Reply(reply, generation) => match to {
                Actor::Nm(i) => {
                    self.nm_reply(i, *reply);
                    Ok(())
                }
                Actor::Am(a) => self.am_reply(a, *reply, generation),
                Actor::Client(i) => {
                    self.client_reply(i, *reply);
                    Ok(())
                }
            },
        }
    }

    /// An actor's timer: resend a call that timed out, or act.
    fn wake(&mut self, actor: Actor) -> Result<(), String> {
        let (rm, call) = match actor {
            Actor::Nm(i) => {
                if self.nms[i].away {
                    return Ok(());
                }
                (self.nms[i].rm, self.nms[i].call.clone())
            }
            Actor::Am(a) => match self.ams.get(&a) {
                Some(am) if am.phase != AmPhase::Done => (am.rm, am.call.clone()),
                _ => return Ok(()),
            },
            Actor::Client(i) => (self.clients[i].rm, self.clients[i].call.clone()),
        };
        if let Some(call) = call {
            if self.now_ms >= call.sent_ms + RPC_TIMEOUT_MS {
                // No answer: send the same call again, to the other RM too
                // now and then (the caller's failover proxy).
                let rm = if self.rms.len() == 2 && self.rng.random_bool(0.3) {
                    1 - rm
                } else {
                    rm
                };
                let call = Call {
                    sent_ms: self.now_ms,
                    ..call
                };
                match actor {
                    Actor::Nm(i) => {
                        self.nms[i].rm = rm;
                        self.nms[i].call = Some(call.clone());
                    }
                    Actor::Am(a) => {
                        if let Some(am) = self.ams.get_mut(&a) {
                            am.rm = rm;
                            am.call = Some(call.clone());
                        }
                    }
                    Actor::Client(i) => {
                        self.clients[i].rm = rm;
                        self.clients[i].call = Some(call.clone());
                    }
                }
                self.resend(rm, actor, &call);
            }
            self.wake_in(actor, RPC_TIMEOUT_MS / 3);
            return Ok(());
        }
        match actor {
            Actor::Nm(i) => self.nm_act(i),
            Actor::Am(a) => self.am_act(a),
            Actor::Client(i) => self.client_act(i),
        }
        Ok(())
    }

    // ---- NodeManagers ------------------------------------------------------------

    fn statuses(&self, i: usize) -> Vec<ContainerStatus> {
        self.nms[i]
            .containers
            .iter()
            .map(|(id, c)| ContainerStatus {
                container: *id,
                running: c.exit.is_none(),
                complete: c.exit.is_some(),
                exit_status: c.exit.unwrap_or(-1000),
                diagnostics: String::new(),
                resource: c.resource,
            })
            .collect()
    }

    fn nm_act(&mut self, i: usize) {
        let nm = &self.nms[i];
        let command = if nm.registered {
            let used = nm
                .containers
                .values()
                .filter(|c| c.exit.is_none())
                .fold(Resource::ZERO, |acc, c| acc + c.resource);
            Command::NodeHeartbeat(NodeHeartbeat {
                heartbeat: Heartbeat {
                    id: nm.id.clone(),
                    response_id: nm.response_id,
                    health: healthy(),
                    num_containers: nm.containers.len() as i32,
                    used,
                },
                containers: self.statuses(i),
                log_reports: Vec::new(),
                known_container_token_key: None,
                known_nm_token_key: None,
            })
        } else {
            let running_apps: BTreeSet<ApplicationId> =
                nm.containers.values().map(|c| c.attempt.app).collect();
            Command::RegisterNode(RegisterNode {
                registration: Registration {
                    id: nm.id.clone(),
                    http_port: 8_042,
                    capability: Resource::new(NODE_MB, NODE_VCORES),
                    nm_version: "sim".into(),
                    health: healthy(),
                    rack: None,
                },
                containers: self.statuses(i),
                running_apps: running_apps.into_iter().collect(),
                log_reports: Vec::new(),
            })
        };
        let rm = self.nms[i].rm;
        let call = self.send_request(rm, Actor::Nm(i), command);
        self.nms[i].call = Some(call);
        let jitter = self.rng.random_range(0..100);
        self.wake_in(Actor::Nm(i), HEARTBEAT_MS + jitter);
    }

    fn nm_reply(&mut self, i: usize, reply: Reply) {
        match reply {
            Reply::RegisterNode(NodeRegistration::Accepted(_)) => {
                let line = format!(
                    "{}: registered with {} containers",
                    self.nms[i].id,
                    self.nms[i].containers.len()
                );
                self.note(line);
                self.nms[i].registered = true;
                self.nms[i].response_id = 0;
            }
            Reply::RegisterNode(NodeRegistration::Rejected(why)) => {
                self.note(format!("{}: registration rejected: {why}", self.nms[i].id));
            }
            Reply::NodeHeartbeat(answer) => match answer.reply.action {
                NodeAction::Normal => {
                    self.nms[i].response_id = answer.reply.response_id;
                    let work = answer.work;
                    for c in &work.cleanup_containers {
                        self.kill_container(i, *c);
                    }
                    let apps: BTreeSet<ApplicationId> = work.cleanup_apps.iter().copied().collect();
                    let doomed: Vec<ContainerId> = self.nms[i]
                        .containers
                        .iter()
                        .filter(|(_, c)| apps.contains(&c.attempt.app) && c.exit.is_none())
                        .map(|(id, _)| *id)
                        .collect();
                    for c in doomed {
                        self.kill_container(i, c);
                    }
                    for c in &work.acked {
                        if self.nms[i]
                            .containers
                            .get(c)
                            .is_some_and(|x| x.exit.is_some())
                        {
                            self.nms[i].containers.remove(c);
                        }
                    }
                }
                NodeAction::Resync => {
                    self.nms[i].registered = false;
                }
                NodeAction::Shutdown => {
                    self.note(format!(
                        "{}: told to shut down; restarts empty",
                        self.nms[i].id
                    ));
                    self.crash_nm(i);
                }
            },
            other => self.note(format!("nm{i}: unexpected reply {other:?}")),
        }
    }

    /// Kills a container of node `i` (a cleanup, or the node going down).
    fn kill_container(&mut self, i: usize, c: ContainerId) {
        let Some(container) = self.nms[i].containers.get_mut(&c) else {
            return;
        };
        if container.exit.is_none() {
            container.exit = Some(-106);
            if container.am {
                let attempt = container.attempt;
                self.am_dies(attempt);
            }
        }
    }

    /// A container's process ends by itself.
    fn container_exit(&mut self, i: usize, c: ContainerId, exit: i32) {
        if let Some(container) = self.nms[i].containers.get_mut(&c) {
            if container.exit.is_none() {
                container.exit = Some(exit);
            }
        }
    }

    /// Node `i` crashes: every container dies; it comes back empty.
    fn crash_nm(&mut self, i: usize) {
        let ams: Vec<ApplicationAttemptId> = self.nms[i]
            .containers
            .values()
            .filter(|c| c.am && c.exit.is_none())
            .map(|c| c.attempt)
            .collect();
        for a in ams {
            self.am_dies(a);
        }
        let nm = &mut self.nms[i];
        nm.containers.clear();
        nm.registered = false;
        nm.away = true;
        nm.call = None;
        let back = self.rng.random_range(1_000..20_000);
        self.after(back, Event::NmBack(i));
    }

    // ---- ApplicationMasters --------------------------------------------------------

    fn start_am(&mut self, attempt: ApplicationAttemptId, nm: usize, container: ContainerId) {
        let Some(app) = self
            .clients
            .iter()
            .position(|c| matches!(&c.phase, ClientPhase::Acknowledged(id) | ClientPhase::Submitting(id) if *id == attempt.app))
        else {
            return;
        };
        let rm = self.clients[app].rm;
        let tasks = self.clients[app].tasks;
        self.ams.insert(
            attempt,
            Am {
                attempt,
                app,
                rm,
                phase: AmPhase::Registering,
                response_id: 0,
                tasks_left: tasks,
                running: BTreeMap::new(),
                to_release: Vec::new(),
                completed: BTreeMap::new(),
                asks_sent: None,
                amrm_key_id: 0,
                node: nm,
                am_container: container,
                call: None,
                checked_ms: self.now_ms,
                missing: BTreeSet::new(),
                lost: BTreeSet::new(),
            },
        );
        let delay = self.rng.random_range(100..2_000);
        self.wake_in(Actor::Am(attempt), delay);
    }

    /// The AM process is gone (crashed, or its container killed).
    fn am_dies(&mut self, attempt: ApplicationAttemptId) {
        if let Some(am) = self.ams.get_mut(&attempt) {
            am.phase = AmPhase::Done;
            am.call = None;
        }
    }

    /// Every 10 s an AM asks the nodes of its running containers after them
    /// (Hadoop's NMClient `getContainerStatus`; MapReduce's task timeout and
    /// Spark's executor loss do the same job): a container its node did not
    /// have at two checks in a row, and that no RM reported meanwhile, is
    /// lost — after an RM restart no RM may ever report it — and its task
    /// runs again.
    fn am_checks_containers(&mut self, a: ApplicationAttemptId) {
        let Some(am) = self.ams.get(&a) else { return };
        if self.now_ms < am.checked_ms + 10_000 {
            return;
        }
        let absent: BTreeSet<ContainerId> = am
            .running
            .keys()
            .filter(|c| !self.nms.iter().any(|n| n.containers.contains_key(c)))
            .copied()
            .collect();
        let Some(am) = self.ams.get_mut(&a) else {
            return;
        };
        am.checked_ms = self.now_ms;
        let lost: Vec<ContainerId> = absent.intersection(&am.missing).copied().collect();
        am.missing = absent;
        for c in &lost {
            am.running.remove(c);
            am.missing.remove(c);
            am.lost.insert(*c);
        }
        for c in lost {
            self.note(format!(
                "{a}: {c} is gone from its node: its task runs again"
            ));
        }
    }

    fn am_act(&mut self, a: ApplicationAttemptId) {
        self.am_checks_containers(a);
        let Some(am) = self.ams.get(&a) else { return };
        let rm = am.rm;
        let command = match am.phase {
            AmPhase::Done => return,
            AmPhase::Registering => Command::RegisterApplicationMaster(RegisterApplicationMaster {
                attempt: a,
                host: "amhost".into(),
                rpc_port: 7_000,
                tracking_url: String::new(),
            }),
            AmPhase::Running if am.tasks_left == 0 && am.running.is_empty() => {
                if let Some(am) = self.ams.get_mut(&a) {
                    am.phase = AmPhase::Finishing;
                }
                Command::FinishApplicationMaster(FinishApplicationMaster {
                    attempt: a,
                    status: FinalStatus::Succeeded,
                    diagnostics: String::new(),
                    tracking_url: String::new(),
                })
            }
            AmPhase::Finishing => Command::FinishApplicationMaster(FinishApplicationMaster {
                attempt: a,
                status: FinalStatus::Succeeded,
                diagnostics: String::new(),
                tracking_url: String::new(),
            }),
            AmPhase::Running => {
                let mb = self.clients[am.app].task_mb;
                let wanted = am.tasks_left.saturating_sub(am.running.len()) as i32;
                // The ask table is absolute: send it when it changed, or
                // whole after registering again.
                let asks = if am.asks_sent != Some(wanted) {
                    vec![ResourceAsk::new(1, ANY, Resource::new(mb, 1), wanted)]
                } else {
                    Vec::new()
                };
                let releases = am.to_release.clone();
                Command::Allocate(Allocate {
                    attempt: a,
                    amrm_key_id: am.amrm_key_id,
                    request: AllocateRequest {
                        response_id: am.response_id,
                        progress: Some(0.5),
                        asks,
                        releases,
                        ..AllocateRequest::default()
                    },
                })
            }
        };
        let sent_asks = match &command {
            Command::Allocate(c) => c.request.asks.first().map(|ask| ask.num_containers),
            _ => None,
        };
        let call = self.send_request(rm, Actor::Am(a), command);
        if let Some(am) = self.ams.get_mut(&a) {
            am.call = Some(call);
            if sent_asks.is_some() {
                am.asks_sent = sent_asks;
            }
        }
        let next = self.rng.random_range(500..1_500);
        self.wake_in(Actor::Am(a), next);
    }

    fn am_reply(
        &mut self,
        a: ApplicationAttemptId,
        reply: Reply,
        generation: u64,
    ) -> Result<(), String> {
        match reply {
            Reply::RegisterApplicationMaster(r) => match r {
                // A lost answer: the second registration finds the first.
                Ok(_) | Err(Refusal::AmAlreadyRegistered(_)) => {
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Running;
                        am.asks_sent = None;
                        am.response_id = 0;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: registration refused ({e:?}): the AM exits"));
                    self.am_exits(a, 1);
                }
            },
            Reply::Allocate(r) => match r {
                Ok(reply) => self.allocated(a, reply, generation)?,
                Err(Refusal::AmNotRegistered(_)) => {
                    // After an RM restart: register again, resend everything.
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Registering;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: allocate refused ({e:?}): the AM exits"));
                    self.am_exits(a, 1);
                }
            },
            Reply::FinishApplicationMaster(r) => match r {
                Ok(true) => {
                    self.note(format!("{a}: unregistered"));
                    self.am_exits(a, 0);
                }
                Ok(false) => {}
                Err(Refusal::AmNotRegistered(_)) => {
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Registering;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: finish refused ({e:?}): the AM exits"));
                    self.am_exits(a, 0);
                }
            },
            other => self.note(format!("{a}: unexpected reply {other:?}")),
        }
        Ok(())
    }

    fn allocated(
        &mut self,
        a: ApplicationAttemptId,
        reply: AllocateReply,
        generation: u64,
    ) -> Result<(), String> {
        let Some(am) = self.ams.get_mut(&a) else {
            return Ok(());
        };
        if am.phase == AmPhase::Done {
            return Ok(());
        }
        am.response_id = reply.response_id;
        am.to_release.clear();
        if let Some(token) = &reply.amrm_token {
            if let Ok(id) = AmRmTokenIdentifier::decode(&token.identifier) {
                am.amrm_key_id = id.key_id;
            }
        }
        // What the RM's table holds now: the count sent, less what it granted.
        am.asks_sent = am
            .asks_sent
            .map(|n| n.saturating_sub(reply.allocated.len() as i32));
        if reply.shutdown {
            self.note(format!("{a}: told to shut down"));
            self.am_exits(a, 0);
            return Ok(());
        }
        let mut heard = Vec::new();
        for done in &reply.completed {
            // Once per RM activation: after a restart or failover a node
            // reports what it had not had acknowledged again, and the new
            // RM passes it on (as Hadoop's does; AMs take completions as
            // at-least-once across RMs). Within one activation only a
            // container first reported lost (-100, its node gone) may be
            // reported again: a node that comes back with it running has it
            // taken back, as Hadoop's recoverContainersOnNode does.
            let first = am
                .completed
                .insert((done.container, generation), done.exit_status);
            if first.is_some_and(|exit| exit != spindle_common::exit_status::ABORTED) {
                let listed: Vec<String> = reply
                    .completed
                    .iter()
                    .map(|c| format!("{}({})", c.container, c.exit_status))
                    .collect();
                return Err(format!(
                    "{a} heard twice from one RM activation that container {} completed \
                     (answer {}: {})",
                    done.container,
                    reply.response_id,
                    listed.join(", ")
                ));
            }
            heard.push(format!(
                "{a}: hears {} completed ({})",
                done.container, done.exit_status
            ));
            am.missing.remove(&done.container);
            let counted =
                am.running.remove(&done.container).is_some() || am.lost.remove(&done.container);
            if counted && done.exit_status == 0 {
                am.tasks_left = am.tasks_left.saturating_sub(1);
            }
        }
        for line in heard {
            self.note(line);
        }
        let mut start = Vec::new();
        for c in &reply.allocated {
            start.push((c.id, c.node.clone(), c.resource));
        }
        for (id, node, resource) in start {
            if !self.granted.insert(id) {
                return Err(format!("container {id} was granted twice (now to {a})"));
            }
            self.report.containers_granted += 1;
            let nm = self.nms.iter().position(|n| n.id == node);
            let am = self.ams.get_mut(&a).expect("the AM");
            let over = am.running.len() >= am.tasks_left;
            // A NodeManager takes containers only once registered (Hadoop's
            // NMNotYetReadyException before that).
            match nm {
                Some(i) if !self.nms[i].away && self.nms[i].registered && !over => {
                    am.running.insert(id, 0);
                    let line = format!("{a}: starts {id} on {}", self.nms[i].id);
                    self.note(line);
                    self.nms[i].containers.insert(
                        id,
                        NmContainer {
                            attempt: a,
                            resource,
                            am: false,
                            exit: None,
                        },
                    );
                    let run = self.rng.random_range(500..15_000);
                    let exit = if self.rng.random_bool(0.05) { 1 } else { 0 };
                    self.after(
                        run,
                        Event::ContainerExit {
                            nm: i,
                            container: id,
                            exit,
                        },
                    );
                }
                _ => {
                    am.to_release.push(id);
                    self.note(format!("{a}: gives back {id}"));
                }
            }
        }
        Ok(())
    }

    /// The AM process ends with `exit`: its container exits.
    fn am_exits(&mut self, a: ApplicationAttemptId, exit: i32) {
        let Some(am) = self.ams.get_mut(&a) else {
            return;
        };
        am.phase = AmPhase::Done;
        am.call = None;
        let (node, container) = (am.node, am.am_container);
        let delay = self.rng.random_range(50..1_000);
        self.after(
            delay,
            Event::ContainerExit {
                nm: node,
                container,
                exit,
            },
        );
    }

    // ---- clients -------------------------------------------------------------------

    fn client_act(&mut self, i: usize) {
        let c = &self.clients[i];
        let command = match &c.phase {
            ClientPhase::Waiting | ClientPhase::GettingId => {
                Command::NewApplication(NewApplication)
            }
            ClientPhase::Submitting(id) => Command::SubmitApplication(SubmitApplication {
                submission: Submission {
                    id: *id,
                    name: format!("sim-{i}"),
                    queue: c.queue.into(),
                    app_type: "SIM".into(),
                    tags: BTreeSet::new(),
                    priority: None,
                    am_resource: Resource::new(1024, 1),
                    max_attempts: c.max_attempts,
                    unmanaged_am: false,
                    keep_containers: c.keep_containers,
                },
                launch: AmLaunchContext::default(),
                user: USER.into(),
                groups: Vec::new(),
            }),
            ClientPhase::Acknowledged(id) if c.kill && !c.killed => {
                Command::KillApplication(KillApplication {
                    app: *id,
                    user: USER.into(),
                    groups: Vec::new(),
                    reason: None,
                    from: None,
                })
            }
            ClientPhase::Acknowledged(_) => return,
        };
        if matches!(c.phase, ClientPhase::Waiting) {
            self.clients[i].phase = ClientPhase::GettingId;
        }
        let rm = self.clients[i].rm;
        let call = self.send_request(rm, Actor::Client(i), command);
        self.clients[i].call = Some(call);
        self.wake_in(Actor::Client(i), RPC_TIMEOUT_MS / 3);
    }

    fn client_reply(&mut self, i: usize, reply: Reply) {
        match reply {
            Reply::NewApplication(id) => {
                if self.clients[i].phase == ClientPhase::GettingId {
                    self.clients[i].phase = ClientPhase::Submitting(id);
                    self.wake_in(Actor::Client(i), 10);
                }
            }
            Reply::SubmitApplication(r) => {
                if let ClientPhase::Submitting(id) = self.clients[i].phase {
                    match r {
                        Ok(()) => {
                            self.note(format!("client {i}: {id} acknowledged"));
                            self.clients[i].phase = ClientPhase::Acknowledged(id);
                            self.acknowledged.insert(id, i);
                            self.report.apps_acknowledged += 1;
                            if self.clients[i].kill {
                                let at = self.rng.random_range(1_000..30_000);
                                self.wake_in(Actor::Client(i), at);
                            }
                        }
                        Err(e) => {
                            // An id of an RM that restarted since: ask again.
                            self.note(format!("client {i}: submission refused ({e:?}): a new id"));
                            self.clients[i].phase = ClientPhase::Waiting;
                            self.wake_in(Actor::Client(i), 100);
                        }
                    }
                }
            }
            Reply::KillApplication(r) => {
                if r.is_ok() {
                    self.clients[i].killed = true;
                }
            }
            other => self.note(format!("client {i}: unexpected reply {other:?}")),
        }
    }

    // ---- faults --------------------------------------------------------------------

    fn fault(&mut self) {
        let roll = self.rng.random_range(0..100);
        match roll {
            0..=14 => {
                // The active RM crashes (between two commands).
                if let Some(rm) = (0..self.rms.len()).find(|&i| self.rms[i].active.is_some()) {
                    self.note(format!("fault: rm{rm} crashes"));
                    self.report.rm_restarts += 1;
                    self.rms[rm].active = None;
                    self.rms[rm].up = false;
                    if self.ha {
                        let other = 1 - rm;
                        self.rms[other].up = true;
                        let delay = self.rng.random_range(2_000..10_000);
                        self.after(delay, Event::Activate(other));
                        // The crashed one comes back as a standby.
                        let back = self.rng.random_range(1_000..5_000);
                        self.rms[rm].up = true;
                        let _ = back;
                    } else {
                        let delay = self.rng.random_range(1_000..5_000);
                        self.rms[rm].up = true;
                        self.after(delay, Event::Activate(rm));
                    }
                }
            }
            15..=24 if self.ha => {
                // A failover: the standby is elected while the active still
                // believes itself active.
                if let Some(active) = (0..2).find(|&i| self.rms[i].active.is_some()) {
                    let other = 1 - active;
                    self.note(format!("fault: failover rm{active} -> rm{other}"));
                    self.report.failovers += 1;
                    self.rms[other].up = true;
                    self.after(1, Event::Activate(other));
                }
            }
            25..=34 => {
                self.note("fault: the next store write fails".into());
                self.report.store_failures += 1;
                self.store.fail_next(1);
            }
            35..=54 => {
                let i = self.rng.random_range(0..self.nms.len());
                if !self.nms[i].away {
                    let away = self.rng.random_range(2_000..25_000);
                    self.note(format!("fault: {} cut off for {away} ms", self.nms[i].id));
                    self.report.nm_partitions += 1;
                    self.nms[i].away = true;
                    self.nms[i].call = None;
                    self.after(away, Event::NmBack(i));
                }
            }
            55..=69 => {
                let i = self.rng.random_range(0..self.nms.len());
                if !self.nms[i].away {
                    self.note(format!("fault: {} crashes", self.nms[i].id));
                    self.report.nm_crashes += 1;
                    self.crash_nm(i);
                }
            }
            _ => {
                let live: Vec<ApplicationAttemptId> = self
                    .ams
                    .values()
                    .filter(|a| a.phase != AmPhase::Done)
                    .map(|a| a.attempt)
                    .collect();
                if !live.is_empty() {
                    let a = live[self.rng.random_range(0..live.len())];
                    self.note(format!("fault: the AM of {a} crashes"));
                    self.report.am_crashes += 1;
                    self.am_exits(a, 1);
                }
            }
        }
    }

    /// The end of the fault phase: every node back, every RM up, one active.
    fn heal(&mut self) {
        for i in 0..self.nms.len() {
            if self.nms[i].away {
                self.after(10, Event::NmBack(i));
            }
        }
        for rm in 0..self.rms.len() {
            self.rms[rm].up = true;
        }
        if self.owner().is_none() {
            let rm = (0..self.rms.len())
                .find(|&i| self.rms[i].active.is_some())
                .unwrap_or(0);
            self.after(100, Event::Activate(rm));
        }
    }

    // ---- invariants -------------------------------------------------------------------

    /// After every step: the store's owner knows every acknowledged
    /// application (the other checks run where their events happen).
    fn check(&mut self) -> Result<(), String> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let admin = Caller::user(USER);
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        for app in self.acknowledged.keys() {
            if state.app_report(app, &admin).is_err() {
                return Err(format!(
                    "rm{owner}, the store's owner, does not know acknowledged application {app}"
                ));
            }
        }
        Ok(())
    }

    fn ended(&self, app: &ApplicationId) -> bool {
        let Some(owner) = self.owner() else {
            return false;
        };
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        state
            .app_report(app, &Caller::user(USER))
            .is_ok_and(|r| r.app.state.is_final())
    }

    fn ended_count(&self) -> usize {
        self.acknowledged.keys().filter(|a| self.ended(a)).count()
    }

    /// The acknowledged applications that have not ended, each with what
    /// the RM and the simulated AMs know of it.
    fn unfinished(&self) -> Vec<String> {
        let admin = Caller::user(USER);
        let owner = self.owner();
        self.acknowledged
            .keys()
            .filter(|a| !self.ended(a))
            .map(|app| {
                let rm = owner
                    .and_then(|o| self.rms[o].active.as_ref())
                    .map(|a| {
                        let report = a.state.app_report(app, &admin);
                        let attempts = a.state.attempts_of(app, &admin);
                        let current = report.as_ref().ok().and_then(|r| r.current_attempt);
                        format!(
                            "RM: {:?}, attempt {:?} (used, asks, headroom: {:?}); attempts {:?}",
                            report.as_ref().map(|r| r.app.state),
                            current,
                            current.and_then(|c| a.state.scheduler_view(&c)),
                            attempts.map(|v| v
                                .iter()
                                .map(|r| format!("{}:{:?}", r.id, r.state))
                                .collect::<Vec<_>>())
                        )
                    })
                    .unwrap_or_else(|| "no owner".into());
                let ams: Vec<String> = self
                    .ams
                    .values()
                    .filter(|am| am.attempt.app == *app)
                    .map(|am| {
                        format!(
                            "{} {:?} left {} running {} node {} call {}",
                            am.attempt,
                            am.phase,
                            am.tasks_left,
                            am.running.len(),
                            am.node,
                            am.call.is_some()
                        )
                    })
                    .collect();
                let on_nodes: Vec<String> = self
                    .nms
                    .iter()
                    .flat_map(|n| {
                        n.containers
                            .iter()
                            .filter(|(_, c)| c.attempt.app == *app)
                            .map(move |(id, c)| format!("{id}@{}:{:?}", n.id, c.exit))
                    })
                    .collect();
                format!("\n    {app}: {rm}; AMs {ams:?}; containers {on_nodes:?}")
            })
            .chain(owner.and_then(|o| self.rms[o].active.as_ref()).map(|a| {
                let held: Vec<String> = a
                    .state
                    .held_containers()
                    .into_iter()
                    .map(|(node, used, containers)| {
                        let shown: Vec<String> = containers.iter().map(|c| c.to_string()).collect();
                        format!("{node}: {used} in {shown:?}")
                    })
                    .collect();
                format!("\n    the scheduler holds: {}", held.join("; "))
            }))
            .collect()
    }

    /// Once every application ended: the scheduler of the store's owner
    /// holds nothing (node and queue usage are the sum of live containers,
    /// and none is left).
    fn nothing_held(&self) -> bool {
        let Some(owner) = self.owner() else {
            return false;
        };
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        state
            .held_containers()
            .iter()
            .all(|(_, used, containers)| containers.is_empty() && used.is_zero())
    }

    fn all_done(&mut self) -> bool {
        let clients_done = self
            .clients
            .iter()
            .all(|c| matches!(c.phase, ClientPhase::Acknowledged(_)));
        if !clients_done {
            return false;
        }
        let ended = self.ended_count();
        self.report.apps_ended = ended;
        ended == self.acknowledged.len()
    }
}

fn healthy() -> Health {
    Health {
        healthy: true,
        report: String::new(),
        last_report_ms: 0,
    }
}
