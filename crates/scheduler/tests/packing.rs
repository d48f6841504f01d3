//! Container packing (`selection=packing`): scenario traces in the
//! `spindle_scheduler::scenario` language, plus checks across seeds.
//! `UPDATE_EXPECT=1 cargo test -p spindle-scheduler --test packing`
//! rewrites the expectations after a deliberate change.

use std::collections::BTreeSet;

use expect_test::{expect, Expect};
use spindle_scheduler::scenario;

fn check(script: &str, expected: Expect) {
    expected.assert_eq(&trace(script));
}

fn trace(script: &str) -> String {
    match scenario::run(script) {
        Ok(trace) => trace,
        Err(e) => panic!("{e}"),
    }
}

/// The seed's example cluster: ten nodes with room for ten 1 GB
/// containers each, and one application asking for twenty.
fn ten_by_ten(config: &str) -> String {
    let mut script = format!("config {config}\n");
    for i in 1..=10 {
        script.push_str(&format!("node n{i:02} rack=/r1 mem=10240 vcores=10\n"));
    }
    script.push_str("app job\nask job pri=1 mem=1024 *:20\nschedule\ncounts\n");
    script
}

/// Without packing the twenty containers spread two to a node: no node
/// is empty, so none can be released.
#[test]
fn seed_example_spread() {
    let t = trace(&ten_by_ten("selection=spread"));
    let counts: Vec<&str> = t.lines().filter(|l| l.starts_with("  counts")).collect();
    assert_eq!(
        counts,
        ["  counts: n01=2 n02=2 n03=2 n04=2 n05=2 n06=2 n07=2 n08=2 n09=2 n10=2"]
    );
    assert!(t.contains("  empty nodes: 0 of 10"), "{t}");
}

