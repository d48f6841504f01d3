//! The ContainerScheduler core: ContainerGroups, ContainerKinds, and the
//! recycling of ContainerWorkers between compatible groups.
//!
//! # Groups and kinds
//!
//! Clients register [`GroupSpec`]s. Two registrations with the same name
//! and the same properties (worker size and every property) are merged:
//! one group, owned by both clients; the same name with different
//! properties is refused. A group disappears when its last owner releases
//! it.
//!
//! Groups are *compatible* when their workers provide the same compute
//! resources ([`GroupSpec::worker_resource`]): a worker of one can serve
//! the other after reinitialising. Compatible groups form a
//! ContainerKind; every new group joins the kind of its worker size or
//! starts a new one. Workers only ever move within their kind.
//!
//! # Demand
//!
//! The driver tells each group's need with [`Input::GroupDemand`]: how
//! many *more* workers it could use now (computed from its task
//! scheduler's pending tasks). A group with a positive need is *in need*;
//! each worker handed to it (recycled or started) consumes one unit until
//! the driver sends a fresh figure. Need not covered by workers already
//! being started becomes [`ContainerAction::StartWorker`] requests. A
//! group stays in need while its requested workers have not arrived, so
//! a worker recycled to it (under `fifo` and `fair`) makes one of those
//! requests surplus: it is withdrawn with
//! [`ContainerAction::CancelWorkerStart`]. A start the driver gives up on
//! by itself (say, a request an autoscaler cancelled) is reported with
//! [`Input::WorkerStartWithdrawn`].
//!
//! # Schemes (`mr3.container.scheduler.scheme`)
//!
//! - `none`: no recycling. Workers of a released group are terminated.
//! - `fifo`: a worker leaves its group only voluntarily, when it is idle
//!   (no attempt to run, no intermediate data to serve: reported with
//!   [`Input::WorkerActivity`]); it is then reassigned to the *oldest*
//!   group of its kind in need. Without a group in need it stays.
//! - `fair`: every `mr3.check.memory.usage.event.interval.secs`, each
//!   kind's workers are shared out equally among its groups, each group
//!   capped at what it can use (its workers plus its unmet need), extra
//!   units going to older groups. Groups above their share are asked to
//!   stop workers *gracefully* ([`ContainerAction::StopWorkerGracefully`]:
//!   the worker finishes its running DAGs first, idle workers chosen
//!   first); groups below their share take the stopped workers (reported
//!   back with [`Input::WorkerStopped`]), the group with the fewest
//!   workers first.
//!
//! A stopped or orphaned worker that no group needs is kept in its kind's
//! reserve for recycling, and terminated after
//! `mr3.container.idle.timeout.ms` if still unclaimed.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::{keys, ConfigError, ContainerSchedulerConfig, ContainerSchedulerScheme};
use crate::types::{check_clock, CoreError, InvariantViolation, Resource, WorkerId};

/// A ContainerGroup as a client asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    pub name: String,
    /// What each worker of the group provides; defines the kind.
    pub worker_resource: Resource,
    /// Every other property (environment, launch options, ...); must match
    /// for two registrations to be merged.
    pub properties: BTreeMap<String, String>,
}

impl GroupSpec {
    pub fn new(name: impl Into<String>, worker_resource: Resource) -> GroupSpec {
        GroupSpec {
            name: name.into(),
            worker_resource,
            properties: BTreeMap::new(),
        }
    }

    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> GroupSpec {
        self.properties.insert(key.into(), value.into());
        self
    }
}

/// Everything that can change a [`ContainerScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A client creates (or joins) a group.
    RegisterGroup { client: String, spec: GroupSpec },
    /// A client no longer needs a group.
    ReleaseGroup { client: String, group: String },
    /// How many more workers the group could use now (absolute; replaces
    /// the previous figure).
    GroupDemand { group: String, wanted_workers: u32 },
    /// A worker started for `group` has registered.
    WorkerStarted { worker: WorkerId, group: String },
    /// A worker start asked for `group` failed.
    WorkerStartFailed { group: String },
    /// The driver withdrew one of the group's worker starts itself, and it
    /// is not to be asked again: the start no longer counts, nor does the
    /// need it stood for. A driver whose group is sized by someone else (an
    /// autoscaler, whose outstanding requests the driver reports as the
    /// group's demand) keeps the group's starts equal to those requests
    /// this way when one is granted or cancelled.
    WorkerStartWithdrawn { group: String },
    /// Whether the worker is idle: nothing to execute and no intermediate
    /// data to transmit.
    WorkerActivity { worker: WorkerId, idle: bool },
    /// A graceful stop finished; the worker can be reinitialised for
    /// another group.
    WorkerStopped { worker: WorkerId },
    /// The worker is gone.
    WorkerExited { worker: WorkerId },
    /// Time passes: fair rebalancing and reserve timeouts.
    Tick,
}

/// What the driver should do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContainerAction {
    /// Ask the resource manager for a new worker for `group`.
    StartWorker { group: String },
    /// Withdraw one outstanding start request of `group` (a recycled worker
    /// took its place). If the worker arrives anyway, report it with
    /// [`Input::WorkerStarted`] as usual.
    CancelWorkerStart { group: String },
    /// Let the worker finish its running DAGs, then stop it and report
    /// [`Input::WorkerStopped`].
    StopWorkerGracefully { worker: WorkerId, group: String },
    /// Reinitialise the (stopped or idle) worker for group `to`. `from` is
    /// the group it leaves, or `None` when it comes from the reserve.
    ReassignWorker {
        worker: WorkerId,
        from: Option<String>,
        to: String,
    },
    /// Release the worker's container.
    TerminateWorker { worker: WorkerId, reason: String },
}

