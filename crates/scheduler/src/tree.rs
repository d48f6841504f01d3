//! The live queue tree: each queue's absolute entitlements, usage, users
//! and the ordered sets that say who is served next.
//!
//! Queues live in an arena indexed by [`QueueIdx`] (root is 0, parents
//! before children). Every queue that has something to schedule sits in
//! its parent's `active_children` under its current sort key, and every
//! application with outstanding asks sits in its leaf's `active_apps`, so
//! the next application to serve is found by walking down the first
//! entries: O(depth × log n). Keys are recomputed along the path from a
//! leaf to the root whenever usage under it changes.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ApplicationAttemptId, Resource};

use crate::policy::SortKey;
use crate::queue_config::{
    AppOrdering, QueueConfig, QueueShare, QueueTreeConfig, ResourceCalculatorKind, SchedulerKind,
};

/// Index of a queue in the tree's arena.
pub(crate) type QueueIdx = usize;

/// The root's index.
pub(crate) const ROOT: QueueIdx = 0;

/// Shares are compared in billionths.
const SHARE_SCALE: f64 = 1e9;

/// Sort key major value for queues that cannot be compared by share (no
/// guarantee, zero weight): after every other queue.
const UNENTITLED: i64 = i64::MAX / 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UserState {
    pub used: Resource,
    /// Held by the user's AM containers in this leaf.
    pub am_used: Resource,
    /// The user's applications in this leaf with outstanding asks.
    pub active_apps: usize,
    /// The user's applications in this leaf.
    pub apps: usize,
}

#[derive(Debug)]
pub(crate) struct Queue {
    pub path: String,
    pub parent: Option<QueueIdx>,
    pub children: Vec<QueueIdx>,
    /// The queue's settings (its `children` emptied; see `children`).
    pub settings: QueueConfig,
    /// Created on demand by placement (fair scheduler), not configured.
    pub dynamic: bool,
    /// Absolute guaranteed resources: the capacity share of the cluster,
    /// or the fair scheduler's steady fair share.
    pub guaranteed: Resource,
    /// Absolute cap: maximum capacity or `maxResources`.
    pub maximum: Resource,
    /// Fair scheduler `minResources` (zero otherwise).
    pub min_share: Resource,
    pub used: Resource,
    /// Held by AM containers (leaves).
    pub am_used: Resource,
    /// Runnable applications in the subtree.
    pub running_apps: usize,
    /// Leaf: all its applications.
    pub apps: BTreeSet<ApplicationAttemptId>,
    /// Leaf: per-user usage.
    pub users: BTreeMap<String, UserState>,
    /// Leaf: users with at least one application with outstanding asks.
    pub active_users: usize,
    /// Parent: children with something to schedule, in serving order.
    pub active_children: BTreeSet<(SortKey, QueueIdx)>,
    /// Leaf: runnable applications with outstanding asks, in serving order.
    pub active_apps: BTreeSet<(SortKey, ApplicationAttemptId)>,
    /// The key the queue is filed under in its parent's `active_children`.
    pub key_in_parent: Option<SortKey>,
    /// Taken out of the serving order for the rest of a scheduling pass.
    pub parked: bool,
}

impl Queue {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty() && !self.settings.declared_parent
    }

    fn has_demand(&self) -> bool {
        !self.parked && (!self.active_apps.is_empty() || !self.active_children.is_empty())
    }

    /// Leaf: one of `user`'s applications leaves; the user goes with the last.
    pub fn forget_user_app(&mut self, user: &str) {
        if let Some(u) = self.users.get_mut(user) {
            u.apps = u.apps.saturating_sub(1);
            if u.apps == 0 {
                self.users.remove(user);
            }
        }
    }

    /// Leaf: one of `user`'s applications starts (`active`) or stops having
    /// outstanding asks; `active_users` follows the user's first and last.
    pub fn count_active_app(&mut self, user: &str, active: bool) {
        let u = if active {
            self.users.entry(user.to_string()).or_default()
        } else {
            match self.users.get_mut(user) {
                Some(u) => u,
                None => return,
            }
        };
        let before = u.active_apps > 0;
        if active {
            u.active_apps += 1;
        } else {
            u.active_apps = u.active_apps.saturating_sub(1);
        }
        match (before, u.active_apps > 0) {
            (false, true) => self.active_users += 1,
            (true, false) => self.active_users = self.active_users.saturating_sub(1),
            _ => {}
        }
    }
}

