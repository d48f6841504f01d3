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
use std::ops::Bound;

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

/// The rows of one key: `*` kept apart, since nearly every decision reads
/// it, and the named (host and rack) rows by name.
#[derive(Debug, Clone, Default)]
struct KeyRows {
    any: Option<AskRow>,
    named: BTreeMap<String, AskRow>,
    /// Named rows with `relax_locality` off.
    strict_named: usize,
}

impl KeyRows {
    fn get(&self, name: &str) -> Option<&AskRow> {
        if name == ANY {
            self.any.as_ref()
        } else {
            self.named.get(name)
        }
    }

    fn len(&self) -> usize {
        self.named.len() + usize::from(self.any.is_some())
    }

    /// Every row by resource name, `*` in its place among the names.
    fn iter(&self) -> impl Iterator<Item = (&str, &AskRow)> {
        let before = self
            .named
            .range::<str, _>((Bound::Unbounded, Bound::Excluded(ANY)))
            .map(|(n, r)| (n.as_str(), r));
        let any = self.any.as_ref().map(|r| (ANY, r));
        let after = self
            .named
            .range::<str, _>((Bound::Excluded(ANY), Bound::Unbounded))
            .map(|(n, r)| (n.as_str(), r));
        before.chain(any).chain(after)
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct AskTable {
    keys: BTreeMap<RequestKey, KeyRows>,
    rows: usize,
    /// Rows naming a host or rack (not `*`).
    located: usize,
}

impl AskTable {
    /// Number of stored rows (all with a positive count).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of stored rows that name a host or a rack.
    pub fn located_rows_count(&self) -> usize {
        self.located
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
                continue;
            }
            let rows = self.keys.entry(u.key).or_default();
            let added = if u.resource_name == ANY {
                rows.any.replace(u.row).is_none()
            } else {
                let strict = !u.row.relax_locality;
                let old = rows.named.insert(u.resource_name, u.row);
                if old.is_some_and(|r| !r.relax_locality) {
                    rows.strict_named -= 1;
                }
                if strict {
                    rows.strict_named += 1;
                }
                let added = old.is_none();
                if added {
                    self.located += 1;
                }
                added
            };
            if added {
                self.rows += 1;
            }
        }
    }

