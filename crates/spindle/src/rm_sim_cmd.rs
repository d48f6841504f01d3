//! `spindle rm-sim`: the whole ResourceManager under the deterministic
//! simulation of `spindle-rm-sim`, over one seed (to study it, `--verbose`
//! prints every traced event) or many (spread over the machine's cores).
//!
//! Standard output is deterministic for the same seeds; the wall time goes
//! to standard error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use spindle_rm_sim::{run, Options};

/// Arguments of `spindle rm-sim`.
#[derive(clap::Args)]
pub struct RmSimArgs {
    /// Run this one seed (and print its report, or its failure).
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Run this many seeds, from --from.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The first seed of --seeds.
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Events of each run's fault phase.
    #[arg(long, default_value_t = Options::default().steps)]
    steps: u64,
    /// Print every traced event of a --seed run to standard error.
    #[arg(long, requires = "seed")]
    verbose: bool,
    /// Threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
}

pub(crate) fn run_cmd(args: RmSimArgs) -> Result<u8, String> {
    let options = Options {
        steps: args.steps,
        verbose: args.verbose,
        ..Options::default()
    };
    if let Some(seed) = args.seed {
        return match run(seed, options) {
            Ok(report) => {
                println!("{report}");
                Ok(0)
            }
            Err(failure) => {
                println!("{failure}");
                Ok(1)
            }
        };
    }
    let started = Instant::now();
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = AtomicU64::new(args.from);
    let end = args.from + args.seeds;
    let failures = Mutex::new(Vec::new());
    let totals = Mutex::new((0u64, 0u64, 0u64, 0u64));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                match run(seed, options) {
                    Ok(r) => {
                        let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
                        t.0 += r.events;
                        t.1 += r.apps_acknowledged as u64;
                        t.2 += u64::from(r.rm_restarts + r.failovers);
                        t.3 += r.delegation_tokens as u64;
                    }
                    Err(f) => failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((seed, f.to_string())),
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort();
    for (_, text) in &failures {
        println!("{text}");
    }
    let (events, apps, restarts, tokens) = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    println!(
        "{} of {} seeds ({}..{}) held every invariant; the passing runs: {events} events, {apps} \
         applications, {tokens} delegation tokens, {restarts} RM restarts and failovers",
        args.seeds - failures.len() as u64,
        args.seeds,
        args.from,
        end
    );
    eprintln!(
        "rm-sim: {:.1} s on {threads} threads",
        started.elapsed().as_secs_f64()
    );
    Ok(u8::from(!failures.is_empty()))
}
