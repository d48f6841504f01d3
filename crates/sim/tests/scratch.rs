mod common;
use spindle_sim::*;
#[test]
fn scratch() -> Result<(), SimError> {
    let mut o = common::inline(common::SMALL_ELASTIC)?;
    o.chaos = Some(ChaosOptions {
        until_ms: Some(3 * 3600 * 1000),
        ..ChaosOptions::default()
    });
    let passed = chaos_sweep(&o, 1..=40)?;
    eprintln!("elastic chaos passed {}", passed.len());
    o.heartbeat_mode = Some(HeartbeatMode::Rounds);
    let passed = chaos_sweep(&o, 1..=20)?;
    eprintln!("elastic rounds chaos passed {}", passed.len());
    let mut o = common::inline(common::SMALL_ELASTIC)?;
    o.placement = Some(NodeSelectionKind::Packing);
    o.chaos = Some(ChaosOptions {
        until_ms: Some(3 * 3600 * 1000),
        node_loss_per_hour: 30.0,
        am_crash_per_hour: 20.0,
        ..ChaosOptions::default()
    });
    let passed = chaos_sweep(&o, 100..=130)?;
    eprintln!("elastic packing heavy chaos passed {}", passed.len());
    let r = run({
        let mut x = o.clone();
        x.seed = Some(101);
        x
    })?;
    eprintln!("{}", r.summary_text());
    Ok(())
}
