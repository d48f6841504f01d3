//! [`Scheduler::check_invariants`]: a full consistency check of the state,
//! run after every step by the tests and the simulator.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ApplicationAttemptId, NodeId, Resource};

use crate::error::InvariantViolation;
use crate::scheduler::{Scheduler, MAX_CONTAINER_SEQUENCE};

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
    /// * the serving order holds exactly the attempts with outstanding
    ///   asks, and the selection indexes exactly the nodes taking
    ///   containers, under the keys they were filed with.
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
            ensure!(
                id.epoch() == self.config.epoch,
                "container {id} has epoch {} but the scheduler runs epoch {}",
                id.epoch(),
                self.config.epoch
            );
            ensure!(
                app.is_some_and(|a| id.sequence() >= 1 && id.sequence() < a.next_sequence),
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
        let mut queue_sums: BTreeMap<&str, (Resource, BTreeSet<ApplicationAttemptId>)> =
            BTreeMap::new();
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
            ensure!(
                app.order_entry.is_some() == app.asks.is_active(),
                "attempt {attempt} is {} the serving order but {} outstanding asks",
                if app.order_entry.is_some() {
                    "in"
                } else {
                    "not in"
                },
                if app.asks.is_active() {
                    "has"
                } else {
                    "has no"
                }
            );
            if let Some(entry) = app.order_entry {
                ensure!(
                    entry.2 == *attempt && self.order.contains(&entry),
                    "attempt {attempt} is filed in the serving order under a stale entry"
                );
            }
            let q = queue_sums.entry(app.queue.as_str()).or_default();
            q.0 += app.used;
            q.1.insert(*attempt);
        }
        ensure!(
            self.order.len()
                == self
                    .apps
                    .values()
                    .filter(|a| a.order_entry.is_some())
                    .count(),
            "the serving order holds {} entries for fewer active attempts",
            self.order.len()
        );
        ensure!(
            queue_sums.len() == self.queues.len(),
            "{} queues are known but attempts use {}",
            self.queues.len(),
            queue_sums.len()
        );
        for (name, queue) in &self.queues {
            let Some((sum, members)) = queue_sums.get(name.as_str()) else {
                return Err(InvariantViolation(format!("queue {name} has no attempts")));
            };
            ensure!(
                queue.used == *sum,
                "queue {name} uses {} but its attempts add up to {sum}",
                queue.used
            );
            ensure!(
                &queue.apps == members,
                "queue {name} lists other attempts than those in it"
            );
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