/// What one input decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerDecisions {
    pub actions: Vec<ContainerAction>,
}

/// One group's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupReport {
    pub name: String,
    pub kind: u32,
    pub owners: Vec<String>,
    pub workers: Vec<WorkerId>,
    pub stopping: Vec<WorkerId>,
    pub starting: u32,
    pub wanted: u32,
}

#[derive(Debug, Clone)]
struct Group {
    spec: GroupSpec,
    /// Registration order: lower is older.
    seq: u64,
    kind: u32,
    owners: BTreeSet<String>,
    workers: BTreeSet<WorkerId>,
    starting: u32,
    wanted: u32,
    /// The share computed by the last fair rebalancing.
    fair_target: u64,
}

impl Group {
    fn unmet(&self) -> u32 {
        self.wanted.saturating_sub(self.starting)
    }
}

#[derive(Debug, Clone)]
struct Kind {
    resource: Resource,
    groups: BTreeSet<String>,
    /// Stopped workers nobody has claimed, with the time they became free.
    reserve: BTreeMap<WorkerId, u64>,
}

#[derive(Debug, Clone)]
struct Worker {
    kind: u32,
    /// `None` while in the reserve.
    group: Option<String>,
    idle: bool,
    stopping: bool,
}

/// The container scheduler core. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct ContainerScheduler {
    config: ContainerSchedulerConfig,
    groups: BTreeMap<String, Group>,
    kinds: BTreeMap<u32, Kind>,
    kind_by_resource: BTreeMap<Resource, u32>,
    workers: BTreeMap<WorkerId, Worker>,
    next_seq: u64,
    next_kind: u32,
    last_ms: u64,
    next_fair_ms: u64,
}

impl ContainerScheduler {
    pub fn new(config: ContainerSchedulerConfig) -> Result<ContainerScheduler, ConfigError> {
        if config.check_interval_ms == 0 {
            return Err(ConfigError::invalid(
                keys::CHECK_MEMORY_USAGE_INTERVAL_SECS,
                "0",
                "must be positive",
            ));
        }
        Ok(ContainerScheduler {
            config,
            groups: BTreeMap::new(),
            kinds: BTreeMap::new(),
            kind_by_resource: BTreeMap::new(),
            workers: BTreeMap::new(),
            next_seq: 0,
            next_kind: 0,
            last_ms: 0,
            next_fair_ms: 0,
        })
    }

    pub fn config(&self) -> &ContainerSchedulerConfig {
        &self.config
    }

