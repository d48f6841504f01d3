//! The cache cleanup's bookkeeping, as Hadoop's `ResourceRetentionSet`:
//! which PUBLIC and PRIVATE copies containers hold (a [`Lease`] each, kept
//! until the container ends), when each was last used, and which unheld
//! ones go, least recently used first, while those caches take more than
//! their target size. Application copies are not counted: they go with
//! their application.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::key::CacheKey;
use crate::cache_entry::Scope;

/// A use of a cached copy: while any lease of a copy lives, the cache
/// cleanup leaves it alone; the last one dropped marks it used now.
#[derive(Debug)]
pub struct Lease {
    retention: Weak<Retention>,
    key: Option<CacheKey>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let (Some(key), Some(retention)) = (self.key.take(), self.retention.upgrade()) {
            retention.release(&key);
        }
    }
}

/// How a PUBLIC or PRIVATE copy is used, for the cache cleanup.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    /// Leases alive.
    refs: usize,
    /// When it was last handed out or given back (the localizer's tick).
    last_used: u64,
}

/// What one cache cleanup did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Bytes the PUBLIC and PRIVATE copies took on disk before.
    pub before: u64,
    /// Copies removed, and their bytes.
    pub removed: usize,
    pub freed: u64,
}

/// Leases and last use of the PUBLIC and PRIVATE copies.
#[derive(Debug, Default)]
pub(super) struct Retention {
    usage: Mutex<HashMap<CacheKey, Usage>>,
    /// A logical clock for `Usage::last_used`.
    tick: AtomicU64,
}

impl Retention {
    /// A lease of the copy `key` names (application copies are not
    /// tracked: they go with their application).
    pub(super) fn lease(self: &Arc<Self>, key: &CacheKey) -> Lease {
        let key = match key.scope {
            Scope::App(..) => None,
            Scope::Public | Scope::User(_) => {
                let now = self.tick.fetch_add(1, Ordering::Relaxed);
                let mut usage = self.lock();
                let u = usage.entry(key.clone()).or_default();
                u.refs += 1;
                u.last_used = now;
                Some(key.clone())
            }
        };
        Lease {
            retention: Arc::downgrade(self),
            key,
        }
    }

    fn release(&self, key: &CacheKey) {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        if let Some(u) = self.lock().get_mut(key) {
            u.refs = u.refs.saturating_sub(1);
            u.last_used = now;
        }
    }

    /// Forgets the copy `key` names (the cache no longer has it).
    pub(super) fn forget(&self, key: &CacheKey) {
        self.lock().remove(key);
    }

    /// The cleanup's choice among the cached `copies` (each with what it
    /// takes on disk): the bytes the PUBLIC and PRIVATE ones take, and
    /// those of them to remove, with their bytes, for the rest to take no
    /// more than `target_bytes`: unheld ones, least recently used first,
    /// only as many as needed.
    pub(super) fn choose<'a>(
        &self,
        copies: impl IntoIterator<Item = (&'a CacheKey, u64)>,
        target_bytes: u64,
    ) -> (u64, Vec<(CacheKey, u64)>) {
        let usage = self.lock();
        let mut before = 0;
        let mut candidates = Vec::new();
        for (key, disk_bytes) in copies {
            if matches!(key.scope, Scope::App(..)) {
                continue;
            }
            before += disk_bytes;
            let u = usage.get(key).copied().unwrap_or_default();
            if u.refs == 0 {
                candidates.push((u.last_used, key.clone(), disk_bytes));
            }
        }
        drop(usage);
        candidates.sort_by_key(|(last_used, _, _)| *last_used);
        let mut total = before;
        let mut evicted = Vec::new();
        for (_, key, disk_bytes) in candidates {
            if total <= target_bytes {
                break;
            }
            total = total.saturating_sub(disk_bytes);
            evicted.push((key, disk_bytes));
        }
        (before, evicted)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Usage>> {
        self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::Arc;

    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};

    use crate::localizer::test_support::{app, chmod, resource};
    use crate::localizer::Localizer;
    use crate::recovery::StateStore;

    #[tokio::test]
    async fn the_cache_cleanup_removes_unused_copies_least_recently_used_first() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let private = |name: &str, bytes: usize| {
            let src = tmp.path().join(name);
            fs::write(&src, vec![b'x'; bytes]).expect("write");
            resource(
                &src,
                LocalResourceTypeProto::File,
                LocalResourceVisibilityProto::Private,
            )
        };
        let (a, b, c) = (private("a", 1000), private("b", 1000), private("c", 1000));
        let app_res = {
            let src = tmp.path().join("d");
            fs::write(&src, vec![b'x'; 5000]).expect("write");
            resource(
                &src,
                LocalResourceTypeProto::File,
                LocalResourceVisibilityProto::Application,
            )
        };
        // a, then b, are used and given back; c is held (a container runs);
        // the application's copy does not count.
        let la = loc.localize(&a, "alice", app()).await.expect("a");
        let lb = loc.localize(&b, "alice", app()).await.expect("b");
        let lc = loc.localize(&c, "alice", app()).await.expect("c");
        let ld = loc.localize(&app_res, "alice", app()).await.expect("d");
        let (a_path, b_path, c_path) = (la.path.clone(), lb.path.clone(), lc.path.clone());
        drop(la);
        drop(lb);

        // Under the target: nothing goes.
        let none = loc.clean_up(3000);
        assert_eq!((none.before, none.removed), (3000, 0));
        // Over it: the least recently used unheld copy goes first, and only
        // as many as needed.
        let one = loc.clean_up(2500);
        assert_eq!((one.removed, one.freed), (1, 1000));
        assert!(!a_path.exists() && a_path.parent().is_some_and(|d| !d.exists()));
        assert!(b_path.exists() && c_path.exists());
        // Down to nothing: the held copy and the application's stay.
        let rest = loc.clean_up(0);
        assert_eq!((rest.before, rest.removed), (2000, 1));
        assert!(!b_path.exists());
        assert!(c_path.exists() && ld.path.exists());

        // An evicted resource is localized again when asked for.
        let fetched = loc.fetch_count();
        let again = loc.localize(&a, "alice", app()).await.expect("a again");
        assert!(!again.from_cache);
        assert_eq!(loc.fetch_count(), fetched + 1);
        assert_eq!(fs::read(&again.path).expect("copy").len(), 1000);
        drop(lc);
    }

