//! What one server lets its peers hold: connection slots (in total and per
//! peer address) and bytes of request frames (one budget across all
//! connections), with the counters [`ServerStats`] reports.
//!
//! - **Connections.** A connection takes a slot of the server
//!   (`ipc.server.max.connections`) and one of its peer
//!   (`spindle.ipc.server.max.connections.per.peer`) when it is accepted; a
//!   connection that finds either full is closed at once, before anything is
//!   read or allocated for it. A peer is an IP address; an IPv6 peer is its
//!   /64 prefix (one host commonly holds a whole /64), an IPv4-mapped IPv6
//!   address is its IPv4 address.
//! - **Request bytes.** Before the server allocates the body of a frame it
//!   takes the frame's length from the byte budget
//!   (`spindle.ipc.server.max.buffered.request.bytes`) and gives it back when
//!   the call has been handled (its reply queued) or, for the connection
//!   context, SASL and pings, once the frame has been processed. When the
//!   budget is used up the connection waits (it reads nothing more, so TCP
//!   pushes back on its sender) until other calls give bytes back. A quarter
//!   of the budget is kept for frames of at most [`SMALL_FRAME_BYTES`], so
//!   that peers declaring large frames cannot hold up ordinary calls; larger
//!   frames share the other three quarters, and a frame longer than that is
//!   refused like one longer than `ipc.maximum.data.length`. Each frame takes
//!   its bytes in one piece, so two large frames can never each hold part of
//!   what the other needs.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Frames up to this length draw on the quarter of the budget kept for them.
pub const SMALL_FRAME_BYTES: usize = 64 * 1024;

/// The smallest byte budget a server runs with (a smaller setting is raised
/// to it): room for a few frames of [`SMALL_FRAME_BYTES`] and a larger one.
pub const MIN_BUFFERED_REQUEST_BYTES: usize = 1024 * 1024;

/// Counters of one server, for tests, benchmarks and monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections open now.
    pub connections: usize,
    /// Bytes of request frames held now (taken from the byte budget).
    pub buffered_request_bytes: usize,
    /// The most [`buffered_request_bytes`](Self::buffered_request_bytes) has
    /// been since the server started.
    pub peak_buffered_request_bytes: usize,
    /// The byte budget (`spindle.ipc.server.max.buffered.request.bytes`).
    pub buffered_request_bytes_limit: usize,
    /// Connections waiting now for budget before they read a frame's body.
    pub waiting_for_budget: usize,
    /// Capacity of the connections' read buffers now (bytes read from
    /// sockets ahead of the frame being parsed). Idle connections hold none.
    pub read_buffer_bytes: usize,
    /// Connections closed on accept because the server was full.
    pub refused_server_full: u64,
    /// Connections closed on accept because their peer was at its limit.
    pub refused_peer_full: u64,
}

/// The key connections are counted under.
pub fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                for s in &mut segments[4..] {
                    *s = 0;
                }
                IpAddr::V6(Ipv6Addr::from(segments))
            }
        },
    }
}

/// Open connections per peer.
pub struct PeerTable {
    limit: usize,
    open: Mutex<HashMap<IpAddr, PeerEntry>>,
}

#[derive(Default)]
struct PeerEntry {
    open: usize,
    /// Refusals since the peer was last below its limit (the first one is
    /// logged at WARN, the rest at DEBUG).
    refused: u64,
}

/// What [`PeerTable::admit`] decided.
pub enum Admission {
    Admitted(PeerSlot),
    /// Refused; `first` is true for the first refusal since the peer was
    /// last below its limit.
    Refused {
        first: bool,
    },
}