    /// Applies one input at `now_ms` (which must not go backwards). On
    /// error nothing has changed.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Result<ContainerDecisions, CoreError> {
        check_clock(self.last_ms, now_ms)?;
        let mut out = Vec::new();
        match input {
            Input::RegisterGroup { client, spec } => self.register(client, spec)?,
            Input::ReleaseGroup { client, group } => {
                self.release(now_ms, &client, &group, &mut out)?
            }
            Input::GroupDemand {
                group,
                wanted_workers,
            } => {
                // Workers already asked for keep coming; they cannot be
                // cancelled here.
                let g = self.group_mut(&group)?;
                g.wanted = wanted_workers.max(g.starting);
            }
            Input::WorkerStarted { worker, group } => {
                self.worker_started(worker, &group, &mut out)?
            }
            Input::WorkerStartFailed { group } => {
                let g = self.group_mut(&group)?;
                g.starting = g.starting.saturating_sub(1);
            }
            Input::WorkerStartWithdrawn { group } => {
                let g = self.group_mut(&group)?;
                if g.starting > 0 {
                    g.starting -= 1;
                    g.wanted = g.wanted.saturating_sub(1);
                }
            }
            Input::WorkerActivity { worker, idle } => self.worker_mut(&worker)?.idle = idle,
            Input::WorkerStopped { worker } => self.worker_stopped(now_ms, &worker, &mut out)?,
            Input::WorkerExited { worker } => self.worker_exited(&worker)?,
            Input::Tick => {
                self.expire_reserve(now_ms, &mut out);
                if self.config.scheme == ContainerSchedulerScheme::Fair
                    && now_ms >= self.next_fair_ms
                {
                    self.fair_rebalance(&mut out);
                    self.next_fair_ms = now_ms.saturating_add(self.config.check_interval_ms);
                }
            }
        }
        self.serve_demand(&mut out);
        self.last_ms = now_ms;
        Ok(ContainerDecisions { actions: out })
    }

    // ----- inputs -----

    fn register(&mut self, client: String, spec: GroupSpec) -> Result<(), CoreError> {
        if let Some(g) = self.groups.get_mut(&spec.name) {
            if g.spec != spec {
                return Err(CoreError::Invalid(format!(
                    "ContainerGroup '{}' already exists with different properties; groups are \
                     merged only when name and properties match",
                    spec.name
                )));
            }
            g.owners.insert(client);
            return Ok(());
        }
        if spec.name.is_empty() {
            return Err(CoreError::Invalid("a ContainerGroup needs a name".into()));
        }
        if spec.worker_resource.memory_mb == 0 {
            return Err(CoreError::Invalid(format!(
                "ContainerGroup '{}' has workers with no memory",
                spec.name
            )));
        }
        let limit = self.config.max_groups;
        if self.groups.len() as u64 >= u64::from(limit) {
            return Err(CoreError::LimitReached {
                limit: "max_groups",
                value: u64::from(limit),
                detail: format!("ContainerGroup '{}' is refused", spec.name),
            });
        }
        let kind = match self.kind_by_resource.get(&spec.worker_resource) {
            Some(&k) => k,
            None => {
                let k = self.next_kind;
                self.next_kind += 1;
                self.kind_by_resource.insert(spec.worker_resource, k);
                self.kinds.insert(
                    k,
                    Kind {
                        resource: spec.worker_resource,
                        groups: BTreeSet::new(),
                        reserve: BTreeMap::new(),
                    },
                );
                k
            }
        };
        if let Some(k) = self.kinds.get_mut(&kind) {
            k.groups.insert(spec.name.clone());
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.groups.insert(
            spec.name.clone(),
            Group {
                spec,
                seq,
                kind,
                owners: [client].into_iter().collect(),
                workers: BTreeSet::new(),
                starting: 0,
                wanted: 0,
                fair_target: 0,
            },
        );
        Ok(())
    }

    fn release(
        &mut self,
        now_ms: u64,
        client: &str,
        group: &str,
        out: &mut Vec<ContainerAction>,
    ) -> Result<(), CoreError> {
        let g = self.group_mut(group)?;
        if !g.owners.remove(client) {
            return Err(CoreError::Unknown {
                what: "owner of ContainerGroup",
                id: format!("{client} of {group}"),
            });
        }
        if !g.owners.is_empty() {
            return Ok(());
        }
        let Some(g) = self.groups.remove(group) else {
            return Ok(());
        };
        if let Some(k) = self.kinds.get_mut(&g.kind) {
            k.groups.remove(group);
        }
        for w in g.workers {
            if self.config.scheme == ContainerSchedulerScheme::None {
                self.workers.remove(&w);
                out.push(ContainerAction::TerminateWorker {
                    worker: w,
                    reason: format!("ContainerGroup '{group}' was released"),
                });
            } else {
                self.park_in_reserve(now_ms, &w);
            }
        }
        Ok(())
    }

    fn worker_started(
        &mut self,
        worker: WorkerId,
        group: &str,
        out: &mut Vec<ContainerAction>,
    ) -> Result<(), CoreError> {
        if self.workers.contains_key(&worker) {
            return Err(CoreError::Duplicate {
                what: "worker",
                id: worker.to_string(),
            });
        }
        let Some(g) = self.groups.get_mut(group) else {
            // The group went away while the worker was starting.
            out.push(ContainerAction::TerminateWorker {
                worker,
                reason: format!("ContainerGroup '{group}' no longer exists"),
            });
            return Ok(());
        };
        g.starting = g.starting.saturating_sub(1);
        g.wanted = g.wanted.saturating_sub(1);
        g.workers.insert(worker.clone());
        let kind = g.kind;
        self.workers.insert(
            worker,
            Worker {
                kind,
                group: Some(group.to_string()),
                idle: false,
                stopping: false,
            },
        );
        Ok(())
    }

    fn worker_stopped(
        &mut self,
        now_ms: u64,
        worker: &WorkerId,
        out: &mut Vec<ContainerAction>,
    ) -> Result<(), CoreError> {
        let w = self.worker_mut(worker)?;
        if w.group.is_none() {
            return Ok(());
        }
        w.stopping = false;
        if self.config.scheme == ContainerSchedulerScheme::None {
            let w = self.workers.remove(worker);
            if let Some(g) = w.and_then(|w| w.group) {
                if let Some(g) = self.groups.get_mut(&g) {
                    g.workers.remove(worker);
                }
            }
            out.push(ContainerAction::TerminateWorker {
                worker: worker.clone(),
                reason:
                    "stopped, and workers are not recycled (mr3.container.scheduler.scheme = none)"
                        .into(),
            });
            return Ok(());
        }
        self.park_in_reserve(now_ms, worker);
        Ok(())
    }

    fn worker_exited(&mut self, worker: &WorkerId) -> Result<(), CoreError> {
        let Some(w) = self.workers.remove(worker) else {
            return Err(unknown_worker(worker));
        };
        match w.group {
            Some(g) => {
                if let Some(g) = self.groups.get_mut(&g) {
                    g.workers.remove(worker);
                }
            }
            None => {
                if let Some(k) = self.kinds.get_mut(&w.kind) {
                    k.reserve.remove(worker);
                }
            }
        }
        Ok(())
    }

    // ----- decisions -----

    /// Takes a worker out of its group into its kind's reserve.
    fn park_in_reserve(&mut self, now_ms: u64, worker: &WorkerId) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        if let Some(g) = w.group.take() {
            if let Some(g) = self.groups.get_mut(&g) {
                g.workers.remove(worker);
            }
        }
        w.stopping = false;
        w.idle = true;
        if let Some(k) = self.kinds.get_mut(&w.kind) {
            k.reserve.insert(worker.clone(), now_ms);
        }
    }

    fn move_worker(&mut self, worker: &WorkerId, to: &str, out: &mut Vec<ContainerAction>) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let from = w.group.replace(to.to_string());
        match &from {
            Some(f) => {
                if let Some(g) = self.groups.get_mut(f) {
                    g.workers.remove(worker);
                }
            }
            None => {
                if let Some(k) = self.kinds.get_mut(&w.kind) {
                    k.reserve.remove(worker);
                }
            }
        }
        w.idle = false;
        w.stopping = false;
        out.push(ContainerAction::ReassignWorker {
            worker: worker.clone(),
            from,
            to: to.to_string(),
        });
        if let Some(g) = self.groups.get_mut(to) {
            g.workers.insert(worker.clone());
            g.wanted = g.wanted.saturating_sub(1);
            if g.starting > g.wanted {
                g.starting -= 1;
                out.push(ContainerAction::CancelWorkerStart {
                    group: to.to_string(),
                });
            }
        }
    }

    /// The group of `kind` that should receive the next free worker: under
    /// `fifo` the oldest group in need; under `fair` the group in need
    /// furthest below its last fair share, then with the fewest workers,
    /// then the oldest.
    fn recipient(&self, kind: u32, except: Option<&str>) -> Option<String> {
        let k = self.kinds.get(&kind)?;
        k.groups
            .iter()
            .filter(|name| Some(name.as_str()) != except)
            .filter_map(|name| self.groups.get(name).map(|g| (name, g)))
            .filter(|(_, g)| g.wanted > 0)
            .min_by_key(|(_, g)| {
                let held = g.workers.len() as u64;
                match self.config.scheme {
                    ContainerSchedulerScheme::Fair => (
                        std::cmp::Reverse(g.fair_target.saturating_sub(held)),
                        held,
                        g.seq,
                    ),
                    _ => (std::cmp::Reverse(0), 0, g.seq),
                }
            })
            .map(|(name, _)| name.clone())
    }

    /// Hands recycled workers to groups in need, then asks for new
    /// workers for what is left.
    fn serve_demand(&mut self, out: &mut Vec<ContainerAction>) {
        if self.config.scheme != ContainerSchedulerScheme::None {
            let kinds: Vec<u32> = self.kinds.keys().copied().collect();
            for kind in kinds {
                // 1. The reserve.
                while let Some(worker) = self
                    .kinds
                    .get(&kind)
                    .and_then(|k| k.reserve.keys().next().cloned())
                {
                    let Some(to) = self.recipient(kind, None) else {
                        break;
                    };
                    self.move_worker(&worker, &to, out);
                }
                // 2. Under fifo, idle workers of groups not in need.
                if self.config.scheme == ContainerSchedulerScheme::Fifo {
                    let idle: Vec<(WorkerId, String)> = self
                        .workers
                        .iter()
                        .filter(|(_, w)| w.kind == kind && w.idle && !w.stopping)
                        .filter_map(|(id, w)| w.group.clone().map(|g| (id.clone(), g)))
                        .collect();
                    for (worker, from) in idle {
                        if self.groups.get(&from).is_some_and(|g| g.wanted > 0) {
                            continue;
                        }
                        let Some(to) = self.recipient(kind, Some(&from)) else {
                            break;
                        };
                        self.move_worker(&worker, &to, out);
                    }
                }
            }
        }
        // 3. New workers, oldest group first.
        let mut order: Vec<(u64, String)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.unmet() > 0)
            .map(|(n, g)| (g.seq, n.clone()))
            .collect();
        order.sort();
        for (_, name) in order {
            if let Some(g) = self.groups.get_mut(&name) {
                for _ in 0..g.unmet() {
                    out.push(ContainerAction::StartWorker {
                        group: name.clone(),
                    });
                }
                g.starting = g.wanted;
            }
        }
    }

    fn fair_rebalance(&mut self, out: &mut Vec<ContainerAction>) {
        let kinds: Vec<u32> = self.kinds.keys().copied().collect();
        for kind in kinds {
            let Some(k) = self.kinds.get(&kind) else {
                continue;
            };
            // Groups oldest first, with what each holds and could use.
            let mut groups: Vec<(u64, String, u64, u64)> = k
                .groups
                .iter()
                .filter_map(|n| self.groups.get(n).map(|g| (n, g)))
                .map(|(n, g)| {
                    let stopping = g
                        .workers
                        .iter()
                        .filter(|w| self.workers.get(*w).is_some_and(|w| w.stopping))
                        .count() as u64;
                    let effective = g.workers.len() as u64 - stopping;
                    (g.seq, n.clone(), effective, effective + u64::from(g.wanted))
                })
                .collect();
            groups.sort();
            let total: u64 = groups.iter().map(|g| g.2).sum::<u64>() + k.reserve.len() as u64;
            let caps: Vec<u64> = groups.iter().map(|g| g.3).collect();
            let targets = fair_shares(total, &caps);
            for ((_, name, effective, _), target) in groups.iter().zip(targets) {
                if let Some(g) = self.groups.get_mut(name) {
                    g.fair_target = target;
                }
                if *effective <= target {
                    continue;
                }
                let excess = (*effective - target) as usize;
                let Some(g) = self.groups.get(name) else {
                    continue;
                };
                // Idle workers first, then by id.
                let mut candidates: Vec<(bool, WorkerId)> = g
                    .workers
                    .iter()
                    .filter_map(|id| self.workers.get(id).map(|w| (id, w)))
                    .filter(|(_, w)| !w.stopping)
                    .map(|(id, w)| (!w.idle, id.clone()))
                    .collect();
                candidates.sort();
                for (_, worker) in candidates.into_iter().take(excess) {
                    if let Some(w) = self.workers.get_mut(&worker) {
                        w.stopping = true;
                    }
                    out.push(ContainerAction::StopWorkerGracefully {
                        worker,
                        group: name.clone(),
                    });
                }
            }
        }
    }

    fn expire_reserve(&mut self, now_ms: u64, out: &mut Vec<ContainerAction>) {
        let timeout = self.config.reserved_idle_timeout_ms;
        let mut expired = Vec::new();
        for k in self.kinds.values_mut() {
            let gone: Vec<WorkerId> = k
                .reserve
                .iter()
                .filter(|(_, since)| now_ms.saturating_sub(**since) >= timeout)
                .map(|(w, _)| w.clone())
                .collect();
            for w in gone {
                k.reserve.remove(&w);
                expired.push(w);
            }
        }
        for w in expired {
            self.workers.remove(&w);
            out.push(ContainerAction::TerminateWorker {
                worker: w,
                reason: format!(
                    "no ContainerGroup claimed it within mr3.container.idle.timeout.ms ({timeout} ms)"
                ),
            });
        }
    }

    fn group_mut(&mut self, name: &str) -> Result<&mut Group, CoreError> {
        self.groups.get_mut(name).ok_or_else(|| CoreError::Unknown {
            what: "ContainerGroup",
            id: name.to_string(),
        })
    }

    fn worker_mut(&mut self, worker: &WorkerId) -> Result<&mut Worker, CoreError> {
        self.workers
            .get_mut(worker)
            .ok_or_else(|| unknown_worker(worker))
    }

    // ----- queries -----

    pub fn group_report(&self, name: &str) -> Option<GroupReport> {
        let g = self.groups.get(name)?;
        Some(GroupReport {
            name: name.to_string(),
            kind: g.kind,
            owners: g.owners.iter().cloned().collect(),
            workers: g.workers.iter().cloned().collect(),
            stopping: g
                .workers
                .iter()
                .filter(|w| self.workers.get(*w).is_some_and(|w| w.stopping))
                .cloned()
                .collect(),
            starting: g.starting,
            wanted: g.wanted,
        })
    }

    /// Workers being started for the group (0 for an unknown group).
    pub fn starting(&self, group: &str) -> u32 {
        self.groups.get(group).map_or(0, |g| g.starting)
    }

    /// Groups, oldest first.
    pub fn groups(&self) -> Vec<String> {
        let mut v: Vec<(u64, String)> = self
            .groups
            .iter()
            .map(|(n, g)| (g.seq, n.clone()))
            .collect();
        v.sort();
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// The group a worker belongs to (`None` in the reserve or unknown).
    pub fn group_of(&self, worker: &WorkerId) -> Option<&str> {
        self.workers.get(worker)?.group.as_deref()
    }

    /// Workers in the reserve of the group's kind: stopped workers the
    /// group could be given without starting new ones (0 for an unknown
    /// group).
    pub fn reserved_for(&self, group: &str) -> u32 {
        self.groups
            .get(group)
            .and_then(|g| self.kinds.get(&g.kind))
            .map_or(0, |k| u32::try_from(k.reserve.len()).unwrap_or(u32::MAX))
    }

    /// Workers in the reserves, in id order.
    pub fn reserved_workers(&self) -> Vec<WorkerId> {
        let mut v: Vec<WorkerId> = self
            .kinds
            .values()
            .flat_map(|k| k.reserve.keys().cloned())
            .collect();
        v.sort();
        v
    }

    // ----- invariants -----

    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let fail = |m: String| Err(InvariantViolation(m));
        for (name, g) in &self.groups {
            let Some(k) = self.kinds.get(&g.kind) else {
                return fail(format!("group {name} has unknown kind {}", g.kind));
            };
            if !k.groups.contains(name) || k.resource != g.spec.worker_resource {
                return fail(format!(
                    "group {name} is not in the kind of its worker size"
                ));
            }
            if g.owners.is_empty() {
                return fail(format!("group {name} has no owner"));
            }
            if g.starting > g.wanted {
                return fail(format!("group {name} starts more workers than it wants"));
            }
            for w in &g.workers {
                match self.workers.get(w) {
                    Some(rec) if rec.group.as_deref() == Some(name) && rec.kind == g.kind => {}
                    _ => return fail(format!("group {name} lists worker {w} that is not its own")),
                }
            }
        }
        for (id, k) in &self.kinds {
            if self.kind_by_resource.get(&k.resource) != Some(id) {
                return fail(format!("kind {id} is not indexed by its worker size"));
            }
            for g in &k.groups {
                if self.groups.get(g).map(|g| g.kind) != Some(*id) {
                    return fail(format!("kind {id} lists group {g} of another kind"));
                }
            }
            for w in k.reserve.keys() {
                match self.workers.get(w) {
                    Some(rec) if rec.group.is_none() && rec.kind == *id && !rec.stopping => {}
                    _ => return fail(format!("reserve of kind {id} lists worker {w} wrongly")),
                }
            }
        }
        for (id, w) in &self.workers {
            let placed = match &w.group {
                Some(g) => self.groups.get(g).is_some_and(|g| g.workers.contains(id)),
                None => self
                    .kinds
                    .get(&w.kind)
                    .is_some_and(|k| k.reserve.contains_key(id)),
            };
            if !placed {
                return fail(format!(
                    "worker {id} is neither in its group nor in a reserve"
                ));
            }
        }
        Ok(())
    }
}

