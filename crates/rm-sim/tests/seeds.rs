//! The whole-RM simulation over a bounded number of seeds (CI), and the
//! seeds that once broke an invariant, kept as regression tests. Many more
//! seeds run by hand: `spindle rm-sim --seeds 100000`.

use spindle_rm_sim::{run, Options};

/// Seeds CI runs on every build.
const CI_SEEDS: u64 = 200;

#[test]
fn every_invariant_holds_for_the_ci_seeds() {
    let mut failures = Vec::new();
    for seed in 0..CI_SEEDS {
        if let Err(f) = run(seed, Options::default()) {
            failures.push(f.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CI_SEEDS} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_seed_replays_exactly() {
    let a = run(7, Options::default()).map_err(|f| f.to_string());
    let b = run(7, Options::default()).map_err(|f| f.to_string());
    assert_eq!(a, b);
}