    fn remove_row(&mut self, key: &RequestKey, name: &str) {
        if let Some(rows) = self.keys.get_mut(key) {
            let removed = if name == ANY {
                rows.any.take().is_some()
            } else {
                let removed = rows.named.remove(name);
                if removed.is_some_and(|r| !r.relax_locality) {
                    rows.strict_named -= 1;
                }
                if removed.is_some() {
                    self.located -= 1;
                }
                removed.is_some()
            };
            if removed {
                self.rows -= 1;
            }
            if rows.len() == 0 {
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
        self.keys.get(key).map_or(0, KeyRows::len)
    }

    /// The `*` count of `key`: how many more containers it can get.
    pub fn any_count(&self, key: &RequestKey) -> u32 {
        self.keys
            .get(key)
            .and_then(|rows| rows.any)
            .map_or(0, |r| r.count)
    }

    /// Keys that can still get containers (positive `*`), in serving order.
    pub fn active_keys(&self) -> impl Iterator<Item = RequestKey> + '_ {
        self.keys
            .iter()
            .filter(|(_, rows)| rows.any.is_some_and(|r| r.count > 0))
            .map(|(k, _)| *k)
    }

    /// Whether any key can still get containers.
    pub fn is_active(&self) -> bool {
        // Every stored row is positive, and the rows that are not located
        // are `*` rows.
        self.rows > self.located
    }

    /// Resources still wanted: for each key, its `*` count times its
    /// capability.
    pub fn pending(&self) -> Resource {
        self.keys
            .iter()
            .map(|(k, rows)| {
                let n = rows.any.map_or(0, |r| r.count);
                k.capability()
                    .saturating_mul(i32::try_from(n).unwrap_or(i32::MAX))
            })
            .sum()
    }

    /// Every row, by key then resource name.
    pub fn iter(&self) -> impl Iterator<Item = (&RequestKey, &str, &AskRow)> {
        self.keys
            .iter()
            .flat_map(|(k, rows)| rows.iter().map(move |(name, row)| (k, name, row)))
    }

    /// The named (non-`*`) rows of `key` whose count is positive.
    pub fn located_rows(&self, key: &RequestKey) -> impl Iterator<Item = (&str, &AskRow)> {
        self.keys
            .get(key)
            .into_iter()
            .flat_map(|rows| rows.named.iter())
            .map(|(name, row)| (name.as_str(), row))
    }

    /// Whether `key` may get a container on a node of `host` in `rack` at
    /// some locality (capacity aside): `locality_on(..).is_some()`, without
    /// looking names up when nothing is strict.
    pub fn may_place_on(&self, key: &RequestKey, host: &str, rack: &str) -> bool {
        let Some(rows) = self.keys.get(key) else {
            return false;
        };
        match rows.any {
            Some(any) if any.count > 0 && any.relax_locality && rows.strict_named == 0 => true,
            Some(any) if any.count > 0 => self.locality_on(key, host, rack).is_some(),
            _ => false,
        }
    }

    /// At what locality `key` may get a container on a node of `host` in
    /// `rack`, capacity aside; `None` if it may not.
    pub fn locality_on(&self, key: &RequestKey, host: &str, rack: &str) -> Option<Locality> {
        let rows = self.keys.get(key)?;
        let any = rows.any?;
        if any.count == 0 {
            return None;
        }
        if rows.named.is_empty() {
            return any.relax_locality.then_some(Locality::OffSwitch);
        }
        let rack_row = rows.named.get(rack).filter(|r| r.count > 0);
        if rack_row.is_some() && rows.named.get(host).is_some_and(|r| r.count > 0) {
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
            let now_zero = match self.keys.get_mut(key) {
                Some(rows) => {
                    let row = if *name == ANY {
                        rows.any.as_mut()
                    } else {
                        rows.named.get_mut(*name)
                    };
                    match row {
                        Some(row) => {
                            row.count -= 1;
                            row.count == 0
                        }
                        None => false,
                    }
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
        assert_eq!(t.located_rows_count(), 2);
        // Replace, cancel and re-add the same row in one update.
        let ups = vec![
            up(1, "h1", 5, true),
            up(1, "h1", 0, true),
            up(1, "*", 3, true),
        ];
        assert_eq!(t.rows_after(&ups), 2);
        t.apply(ups);
        assert_eq!(t.rows(), 2);
        assert_eq!(t.located_rows_count(), 1);
        assert_eq!(t.get(&key(1), "h1"), None);
        assert_eq!(t.any_count(&key(1)), 3);
        assert_eq!(t.pending(), Resource::new(3072, 3));
        t.apply(vec![up(1, "*", 0, true), up(1, "/r1", 0, true)]);
        assert_eq!(t.rows(), 0);
        assert_eq!(t.located_rows_count(), 0);
        assert!(!t.is_active());
        assert!(t.iter().next().is_none());
    }

    #[test]
    fn may_place_on_agrees_with_locality_on() {
        let mut t = AskTable::default();
        let places = [("h1", "/r1"), ("h2", "/r1"), ("h3", "/r2")];
        let agree = |t: &AskTable| {
            for (h, r) in places {
                assert_eq!(
                    t.may_place_on(&key(1), h, r),
                    t.locality_on(&key(1), h, r).is_some(),
                    "{h} {r}"
                );
            }
        };
        agree(&t);
        t.apply(vec![
            up(1, "h1", 1, true),
            up(1, "/r1", 1, true),
            up(1, "*", 1, true),
        ]);
        agree(&t);
        t.apply(vec![up(1, "/r1", 1, false), up(1, "*", 1, false)]);
        agree(&t);
        assert!(!t.may_place_on(&key(1), "h3", "/r2"));
        // Relaxing the rack row again, then dropping it, restores the fast
        // path's answer.
        t.apply(vec![up(1, "/r1", 1, true), up(1, "*", 1, true)]);
        agree(&t);
        assert!(t.may_place_on(&key(1), "h3", "/r2"));
        t.apply(vec![up(1, "/r1", 1, false)]);
        agree(&t);
        t.apply(vec![up(1, "/r1", 0, false)]);
        agree(&t);
        assert!(t.may_place_on(&key(1), "h3", "/r2"));
        t.apply(vec![up(1, "*", 0, true)]);
        agree(&t);
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
        assert!(t.active_keys().next().is_none());
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
        assert_eq!(t.located_rows_count(), 1);
        assert!(!t.is_active());
    }
}
