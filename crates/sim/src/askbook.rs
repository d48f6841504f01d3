//! What a simulated ApplicationMaster keeps of its requests, the way
//! Hadoop's `AMRMClient` does: the table it wants (`desired`: unassigned
//! tasks per key and place), its picture of the RM's table (`mirror`:
//! what it last sent, minus what allocations consumed by the protocol's
//! rules), and the rows to send on the next allocate call (those where
//! the two differ). Tasks waiting for a container are indexed by host,
//! rack and key so an allocation goes to the most local task.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::Resource;
use spindle_scheduler::{Locality, ResourceAsk, ANY};

use crate::model::TaskLocality;

/// The part of a request scheduled as one unit: priority and normalized
/// capability (the simulator never sets allocation request ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReqKey {
    pub priority: i32,
    pub memory_mb: i64,
    pub vcores: i32,
}

impl ReqKey {
    pub fn new(priority: i32, normalized: Resource) -> ReqKey {
        ReqKey {
            priority,
            memory_mb: normalized.memory_mb,
            vcores: normalized.vcores,
        }
    }

    pub fn resource(&self) -> Resource {
        Resource::new(self.memory_mb, self.vcores)
    }
}

type Row = (ReqKey, String);

#[derive(Debug, Default, Clone)]
struct Waiting {
    all: BTreeSet<usize>,
    anywhere: BTreeSet<usize>,
    by_host: BTreeMap<String, BTreeSet<usize>>,
    by_rack: BTreeMap<String, BTreeSet<usize>>,
}

fn take_first(set: &mut BTreeSet<usize>) -> Option<usize> {
    set.pop_first()
}

fn remove_from(map: &mut BTreeMap<String, BTreeSet<usize>>, name: &str, task: usize) {
    if let Some(s) = map.get_mut(name) {
        s.remove(&task);
        if s.is_empty() {
            map.remove(name);
        }
    }
}

/// One attempt's request bookkeeping.
#[derive(Debug, Default, Clone)]
pub struct AskBook {
    desired: BTreeMap<Row, u32>,
    mirror: BTreeMap<Row, u32>,
    dirty: BTreeSet<Row>,
    waiting: BTreeMap<ReqKey, Waiting>,
    /// Where each waiting task wants to be, by task index.
    places: BTreeMap<usize, (ReqKey, TaskLocality)>,
}

fn rows_of(locality: &TaskLocality) -> Vec<&str> {
    match locality {
        TaskLocality::Any => vec![ANY],
        TaskLocality::Rack(r) => vec![r.as_str(), ANY],
        TaskLocality::Host { host, rack } => vec![host.as_str(), rack.as_str(), ANY],
    }
}

fn bump(map: &mut BTreeMap<Row, u32>, row: Row, up: bool) {
    if up {
        *map.entry(row).or_insert(0) += 1;
    } else if let Some(c) = map.get_mut(&row) {
        *c = c.saturating_sub(1);
        if *c == 0 {
            map.remove(&row);
        }
    }
}

impl AskBook {
    /// Tasks waiting for a container.
    pub fn waiting(&self) -> usize {
        self.places.len()
    }

    /// A task now wants a container.
    pub fn add(&mut self, task: usize, key: ReqKey, locality: TaskLocality) {
        if self.places.contains_key(&task) {
            return;
        }
        for name in rows_of(&locality) {
            let row = (key, name.to_string());
            bump(&mut self.desired, row.clone(), true);
            self.dirty.insert(row);
        }
        let w = self.waiting.entry(key).or_default();
        w.all.insert(task);
        match &locality {
            TaskLocality::Any => {
                w.anywhere.insert(task);
            }
            TaskLocality::Rack(r) => {
                w.by_rack.entry(r.clone()).or_default().insert(task);
            }
            TaskLocality::Host { host, rack } => {
                w.by_host.entry(host.clone()).or_default().insert(task);
                w.by_rack.entry(rack.clone()).or_default().insert(task);
            }
        }
        self.places.insert(task, (key, locality));
    }

    /// A task no longer wants a container (it got one, or is cancelled).
    pub fn remove(&mut self, task: usize) -> bool {
        let Some((key, locality)) = self.places.remove(&task) else {
            return false;
        };
        for name in rows_of(&locality) {
            let row = (key, name.to_string());
            bump(&mut self.desired, row.clone(), false);
            self.dirty.insert(row);
        }
        if let Some(w) = self.waiting.get_mut(&key) {
            w.all.remove(&task);
            match &locality {
                TaskLocality::Any => {
                    w.anywhere.remove(&task);
                }
                TaskLocality::Rack(r) => remove_from(&mut w.by_rack, r, task),
                TaskLocality::Host { host, rack } => {
                    remove_from(&mut w.by_host, host, task);
                    remove_from(&mut w.by_rack, rack, task);
                }
            }
            if w.all.is_empty() {
                self.waiting.remove(&key);
            }
        }
        true
    }

