//! [`Scheduler::check_invariants`]: a full consistency check of the state,
//! run after every step by the tests and the simulator.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ApplicationAttemptId, NodeId, Resource};

use crate::error::InvariantViolation;
use crate::scheduler::{Scheduler, MAX_CONTAINER_SEQUENCE};

/// A user's totals in a leaf: usage, applications, applications with
/// outstanding asks, AM usage.
type UserTotals = (Resource, usize, usize, Resource);

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(InvariantViolation(format!($($msg)+)));
        }
    };
}

impl Scheduler {
    /// Checks that:
    ///
    /// * every container is on a known node and of a known attempt, and
    ///   each node and attempt lists exactly its containers;
    /// * a node's usage is the sum of its containers', and is within its
    ///   capability (unless a capability update shrank it below usage);
    /// * an attempt's usage is the sum of its containers', a queue's the
    ///   sum of its attempts', the cluster's the sum of its nodes';
    /// * request tables hold only positive counts, within the row limit;
    /// * every queue's usage is the sum of its applications' (leaves) and
    ///   children's (parents); per-user and AM usage and running counts
    ///   likewise;
    /// * each leaf's serving order holds exactly its runnable attempts with
    ///   outstanding asks, each parent's exactly its children with demand,
    ///   all under their current keys; attempts over a running limit wait;
    /// * the selection indexes hold exactly the nodes taking containers,
    ///   under the keys they were filed with.
    ///
    /// That no container is granted beyond the count at its host, rack or
    /// `*` is enforced when it is granted (the grant decrements those
    /// rows, and fails on a row that is not positive).
    ///
    /// Costs O(state); meant for tests and simulations.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        self.check_containers()?;
        self.check_nodes()?;
        self.check_apps_and_queues()?;
        self.check_indexes()?;
        Ok(())
    }

    fn check_containers(&self) -> Result<(), InvariantViolation> {
        for (id, c) in &self.containers {
            let node = self.nodes.get(&c.node);
            ensure!(
                node.is_some(),
                "container {id} is on unknown node {}",
                c.node
            );
            ensure!(
                node.is_some_and(|n| n.containers.contains(id)),
                "node {} does not list its container {id}",
                c.node
            );
            let app = self.apps.get(&id.attempt);
            ensure!(
                app.is_some(),
                "container {id} belongs to unknown attempt {}",
                id.attempt
            );
            ensure!(
                app.is_some_and(|a| a.containers.contains(id)),
                "attempt {} does not list its container {id}",
                id.attempt
            );
            // Containers recovered after a restart keep an earlier epoch.
            ensure!(
                id.epoch() <= self.config.epoch,
                "container {id} has epoch {} but the scheduler runs epoch {}",
                id.epoch(),
                self.config.epoch
            );
            ensure!(
                id.epoch() < self.config.epoch
                    || app.is_some_and(|a| id.sequence() >= 1 && id.sequence() < a.next_sequence),
                "container {id} has a sequence number the attempt has not handed out"
            );
            ensure!(
                !c.resource.any_negative() && !c.resource.is_zero(),
                "container {id} has size {}",
                c.resource
            );
        }
        Ok(())
    }

    fn check_nodes(&self) -> Result<(), InvariantViolation> {
        let mut capacity = Resource::ZERO;
        let mut used = Resource::ZERO;
        for (id, node) in &self.nodes {
            let mut sum = Resource::ZERO;
            for c in &node.containers {
                let container = self.containers.get(c);
                ensure!(
                    container.is_some_and(|x| &x.node == id),
                    "node {id} lists container {c}, which is not live on it"
                );
                if let Some(x) = container {
                    sum += x.resource;
                }
            }
            ensure!(
                node.used == sum,
                "node {id} uses {} but its containers add up to {sum}",
                node.used
            );
            ensure!(
                node.over_capacity || node.used.fits_in(&node.capability),
                "node {id} uses {}, more than its capability {}",
                node.used,
                node.capability
            );
            ensure!(
                self.hosts.get(&id.host).is_some_and(|s| s.contains(id)),
                "node {id} missing from the host index"
            );
            ensure!(
                self.racks.get(&node.rack).is_some_and(|s| s.contains(id)),
                "node {id} missing from rack {}",
                node.rack
            );
            capacity += node.capability;
            used += node.used;
        }
        ensure!(
            self.capacity == capacity,
            "cluster capability {} but nodes add up to {capacity}",
            self.capacity
        );
        ensure!(
            self.used == used,
            "cluster usage {} but nodes add up to {used}",
            self.used
        );
        let grouped: usize = self.hosts.values().map(BTreeSet::len).sum();
        ensure!(
            grouped == self.nodes.len(),
            "host index holds {grouped} nodes, the cluster {}",
            self.nodes.len()
        );
        let racked: usize = self.racks.values().map(BTreeSet::len).sum();
        ensure!(
            racked == self.nodes.len(),
            "rack index holds {racked} nodes, the cluster {}",
            self.nodes.len()
        );
        Ok(())
    }

    fn check_apps_and_queues(&self) -> Result<(), InvariantViolation> {
        for (attempt, app) in &self.apps {
            let mut sum = Resource::ZERO;
            for c in &app.containers {
                ensure!(
                    c.attempt == *attempt,
                    "attempt {attempt} lists another attempt's container {c}"
                );
                let container = self.containers.get(c);
                ensure!(
                    container.is_some(),
                    "attempt {attempt} lists container {c}, which is not live"
                );
                if let Some(x) = container {
                    sum += x.resource;
                }
            }
            ensure!(
                app.used == sum,
                "attempt {attempt} uses {} but its containers add up to {sum}",
                app.used
            );
            ensure!(
                app.next_sequence >= 1 && app.next_sequence <= MAX_CONTAINER_SEQUENCE + 1,
                "attempt {attempt} has next container sequence {}",
                app.next_sequence
            );
            let mut rows = 0;
            for (key, name, row) in app.asks.iter() {
                ensure!(
                    row.count > 0,
                    "attempt {attempt} keeps a row with count 0 at {name} for {key:?}"
                );
                rows += 1;
            }
            ensure!(
                rows == app.asks.rows(),
                "attempt {attempt} counts {} request rows but holds {rows}",
                app.asks.rows()
            );
            ensure!(
                rows <= self.config.limits.max_asks_per_app,
                "attempt {attempt} holds {rows} request rows, over the limit"
            );
            let want = app.runnable && app.asks.is_active();
            ensure!(
                app.counted_active == want,
                "attempt {attempt} is {}counted among its user's active applications but is {}runnable with {} outstanding asks",
                if app.counted_active { "" } else { "not " },
                if app.runnable { "" } else { "not " },
                if app.asks.is_active() { "" } else { "no" }
            );
            ensure!(
                app.active_key.is_some() == want && !app.parked,
                "attempt {attempt} is {} its queue's serving order but is {}runnable with {} outstanding asks",
                if app.active_key.is_some() { "in" } else { "not in" },
                if app.runnable { "" } else { "not " },
                if app.asks.is_active() { "" } else { "no" }
            );
            if let Some(key) = app.active_key {
                let fresh = self
                    .tree
                    .app_key(app.leaf, app.priority, app.submission_seq, app.used);
                ensure!(
                    key == fresh
                        && self.tree.queues[app.leaf]
                            .active_apps
                            .contains(&(key, *attempt)),
                    "attempt {attempt} is filed in its queue's serving order under a stale key"
                );
            }
            let located = app.runnable && app.asks.is_active() && app.asks.located_rows_count() > 0;
            ensure!(
                located == self.located_apps.contains(attempt),
                "attempt {attempt} is {} the index of attempts with located asks",
                if located {
                    "missing from"
                } else {
                    "wrongly in"
                }
            );
            ensure!(
                app.runnable != self.waiting.contains(&(app.submission_seq, *attempt)),
                "attempt {attempt} is {}runnable but {} waiting",
                if app.runnable { "" } else { "not " },
                if app.runnable { "also" } else { "not" }
            );
            ensure!(
                self.tree
                    .queues
                    .get(app.leaf)
                    .is_some_and(|q| q.path == app.queue && q.is_leaf()),
                "attempt {attempt} names queue {} but is filed elsewhere",
                app.queue
            );
        }
        ensure!(
            self.located_apps.iter().all(|a| self.apps.contains_key(a)),
            "the index of attempts with located asks holds an unknown attempt"
        );
        let mut running_by_user: BTreeMap<String, usize> = BTreeMap::new();
        for app in self.apps.values().filter(|a| a.runnable) {
            *running_by_user.entry(app.user.clone()).or_default() += 1;
        }
        ensure!(
            running_by_user == self.running_by_user,
            "runnable attempts per user are {running_by_user:?} but {:?} are counted",
            self.running_by_user
        );
        ensure!(
            self.waiting.len() == self.apps.values().filter(|a| !a.runnable).count(),
            "{} attempts wait but fewer are not runnable",
            self.waiting.len()
        );
        self.check_tree()
    }

    fn check_tree(&self) -> Result<(), InvariantViolation> {
        let tree = &self.tree;
        let n = tree.queues.len();
        let mut used = vec![Resource::ZERO; n];
        let mut running = vec![0usize; n];
        let mut am = vec![Resource::ZERO; n];
        let mut members: Vec<BTreeSet<ApplicationAttemptId>> = vec![BTreeSet::new(); n];
        let mut users: Vec<BTreeMap<&str, UserTotals>> = vec![BTreeMap::new(); n];
        for (attempt, app) in &self.apps {
            members[app.leaf].insert(*attempt);
            let u = users[app.leaf].entry(app.user.as_str()).or_default();
            u.0 += app.used;
            u.1 += 1;
            if app.counted_active {
                u.2 += 1;
            }
            if let Some(c) = app.am_container.and_then(|c| self.containers.get(&c)) {
                am[app.leaf] += c.resource;
                u.3 += c.resource;
            }
            for idx in tree.ancestry(app.leaf) {
                used[idx] += app.used;
                if app.runnable {
                    running[idx] += 1;
                }
            }
        }
        for (idx, q) in tree.queues.iter().enumerate() {
            let path = &q.path;
            ensure!(!q.parked, "queue {path} is still parked after a pass");
            ensure!(
                q.used == used[idx],
                "queue {path} uses {} but its applications add up to {}",
                q.used,
                used[idx]
            );
            ensure!(
                q.running_apps == running[idx],
                "queue {path} counts {} running applications, found {}",
                q.running_apps,
                running[idx]
            );
            if q.is_leaf() {
                ensure!(
                    q.apps == members[idx],
                    "queue {path} lists other attempts than those in it"
                );
                ensure!(
                    q.am_used == am[idx],
                    "queue {path} counts {} for AMs, their containers hold {}",
                    q.am_used,
                    am[idx]
                );
                let listed: BTreeMap<&str, UserTotals> = q
                    .users
                    .iter()
                    .map(|(u, s)| (u.as_str(), (s.used, s.apps, s.active_apps, s.am_used)))
                    .collect();
                ensure!(
                    listed == users[idx],
                    "queue {path} keeps per-user totals {listed:?}, expected {:?}",
                    users[idx]
                );
                let active_users = listed.values().filter(|s| s.2 > 0).count();
                ensure!(
                    q.active_users == active_users,
                    "queue {path} counts {} active users, found {active_users}",
                    q.active_users
                );
                let active = self
                    .apps
                    .iter()
                    .filter(|(_, a)| a.leaf == idx && a.active_key.is_some())
                    .count();
                ensure!(
                    q.active_apps.len() == active,
                    "queue {path} serves {} applications, {active} are active",
                    q.active_apps.len()
                );
            } else {
                ensure!(
                    q.apps.is_empty() && q.active_apps.is_empty(),
                    "parent queue {path} holds applications"
                );
            }
            let demand = !q.active_apps.is_empty() || !q.active_children.is_empty();
            if let Some(parent) = q.parent {
                let want = demand.then(|| tree.queue_key(idx));
                ensure!(
                    q.key_in_parent == want,
                    "queue {path} is filed under {:?}, expected {want:?}",
                    q.key_in_parent
                );
                if let Some(k) = want {
                    ensure!(
                        tree.queues[parent].active_children.contains(&(k, idx)),
                        "queue {path} is missing from its parent's serving order"
                    );
                }
            }
            for &(k, child) in &q.active_children {
                ensure!(
                    tree.queues
                        .get(child)
                        .is_some_and(|c| c.parent == Some(idx) && c.key_in_parent == Some(k)),
                    "queue {path} serves a child under a stale key"
                );
            }
        }
        Ok(())
    }

    fn check_indexes(&self) -> Result<(), InvariantViolation> {
        let mut expected: BTreeSet<(crate::policy::SortKey, NodeId)> = BTreeSet::new();
        for (id, node) in &self.nodes {
            ensure!(
                node.index_key.is_some() == node.takes_containers(),
                "node {id} is {} the selection index but {} containers",
                if node.index_key.is_some() {
                    "in"
                } else {
                    "not in"
                },
                if node.takes_containers() {
                    "takes"
                } else {
                    "takes no"
                }
            );
            if let Some(k) = node.index_key {
                expected.insert((k, id.clone()));
                ensure!(
                    self.rack_index
                        .get(&node.rack)
                        .is_some_and(|s| s.contains(&(k, id.clone()))),
                    "node {id} missing from the selection index of rack {}",
                    node.rack
                );
            }
        }
        ensure!(
            self.index == expected,
            "the selection index holds {} entries, expected {}",
            self.index.len(),
            expected.len()
        );
        ensure!(
            self.told_schedulable == self.index.len(),
            "the selection policy was last told of {} schedulable nodes, but {} are indexed",
            self.told_schedulable,
            self.index.len()
        );
        let racked: usize = self.rack_index.values().map(BTreeSet::len).sum();
        ensure!(
            racked == expected.len(),
            "rack selection indexes hold {racked} entries, expected {}",
            expected.len()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::Scheduler;
    use spindle_common::Resource;

    /// Two users' applications running containers in a capacity queue, on two
    /// nodes; the state is consistent.
    fn running() -> Scenario {
        let mut s = Scenario::new();
        for line in [
            "config scheduler=capacity",
            "queue root.a capacity=60 am=0.5",
            "queue root.b capacity=40",
            "node n1 rack=/r1 mem=8192 vcores=8",
            "node n2 rack=/r2 mem=8192 vcores=8",
            "app a1 queue=a user=u",
            "app a2 queue=a user=v",
            "ask a1 pri=0 mem=1024 *:1",
            "ask a2 pri=0 mem=1024 *:1",
            "schedule",
            "ask a1 pri=1 mem=1024 *:2",
            "ask a2 pri=1 mem=1024 *:5",
            "schedule",
        ] {
            if let Err(e) = s.step(line) {
                panic!("{line}: {e}\n{}", s.trace());
            }
        }
        s
    }

    /// Corrupts a fresh consistent state with `corrupt` and returns what
    /// `check_invariants` says about it.
    fn violation(corrupt: impl FnOnce(&mut Scheduler)) -> String {
        let mut s = running();
        let scheduler = s.scheduler_mut().expect("a scheduler");
        scheduler.check_invariants().expect("consistent before");
        corrupt(scheduler);
        match scheduler.check_invariants() {
            Ok(()) => panic!("the corrupted state passed the invariants"),
            Err(v) => v.to_string(),
        }
    }

    fn leaf(s: &Scheduler, path: &str) -> usize {
        s.tree.by_path[path]
    }

    #[test]
    fn a_queue_whose_usage_disagrees_with_its_applications_is_caught() {
        let v = violation(|s| {
            let a = leaf(s, "root.a");
            s.tree.queues[a].used += Resource::new(1024, 1);
        });
        assert!(v.contains("queue root.a uses"), "{v}");
    }

    #[test]
    fn a_users_am_usage_that_disagrees_with_its_am_containers_is_caught() {
        let v = violation(|s| {
            let a = leaf(s, "root.a");
            if let Some(u) = s.tree.queues[a].users.get_mut("v") {
                u.am_used = Resource::ZERO;
            }
        });
        assert!(v.contains("queue root.a keeps per-user totals"), "{v}");
    }

    #[test]
    fn a_wrong_active_user_count_is_caught() {
        let v = violation(|s| {
            let a = leaf(s, "root.a");
            s.tree.queues[a].active_users += 1;
        });
        assert!(v.contains("active users"), "{v}");
    }

    #[test]
    fn a_node_whose_usage_disagrees_with_its_containers_is_caught() {
        let v = violation(|s| {
            if let Some(node) = s.nodes.values_mut().next() {
                node.used = Resource::ZERO;
            }
        });
        assert!(v.contains("but its containers add up to"), "{v}");
    }

    #[test]
    fn a_container_its_node_does_not_list_is_caught() {
        let v = violation(|s| {
            if let Some(node) = s.nodes.values_mut().find(|n| !n.containers.is_empty()) {
                node.containers.clear();
            }
        });
        assert!(v.contains("does not list its container"), "{v}");
    }

    #[test]
    fn a_queue_left_parked_after_a_pass_is_caught() {
        let v = violation(|s| {
            let a = leaf(s, "root.a");
            s.tree.queues[a].parked = true;
        });
        assert!(v.contains("is still parked after a pass"), "{v}");
    }
}