/// The queue tree with its configuration.
#[derive(Debug)]
pub(crate) struct QueueTree {
    pub config: QueueTreeConfig,
    pub queues: Vec<Queue>,
    pub by_path: BTreeMap<String, QueueIdx>,
    /// Cluster resources the absolute values were computed from.
    pub cluster: Resource,
}

impl QueueTree {
    /// A tree with no applications; validates structure (names, leaves).
    pub fn build(config: QueueTreeConfig, cluster: Resource) -> Result<QueueTree, String> {
        if config.root.name != "root" {
            return Err(format!(
                "the root queue must be named 'root', not '{}'",
                config.root.name
            ));
        }
        let mut tree = QueueTree {
            queues: Vec::new(),
            by_path: BTreeMap::new(),
            cluster,
            config: config.clone(),
        };
        tree.add_subtree(&config.root, None, "root".to_string(), false)?;
        if !tree.queues.iter().any(Queue::is_leaf) && config.dynamic_leaf.is_none() {
            return Err("the queue tree has no leaf queue to run applications in".into());
        }
        tree.recompute_entitlements();
        Ok(tree)
    }

    fn add_subtree(
        &mut self,
        q: &QueueConfig,
        parent: Option<QueueIdx>,
        path: String,
        dynamic: bool,
    ) -> Result<QueueIdx, String> {
        validate_queue(q, &path)?;
        if self.by_path.contains_key(&path) {
            return Err(format!("queue {path} is defined twice"));
        }
        let idx = self.queues.len();
        let mut settings = q.clone();
        settings.children = Vec::new();
        self.queues.push(Queue {
            path: path.clone(),
            parent,
            children: Vec::new(),
            settings,
            dynamic,
            guaranteed: Resource::ZERO,
            maximum: Resource::ZERO,
            min_share: Resource::ZERO,
            used: Resource::ZERO,
            am_used: Resource::ZERO,
            running_apps: 0,
            apps: BTreeSet::new(),
            users: BTreeMap::new(),
            active_users: 0,
            active_children: BTreeSet::new(),
            active_apps: BTreeSet::new(),
            key_in_parent: None,
            parked: false,
        });
        self.by_path.insert(path.clone(), idx);
        if let Some(p) = parent {
            self.queues[p].children.push(idx);
        }
        for child in &q.children {
            self.add_subtree(child, Some(idx), format!("{path}.{}", child.name), dynamic)?;
        }
        Ok(idx)
    }

    /// Creates a leaf on demand (fair scheduler placement). `path` must be
    /// a new `parent.name` under an existing parent queue.
    pub fn create_leaf(&mut self, path: &str) -> Result<QueueIdx, String> {
        let Some(template) = self.config.dynamic_leaf.clone() else {
            return Err(format!(
                "queue {path} does not exist and this scheduler does not create queues"
            ));
        };
        let Some((parent_path, name)) = path.rsplit_once('.') else {
            return Err(format!("queue {path} is not under root"));
        };
        let Some(&parent) = self.by_path.get(parent_path) else {
            return Err(format!(
                "queue {path} cannot be created: its parent {parent_path} does not exist"
            ));
        };
        let p = &self.queues[parent];
        if p.is_leaf() {
            return Err(format!(
                "queue {path} cannot be created: {parent_path} is a leaf queue"
            ));
        }
        let leaf = QueueConfig {
            name: name.to_string(),
            children: Vec::new(),
            declared_parent: false,
            ..template
        };
        let idx = self.add_subtree(&leaf, Some(parent), path.to_string(), true)?;
        self.recompute_entitlements();
        Ok(idx)
    }

    pub fn kind(&self) -> SchedulerKind {
        self.config.kind
    }

    pub fn calculator(&self) -> ResourceCalculatorKind {
        self.config.resource_calculator
    }

