//! `spindle rm-sim` as README and docs/sim.md give it: one seed with its
//! report, and a range of seeds with the summary line; the output is the
//! same for the same seeds.

use std::process::Command;

fn rm_sim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .arg("rm-sim")
        .args(args)
        .output()
        .expect("spindle runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn one_seed_prints_its_report_and_many_their_summary() {
    let (code, one) = rm_sim(&["--seed", "3"]);
    assert_eq!(code, 0, "{one}");
    assert!(one.starts_with("seed 3: "), "{one}");
    assert!(one.contains("applications acknowledged and ended"), "{one}");
    assert_eq!(rm_sim(&["--seed", "3"]).1, one, "a seed replays exactly");

    let (code, many) = rm_sim(&["--seeds", "8", "--from", "100"]);
    assert_eq!(code, 0, "{many}");
    assert!(
        many.contains("8 of 8 seeds (100..108) held every invariant"),
        "{many}"
    );
}
