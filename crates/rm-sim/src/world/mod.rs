//! The simulated world: an event queue on a simulated clock, one or two RMs
//! over a shared store, NodeManagers, ApplicationMasters and clients, the
//! faults, and the invariants checked after every step.

mod am;
mod checks;
mod client;
mod faults;
mod net;
mod nm;
mod rms;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{
    AmRmTokenIdentifier, ContainerTokenIdentifier, RmDelegationTokenIdentifier, Token,
};
use spindle_common::states::FinalStatus;
use spindle_rm::acl::Acl;
use spindle_rm::cluster::nodes::{
    ContainerStatus, Health, Heartbeat, NodeAction, NodeConfig, Registration,
};
use spindle_rm::hosts::HostLists;
use spindle_rm::model::access::Caller;
use spindle_rm::model::amrm::{AllocateReply, AllocateRequest};
use spindle_rm::model::keys::KeyRolling;
use spindle_rm::model::launch::{AmLaunchContext, Effect};
use spindle_rm::model::refusal::Refusal;
use spindle_rm::model::submission::Submission;
use spindle_rm::queue_files::capacity;
use spindle_rm::runtime::core::Persistence;
use spindle_rm::state::build::{FromStore, StateConf};
use spindle_rm::state::command::{
    Allocate, AmLaunchFailed, AmLaunched, CancelDelegationToken, Command, FinishApplicationMaster,
    GetDelegationToken, KillApplication, NewApplication, NodeHeartbeat, NodeRegistration,
    RegisterApplicationMaster, RegisterNode, RenewDelegationToken, Reply, SubmitApplication, Tick,
};
use spindle_rm::state::{RmState, Settings};
use spindle_rm::time::Now;
use spindle_scheduler::{ResourceAsk, SchedulerConfig, ANY};

use crate::store::MemStore;

/// Wall-clock milliseconds at simulated time 0.
const WALL_BASE_MS: u64 = 1_800_000_000_000;
/// How long a caller waits for an answer before sending again.
const RPC_TIMEOUT_MS: u64 = 3_000;
/// A delegation token's renew interval (Hadoop's default, the scenario's).
const DAY_MS: i64 = 86_400_000;
/// The full name delegation tokens are issued to.
const TOKEN_OWNER: &str = "sim@SIM.EXAMPLE";
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
    /// Clients also ask for RM delegation tokens, renew and cancel them (on
    /// by default; off replays the runs of seeds recorded before tokens
    /// existed exactly: token traffic draws network faults of its own).
    pub delegation_tokens: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            steps: 3_000,
            liveness_ms: 900_000,
            verbose: false,
            delegation_tokens: true,
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
    /// RM delegation tokens handed to clients.
    pub delegation_tokens: usize,
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
             acknowledged and ended ({} submitted), {} containers granted, {} delegation tokens; \
             faults: {} RM \
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
            self.delegation_tokens,
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
    /// Allocate answers taken, by RM activation and response id: an RM
    /// replays its last answer to a request that repeats its response id
    /// (as Hadoop's does), also to an AM that registered again with another
    /// RM meanwhile and starts counting from 0 (a deposed active still
    /// answering); the AM takes each answer once.
    answers: BTreeSet<(u64, i32)>,
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
    /// Ask for an RM delegation token once acknowledged, renew it, and
    /// (`cancel`) cancel it.
    token: TokenPlan,
    call: Option<Call>,
}

/// A client's RM delegation token, through its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenPlan {
    None,
    Wanted {
        cancel: bool,
    },
    Held {
        token: Token,
        renewed: bool,
        cancel: bool,
    },
    Done,
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
    /// RM delegation tokens a client was handed and has not seen cancelled,
    /// by sequence number, with the renew date the RM last answered (wall
    /// ms): the store's owner must take each until then.
    tokens: BTreeMap<i32, (Token, i64)>,
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
        delegation: spindle_rm::model::delegation::DelegationConf::default(),
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
            tokens: BTreeMap::new(),
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
        let mut token_rng = StdRng::seed_from_u64(seed ^ 0x746f_6b65_6e73);
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
                // From a generator of their own: the scenario's other
                // draws stay those of a run without tokens.
                token: if world.options.delegation_tokens && token_rng.random_bool(0.4) {
                    TokenPlan::Wanted {
                        cancel: token_rng.random_bool(0.5),
                    }
                } else {
                    TokenPlan::None
                },
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
}

fn healthy() -> Health {
    Health {
        healthy: true,
        report: String::new(),
        last_report_ms: 0,
    }
}
