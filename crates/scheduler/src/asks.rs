//! One application attempt's resource request table and its locality rules.
//!
//! Rows are grouped by [`RequestKey`] (priority, allocation request id,
//! capability) and, within a key, by resource name: a host, a rack or `*`.
//! The table keeps only rows with a positive count; setting a row to 0
//! removes it, and a missing row means 0.
//!
//! The rules, as YARN's scheduler protocol defines them:
//!
//! * a container goes to a node only while `*` is positive for the key;
//! * node-local (on a host that was asked for) needs a positive count at
//!   the host and at the node's rack;
//! * rack-local needs a positive count at the node's rack, and that rack
//!   row must allow relaxation; a rack row that is positive but does not
//!   allow relaxation closes its whole rack except for hosts asked for by
//!   name;
//! * off-switch needs the `*` row to allow relaxation;
//! * a grant decrements the rows of the levels it used: node-local the
//!   host, the rack and `*`; rack-local the rack and `*`; off-switch `*`.
//!   Rows of other hosts and racks are left for the AM to adjust.
//!
//! So a row at 0 closes its own level only: a node whose host and rack
//! rows are used up can still get a container through `*` (off-switch)
//! while `*` is positive and relaxes, as in Hadoop. The seed's "nothing
//! more on that host / rack" holds for grants through those rows, and for
//! everything once `*` is 0 or strict.

use std::collections::BTreeMap;

use spindle_common::Resource;

use crate::input::ANY;
use crate::output::Locality;

/// The part of a request that is scheduled as a unit: rows with the same
/// key are the same kind of container at different locations. Ordered by
/// priority (lower number first), then allocation request id, then
/// capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    pub priority: i32,
    pub allocation_request_id: i64,
    pub memory_mb: i64,
    pub vcores: i32,
}

impl RequestKey {
    pub fn new(priority: i32, allocation_request_id: i64, capability: Resource) -> RequestKey {
        RequestKey {
            priority,
            allocation_request_id,
            memory_mb: capability.memory_mb,
            vcores: capability.vcores,
        }
    }

    /// The (normalized) size of each container of this key.
    pub fn capability(&self) -> Resource {
        Resource::new(self.memory_mb, self.vcores)
    }
}

/// The state of one row: how many containers are still wanted there and
/// whether locality may be relaxed past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskRow {
    pub count: u32,
    pub relax_locality: bool,
}

/// A validated, normalized row update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowUpdate {
    pub key: RequestKey,
    pub resource_name: String,
    pub row: AskRow,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct AskTable {
    keys: BTreeMap<RequestKey, BTreeMap<String, AskRow>>,
    rows: usize,
}

impl AskTable {
    /// Number of stored rows (all with a positive count).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// How many rows the table would hold after `updates`, without
    /// applying them.
    pub fn rows_after(&self, updates: &[RowUpdate]) -> usize {
        let mut after: BTreeMap<(RequestKey, &str), bool> = BTreeMap::new();
        for u in updates {
            after.insert((u.key, u.resource_name.as_str()), u.row.count > 0);
        }
        let mut rows = self.rows;
        for ((key, name), present) in after {
            let was = self.get(&key, name).is_some();
            match (was, present) {
                (false, true) => rows += 1,
                (true, false) => rows -= 1,
                _ => {}
            }
        }
        rows
    }

    /// Applies absolute row updates in order (a later update of the same
    /// row wins).
    pub fn apply(&mut self, updates: Vec<RowUpdate>) {
        for u in updates {
            if u.row.count == 0 {
                self.remove_row(&u.key, &u.resource_name);
            } else {
                let rows = self.keys.entry(u.key).or_default();
                if rows.insert(u.resource_name, u.row).is_none() {
                    self.rows += 1;
                }
            }
        }
    }

