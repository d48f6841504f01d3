//! The whole-RM simulation over a bounded number of seeds (CI), and the
//! seeds that once broke an invariant, kept as regression tests (each bug
//! also has a unit test of its own in `crates/rm`). Many more seeds run by
//! hand: `spindle rm-sim --seeds 100000` (docs/benchmarks.md).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use spindle_rm_sim::{run, Options};

/// Seeds CI runs on every build.
const CI_SEEDS: u64 = 200;

/// Seeds that found a bug, with the bug:
/// - 2: a node registering again while active lost its running containers
///   (Hadoop reconnects it);
/// - 58: a recovered application's unregistered attempt stayed FINISHING and
///   was taken out of a scheduler that never held it;
/// - 162: a repeated heartbeat did not count for liveness;
/// - 656: a container that ended before its AM pulled it was handed out;
/// - 739: a running container the scheduler did not hold was not killed.
const FOUND_BUGS: [u64; 5] = [2, 58, 162, 656, 739];

fn run_all(seeds: impl Iterator<Item = u64>, options: Options) -> Vec<String> {
    let seeds: Vec<u64> = seeds.collect();
    let next = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&seed) = seeds.get(i) else { return };
                if let Err(f) = run(seed, options) {
                    failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(f.to_string());
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort();
    failures
}

#[test]
fn every_invariant_holds_for_the_ci_seeds() {
    let failures = run_all(0..CI_SEEDS, Options::default());
    assert!(
        failures.is_empty(),
        "{} of {CI_SEEDS} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_seeds_that_found_bugs_hold() {
    // As they ran when they found their bugs (before delegation tokens).
    let before_tokens = Options {
        delegation_tokens: false,
        ..Options::default()
    };
    let failures = run_all(FOUND_BUGS.into_iter(), before_tokens);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let failures = run_all(FOUND_BUGS.into_iter(), Options::default());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_seed_replays_exactly() {
    let a = run(7, Options::default()).map_err(|f| f.to_string());
    let b = run(7, Options::default()).map_err(|f| f.to_string());
    assert_eq!(a, b);
    assert!(a.is_ok_and(|r| r.events > 1000 && r.apps_acknowledged > 0));
}