    /// Recomputes every queue's absolute guarantee, maximum and minimum
    /// share from the cluster's resources. Keys are not touched; callers
    /// re-key afterwards.
    pub fn recompute_entitlements(&mut self) {
        let cluster = self.cluster;
        for idx in 0..self.queues.len() {
            let (parent_guaranteed, parent_maximum) = match self.queues[idx].parent {
                Some(p) => (self.queues[p].guaranteed, self.queues[p].maximum),
                None => (cluster, cluster),
            };
            let sibling_weight: f64 = match self.queues[idx].parent {
                Some(p) => self.queues[p]
                    .children
                    .iter()
                    .map(|&c| match self.queues[c].settings.share {
                        QueueShare::Fair { weight, .. } => weight.max(0.0),
                        QueueShare::Capacity { .. } => 0.0,
                    })
                    .sum(),
                None => 0.0,
            };
            let q = &mut self.queues[idx];
            if q.parent.is_none() {
                q.guaranteed = cluster;
                q.maximum = cluster;
                q.min_share = Resource::ZERO;
                continue;
            }
            match q.settings.share {
                QueueShare::Capacity {
                    capacity_pct,
                    maximum_pct,
                } => {
                    q.guaranteed = scale(parent_guaranteed, capacity_pct / 100.0);
                    q.maximum = scale(parent_maximum, maximum_pct / 100.0);
                    q.min_share = Resource::ZERO;
                }
                QueueShare::Fair { weight, min, max } => {
                    let maximum = max
                        .map(|b| b.resolve(cluster))
                        .unwrap_or(parent_maximum)
                        .component_min(parent_maximum);
                    let fraction = if sibling_weight > 0.0 {
                        weight.max(0.0) / sibling_weight
                    } else {
                        0.0
                    };
                    q.guaranteed = scale(parent_guaranteed, fraction).component_min(maximum);
                    q.maximum = maximum;
                    q.min_share = min.map(|b| b.resolve(cluster)).unwrap_or(Resource::ZERO);
                }
            }
        }
    }

    /// A queue by full path, or by short name when exactly one queue (one
    /// leaf, with `leaves_only`) has it. `Err(true)` when the short name is
    /// ambiguous, `Err(false)` when nothing has it.
    pub fn find(&self, name: &str, leaves_only: bool) -> Result<QueueIdx, bool> {
        if let Some(&idx) = self.by_path.get(name) {
            return Ok(idx);
        }
        let mut found = self
            .queues
            .iter()
            .enumerate()
            .filter(|(_, q)| !leaves_only || q.is_leaf())
            .filter(|(_, q)| q.path.rsplit('.').next() == Some(name))
            .map(|(i, _)| i);
        let first = found.next().ok_or(false)?;
        match found.next() {
            None => Ok(first),
            Some(_) => Err(true),
        }
    }

    /// The path from a queue up to (and including) the root.
    pub fn ancestry(&self, idx: QueueIdx) -> Vec<QueueIdx> {
        self.path_up(idx).collect()
    }