impl PeerTable {
    /// `limit` 0 means no limit (connections are still counted).
    pub fn new(limit: usize) -> Arc<PeerTable> {
        Arc::new(PeerTable {
            limit,
            open: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, PeerEntry>> {
        // The map stays consistent even if a holder panicked: each update is
        // a single counter change.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for a connection from `ip`, or refuses it.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Admission {
        let key = peer_key(ip);
        let mut open = self.lock();
        let entry = open.entry(key).or_default();
        if self.limit > 0 && entry.open >= self.limit {
            entry.refused += 1;
            return Admission::Refused {
                first: entry.refused == 1,
            };
        }
        entry.open += 1;
        Admission::Admitted(PeerSlot {
            table: self.clone(),
            key,
        })
    }

    /// Connections open now from `ip`'s peer.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.lock().get(&peer_key(ip)).map_or(0, |e| e.open)
    }
}

/// A connection's slot in the [`PeerTable`]; dropping it frees the slot.
pub struct PeerSlot {
    table: Arc<PeerTable>,
    key: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.table.lock();
        if let Entry::Occupied(mut e) = open.entry(self.key) {
            let entry = e.get_mut();
            entry.open = entry.open.saturating_sub(1);
            entry.refused = 0;
            if entry.open == 0 {
                e.remove();
            }
        }
    }
}

/// The byte budget of one server's request frames.
pub struct Budget {
    limit: usize,
    /// For frames of at most [`SMALL_FRAME_BYTES`].
    small: Arc<Semaphore>,
    /// For larger frames.
    large: Arc<Semaphore>,
    large_limit: usize,
    held: AtomicUsize,
    peak: AtomicUsize,
    waiting: AtomicUsize,
}

impl Budget {
    /// A budget of `limit` bytes (at least [`MIN_BUFFERED_REQUEST_BYTES`]).
    pub fn new(limit: usize) -> Arc<Budget> {
        let limit = limit.clamp(MIN_BUFFERED_REQUEST_BYTES, Semaphore::MAX_PERMITS);
        let small = limit / 4;
        Arc::new(Budget {
            limit,
            small: Arc::new(Semaphore::new(small)),
            large: Arc::new(Semaphore::new(limit - small)),
            large_limit: limit - small,
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The longest frame the budget can ever hold.
    pub fn max_frame(&self) -> usize {
        self.large_limit
    }

    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Takes `bytes` for one frame, waiting while the budget is used up.
    /// `bytes` must not exceed [`max_frame`](Self::max_frame).
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Hold {
        if bytes == 0 {
            return Hold::none(self.clone());
        }
        let pool = if bytes <= SMALL_FRAME_BYTES {
            &self.small
        } else {
            &self.large
        };
        let n = u32::try_from(bytes).unwrap_or(u32::MAX);
        let permit = match pool.clone().try_acquire_many_owned(n) {
            Ok(p) => Some(p),
            Err(_) => {
                self.waiting.fetch_add(1, Ordering::Relaxed);
                let waited = pool.clone().acquire_many_owned(n).await;
                self.waiting.fetch_sub(1, Ordering::Relaxed);
                // The semaphores are never closed; a closed one would mean
                // no budget to wait for, so the frame goes unaccounted.
                waited.ok()
            }
        };
        let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        Hold {
            budget: self.clone(),
            bytes,
            _permit: permit,
        }
    }
}

/// Bytes of the budget held by one frame; dropping it gives them back.
pub struct Hold {
    budget: Arc<Budget>,
    bytes: usize,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Hold {
    pub fn none(budget: Arc<Budget>) -> Hold {
        Hold {
            budget,
            bytes: 0,
            _permit: None,
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Counters shared by a server's accept loop and connections.
#[derive(Default)]
pub struct Counters {
    pub connections: AtomicUsize,
    pub read_buffer_bytes: AtomicUsize,
    pub refused_server_full: AtomicU64,
    pub refused_peer_full: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_addresses_and_ipv6_slash_64s() {
        let v4: IpAddr = "10.1.2.3".parse().expect("v4");
        assert_eq!(peer_key(v4), v4);
        let mapped: IpAddr = "::ffff:10.1.2.3".parse().expect("mapped");
        assert_eq!(peer_key(mapped), v4);
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("v6");
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().expect("v6");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("v6");
        assert_eq!(peer_key(a), peer_key(b));
        assert_ne!(peer_key(a), peer_key(c));
    }

    #[test]
    fn a_peer_at_its_limit_is_refused_until_a_slot_frees() {
        let table = PeerTable::new(2);
        let ip: IpAddr = "192.0.2.7".parse().expect("ip");
        let other: IpAddr = "192.0.2.8".parse().expect("ip");
        let Admission::Admitted(a) = table.admit(ip) else {
            panic!("first slot")
        };
        let Admission::Admitted(_b) = table.admit(ip) else {
            panic!("second slot")
        };
        assert!(matches!(
            table.admit(ip),
            Admission::Refused { first: true }
        ));
        assert!(matches!(
            table.admit(ip),
            Admission::Refused { first: false }
        ));
        assert!(matches!(table.admit(other), Admission::Admitted(_)));
        drop(a);
        assert_eq!(table.open_from(ip), 1);
        assert!(matches!(table.admit(ip), Admission::Admitted(_)));
    }

    #[test]
    fn no_limit_still_counts() {
        let table = PeerTable::new(0);
        let ip: IpAddr = "192.0.2.7".parse().expect("ip");
        let slots: Vec<_> = (0..1000).map(|_| table.admit(ip)).collect();
        assert!(slots.iter().all(|s| matches!(s, Admission::Admitted(_))));
        assert_eq!(table.open_from(ip), 1000);
        drop(slots);
        assert_eq!(table.open_from(ip), 0);
    }

    #[tokio::test]
    async fn small_frames_have_their_own_quarter() {
        let budget = Budget::new(4 * 1024 * 1024);
        assert_eq!(budget.max_frame(), 3 * 1024 * 1024);
        // Large frames take all of their three quarters...
        let big = budget.take(3 * 1024 * 1024).await;
        assert_eq!(budget.held(), 3 * 1024 * 1024);
        // ...and a small frame still gets its bytes at once.
        let small = tokio::time::timeout(std::time::Duration::from_secs(5), budget.take(100))
            .await
            .expect("a small frame does not wait behind large ones");
        assert_eq!(budget.held(), 3 * 1024 * 1024 + 100);
        drop(small);
        drop(big);
        assert_eq!(budget.held(), 0);
        assert_eq!(budget.peak(), 3 * 1024 * 1024 + 100);
    }

    #[tokio::test]
    async fn a_large_frame_waits_until_bytes_come_back() {
        let budget = Budget::new(4 * 1024 * 1024);
        let first = budget.take(2 * 1024 * 1024).await;
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.take(2 * 1024 * 1024).await })
        };
        while budget.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            budget.held(),
            2 * 1024 * 1024,
            "nothing taken while waiting"
        );
        drop(first);
        let second = waiting.await.expect("the waiter gets its bytes");
        assert_eq!(budget.held(), 2 * 1024 * 1024);
        drop(second);
    }
}