    /// A recovered container holds the copies its work dir links to (a
    /// file, and a file inside an unpacked archive): the cleanup leaves
    /// them until it ends; copies it does not link to are not held.
    #[tokio::test]
    async fn copies_a_recovered_container_links_to_are_held_until_it_ends() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(StateStore::open(&tmp.path().join("recovery")).expect("store"));
        let local = vec![tmp.path().join("local")];
        let public = |name: &str, kind: LocalResourceTypeProto| {
            let src = tmp.path().join(name);
            if kind == LocalResourceTypeProto::Archive {
                crate::unpack::tests::make_zip(&src, &[("lib/a.jar", b"aaaa")]);
            } else {
                fs::write(&src, vec![b'x'; 100]).expect("write");
            }
            chmod(&src, 0o644);
            resource(&src, kind, LocalResourceVisibilityProto::Public)
        };
        chmod(tmp.path(), 0o755);
        let (file, zip, other) = (
            public("used.txt", LocalResourceTypeProto::File),
            public("env.zip", LocalResourceTypeProto::Archive),
            public("unused.txt", LocalResourceTypeProto::File),
        );
        let first = Arc::new(Localizer::recording(local.clone(), Some(store.clone())));
        let (f1, z1, o1) = (
            first.localize(&file, "alice", app()).await.expect("file"),
            first.localize(&zip, "alice", app()).await.expect("zip"),
            first.localize(&other, "alice", app()).await.expect("other"),
        );
        let (f_path, z_path, o_path) = (f1.path.clone(), z1.path.clone(), o1.path.clone());
        drop((f1, z1, o1));

        // The next run takes the copies back; its reacquired container links
        // to the file and to a jar inside the archive.
        let second = Arc::new(Localizer::recording(local, Some(store.clone())));
        let live = std::collections::HashSet::from([app()]);
        assert_eq!(second.restore(store.load().resources, &live), (3, 0));
        let leases = second.lease_copies(&[
            f_path.clone(),
            z_path.join("lib/a.jar"),
            tmp.path().join("elsewhere"),
        ]);
        assert_eq!(leases.len(), 2);
        let cleaned = second.clean_up(0);
        assert_eq!(cleaned.removed, 1, "{cleaned:?}");
        assert!(!o_path.exists(), "the copy nobody holds is evicted");
        assert!(f_path.exists() && z_path.join("lib/a.jar").exists());
        // The container ends: its copies may go.
        drop(leases);
        assert_eq!(second.clean_up(0).removed, 2);
        assert!(!f_path.exists() && !z_path.exists());
    }
}