/// With packing at an 80% threshold, a node stops taking containers
/// while others have room once 8 of its 10 slots are used: the twenty go
/// 8, 8 and 4. The seed text says this leaves eight nodes empty, but
/// three of ten nodes are in use, so seven are empty (its own "67%
/// utilization" is 20 containers on the 30 slots of those three nodes).
#[test]
fn seed_example_packing() {
    check(
        &ten_by_ten("selection=packing packing_threshold=0.8 packing_seed=1"),
        expect![[r#"
            > config selection=packing packing_threshold=0.8 packing_seed=1
            > node n01 rack=/r1 mem=10240 vcores=10
            > node n02 rack=/r1 mem=10240 vcores=10
            > node n03 rack=/r1 mem=10240 vcores=10
            > node n04 rack=/r1 mem=10240 vcores=10
            > node n05 rack=/r1 mem=10240 vcores=10
            > node n06 rack=/r1 mem=10240 vcores=10
            > node n07 rack=/r1 mem=10240 vcores=10
            > node n08 rack=/r1 mem=10240 vcores=10
            > node n09 rack=/r1 mem=10240 vcores=10
            > node n10 rack=/r1 mem=10240 vcores=10
            > app job
            > ask job pri=1 mem=1024 *:20
            > schedule
              alloc job c1 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c2 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c4 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c5 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c6 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c7 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c8 on n09 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c9 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c10 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c11 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c12 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c13 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c14 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c15 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c16 on n05 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c17 on n04 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c18 on n04 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c19 on n04 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c20 on n04 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n01=0 n02=0 n03=0 n04=4 n05=8 n06=0 n07=0 n08=0 n09=8 n10=0
              empty nodes: 7 of 10
        "#]],
    );
}

/// The 8 / 8 / 4 split holds for every seed; only which nodes get the
/// containers changes.
#[test]
fn seed_example_packing_every_seed() {
    let mut first_nodes = BTreeSet::new();
    for seed in 0..16 {
        let t = trace(&ten_by_ten(&format!(
            "selection=packing packing_threshold=0.8 packing_seed={seed}"
        )));
        assert_eq!(
            t,
            trace(&ten_by_ten(&format!(
                "selection=packing packing_threshold=0.8 packing_seed={seed}"
            ))),
            "seed {seed} must replay exactly"
        );
        let counts = t
            .lines()
            .find_map(|l| l.strip_prefix("  counts: "))
            .unwrap_or_else(|| panic!("no counts in {t}"));
        let mut used: Vec<u32> = counts
            .split(' ')
            .filter_map(|cell| cell.split_once('=').and_then(|(_, n)| n.parse().ok()))
            .filter(|&n| n > 0)
            .collect();
        used.sort_unstable();
        assert_eq!(used, [4, 8, 8], "seed {seed}: {counts}");
        assert!(t.contains("  empty nodes: 7 of 10"), "seed {seed}: {t}");
        // The node of the first container (c1).
        let first = t
            .lines()
            .find(|l| l.contains(" c1 "))
            .unwrap_or_else(|| panic!("no c1 in {t}"))
            .to_string();
        first_nodes.insert(first);
    }
    assert!(
        first_nodes.len() > 1,
        "every seed chose the same first node: {first_nodes:?}"
    );
}

/// Below `packing_min_nodes` schedulable nodes the policy spreads; a node
/// joining brings packing in (every node is re-keyed), a node leaving
/// takes it away again.
#[test]
fn falls_back_to_spread_below_min_nodes() {
    check(
        r"
        config selection=packing packing_threshold=0.8 packing_min_nodes=5 packing_seed=3
        node n1 rack=/r1 mem=10240 vcores=10
        node n2 rack=/r1 mem=10240 vcores=10
        node n3 rack=/r1 mem=10240 vcores=10
        node n4 rack=/r1 mem=10240 vcores=10
        app job
        # Four nodes: spread, one each.
        ask job pri=1 mem=1024 *:4
        schedule
        counts
        # A fifth node: packing. The partly used nodes come first, fullest
        # first (all equal: by node id), so n1 fills to the threshold and
        # the empty n5 stays empty.
        node n5 rack=/r1 mem=10240 vcores=10
        ask job pri=1 mem=1024 *:8
        schedule
        counts
        # An unschedulable node leaves the index: four again, spread again,
        # so the emptiest nodes get the next containers.
        update n5 schedulable=false
        ask job pri=1 mem=1024 *:3
        schedule
        counts
        ",
        expect![[r#"
            > config selection=packing packing_threshold=0.8 packing_min_nodes=5 packing_seed=3
            > node n1 rack=/r1 mem=10240 vcores=10
            > node n2 rack=/r1 mem=10240 vcores=10
            > node n3 rack=/r1 mem=10240 vcores=10
            > node n4 rack=/r1 mem=10240 vcores=10
            > app job
            > ask job pri=1 mem=1024 *:4
            > schedule
              alloc job c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c2 on n2 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on n3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c4 on n4 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=1 n2=1 n3=1 n4=1
              empty nodes: 0 of 4
            > node n5 rack=/r1 mem=10240 vcores=10
            > ask job pri=1 mem=1024 *:8
            > schedule
              alloc job c5 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c6 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c7 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c8 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c9 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c10 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c11 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c12 on n2 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=8 n2=2 n3=1 n4=1 n5=0
              empty nodes: 1 of 5
            > update n5 schedulable=false
            > ask job pri=1 mem=1024 *:3
            > schedule
              alloc job c13 on n3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c14 on n4 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c15 on n2 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=8 n2=3 n3=2 n4=2 n5=0
              empty nodes: 1 of 5
        "#]],
    );
}

/// Once no partly used or empty node fits, high-usage nodes take
/// containers, the least used first.
#[test]
fn high_nodes_least_used_first() {
    check(
        r"
        config selection=packing packing_threshold=0.5 packing_min_nodes=3 packing_seed=9
        node n1 rack=/r1 mem=4096 vcores=4
        node n2 rack=/r1 mem=4096 vcores=4
        node n3 rack=/r1 mem=4096 vcores=4
        app job
        # Two containers make a node high (50%); then the next empty node.
        ask job pri=1 mem=1024 *:6
        schedule
        counts
        # Every node is high at 50%: ties go by node id.
        ask job pri=1 mem=1024 *:2
        schedule
        counts
        # The least used high node (the one still at 50%) goes first.
        ask job pri=1 mem=1024 *:1
        schedule
        counts
        ",
        expect![[r#"
            > config selection=packing packing_threshold=0.5 packing_min_nodes=3 packing_seed=9
            > node n1 rack=/r1 mem=4096 vcores=4
            > node n2 rack=/r1 mem=4096 vcores=4
            > node n3 rack=/r1 mem=4096 vcores=4
            > app job
            > ask job pri=1 mem=1024 *:6
            > schedule
              alloc job c1 on n3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c2 on n3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c4 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c5 on n2 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c6 on n2 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=2 n2=2 n3=2
              empty nodes: 0 of 3
            > ask job pri=1 mem=1024 *:2
            > schedule
              alloc job c7 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c8 on n2 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=3 n2=3 n3=2
              empty nodes: 0 of 3
            > ask job pri=1 mem=1024 *:1
            > schedule
              alloc job c9 on n3 pri=1 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=3 n2=3 n3=3
              empty nodes: 0 of 3
        "#]],
    );
}

/// Locality under packing, as the seed puts it: requests with locality
/// preferences are tried on the preferred nodes in the Medium set first
/// (the fullest first), and only then on preferred Low nodes (then High).
/// A preferred node of any class wins over every non-preferred node, so
/// packing never costs locality: the seed's Qubole setup gets the same
/// effect from a node-locality delay just above the continuous-scheduling
/// interval.
///
/// Set-up: n2 is Medium at 30%, n5 Medium at 10%, the rest Low. The
/// application names n1 (Low), n5 and n2: n2 (the fuller Medium node) is
/// served first, then n5, then n1, all node-local. Then it names only n4,
/// an empty node, while n1, n2 and n5 are partly used: n4 still gets the
/// container, node-local.
#[test]
fn locality_preferences_tried_on_medium_nodes_first() {
    check(
        r"
        config selection=packing packing_threshold=0.8 packing_min_nodes=1 packing_seed=4
        node n1 rack=/r1 mem=10240 vcores=10
        node n2 rack=/r1 mem=10240 vcores=10
        node n3 rack=/r1 mem=10240 vcores=10
        node n4 rack=/r1 mem=10240 vcores=10
        node n5 rack=/r1 mem=10240 vcores=10
        node n6 rack=/r1 mem=10240 vcores=10
        app fill
        ask fill pri=1 mem=1024 relax=false n2:3 /r1:3 *:3
        ask fill pri=2 mem=1024 relax=false n5:1 /r1:1 *:1
        schedule
        counts
        app job
        ask job pri=1 mem=1024 n1:1 n5:1 n2:1 /r1:3 *:3
        schedule
        ask job pri=2 mem=1024 n4:1 /r1:1 *:1
        schedule
        counts
        ",
        expect![[r#"
            > config selection=packing packing_threshold=0.8 packing_min_nodes=1 packing_seed=4
            > node n1 rack=/r1 mem=10240 vcores=10
            > node n2 rack=/r1 mem=10240 vcores=10
            > node n3 rack=/r1 mem=10240 vcores=10
            > node n4 rack=/r1 mem=10240 vcores=10
            > node n5 rack=/r1 mem=10240 vcores=10
            > node n6 rack=/r1 mem=10240 vcores=10
            > app fill
            > ask fill pri=1 mem=1024 relax=false n2:3 /r1:3 *:3
            > ask fill pri=2 mem=1024 relax=false n5:1 /r1:1 *:1
            > schedule
              alloc fill c1 on n2 pri=1 <memory:1024, vCores:1> node-local
              alloc fill c2 on n2 pri=1 <memory:1024, vCores:1> node-local
              alloc fill c3 on n2 pri=1 <memory:1024, vCores:1> node-local
              alloc fill c4 on n5 pri=2 <memory:1024, vCores:1> node-local
            > counts
              counts: n1=0 n2=3 n3=0 n4=0 n5=1 n6=0
              empty nodes: 4 of 6
            > app job
            > ask job pri=1 mem=1024 n1:1 n5:1 n2:1 /r1:3 *:3
            > schedule
              alloc job c1 on n2 pri=1 <memory:1024, vCores:1> node-local
              alloc job c2 on n5 pri=1 <memory:1024, vCores:1> node-local
              alloc job c3 on n1 pri=1 <memory:1024, vCores:1> node-local
            > ask job pri=2 mem=1024 n4:1 /r1:1 *:1
            > schedule
              alloc job c4 on n4 pri=2 <memory:1024, vCores:1> node-local
            > counts
              counts: n1=1 n2=4 n3=0 n4=1 n5=2 n6=0
              empty nodes: 2 of 6
        "#]],
    );
}
