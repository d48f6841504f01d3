//! A lock-free latency histogram: log-linear buckets over microseconds.
//!
//! Values below 128 µs have a bucket each; above, every power of two is split
//! into 64 buckets, so a reported percentile is within about 1.6 % of the true
//! value. Recording is one relaxed atomic increment, so thousands of tasks can
//! share one histogram without contention worth measuring.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per power of two above the linear range.
const SUB_BUCKETS: u64 = 64;
/// Values up to 2^40 µs (about 12 days) get their own bucket; larger ones share
/// the last.
const MAX_SHIFT: u32 = 34;
const BUCKETS: usize = ((MAX_SHIFT as u64 + 2) * SUB_BUCKETS) as usize;

/// Counts of latencies, by bucket.
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum_us: AtomicU64,
    max_us: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("max_us", &self.max_us.load(Ordering::Relaxed))
            .finish()
    }
}

fn index(us: u64) -> usize {
    if us < 2 * SUB_BUCKETS {
        return us as usize;
    }
    let msb = 63 - us.leading_zeros();
    let shift = msb - 6;
    if shift > MAX_SHIFT {
        return BUCKETS - 1;
    }
    (u64::from(shift) * SUB_BUCKETS + (us >> shift)) as usize
}

/// The smallest value that falls in bucket `i`, and the bucket's width.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB_BUCKETS {
        return (i, 1);
    }
    let shift = i / SUB_BUCKETS - 1;
    let mantissa = i % SUB_BUCKETS + SUB_BUCKETS;
    (mantissa << shift, 1 << shift)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
        }
    }

    pub fn record(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.buckets[index(us)].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The `q`-quantile (0.0 ..= 1.0) in milliseconds: the middle of the bucket
    /// holding it, never above the largest value seen. `None` when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let q = q.clamp(0.0, 1.0);
        // The rank of the value wanted, 1-based.
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                let (low, width) = bucket_range(i);
                let mid = low as f64 + (width as f64 - 1.0) / 2.0;
                let max = self.max_us.load(Ordering::Relaxed) as f64;
                return Some(mid.min(max) / 1000.0);
            }
        }
        self.max_ms()
    }

    pub fn mean_ms(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum_us.load(Ordering::Relaxed) as f64 / n as f64 / 1000.0)
    }

    pub fn max_ms(&self) -> Option<f64> {
        (self.count() > 0).then(|| self.max_us.load(Ordering::Relaxed) as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut expected_low = 0;
        for i in 0..BUCKETS - 1 {
            let (low, width) = bucket_range(i);
            assert_eq!(low, expected_low, "bucket {i}");
            assert_eq!(index(low), i);
            assert_eq!(index(low + width - 1), i);
            expected_low = low + width;
        }
    }

    #[test]
    fn quantiles_are_within_the_bucket_precision() {
        let h = Histogram::new();
        assert_eq!(h.quantile_ms(0.5), None);
        for us in 1..=10_000u64 {
            h.record(Duration::from_micros(us));
        }
        assert_eq!(h.count(), 10_000);
        let p50 = h.quantile_ms(0.5).unwrap_or_default();
        let p99 = h.quantile_ms(0.99).unwrap_or_default();
        assert!((p50 - 5.0).abs() / 5.0 < 0.02, "p50 {p50}");
        assert!((p99 - 9.9).abs() / 9.9 < 0.02, "p99 {p99}");
        assert_eq!(h.max_ms(), Some(10.0));
        assert_eq!(h.quantile_ms(1.0), Some(10.0));
        let mean = h.mean_ms().unwrap_or_default();
        assert!((mean - 5.0005).abs() < 1e-9, "mean {mean}");
    }

    #[test]
    fn small_values_are_exact_and_huge_ones_are_kept() {
        let h = Histogram::new();
        for _ in 0..99 {
            h.record(Duration::from_micros(42));
        }
        h.record(Duration::from_secs(10_000_000));
        assert_eq!(h.quantile_ms(0.5), Some(0.042));
        assert_eq!(h.quantile_ms(0.99), Some(0.042));
        assert!(h.quantile_ms(1.0).unwrap_or_default() > 1e9);
    }
}
