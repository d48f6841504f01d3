//! The simulator's only source of randomness: a seeded xoshiro256**
//! generator (seeded through SplitMix64), with the few distributions the
//! workloads use. The same seed gives the same stream on every platform;
//! nothing here reads the clock or the OS.

/// SplitMix64 (Steele, Lea and Flood): used to expand one 64-bit seed into
/// generator state and to derive independent sub-seeds.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Mixes a seed with a stream label so that unrelated consumers (arrivals
/// of job 3, task sizes of instance 7, chaos, ...) draw from independent
/// streams: adding a job to a workload does not change the draws of the
/// others.
pub fn derive_seed(seed: u64, labels: &[u64]) -> u64 {
    let mut s = SplitMix64::new(seed);
    let mut out = s.next_u64();
    for &l in labels {
        let mut m = SplitMix64::new(out ^ l.wrapping_mul(0xD1B5_4A32_D192_ED03));
        out = m.next_u64();
    }
    out
}

/// xoshiro256** (Blackman and Vigna).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut sm = SplitMix64::new(seed);
        let mut s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    /// A generator for one labelled stream of `seed` (see [`derive_seed`]).
    pub fn stream(seed: u64, labels: &[u64]) -> Rng {
        Rng::new(derive_seed(seed, labels))
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n); 0 when `n` is 0. Uses rejection, so there is no
    /// modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Uniform index into a slice of length `len` (which must be positive).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// Uniform in [lo, hi].
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Exponentially distributed with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.next_f64()).ln()
    }

    /// Standard normal (Box-Muller; one of the pair is discarded so that
    /// the stream position depends only on the number of calls).
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    pub fn normal(&mut self, mean: f64, std: f64) -> f64 {
        mean + std * self.standard_normal()
    }

    /// Log-normal with the given mean and standard deviation of the value
    /// itself (not of its logarithm), as Hadoop's SLS parameterises it.
    pub fn lognormal(&mut self, mean: f64, std: f64) -> f64 {
        if mean <= 0.0 {
            return 0.0;
        }
        let sigma_sq = (std * std / (mean * mean)).ln_1p();
        let mu = mean.ln() - 0.5 * sigma_sq;
        (mu + sigma_sq.sqrt() * self.standard_normal()).exp()
    }

    /// An index drawn with probability proportional to `weights`
    /// (non-positive weights are never drawn). `None` if no weight is
    /// positive.
    pub fn weighted(&mut self, weights: &[f64]) -> Option<usize> {
        let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
        if total <= 0.0 || !total.is_finite() {
            return None;
        }
        let target = self.next_f64() * total;
        let mut acc = 0.0;
        let mut last = None;
        for (i, &w) in weights.iter().enumerate() {
            if w > 0.0 {
                acc += w;
                last = Some(i);
                if target < acc {
                    return Some(i);
                }
            }
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn streams_are_independent_of_each_other() {
        assert_ne!(derive_seed(1, &[0]), derive_seed(1, &[1]));
        assert_ne!(derive_seed(1, &[0, 1]), derive_seed(1, &[1, 0]));
        assert_eq!(derive_seed(5, &[3, 4]), derive_seed(5, &[3, 4]));
    }

    #[test]
    fn distributions_have_the_requested_moments() {
        let mut r = Rng::new(42);
        let n = 20_000;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let exp: Vec<f64> = (0..n).map(|_| r.exponential(10.0)).collect();
        assert!((mean(&exp) - 10.0).abs() < 0.5, "{}", mean(&exp));
        let ln: Vec<f64> = (0..n).map(|_| r.lognormal(60.0, 5.0)).collect();
        assert!((mean(&ln) - 60.0).abs() < 0.5, "{}", mean(&ln));
        assert!(ln.iter().all(|x| *x > 0.0));
        let u: Vec<f64> = (0..n).map(|_| r.next_f64()).collect();
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        assert!((mean(&u) - 0.5).abs() < 0.02);
        for _ in 0..1000 {
            assert!(r.below(3) < 3);
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn weighted_choice_follows_weights() {
        let mut r = Rng::new(3);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            if let Some(i) = r.weighted(&[1.0, 0.0, 2.0]) {
                counts[i] += 1;
            }
        }
        assert_eq!(counts[1], 0);
        let ratio = counts[2] as f64 / counts[0] as f64;
        assert!((ratio - 2.0).abs() < 0.15, "{ratio}");
        assert_eq!(r.weighted(&[0.0, -1.0]), None);
        assert_eq!(r.weighted(&[]), None);
    }
}