    /// An allocation of `key` arrived at `locality` on a node of `host` in
    /// `rack`: the RM consumed its rows as the protocol says (node-local:
    /// host, rack and `*`; rack-local: rack and `*`; off-switch: `*`).
    /// Returns the waiting task it goes to: one that wants the host, else
    /// one that wants the rack, else one that wants nothing in particular,
    /// else the longest-known one; `None` if no task of that key waits.
    pub fn allocated(
        &mut self,
        key: ReqKey,
        locality: Locality,
        host: &str,
        rack: &str,
    ) -> Option<usize> {
        let consumed: &[&str] = match locality {
            Locality::NodeLocal => &[host, rack, ANY],
            Locality::RackLocal => &[rack, ANY],
            Locality::OffSwitch => &[ANY],
        };
        for name in consumed {
            let row = (key, (*name).to_string());
            bump(&mut self.mirror, row.clone(), false);
            self.dirty.insert(row);
        }
        let w = self.waiting.get_mut(&key)?;
        let task = w
            .by_host
            .get_mut(host)
            .and_then(take_first)
            .or_else(|| w.by_rack.get_mut(rack).and_then(take_first))
            .or_else(|| take_first(&mut w.anywhere))
            .or_else(|| w.all.first().copied())?;
        // Put it back so that `remove` takes it out of every index.
        match self.places.get(&task).map(|p| p.1.clone()) {
            Some(TaskLocality::Host { host: h, rack: r }) => {
                w.by_host.entry(h).or_default().insert(task);
                w.by_rack.entry(r).or_default().insert(task);
            }
            Some(TaskLocality::Rack(r)) => {
                w.by_rack.entry(r).or_default().insert(task);
            }
            Some(TaskLocality::Any) => {
                w.anywhere.insert(task);
            }
            None => {}
        }
        self.remove(task);
        Some(task)
    }

    /// The rows to send: every row where what is wanted differs from what
    /// the RM is believed to hold, with its new absolute count.
    pub fn updates(&mut self) -> Vec<ResourceAsk> {
        let mut out = Vec::new();
        for row in std::mem::take(&mut self.dirty) {
            let want = self.desired.get(&row).copied().unwrap_or(0);
            let held = self.mirror.get(&row).copied().unwrap_or(0);
            if want != held {
                out.push(ResourceAsk::new(
                    row.0.priority,
                    row.1.clone(),
                    row.0.resource(),
                    i32::try_from(want).unwrap_or(i32::MAX),
                ));
                if want == 0 {
                    self.mirror.remove(&row);
                } else {
                    self.mirror.insert(row, want);
                }
            }
        }
        // Hadoop sends `*` last; the order within one update does not
        // matter to the core, but it reads naturally in traces.
        out.sort_by(|a, b| {
            (a.priority, a.resource_name == ANY, &a.resource_name).cmp(&(
                b.priority,
                b.resource_name == ANY,
                &b.resource_name,
            ))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ReqKey {
        ReqKey::new(20, Resource::new(1024, 1))
    }

    fn host(h: &str, r: &str) -> TaskLocality {
        TaskLocality::Host {
            host: h.into(),
            rack: r.into(),
        }
    }

    fn rows(asks: &[ResourceAsk]) -> Vec<(String, i32)> {
        asks.iter()
            .map(|a| (a.resource_name.clone(), a.num_containers))
            .collect()
    }

    #[test]
    fn first_update_asks_for_every_place() {
        let mut b = AskBook::default();
        b.add(0, key(), host("h1", "/r1"));
        b.add(1, key(), host("h2", "/r1"));
        b.add(2, key(), TaskLocality::Any);
        assert_eq!(
            rows(&b.updates()),
            [
                ("/r1".to_string(), 2),
                ("h1".to_string(), 1),
                ("h2".to_string(), 1),
                ("*".to_string(), 3)
            ]
        );
        assert!(b.updates().is_empty(), "nothing changed");
    }

    #[test]
    fn node_local_allocation_needs_no_update() {
        let mut b = AskBook::default();
        b.add(0, key(), host("h1", "/r1"));
        b.add(1, key(), host("h2", "/r1"));
        b.updates();
        // The RM decremented h1, /r1 and * itself; the AM's wishes agree.
        assert_eq!(
            b.allocated(key(), Locality::NodeLocal, "h1", "/r1"),
            Some(0)
        );
        assert!(b.updates().is_empty());
        assert_eq!(b.waiting(), 1);
    }

    #[test]
    fn off_switch_allocation_cancels_the_stale_host_rows() {
        let mut b = AskBook::default();
        b.add(0, key(), host("h1", "/r1"));
        b.updates();
        // Lands elsewhere: only * was consumed by the RM, so the AM must
        // zero the host and rack rows it no longer needs.
        assert_eq!(
            b.allocated(key(), Locality::OffSwitch, "h9", "/r9"),
            Some(0)
        );
        assert_eq!(
            rows(&b.updates()),
            [("/r1".to_string(), 0), ("h1".to_string(), 0)]
        );
    }

    #[test]
    fn allocation_prefers_the_most_local_task() {
        let mut b = AskBook::default();
        b.add(0, key(), TaskLocality::Any);
        b.add(1, key(), TaskLocality::Rack("/r2".into()));
        b.add(2, key(), host("h3", "/r2"));
        b.updates();
        assert_eq!(
            b.allocated(key(), Locality::NodeLocal, "h3", "/r2"),
            Some(2)
        );
        assert_eq!(
            b.allocated(key(), Locality::RackLocal, "h4", "/r2"),
            Some(1)
        );
        assert_eq!(
            b.allocated(key(), Locality::OffSwitch, "h5", "/r5"),
            Some(0)
        );
        assert_eq!(b.allocated(key(), Locality::OffSwitch, "h5", "/r5"), None);
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn a_lost_task_is_asked_for_again() {
        let mut b = AskBook::default();
        b.add(0, key(), TaskLocality::Any);
        b.updates();
        assert_eq!(b.allocated(key(), Locality::OffSwitch, "h", "/r"), Some(0));
        assert!(b.updates().is_empty());
        b.add(0, key(), TaskLocality::Any);
        assert_eq!(rows(&b.updates()), [("*".to_string(), 1)]);
    }
}
