//! Maps of the state whose every change is remembered by application, so
//! that the state store's bookkeeping (`RmState::take_store_ops`) looks at
//! the applications a command touched instead of all of them.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationAttemptId, ApplicationId};

/// What a key belongs to.
pub(crate) trait OfApp {
    fn of_app(&self) -> ApplicationId;
}

impl OfApp for ApplicationId {
    fn of_app(&self) -> ApplicationId {
        *self
    }
}

impl OfApp for ApplicationAttemptId {
    fn of_app(&self) -> ApplicationId {
        self.app
    }
}

/// A `BTreeMap` that notes the application of every entry handed out for
/// change, inserted or removed. Reading notes nothing.
#[derive(Debug)]
pub(crate) struct Tracked<K, V> {
    map: BTreeMap<K, V>,
    changed: BTreeSet<ApplicationId>,
}

impl<K, V> Default for Tracked<K, V> {
    fn default() -> Self {
        Tracked {
            map: BTreeMap::new(),
            changed: BTreeSet::new(),
        }
    }
}

impl<K: Ord + OfApp, V> Tracked<K, V> {
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let entry = self.map.get_mut(key)?;
        self.changed.insert(key.of_app());
        Some(entry)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.changed.insert(key.of_app());
        self.map.insert(key, value)
    }

    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let gone = self.map.remove(key)?;
        self.changed.insert(key.of_app());
        Some(gone)
    }

    /// The applications changed since the last call.
    pub(crate) fn take_changed(&mut self) -> BTreeSet<ApplicationId> {
        std::mem::take(&mut self.changed)
    }
}