    fn remove_row(&mut self, key: &RequestKey, name: &str) {
        if let Some(rows) = self.keys.get_mut(key) {
            if rows.remove(name).is_some() {
                self.rows -= 1;
            }
            if rows.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    pub fn get(&self, key: &RequestKey, name: &str) -> Option<AskRow> {
        self.keys.get(key).and_then(|rows| rows.get(name)).copied()
    }

    fn count(&self, key: &RequestKey, name: &str) -> u32 {
        self.get(key, name).map_or(0, |r| r.count)
    }

    /// How many rows (resource names, `*` included) `key` has.
    pub fn rows_for(&self, key: &RequestKey) -> usize {
        self.keys.get(key).map_or(0, BTreeMap::len)
    }

    /// The `*` count of `key`: how many more containers it can get.
    pub fn any_count(&self, key: &RequestKey) -> u32 {
        self.count(key, ANY)
    }

    /// Keys that can still get containers (positive `*`), in serving order.
    pub fn active_keys(&self) -> Vec<RequestKey> {
        self.keys
            .iter()
            .filter(|(_, rows)| rows.get(ANY).is_some_and(|r| r.count > 0))
            .map(|(k, _)| *k)
            .collect()
    }

    /// Whether any key can still get containers.
    pub fn is_active(&self) -> bool {
        self.keys.values().any(|rows| rows.contains_key(ANY))
    }

    /// Resources still wanted: for each key, its `*` count times its
    /// capability.
    pub fn pending(&self) -> Resource {
        self.keys
            .iter()
            .map(|(k, rows)| {
                let n = rows.get(ANY).map_or(0, |r| r.count);
                k.capability()
                    .saturating_mul(i32::try_from(n).unwrap_or(i32::MAX))
            })
            .sum()
    }

    /// Every row, by key then resource name.
    pub fn iter(&self) -> impl Iterator<Item = (&RequestKey, &str, &AskRow)> {
        self.keys
            .iter()
            .flat_map(|(k, rows)| rows.iter().map(move |(name, row)| (k, name.as_str(), row)))
    }

    /// The named (non-`*`) rows of `key` whose count is positive.
    pub fn located_rows(&self, key: &RequestKey) -> impl Iterator<Item = (&str, &AskRow)> {
        self.keys
            .get(key)
            .into_iter()
            .flat_map(|rows| rows.iter())
            .filter(|(name, _)| name.as_str() != ANY)
            .map(|(name, row)| (name.as_str(), row))
    }

    /// At what locality `key` may get a container on a node of `host` in
    /// `rack`, capacity aside; `None` if it may not.
    pub fn locality_on(&self, key: &RequestKey, host: &str, rack: &str) -> Option<Locality> {
        let any = self.get(key, ANY)?;
        if any.count == 0 {
            return None;
        }
        let rack_row = self.get(key, rack).filter(|r| r.count > 0);
        if self.count(key, host) > 0 && rack_row.is_some() {
            return Some(Locality::NodeLocal);
        }
        if let Some(rack_row) = rack_row {
            // A strict rack row closes the rack to everything but the
            // hosts asked for by name, off-switch included.
            return rack_row.relax_locality.then_some(Locality::RackLocal);
        }
        any.relax_locality.then_some(Locality::OffSwitch)
    }

    /// Records a grant of one container of `key` at `locality` on a node
    /// of `host` in `rack`. Fails, changing nothing, if a row it must
    /// decrement is not positive (the caller checked `locality_on`, so
    /// that would be a bug).
    pub fn consume(
        &mut self,
        key: &RequestKey,
        locality: Locality,
        host: &str,
        rack: &str,
    ) -> Result<(), String> {
        let names: &[&str] = match locality {
            Locality::NodeLocal => &[host, rack, ANY],
            Locality::RackLocal => &[rack, ANY],
            Locality::OffSwitch => &[ANY],
        };
        for name in names {
            if self.count(key, name) == 0 {
                return Err(format!(
                    "{locality} grant for {key:?} on {host} ({rack}) with no outstanding count at '{name}'"
                ));
            }
        }
        for name in names {
            let now_zero = match self.keys.get_mut(key).and_then(|rows| rows.get_mut(*name)) {
                Some(row) => {
                    row.count -= 1;
                    row.count == 0
                }
                None => false,
            };
            if now_zero {
                self.remove_row(key, name);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pri: i32) -> RequestKey {
        RequestKey::new(pri, -1, Resource::new(1024, 1))
    }

    fn up(pri: i32, name: &str, count: u32, relax: bool) -> RowUpdate {
        RowUpdate {
            key: key(pri),
            resource_name: name.to_string(),
            row: AskRow {
                count,
                relax_locality: relax,
            },
        }
    }

    #[test]
    fn absolute_updates_and_row_counting() {
        let mut t = AskTable::default();
        let ups = vec![
            up(1, "h1", 1, true),
            up(1, "/r1", 1, true),
            up(1, "*", 1, true),
        ];
        assert_eq!(t.rows_after(&ups), 3);
        t.apply(ups);
        assert_eq!(t.rows(), 3);
        // Replace, cancel and re-add the same row in one update.
        let ups = vec![
            up(1, "h1", 5, true),
            up(1, "h1", 0, true),
            up(1, "*", 3, true),
        ];
        assert_eq!(t.rows_after(&ups), 2);
        t.apply(ups);
        assert_eq!(t.rows(), 2);
        assert_eq!(t.get(&key(1), "h1"), None);
        assert_eq!(t.any_count(&key(1)), 3);
        assert_eq!(t.pending(), Resource::new(3072, 3));
        t.apply(vec![up(1, "*", 0, true), up(1, "/r1", 0, true)]);
        assert_eq!(t.rows(), 0);
        assert!(!t.is_active());
        assert!(t.iter().next().is_none());
    }

    #[test]
    fn locality_rules() {
        let mut t = AskTable::default();
        t.apply(vec![
            up(1, "h1", 1, true),
            up(1, "/r1", 1, true),
            up(1, "*", 1, true),
        ]);
        assert_eq!(
            t.locality_on(&key(1), "h1", "/r1"),
            Some(Locality::NodeLocal)
        );
        assert_eq!(
            t.locality_on(&key(1), "h2", "/r1"),
            Some(Locality::RackLocal)
        );
        assert_eq!(
            t.locality_on(&key(1), "h3", "/r2"),
            Some(Locality::OffSwitch)
        );
        // A host row whose rack row is missing is not node-local: the node
        // is treated like any other node of its rack.
        assert_eq!(
            t.locality_on(&key(1), "h1", "/r9"),
            Some(Locality::OffSwitch)
        );

        // Strict: host h1 only.
        t.apply(vec![up(1, "/r1", 1, false), up(1, "*", 1, false)]);
        assert_eq!(
            t.locality_on(&key(1), "h1", "/r1"),
            Some(Locality::NodeLocal)
        );
        assert_eq!(t.locality_on(&key(1), "h2", "/r1"), None);
        assert_eq!(t.locality_on(&key(1), "h3", "/r2"), None);

        // Rack-strict: any node of /r1, nowhere else.
        t.apply(vec![up(1, "h1", 0, true), up(1, "/r1", 1, true)]);
        assert_eq!(
            t.locality_on(&key(1), "h2", "/r1"),
            Some(Locality::RackLocal)
        );
        assert_eq!(t.locality_on(&key(1), "h3", "/r2"), None);

        // Nothing at all once * is gone, whatever the other rows say.
        t.apply(vec![up(1, "*", 0, true), up(1, "h2", 4, true)]);
        assert_eq!(t.locality_on(&key(1), "h2", "/r1"), None);
        assert!(t.active_keys().is_empty());
    }

    #[test]
    fn consume_decrements_the_levels_used() {
        let mut t = AskTable::default();
        t.apply(vec![
            up(1, "h1", 1, true),
            up(1, "h2", 1, true),
            up(1, "/r1", 2, true),
            up(1, "*", 3, true),
        ]);
        assert_eq!(t.consume(&key(1), Locality::NodeLocal, "h1", "/r1"), Ok(()));
        assert_eq!(t.get(&key(1), "h1"), None);
        assert_eq!(t.get(&key(1), "/r1").map(|r| r.count), Some(1));
        assert_eq!(t.any_count(&key(1)), 2);
        assert_eq!(t.consume(&key(1), Locality::OffSwitch, "h9", "/r9"), Ok(()));
        assert_eq!(t.any_count(&key(1)), 1);
        assert_eq!(t.get(&key(1), "h2").map(|r| r.count), Some(1));
        // A grant the rows do not allow is refused and changes nothing.
        assert!(t
            .consume(&key(1), Locality::NodeLocal, "h9", "/r1")
            .is_err());
        assert_eq!(t.rows(), 3);
        assert_eq!(t.consume(&key(1), Locality::RackLocal, "h3", "/r1"), Ok(()));
        assert_eq!(t.any_count(&key(1)), 0);
        // The stale host row stays, as in the protocol: the AM cancels it.
        assert_eq!(t.rows(), 1);
        assert!(!t.is_active());
    }
}