    /// The same path, without allocating.
    pub fn path_up(&self, idx: QueueIdx) -> impl Iterator<Item = QueueIdx> + '_ {
        std::iter::successors(Some(idx), move |&i| self.queues[i].parent)
    }

    /// The first application in serving order, with its leaf.
    pub fn first_candidate(&self) -> Option<(QueueIdx, ApplicationAttemptId)> {
        let mut q = ROOT;
        loop {
            let queue = &self.queues[q];
            if queue.parked {
                return None;
            }
            if queue.is_leaf() {
                return queue.active_apps.first().map(|&(_, a)| (q, a));
            }
            let &(_, child) = queue.active_children.first()?;
            q = child;
        }
    }

    /// `a > b` under the tree's resource calculator: memory only, or any
    /// component for the dominant resource calculator.
    pub fn greater(&self, a: Resource, b: Resource) -> bool {
        match self.calculator() {
            ResourceCalculatorKind::Memory => a.memory_mb > b.memory_mb,
            ResourceCalculatorKind::Dominant => a.memory_mb > b.memory_mb || a.vcores > b.vcores,
        }
    }

    /// `a` as a fraction of `of` under the tree's calculator (dominant:
    /// the larger of the two component fractions); `None` when `of` is
    /// zero in the compared components.
    pub fn ratio(&self, a: Resource, of: Resource) -> Option<f64> {
        let mem = (of.memory_mb > 0).then(|| a.memory_mb as f64 / of.memory_mb as f64);
        match self.calculator() {
            ResourceCalculatorKind::Memory => mem,
            ResourceCalculatorKind::Dominant => {
                let vc = (of.vcores > 0).then(|| f64::from(a.vcores) / f64::from(of.vcores));
                match (mem, vc) {
                    (Some(m), Some(v)) => Some(m.max(v)),
                    (m, v) => m.or(v),
                }
            }
        }
    }

    /// Where queue `idx` sorts among its siblings now.
    pub fn queue_key(&self, idx: QueueIdx) -> SortKey {
        let q = &self.queues[idx];
        match self.kind() {
            SchedulerKind::Fifo => SortKey::default(),
            SchedulerKind::Capacity => match self.ratio(q.used, q.guaranteed) {
                Some(r) => SortKey::new(share_key(r), 0),
                None => SortKey::new(UNENTITLED, q.used.memory_mb),
            },
            SchedulerKind::Fair => {
                let weight = match q.settings.share {
                    QueueShare::Fair { weight, .. } => weight,
                    QueueShare::Capacity { .. } => 1.0,
                };
                let dominant = q
                    .parent
                    .map(|p| self.queues[p].settings.ordering == AppOrdering::Drf)
                    .unwrap_or(false);
                fair_key(
                    q.used,
                    q.min_share,
                    weight,
                    if dominant { Some(self.cluster) } else { None },
                )
            }
        }
    }

    /// Where an application sorts within its leaf.
    pub fn app_key(
        &self,
        leaf: QueueIdx,
        priority: i32,
        submission_seq: u64,
        used: Resource,
    ) -> SortKey {
        let seq = i64::try_from(submission_seq).unwrap_or(i64::MAX);
        match self.queues[leaf].settings.ordering {
            AppOrdering::Fifo => SortKey::new(-i64::from(priority), seq),
            AppOrdering::Fair => SortKey::new(used.memory_mb, seq),
            AppOrdering::Drf => {
                let cluster = self.cluster;
                let share = dominant_share(used, cluster);
                SortKey::new(share_key(share), seq)
            }
        }
    }

    /// Whether queue keys change with usage (they do for capacity and
    /// fair; FIFO's single queue never moves).
    pub fn queue_keys_follow_usage(&self) -> bool {
        self.kind() != SchedulerKind::Fifo
    }

    /// Files or unfiles `idx` and its ancestors in their parents' serving
    /// sets according to their current demand and keys.
    pub fn refresh_path(&mut self, mut idx: QueueIdx) {
        while let Some(parent) = self.queues[idx].parent {
            self.refile(idx, parent);
            idx = parent;
        }
    }

    /// Re-files every queue (after entitlements changed).
    pub fn refresh_all(&mut self) {
        // Children before parents, so a parent sees its final demand.
        for idx in (1..self.queues.len()).rev() {
            if let Some(parent) = self.queues[idx].parent {
                self.refile(idx, parent);
            }
        }
    }

    /// Puts `idx` in its parent's serving set under its current key if it
    /// has demand, and takes it out otherwise.
    fn refile(&mut self, idx: QueueIdx, parent: QueueIdx) {
        let want = self.queues[idx].has_demand().then(|| self.queue_key(idx));
        let have = self.queues[idx].key_in_parent;
        if want == have {
            return;
        }
        let set = &mut self.queues[parent].active_children;
        if let Some(old) = have {
            set.remove(&(old, idx));
        }
        if let Some(new) = want {
            set.insert((new, idx));
        }
        self.queues[idx].key_in_parent = want;
    }

    /// Adds `delta` to the usage of `leaf` and its ancestors (subtracts
    /// when `add` is false), and to the user's usage in the leaf.
    pub fn charge(&mut self, leaf: QueueIdx, user: &str, delta: Resource, add: bool, am: bool) {
        let mut next = Some(leaf);
        while let Some(idx) = next {
            let q = &mut self.queues[idx];
            next = q.parent;
            if add {
                q.used += delta;
            } else {
                q.used -= delta;
            }
        }
        let q = &mut self.queues[leaf];
        if am {
            if add {
                q.am_used += delta;
            } else {
                q.am_used -= delta;
            }
        }
        if let Some(u) = q.users.get_mut(user) {
            if add {
                u.used += delta;
                if am {
                    u.am_used += delta;
                }
            } else {
                u.used -= delta;
                if am {
                    u.am_used -= delta;
                }
            }
        }
    }

    /// The first queue from `leaf` up whose maximum `ask` would exceed,
    /// if any.
    pub fn over_maximum(&self, leaf: QueueIdx, ask: Resource) -> Option<QueueIdx> {
        self.path_up(leaf)
            .find(|&idx| self.greater(self.queues[idx].used + ask, self.queues[idx].maximum))
    }

    /// The capacity scheduler's user limit in `leaf`, as Hadoop's
    /// `UsersManager.computeUserLimit` has it: the queue's current capacity
    /// (its guarantee, at least one minimum allocation, while usage is
    /// below it; else usage plus one minimum allocation) split evenly among
    /// the users wanting resources, at least `minimum-user-limit-percent`
    /// of it, at most `user-limit-factor` times the guarantee (without a
    /// factor, the queue's maximum), rounded up to the minimum allocation.
    /// A user whose usage is not above this limit may take one more
    /// container.
    pub fn user_limit(&self, leaf: QueueIdx, minimum: Resource) -> Resource {
        let q = &self.queues[leaf];
        let capacity = q.guaranteed.component_max(minimum);
        let current = if self.greater(capacity, q.used) {
            capacity
        } else {
            q.used + minimum
        };
        let users = q.active_users.max(1) as f64;
        let even = scale(current, 1.0 / users);
        let floor = scale(current, q.settings.minimum_user_limit_percent / 100.0);
        let mut limit = even.component_max(floor);
        let cap = match q.settings.user_limit_factor {
            Some(f) => scale(capacity, f).component_min(q.maximum),
            None => q.maximum,
        };
        limit = limit.component_min(cap);
        round_up(limit, minimum)
    }

    /// Whether an AM container of `ask` for `user` fits the leaf's AM
    /// limits (a queue without a running AM always takes one, as Hadoop
    /// activates at least one application).
    ///
    /// The share applies to what the queue may use now. Under the capacity
    /// scheduler that is, as in Hadoop, the larger of its guarantee and its
    /// current limit: its usage plus the room left below every maximum on
    /// its path, so an elastic queue on an idle cluster may start more AMs
    /// than its guarantee alone would allow; the limit is rounded up to the
    /// minimum allocation. Each user's AMs are held, as in Hadoop's
    /// `getUserAMResourceLimitPerPartition`, to the share of the queue's
    /// guarantee times the user's part of it (the larger of
    /// `minimum-user-limit-percent` and one over the active users) times
    /// `user-limit-factor`, never more than the queue's AM limit. Under the
    /// fair scheduler the limit is the share of the queue's fair share.
    pub fn am_fits(&self, leaf: QueueIdx, user: &str, ask: Resource, minimum: Resource) -> bool {
        let q = &self.queues[leaf];
        let Some(share) = q.settings.max_am_share else {
            return true;
        };
        if q.am_used.is_zero() {
            return true;
        }
        match self.kind() {
            SchedulerKind::Capacity => {
                let usable = q.guaranteed.component_max(self.current_limit(leaf));
                let queue_limit = round_up(scale(usable, share), minimum);
                if self.greater(q.am_used + ask, queue_limit) {
                    return false;
                }
                let users = q.active_users.max(1) as f64;
                let part = (q.settings.minimum_user_limit_percent / 100.0)
                    .max(1.0 / users)
                    .min(1.0);
                let user_limit = match q.settings.user_limit_factor {
                    Some(factor) => round_up(
                        scale(round_up(q.guaranteed, minimum), share * part * factor),
                        minimum,
                    )
                    .component_min(queue_limit),
                    None => queue_limit,
                };
                let user_am = q.users.get(user).map_or(Resource::ZERO, |u| u.am_used);
                !self.greater(user_am + ask, user_limit)
            }
            SchedulerKind::Fifo | SchedulerKind::Fair => {
                !self.greater(q.am_used + ask, scale(q.guaranteed, share))
            }
        }
    }

    /// What `leaf` could hold at most right now: its usage plus the
    /// smallest room left below a maximum on its path (root's maximum is
    /// the cluster, so this never exceeds what is free).
    fn current_limit(&self, leaf: QueueIdx) -> Resource {
        let room = self
            .path_up(leaf)
            .map(|idx| {
                let a = &self.queues[idx];
                a.maximum.saturating_sub_non_negative(a.used)
            })
            .reduce(Resource::component_min)
            .unwrap_or(Resource::ZERO);
        self.queues[leaf].used.saturating_add(room)
    }

    /// Whether one more application may run in `leaf` (every queue on the
    /// path below its `max_running_apps`).
    pub fn may_run(&self, leaf: QueueIdx) -> bool {
        self.path_up(leaf).all(|idx| {
            let q = &self.queues[idx];
            q.settings
                .max_running_apps
                .is_none_or(|max| q.running_apps < max)
        })
    }

    pub fn count_running(&mut self, leaf: QueueIdx, add: bool) {
        let mut next = Some(leaf);
        while let Some(idx) = next {
            let q = &mut self.queues[idx];
            next = q.parent;
            if add {
                q.running_apps += 1;
            } else {
                q.running_apps = q.running_apps.saturating_sub(1);
            }
        }
    }

    /// A user's limit on running applications (fair scheduler).
    pub fn user_max_running(&self, user: &str) -> Option<usize> {
        self.config
            .user_max_running_apps
            .get(user)
            .copied()
            .or(self.config.user_max_running_apps_default)
    }
}