/// Max-min fair shares of `total` units among claimants with `caps`,
/// earlier claimants getting the indivisible remainder first. Shares never
/// exceed caps; their sum is `min(total, sum of caps)`.
pub fn fair_shares(total: u64, caps: &[u64]) -> Vec<u64> {
    let mut share = vec![0u64; caps.len()];
    let mut remaining = total;
    let mut open: Vec<usize> = (0..caps.len()).filter(|&i| caps[i] > 0).collect();
    while remaining > 0 && !open.is_empty() {
        let each = remaining / open.len() as u64;
        if each == 0 {
            for &i in open.iter().take(remaining as usize) {
                share[i] += 1;
            }
            break;
        }
        for &i in &open {
            let give = each.min(caps[i] - share[i]);
            share[i] += give;
            remaining -= give;
        }
        open.retain(|&i| share[i] < caps[i]);
    }
    share
}

fn unknown_worker(worker: &WorkerId) -> CoreError {
    CoreError::Unknown {
        what: "worker",
        id: worker.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContainerAction::*;

    const SIZE: Resource = Resource::new(8192, 4);

    fn cs(scheme: ContainerSchedulerScheme) -> ContainerScheduler {
        ContainerScheduler::new(ContainerSchedulerConfig {
            scheme,
            check_interval_ms: 10_000,
            reserved_idle_timeout_ms: 60_000,
            ..ContainerSchedulerConfig::default()
        })
        .expect("valid")
    }

    fn step(c: &mut ContainerScheduler, now: u64, input: Input) -> Vec<ContainerAction> {
        let d = c.handle(now, input).expect("accepted");
        c.check_invariants().expect("invariants");
        d.actions
    }

    fn w(name: &str) -> WorkerId {
        WorkerId::new(name)
    }

    fn register(c: &mut ContainerScheduler, client: &str, group: &str, size: Resource) {
        step(
            c,
            c.last_ms,
            Input::RegisterGroup {
                client: client.into(),
                spec: GroupSpec::new(group, size).with_property("env", "prod"),
            },
        );
    }

    /// Registers `group` and gives it `n` started workers named
    /// `<group>-<i>`.
    fn group_with_workers(c: &mut ContainerScheduler, group: &str, n: u32) {
        register(c, "client", group, SIZE);
        step(
            c,
            c.last_ms,
            Input::GroupDemand {
                group: group.into(),
                wanted_workers: n,
            },
        );
        for i in 0..n {
            step(
                c,
                c.last_ms,
                Input::WorkerStarted {
                    worker: w(&format!("{group}-{i}")),
                    group: group.into(),
                },
            );
        }
    }

    fn workers_of(c: &ContainerScheduler, group: &str) -> usize {
        c.group_report(group).expect("known").workers.len()
    }

    #[test]
    fn groups_merge_when_name_and_properties_match() {
        let mut c = cs(ContainerSchedulerScheme::None);
        register(&mut c, "alice", "llap", SIZE);
        register(&mut c, "bob", "llap", SIZE);
        assert_eq!(c.groups(), vec!["llap".to_string()]);
        assert_eq!(
            c.group_report("llap").expect("known").owners,
            vec!["alice", "bob"]
        );
        let err = c
            .handle(
                0,
                Input::RegisterGroup {
                    client: "carol".into(),
                    spec: GroupSpec::new("llap", SIZE).with_property("env", "test"),
                },
            )
            .expect_err("must be refused");
        assert!(
            err.to_string()
                .contains("already exists with different properties"),
            "{err}"
        );
        // One owner leaving keeps the group; the last one removes it.
        step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "alice".into(),
                group: "llap".into(),
            },
        );
        assert!(c.group_report("llap").is_some());
        step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "bob".into(),
                group: "llap".into(),
            },
        );
        assert!(c.groups().is_empty());
    }

    #[test]
    fn kinds_collect_groups_with_the_same_worker_size() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        register(&mut c, "a", "g1", SIZE);
        register(&mut c, "b", "g2", SIZE);
        register(&mut c, "c", "g3", Resource::new(4096, 4));
        let kind = |g: &str| c.group_report(g).expect("known").kind;
        assert_eq!(kind("g1"), kind("g2"));
        assert_ne!(kind("g1"), kind("g3"));
    }

    #[test]
    fn none_starts_workers_for_demand_and_never_recycles() {
        let mut c = cs(ContainerSchedulerScheme::None);
        register(&mut c, "a", "g1", SIZE);
        register(&mut c, "b", "g2", SIZE);
        let a = step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "g1".into(),
                wanted_workers: 2,
            },
        );
        assert_eq!(
            a,
            vec![
                StartWorker { group: "g1".into() },
                StartWorker { group: "g1".into() }
            ]
        );
        // Asking again for the same need starts nothing more.
        assert!(step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "g1".into(),
                wanted_workers: 2
            }
        )
        .is_empty());
        step(
            &mut c,
            0,
            Input::WorkerStarted {
                worker: w("x"),
                group: "g1".into(),
            },
        );
        step(
            &mut c,
            0,
            Input::WorkerActivity {
                worker: w("x"),
                idle: true,
            },
        );
        // g2 needs a worker; x is idle in g1 but is not recycled.
        let a = step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "g2".into(),
                wanted_workers: 1,
            },
        );
        assert_eq!(a, vec![StartWorker { group: "g2".into() }]);
        let a = step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "a".into(),
                group: "g1".into(),
            },
        );
        assert!(matches!(&a[..], [TerminateWorker { worker, .. }] if worker == &w("x")));
    }

    #[test]
    fn fifo_idle_worker_moves_to_the_oldest_group_in_need() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        group_with_workers(&mut c, "old", 0);
        group_with_workers(&mut c, "mid", 0);
        group_with_workers(&mut c, "new", 2);
        // Both older groups need a worker; none is idle, so new ones are
        // requested. A busy worker never moves.
        let a = step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "mid".into(),
                wanted_workers: 1,
            },
        );
        assert_eq!(
            a,
            vec![StartWorker {
                group: "mid".into()
            }]
        );
        let a = step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "old".into(),
                wanted_workers: 1,
            },
        );
        assert_eq!(
            a,
            vec![StartWorker {
                group: "old".into()
            }]
        );
        assert_eq!(workers_of(&c, "new"), 2);
        // A worker of "new" runs out of work (no attempts, no intermediate
        // data): it stops and goes to the oldest group in need, "old",
        // whose outstanding request is withdrawn.
        let a = step(
            &mut c,
            0,
            Input::WorkerActivity {
                worker: w("new-1"),
                idle: true,
            },
        );
        assert_eq!(
            a,
            vec![
                ReassignWorker {
                    worker: w("new-1"),
                    from: Some("new".into()),
                    to: "old".into()
                },
                CancelWorkerStart {
                    group: "old".into()
                },
            ]
        );
        assert_eq!(c.group_of(&w("new-1")), Some("old"));
        let a = step(
            &mut c,
            0,
            Input::WorkerActivity {
                worker: w("new-0"),
                idle: true,
            },
        );
        assert_eq!(
            a,
            vec![
                ReassignWorker {
                    worker: w("new-0"),
                    from: Some("new".into()),
                    to: "mid".into()
                },
                CancelWorkerStart {
                    group: "mid".into()
                },
            ]
        );
        // With nobody in need, an idle worker stays where it is.
        let a = step(
            &mut c,
            0,
            Input::WorkerActivity {
                worker: w("new-0"),
                idle: true,
            },
        );
        assert!(a.is_empty());
        assert_eq!(c.group_of(&w("new-0")), Some("mid"));
    }

    #[test]
    fn fair_stops_workers_above_the_average_and_gives_them_to_groups_below() {
        let mut c = cs(ContainerSchedulerScheme::Fair);
        group_with_workers(&mut c, "g1", 6);
        group_with_workers(&mut c, "g2", 0);
        step(
            &mut c,
            1_000,
            Input::WorkerActivity {
                worker: w("g1-4"),
                idle: true,
            },
        );
        // g2 wants six; the cluster has no room, so its requests wait.
        let a = step(
            &mut c,
            1_000,
            Input::GroupDemand {
                group: "g2".into(),
                wanted_workers: 6,
            },
        );
        assert_eq!(a.len(), 6, "{a:?}");
        // At the next check, g1 holds more than the average of 3: it is
        // asked to stop three workers gracefully, the idle one first.
        let a = step(&mut c, 10_000, Input::Tick);
        assert_eq!(
            a,
            vec![
                StopWorkerGracefully {
                    worker: w("g1-4"),
                    group: "g1".into()
                },
                StopWorkerGracefully {
                    worker: w("g1-0"),
                    group: "g1".into()
                },
                StopWorkerGracefully {
                    worker: w("g1-1"),
                    group: "g1".into()
                },
            ]
        );
        // Before the next interval nothing more is stopped.
        assert!(step(&mut c, 15_000, Input::Tick).is_empty());
        // Each worker, once its running DAGs are done, moves to g2.
        for name in ["g1-4", "g1-0", "g1-1"] {
            let a = step(&mut c, 16_000, Input::WorkerStopped { worker: w(name) });
            assert_eq!(
                a,
                vec![
                    ReassignWorker {
                        worker: w(name),
                        from: None,
                        to: "g2".into()
                    },
                    CancelWorkerStart { group: "g2".into() },
                ]
            );
        }
        assert_eq!((workers_of(&c, "g1"), workers_of(&c, "g2")), (3, 3));
        // Balanced: the next check stops nothing.
        assert!(step(&mut c, 20_000, Input::Tick).is_empty());
    }

    #[test]
    fn fair_leaves_workers_where_no_other_group_can_use_them() {
        let mut c = cs(ContainerSchedulerScheme::Fair);
        group_with_workers(&mut c, "g1", 4);
        group_with_workers(&mut c, "g2", 0);
        // g2 has no demand: its fair share is capped at zero.
        assert!(step(&mut c, 10_000, Input::Tick).is_empty());
        step(
            &mut c,
            10_000,
            Input::GroupDemand {
                group: "g2".into(),
                wanted_workers: 1,
            },
        );
        let stops: Vec<_> = step(&mut c, 20_000, Input::Tick)
            .into_iter()
            .filter(|a| matches!(a, StopWorkerGracefully { .. }))
            .collect();
        assert_eq!(stops.len(), 1, "g2 can use just one");
    }

    #[test]
    fn released_workers_are_reserved_then_recycled_or_terminated() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        group_with_workers(&mut c, "g1", 2);
        group_with_workers(&mut c, "g2", 0);
        step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "client".into(),
                group: "g1".into(),
            },
        );
        assert_eq!(c.reserved_workers(), vec![w("g1-0"), w("g1-1")]);
        let a = step(
            &mut c,
            5_000,
            Input::GroupDemand {
                group: "g2".into(),
                wanted_workers: 1,
            },
        );
        assert_eq!(
            a,
            vec![ReassignWorker {
                worker: w("g1-0"),
                from: None,
                to: "g2".into()
            }]
        );
        assert!(step(&mut c, 59_999, Input::Tick).is_empty());
        let a = step(&mut c, 60_000, Input::Tick);
        assert!(matches!(&a[..], [TerminateWorker { worker, .. }] if worker == &w("g1-1")));
        assert!(c.reserved_workers().is_empty());
    }

    #[test]
    fn a_withdrawn_start_ends_the_need_it_stood_for() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        group_with_workers(&mut c, "old", 1);
        group_with_workers(&mut c, "new", 0);
        let a = step(
            &mut c,
            0,
            Input::GroupDemand {
                group: "new".into(),
                wanted_workers: 2,
            },
        );
        assert_eq!(a.len(), 2, "{a:?}");
        // The driver withdraws one start itself: it is not asked again.
        assert!(step(
            &mut c,
            0,
            Input::WorkerStartWithdrawn {
                group: "new".into()
            }
        )
        .is_empty());
        let r = c.group_report("new").expect("known");
        assert_eq!((r.starting, r.wanted), (1, 1));
        // A worker freed now takes the place of the one start left.
        step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "client".into(),
                group: "old".into(),
            },
        );
        assert_eq!(c.reserved_workers(), Vec::<WorkerId>::new());
        assert_eq!(workers_of(&c, "new"), 1);
        let r = c.group_report("new").expect("known");
        assert_eq!((r.starting, r.wanted), (0, 0));
        // With nothing starting, a withdrawal changes nothing.
        step(
            &mut c,
            0,
            Input::WorkerStartWithdrawn {
                group: "new".into(),
            },
        );
        let r = c.group_report("new").expect("known");
        assert_eq!((r.starting, r.wanted), (0, 0));
    }

    #[test]
    fn the_reserve_of_a_groups_kind_is_counted_for_it() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        group_with_workers(&mut c, "g1", 2);
        register(&mut c, "client", "g2", SIZE);
        register(&mut c, "client", "small", Resource::new(1024, 1));
        step(
            &mut c,
            0,
            Input::ReleaseGroup {
                client: "client".into(),
                group: "g1".into(),
            },
        );
        assert_eq!(c.reserved_for("g2"), 2);
        assert_eq!(c.reserved_for("small"), 0);
        assert_eq!(c.reserved_for("gone"), 0);
    }

    #[test]
    fn errors_for_unknown_names() {
        let mut c = cs(ContainerSchedulerScheme::Fifo);
        assert!(matches!(
            c.handle(
                0,
                Input::GroupDemand {
                    group: "nope".into(),
                    wanted_workers: 1
                }
            ),
            Err(CoreError::Unknown { .. })
        ));
        assert!(matches!(
            c.handle(0, Input::WorkerExited { worker: w("ghost") }),
            Err(CoreError::Unknown { .. })
        ));
        group_with_workers(&mut c, "g", 1);
        assert!(matches!(
            c.handle(
                0,
                Input::WorkerStarted {
                    worker: w("g-0"),
                    group: "g".into()
                }
            ),
            Err(CoreError::Duplicate { .. })
        ));
        assert!(matches!(
            c.handle(
                0,
                Input::ReleaseGroup {
                    client: "stranger".into(),
                    group: "g".into()
                }
            ),
            Err(CoreError::Unknown { .. })
        ));
        c.check_invariants().expect("unchanged");
    }

    /// The checks notice a corrupted state: each corruption of a consistent one
    /// is named.
    #[test]
    fn corrupted_states_fail_the_invariants() {
        type Corruption = fn(&mut ContainerScheduler);
        let corruptions: [(&str, Corruption); 3] = [
            ("has no owner", |c| {
                if let Some(g) = c.groups.get_mut("g") {
                    g.owners.clear();
                }
            }),
            ("starts more workers than it wants", |c| {
                if let Some(g) = c.groups.get_mut("g") {
                    g.starting = g.wanted + 1;
                }
            }),
            ("lists worker g-0 that is not its own", |c| {
                if let Some(rec) = c.workers.get_mut(&w("g-0")) {
                    rec.group = None;
                }
            }),
        ];
        for (expected, corrupt) in corruptions {
            let mut c = cs(ContainerSchedulerScheme::Fifo);
            group_with_workers(&mut c, "g", 2);
            c.check_invariants().expect("consistent before");
            corrupt(&mut c);
            let v = c.check_invariants().expect_err(expected).to_string();
            assert!(v.contains(expected), "{v}");
        }
    }

    #[test]
    fn fair_shares_are_max_min_fair() {
        assert_eq!(fair_shares(6, &[6, 6]), vec![3, 3]);
        assert_eq!(fair_shares(7, &[6, 6]), vec![4, 3]);
        assert_eq!(fair_shares(6, &[6, 1]), vec![5, 1]);
        assert_eq!(fair_shares(10, &[2, 2]), vec![2, 2]);
        assert_eq!(fair_shares(5, &[0, 9, 9]), vec![0, 3, 2]);
        assert_eq!(fair_shares(0, &[3]), vec![0]);
        assert_eq!(fair_shares(3, &[]), Vec::<u64>::new());
    }
}