fn validate_queue(q: &QueueConfig, path: &str) -> Result<(), String> {
    if q.name.is_empty() || q.name.contains('.') || q.name.chars().any(char::is_whitespace) {
        return Err(format!(
            "queue {path}: the name '{}' must be non-empty without dots or spaces",
            q.name
        ));
    }
    match q.share {
        QueueShare::Capacity {
            capacity_pct,
            maximum_pct,
        } => {
            if !(0.0..=100.0).contains(&capacity_pct) || !(0.0..=100.0).contains(&maximum_pct) {
                return Err(format!(
                    "queue {path}: capacity {capacity_pct} and maximum capacity {maximum_pct} must be percentages"
                ));
            }
            if maximum_pct + 1e-9 < capacity_pct {
                return Err(format!(
                    "queue {path}: maximum capacity {maximum_pct} is below capacity {capacity_pct}"
                ));
            }
        }
        QueueShare::Fair { weight, .. } => {
            if !(weight >= 0.0 && weight.is_finite()) {
                return Err(format!("queue {path}: weight {weight} must be 0 or more"));
            }
        }
    }
    if let Some(share) = q.max_am_share {
        if !(0.0..=1.0).contains(&share) {
            return Err(format!(
                "queue {path}: the AM share {share} must be a fraction between 0 and 1"
            ));
        }
    }
    if let Some(f) = q.user_limit_factor {
        if !(f > 0.0 && f.is_finite()) {
            return Err(format!(
                "queue {path}: user limit factor {f} must be positive"
            ));
        }
    }
    if !(q.minimum_user_limit_percent > 0.0 && q.minimum_user_limit_percent <= 100.0) {
        return Err(format!(
            "queue {path}: minimum user limit percent {} must be in (0, 100]",
            q.minimum_user_limit_percent
        ));
    }
    if !q.children.is_empty() && q.ordering == AppOrdering::Fifo {
        if let QueueShare::Fair { .. } = q.share {
            return Err(format!(
                "queue {path}: a parent queue cannot use the fifo policy"
            ));
        }
    }
    Ok(())
}

/// The fair scheduler's comparator as a key: queues below their minimum
/// share first (least served relative to it first), then by usage over
/// weight. With `cluster` given the shares are dominant shares (DRF).
fn fair_key(
    used: Resource,
    min_share: Resource,
    weight: f64,
    cluster: Option<Resource>,
) -> SortKey {
    let (usage, min) = match cluster {
        Some(c) => (dominant_share(used, c), dominant_share(min_share, c)),
        None => (used.memory_mb as f64, min_share.memory_mb as f64),
    };
    if usage < min && min > 0.0 {
        return SortKey::new(0, share_key(usage / min));
    }
    if weight <= 0.0 {
        return SortKey::new(1, UNENTITLED);
    }
    let normalized = usage / weight;
    let minor = match cluster {
        Some(_) => share_key(normalized),
        None => (normalized * 1000.0).min(UNENTITLED as f64) as i64,
    };
    SortKey::new(1, minor)
}

fn dominant_share(used: Resource, cluster: Resource) -> f64 {
    let m = if cluster.memory_mb > 0 {
        used.memory_mb as f64 / cluster.memory_mb as f64
    } else {
        0.0
    };
    let v = if cluster.vcores > 0 {
        f64::from(used.vcores) / f64::from(cluster.vcores)
    } else {
        0.0
    };
    m.max(v)
}

fn share_key(share: f64) -> i64 {
    let scaled = (share * SHARE_SCALE).round();
    if scaled.is_nan() {
        return UNENTITLED;
    }
    (scaled as i64).clamp(i64::MIN / 2, UNENTITLED - 1)
}

/// `r` times `f`, rounded down, never negative.
pub(crate) fn scale(r: Resource, f: f64) -> Resource {
    let f = if f.is_finite() { f.max(0.0) } else { 0.0 };
    Resource::new(
        (r.memory_mb as f64 * f).floor() as i64,
        (f64::from(r.vcores) * f).floor() as i32,
    )
}

/// Rounds each component up to a multiple of the minimum allocation.
fn round_up(r: Resource, step: Resource) -> Resource {
    let up = |v: i64, s: i64| {
        if s <= 0 || v <= 0 {
            v.max(0)
        } else {
            v.div_euclid(s).saturating_add(i64::from(v % s != 0)) * s
        }
    };
    Resource::new(
        up(r.memory_mb, step.memory_mb),
        i32::try_from(up(i64::from(r.vcores), i64::from(step.vcores))).unwrap_or(i32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue_config::QueueConfig;

    fn cap(c: f64, m: f64) -> QueueShare {
        QueueShare::Capacity {
            capacity_pct: c,
            maximum_pct: m,
        }
    }

    #[test]
    fn absolute_capacities_multiply_down_the_tree() {
        let config = QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root: QueueConfig::parent(
                "root",
                cap(100.0, 100.0),
                vec![
                    QueueConfig::parent(
                        "a",
                        cap(60.0, 80.0),
                        vec![
                            QueueConfig::leaf("a1", cap(50.0, 100.0)),
                            QueueConfig::leaf("a2", cap(50.0, 50.0)),
                        ],
                    ),
                    QueueConfig::leaf("b", cap(40.0, 100.0)),
                ],
            ),
            ..QueueTreeConfig::fifo()
        };
        let tree = QueueTree::build(config, Resource::new(100_000, 100)).expect("valid");
        let q = |p: &str| &tree.queues[tree.by_path[p]];
        assert_eq!(q("root.a").guaranteed, Resource::new(60_000, 60));
        assert_eq!(q("root.a").maximum, Resource::new(80_000, 80));
        assert_eq!(q("root.a.a1").guaranteed, Resource::new(30_000, 30));
        assert_eq!(q("root.a.a1").maximum, Resource::new(80_000, 80));
        assert_eq!(q("root.a.a2").maximum, Resource::new(40_000, 40));
        assert_eq!(q("root.b").guaranteed, Resource::new(40_000, 40));
    }

    #[test]
    fn user_limit_follows_hadoop_shape() {
        let mut leaf = QueueConfig::leaf("a", cap(50.0, 100.0));
        leaf.minimum_user_limit_percent = 25.0;
        leaf.user_limit_factor = Some(2.0);
        let config = QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root: QueueConfig::parent("root", cap(100.0, 100.0), vec![leaf]),
            ..QueueTreeConfig::fifo()
        };
        let mut tree = QueueTree::build(config, Resource::new(100 * 1024, 100)).expect("valid");
        let a = tree.by_path["root.a"];
        let min = Resource::new(1024, 1);
        // Below the guarantee: the guarantee split among active users.
        tree.queues[a].active_users = 1;
        assert_eq!(tree.user_limit(a, min).memory_mb, 50 * 1024);
        tree.queues[a].active_users = 2;
        assert_eq!(tree.user_limit(a, min).memory_mb, 25 * 1024);
        // Many users: the minimum user limit percent is the floor.
        tree.queues[a].active_users = 10;
        assert_eq!(tree.user_limit(a, min).memory_mb, 13 * 1024);
        // One user above the guarantee grows, capped at factor × guarantee.
        tree.queues[a].active_users = 1;
        tree.queues[a].used = Resource::new(99 * 1024, 99);
        assert_eq!(tree.user_limit(a, min).memory_mb, 100 * 1024);
    }
}
