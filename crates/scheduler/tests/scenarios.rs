//! Scenario tests: scripts in the `spindle_scheduler::scenario` language
//! and the traces they must produce. A behaviour change shows up here as a
//! readable diff; `UPDATE_EXPECT=1 cargo test -p spindle-scheduler`
//! rewrites the expectations after a deliberate change.

use expect_test::{expect, Expect};
use spindle_scheduler::scenario;

fn check(script: &str, expected: Expect) {
    match scenario::run(script) {
        Ok(trace) => expected.assert_eq(&trace),
        Err(e) => panic!("{e}"),
    }
}

/// The worked example of YARN's scheduler protocol (the "Resource
/// Negotiation" and "Scheduling" sections of the seed text).
///
/// The seed's two tables are images that are missing from our copy; they
/// are rebuilt from its prose, which names every host and rack:
///
/// * map0's split is on h1001 (rack r11), h2121 (r22) and h3118 (r31);
/// * map1's split is on h1010 (r11), h2121 (r22) and h4123 (r45);
/// * maps need 1 GB each, the one reduce 2 GB.
///
/// Racks are written `/r11` etc., as a Hadoop topology names them. The
/// maps ask at priority 1 and the reduce at priority 2, so maps are served
/// first as the walkthrough has it. h2121 and h1010 have room for exactly
/// one 1 GB container each ("if a container is available on ..."). The
/// MapReduce AM's own container is left out, so the maps' containers are
/// c1 and c2.
///
/// Rows that reach 0 are dropped from the table (as Hadoop 3 does), so
/// `table` shows a cancelled or used-up location by its absence.
#[test]
fn seed_worked_example() {
    check(
        r"
        node h1001 rack=/r11 mem=4096 vcores=4
        node h1010 rack=/r11 mem=1024 vcores=1
        node h2121 rack=/r22 mem=1024 vcores=1
        node h3118 rack=/r31 mem=4096 vcores=4
        node h4123 rack=/r45 mem=1024 vcores=1
        app mr queue=default user=alice

        # The initial requests, aggregated per host, per rack and on *.
        ask mr pri=1 mem=1024 h1001:1 h1010:1 h2121:2 h3118:1 h4123:1 /r11:2 /r22:2 /r31:1 /r45:1 *:2
        ask mr pri=2 mem=2048 *:1
        table mr

        # A container is available on r22/h2121: it goes to a map, and the
        # rows at h2121, /r22 and * each lose one.
        heartbeat h2121
        table mr

        # The AM runs map0 there and cancels map0's other locations.
        ask mr pri=1 mem=1024 h1001:0 h3118:0 /r11:1 /r31:0
        table mr

        # A container is available on r11/h1010: the last map, node-local;
        # h1010, /r11 and * lose one, so * is 0 for the maps.
        heartbeat h1010
        table mr

        # h4123 and /r45 still show 1 (the AM has not cancelled them yet),
        # but * is 0: no map is granted anywhere. The reduce (2 GB) does
        # not fit on h4123; on h1001 it goes off-switch.
        heartbeat h4123
        heartbeat h1001

        # The AM cancels map1's other locations; the maps are done asking.
        ask mr pri=1 mem=1024 h2121:0 h4123:0 /r22:0 /r45:0
        table mr
        ",
        expect![[r#"
            > node h1001 rack=/r11 mem=4096 vcores=4
            > node h1010 rack=/r11 mem=1024 vcores=1
            > node h2121 rack=/r22 mem=1024 vcores=1
            > node h3118 rack=/r31 mem=4096 vcores=4
            > node h4123 rack=/r45 mem=1024 vcores=1
            > app mr queue=default user=alice
            > ask mr pri=1 mem=1024 h1001:1 h1010:1 h2121:2 h3118:1 h4123:1 /r11:2 /r22:2 /r31:1 /r45:1 *:2
            > ask mr pri=2 mem=2048 *:1
            > table mr
              pri=1 <memory:1024, vCores:1>: *=2 /r11=2 /r22=2 /r31=1 /r45=1 h1001=1 h1010=1 h2121=2 h3118=1 h4123=1
              pri=2 <memory:2048, vCores:1>: *=1
            > heartbeat h2121
              alloc mr c1 on h2121 pri=1 <memory:1024, vCores:1> node-local
            > table mr
              pri=1 <memory:1024, vCores:1>: *=1 /r11=2 /r22=1 /r31=1 /r45=1 h1001=1 h1010=1 h2121=1 h3118=1 h4123=1
              pri=2 <memory:2048, vCores:1>: *=1
            > ask mr pri=1 mem=1024 h1001:0 h3118:0 /r11:1 /r31:0
            > table mr
              pri=1 <memory:1024, vCores:1>: *=1 /r11=1 /r22=1 /r45=1 h1010=1 h2121=1 h4123=1
              pri=2 <memory:2048, vCores:1>: *=1
            > heartbeat h1010
              alloc mr c2 on h1010 pri=1 <memory:1024, vCores:1> node-local
            > table mr
              pri=1 <memory:1024, vCores:1>: /r22=1 /r45=1 h2121=1 h4123=1
              pri=2 <memory:2048, vCores:1>: *=1
            > heartbeat h4123
            > heartbeat h1001
              alloc mr c3 on h1001 pri=2 <memory:2048, vCores:1> off-switch
            > ask mr pri=1 mem=1024 h2121:0 h4123:0 /r22:0 /r45:0
            > table mr
              (no outstanding asks)
        "#]],
    );
}

/// The AM container is asked for like any other (priority 0, `*`, one
/// container) and becomes container 1 of its attempt. FIFO serves
/// applications by application priority, then arrival, across queues;
/// within an application, lower request priority numbers first.
#[test]
fn am_containers_and_fifo_order() {
    check(
        r"
        queue root.q1
        queue root.q2
        node n1 rack=/default-rack mem=4096 vcores=4
        node n2 rack=/default-rack mem=4096 vcores=4
        app a1 queue=q1
        app a2 queue=q2
        app a3 queue=q1 priority=5
        ask a1 pri=0 mem=1536 *:1
        ask a2 pri=0 mem=1024 *:1
        ask a3 pri=0 mem=1024 *:1
        order
        schedule
        nodes

        ask a1 pri=10 mem=1024 *:2
        ask a1 pri=5 mem=2048 *:1
        ask a2 pri=1 mem=1024 *:4
        order
        schedule max=2
        order
        schedule
        table a2
        apps
        queues
        ",
        expect![[r#"
            > queue root.q1
            > queue root.q2
            > node n1 rack=/default-rack mem=4096 vcores=4
            > node n2 rack=/default-rack mem=4096 vcores=4
            > app a1 queue=q1
            > app a2 queue=q2
            > app a3 queue=q1 priority=5
            > ask a1 pri=0 mem=1536 *:1
            > ask a2 pri=0 mem=1024 *:1
            > ask a3 pri=0 mem=1024 *:1
            > order
              order: a3 a1 a2
            > schedule
              alloc a3 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
              alloc a1 c1 on n2 pri=0 <memory:2048, vCores:1> off-switch
              alloc a2 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > nodes
              n1 /default-rack used=2048/4096MB,2/4vc [a2 c1, a3 c1]
              n2 /default-rack used=2048/4096MB,1/4vc [a1 c1]
            > ask a1 pri=10 mem=1024 *:2
            > ask a1 pri=5 mem=2048 *:1
            > ask a2 pri=1 mem=1024 *:4
            > order
              order: a1 a2
            > schedule max=2
              alloc a1 c2 on n2 pri=5 <memory:2048, vCores:1> off-switch
              alloc a1 c3 on n1 pri=10 <memory:1024, vCores:1> off-switch
            > order
              order: a1 a2
            > schedule
              alloc a1 c4 on n1 pri=10 <memory:1024, vCores:1> off-switch
            > table a2
              pri=1 <memory:1024, vCores:1>: *=4
            > apps
              a1 queue=root.q1 used=6144MB,4vc pending=0MB,0vc containers=4
              a2 queue=root.q2 used=1024MB,1vc pending=4096MB,4vc containers=1
              a3 queue=root.q1 used=1024MB,1vc pending=0MB,0vc containers=1
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=8192MB,6vc am=4096MB apps=3 running=3
              root.q1 guaranteed=0MB,0vc max=8192MB,8vc used=7168MB,5vc am=3072MB apps=2 running=2
              root.q2 guaranteed=0MB,0vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
        "#]],
    );
}

/// In a continuous pass a request goes node-local first (the least-used
/// host asked for), then rack-local, then off-switch, and spread picks the
/// node with the most free memory each time.
#[test]
fn locality_and_spread_in_continuous_scheduling() {
    check(
        r"
        node h1 rack=/r1 mem=4096 vcores=4
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=4096 vcores=4
        node h4 rack=/r2 mem=8192 vcores=8
        app a
        ask a pri=1 mem=1024 h1:2 h3:1 /r1:3 /r2:1 *:7
        schedule
        table a
        nodes
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=4096 vcores=4
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=4096 vcores=4
            > node h4 rack=/r2 mem=8192 vcores=8
            > app a
            > ask a pri=1 mem=1024 h1:2 h3:1 /r1:3 /r2:1 *:7
            > schedule
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c2 on h3 pri=1 <memory:1024, vCores:1> node-local
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c4 on h2 pri=1 <memory:1024, vCores:1> rack-local
              alloc a c5 on h4 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c6 on h4 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c7 on h4 pri=1 <memory:1024, vCores:1> off-switch
            > table a
              (no outstanding asks)
            > nodes
              h1 /r1 used=2048/4096MB,2/4vc [a c1, a c3]
              h2 /r1 used=1024/4096MB,1/4vc [a c4]
              h3 /r2 used=1024/4096MB,1/4vc [a c2]
              h4 /r2 used=3072/8192MB,3/8vc [a c5, a c6, a c7]
        "#]],
    );
}

/// `relax_locality = false` on the rack and `*` rows pins a request to the
/// hosts it names; on `*` alone, to the racks it names. Blacklisted hosts
/// and racks get nothing.
#[test]
fn strict_locality_and_blacklists() {
    check(
        r"
        node h1 rack=/r1 mem=2048 vcores=2
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=4096 vcores=4
        app a

        # Only on h1.
        ask a pri=1 mem=1024 h1:3
        ask a pri=1 mem=1024 relax=false /r1:3 *:3
        heartbeat h2
        heartbeat h3
        heartbeat h1
        table a

        # Anywhere in /r1, nowhere else. (The strict /r1 row of priority 1
        # does not stop priority 2.)
        ask a pri=2 mem=1024 /r1:2
        ask a pri=2 mem=1024 relax=false *:2
        heartbeat h3
        heartbeat h2
        table a

        # Anywhere but h2 and rack /r2.
        ask a pri=3 mem=1024 *:4
        blacklist a +h2 +/r2
        schedule
        blacklist a -/r2
        schedule
        apps
        table a
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=2048 vcores=2
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=4096 vcores=4
            > app a
            > ask a pri=1 mem=1024 h1:3
            > ask a pri=1 mem=1024 relax=false /r1:3 *:3
            > heartbeat h2
            > heartbeat h3
            > heartbeat h1
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> node-local
            > table a
              pri=1 <memory:1024, vCores:1>: *=1(strict) /r1=1(strict) h1=1
            > ask a pri=2 mem=1024 /r1:2
            > ask a pri=2 mem=1024 relax=false *:2
            > heartbeat h3
            > heartbeat h2
              alloc a c3 on h2 pri=2 <memory:1024, vCores:1> rack-local
              alloc a c4 on h2 pri=2 <memory:1024, vCores:1> rack-local
            > table a
              pri=1 <memory:1024, vCores:1>: *=1(strict) /r1=1(strict) h1=1
            > ask a pri=3 mem=1024 *:4
            > blacklist a +h2 +/r2
            > schedule
            > blacklist a -/r2
            > schedule
              alloc a c5 on h3 pri=3 <memory:1024, vCores:1> off-switch
              alloc a c6 on h3 pri=3 <memory:1024, vCores:1> off-switch
              alloc a c7 on h3 pri=3 <memory:1024, vCores:1> off-switch
              alloc a c8 on h3 pri=3 <memory:1024, vCores:1> off-switch
            > apps
              a queue=root.default used=8192MB,8vc pending=1024MB,1vc containers=8 blacklist=h2
            > table a
              pri=1 <memory:1024, vCores:1>: *=1(strict) /r1=1(strict) h1=1
        "#]],
    );
}

/// Released containers give their resources back to the node and the
/// queue without being charged against the request table; completions
/// carry the NM's exit status; reports about containers the scheduler no
/// longer holds are ignored.
#[test]
fn releases_and_completions() {
    check(
        r"
        node h1 rack=/r1 mem=4096 vcores=4
        app a
        ask a pri=0 mem=1024 *:1
        heartbeat h1
        ask a pri=1 mem=1024 *:3
        heartbeat h1
        table a
        queues

        release a c3
        table a
        nodes
        queues

        # The NM's report of the kill comes later and changes nothing.
        complete a c3 exit=-105
        release a c3 c99
        complete a c2 exit=0
        expire a c4
        heartbeat h1
        kill a c1
        nodes
        apps
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=4096 vcores=4
            > app a
            > ask a pri=0 mem=1024 *:1
            > heartbeat h1
              alloc a c1 on h1 pri=0 <memory:1024, vCores:1> off-switch
            > ask a pri=1 mem=1024 *:3
            > heartbeat h1
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c4 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > table a
              (no outstanding asks)
            > queues
              root guaranteed=4096MB,4vc max=4096MB,4vc used=4096MB,4vc am=1024MB apps=1 running=1
              root.default guaranteed=4096MB,4vc max=4096MB,4vc used=4096MB,4vc am=1024MB apps=1 running=1
            > release a c3
              done a c3 on h1 exit=-100 released-by-application
              kill a c3 on h1
            > table a
              (no outstanding asks)
            > nodes
              h1 /r1 used=3072/4096MB,3/4vc [a c1, a c2, a c4]
            > queues
              root guaranteed=4096MB,4vc max=4096MB,4vc used=3072MB,3vc am=1024MB apps=1 running=1
              root.default guaranteed=4096MB,4vc max=4096MB,4vc used=3072MB,3vc am=1024MB apps=1 running=1
            > complete a c3 exit=-105
            > release a c3 c99
            > complete a c2 exit=0
              done a c2 on h1 exit=0 exited
            > expire a c4
              done a c4 on h1 exit=-100 expired
            > heartbeat h1
            > kill a c1
              done a c1 on h1 exit=-106 killed-by-resourcemanager
            > nodes
              h1 /r1 used=0/4096MB,0/4vc []
            > apps
              a queue=root.default used=0MB,0vc pending=0MB,0vc containers=0
        "#]],
    );
}

/// Nodes come, go, fall ill, drain and shrink.
#[test]
fn node_churn() {
    check(
        r"
        node h1 rack=/r1 mem=4096 vcores=4
        node h2 rack=/r1 mem=4096 vcores=4
        app a
        ask a pri=1 mem=1024 *:4
        schedule
        remove h1
        ask a pri=1 mem=1024 *:2

        update h2 healthy=false
        schedule
        update h2 healthy=true schedulable=false
        schedule
        update h2 schedulable=true mem=2048
        nodes
        schedule

        # Shrunk below what runs there: nothing new until usage fits.
        update h2 mem=1024
        nodes
        complete a c2
        heartbeat h2
        complete a c4
        heartbeat h2

        # h1 comes back, in another rack.
        node h1 rack=/r2 mem=2048 vcores=2
        heartbeat h1
        nodes
        remove h9
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=4096 vcores=4
            > node h2 rack=/r1 mem=4096 vcores=4
            > app a
            > ask a pri=1 mem=1024 *:4
            > schedule
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c2 on h2 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c4 on h2 pri=1 <memory:1024, vCores:1> off-switch
            > remove h1
              done a c1 on h1 exit=-100 node-lost
              done a c3 on h1 exit=-100 node-lost
            > ask a pri=1 mem=1024 *:2
            > update h2 healthy=false
            > schedule
            > update h2 healthy=true schedulable=false
            > schedule
            > update h2 schedulable=true mem=2048
            > nodes
              h2 /r1 used=2048/2048MB,2/4vc [a c2, a c4]
            > schedule
            > update h2 mem=1024
            > nodes
              h2 /r1 used=2048/1024MB,2/4vc [a c2, a c4]
            > complete a c2
              done a c2 on h2 exit=0 exited
            > heartbeat h2
            > complete a c4
              done a c4 on h2 exit=0 exited
            > heartbeat h2
              alloc a c5 on h2 pri=1 <memory:1024, vCores:1> off-switch
            > node h1 rack=/r2 mem=2048 vcores=2
            > heartbeat h1
              alloc a c6 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > nodes
              h1 /r2 used=1024/2048MB,1/2vc [a c6]
              h2 /r1 used=1024/1024MB,1/4vc [a c5]
            > remove h9
              error: node h9:8041 is not registered
        "#]],
    );
}

/// Limits and invalid inputs are errors that change nothing.
#[test]
fn limits_and_invalid_inputs() {
    check(
        r"
        config max_nodes=2 max_asks_per_app=3 max_containers_per_pass=2 max_mem=4096 max_vcores=4
        node h1 rack=/r1 mem=8192 vcores=8
        node h2 rack=/r1 mem=8192 vcores=8
        node h3 rack=/r1 mem=8192 vcores=8
        node h1 rack=/r2 mem=1024 vcores=1
        node h4 rack=/r1 mem=-1 vcores=1
        app a
        ask a pri=1 mem=1024 h1:1 h2:1 /r1:1 *:1
        table a
        ask a pri=1 mem=5000 *:1
        ask a pri=1 mem=1024 vcores=5 *:1
        ask a pri=1 mem=1024 *:-1
        blacklist a +*
        ask a pri=1 mem=1000 vcores=0 *:5
        table a
        schedule
        schedule max=1
        heartbeat h2
        heartbeat h1
        tick 100
        tick 50
        ",
        expect![[r#"
            > config max_nodes=2 max_asks_per_app=3 max_containers_per_pass=2 max_mem=4096 max_vcores=4
            > node h1 rack=/r1 mem=8192 vcores=8
            > node h2 rack=/r1 mem=8192 vcores=8
            > node h3 rack=/r1 mem=8192 vcores=8
              error: limit max_nodes exceeded: 3 > 2 (registering node h3:8041)
            > node h1 rack=/r2 mem=1024 vcores=1
              error: node h1:8041 is already registered
            > node h4 rack=/r1 mem=-1 vcores=1
              error: invalid node h4:8041: negative capability <memory:-1, vCores:1>
            > app a
            > ask a pri=1 mem=1024 h1:1 h2:1 /r1:1 *:1
              error: limit max_asks_per_app exceeded: 4 > 3 (outstanding request rows of appattempt_1_0001_000001)
            > table a
              (no outstanding asks)
            > ask a pri=1 mem=5000 *:1
              error: invalid resource request #0 from appattempt_1_0001_000001: capability <memory:5000, vCores:1> is larger than the maximum allocation <memory:4096, vCores:4>
            > ask a pri=1 mem=1024 vcores=5 *:1
              error: invalid resource request #0 from appattempt_1_0001_000001: capability <memory:1024, vCores:5> is larger than the maximum allocation <memory:4096, vCores:4>
            > ask a pri=1 mem=1024 *:-1
              error: invalid resource request #0 from appattempt_1_0001_000001: negative number of containers -1 at *
            > blacklist a +*
              error: invalid blacklist entry from appattempt_1_0001_000001: '*' is not a host or rack name (1 to 4096 bytes, not '*')
            > ask a pri=1 mem=1000 vcores=0 *:5
            > table a
              pri=1 <memory:1024, vCores:1>: *=5
            > schedule
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c2 on h2 pri=1 <memory:1024, vCores:1> off-switch
            > schedule max=1
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > heartbeat h2
              alloc a c4 on h2 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c5 on h2 pri=1 <memory:1024, vCores:1> off-switch
            > heartbeat h1
            > tick 100
            > tick 50
              error: time went backwards: now_ms 50 is before the previous call's 100
        "#]],
    );
}

/// A finished attempt's containers are completed and killed, its asks
/// dropped, and its queue forgets it.
#[test]
fn app_removal() {
    check(
        r"
        queue root.q1
        node h1 rack=/r1 mem=8192 vcores=8
        app a queue=q1
        app b queue=q1
        ask a pri=0 mem=1024 *:1
        ask b pri=0 mem=1024 *:1
        schedule
        ask a pri=1 mem=1024 *:3
        ask b pri=1 mem=1024 *:1
        schedule max=3
        order
        finish a
        order
        queues
        nodes
        ask a pri=1 mem=1024 *:1
        finish b
        queues
        ",
        expect![[r#"
            > queue root.q1
            > node h1 rack=/r1 mem=8192 vcores=8
            > app a queue=q1
            > app b queue=q1
            > ask a pri=0 mem=1024 *:1
            > ask b pri=0 mem=1024 *:1
            > schedule
              alloc a c1 on h1 pri=0 <memory:1024, vCores:1> off-switch
              alloc b c1 on h1 pri=0 <memory:1024, vCores:1> off-switch
            > ask a pri=1 mem=1024 *:3
            > ask b pri=1 mem=1024 *:1
            > schedule max=3
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c4 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > order
              order: b
            > finish a
              done a c1 on h1 exit=-100 application-finished
              done a c2 on h1 exit=-100 application-finished
              done a c3 on h1 exit=-100 application-finished
              done a c4 on h1 exit=-100 application-finished
              kill a c1 on h1
              kill a c2 on h1
              kill a c3 on h1
              kill a c4 on h1
            > order
              order: b
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
              root.q1 guaranteed=0MB,0vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
            > nodes
              h1 /r1 used=1024/8192MB,1/8vc [b c1]
            > ask a pri=1 mem=1024 *:1
              error: application attempt appattempt_1_0001_000001 is not known (never added, or already removed)
            > finish b
              done b c1 on h1 exit=-100 application-finished
              kill b c1 on h1
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=0MB,0vc am=0MB apps=0 running=0
              root.q1 guaranteed=0MB,0vc max=8192MB,8vc used=0MB,0vc am=0MB apps=0 running=0
        "#]],
    );
}

/// Allocation request ids are part of the request key and are echoed in
/// the allocations; asks of different sizes at one priority are separate.
#[test]
fn allocation_request_ids_and_sizes() {
    check(
        r"
        node h1 rack=/r1 mem=8192 vcores=8
        app a
        ask a pri=1 mem=1024 id=7 *:1
        ask a pri=1 mem=1024 id=8 *:2
        ask a pri=1 mem=2048 *:1
        ask a pri=1 mem=1024 id=8 *:1
        table a
        schedule
        table a
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=8192 vcores=8
            > app a
            > ask a pri=1 mem=1024 id=7 *:1
            > ask a pri=1 mem=1024 id=8 *:2
            > ask a pri=1 mem=2048 *:1
            > ask a pri=1 mem=1024 id=8 *:1
            > table a
              pri=1 <memory:2048, vCores:1>: *=1
              pri=1 <memory:1024, vCores:1> id=7: *=1
              pri=1 <memory:1024, vCores:1> id=8: *=1
            > schedule
              alloc a c1 on h1 pri=1 <memory:2048, vCores:1> off-switch
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> off-switch id=7
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch id=8
            > table a
              (no outstanding asks)
        "#]],
    );
}

/// A continuous pass examines a bounded number of nodes per placement;
/// what it cannot reach waits for a heartbeat of a suitable node.
#[test]
fn candidate_budget_bounds_a_pick() {
    check(
        r"
        config max_candidates_per_pick=1
        node h1 rack=/r1 mem=8192 vcores=8
        node h2 rack=/r1 mem=4096 vcores=4
        app a
        ask a pri=1 mem=1024 *:1
        blacklist a +h1
        schedule
        heartbeat h2
        ",
        expect![[r#"
            > config max_candidates_per_pick=1
            > node h1 rack=/r1 mem=8192 vcores=8
            > node h2 rack=/r1 mem=4096 vcores=4
            > app a
            > ask a pri=1 mem=1024 *:1
            > blacklist a +h1
            > schedule
            > heartbeat h2
              alloc a c1 on h2 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// A row at 0 closes its own level only. Once h1 and /r1 are used up,
/// another container on h1 can only come through `*`, as off-switch, and
/// only if `*` relaxes; with a strict `*`, nothing more is granted there.
/// (This is Hadoop's reading of the protocol; locality delay, which makes
/// such off-switch grants wait, comes later.)
#[test]
fn zero_rows_close_their_level() {
    check(
        r"
        node h1 rack=/r1 mem=4096 vcores=4
        node h2 rack=/r2 mem=4096 vcores=4
        app a
        # One heartbeat: the first container node-local, the second (h1
        # and /r1 now 0) off-switch.
        ask a pri=1 mem=1024 h1:1 /r1:1 *:2
        heartbeat h1

        ask a pri=2 mem=1024 h2:1 /r2:1
        ask a pri=2 mem=1024 relax=false *:2
        heartbeat h2
        table a
        heartbeat h2
        schedule
        ",
        expect![[r#"
            > node h1 rack=/r1 mem=4096 vcores=4
            > node h2 rack=/r2 mem=4096 vcores=4
            > app a
            > ask a pri=1 mem=1024 h1:1 /r1:1 *:2
            > heartbeat h1
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > ask a pri=2 mem=1024 h2:1 /r2:1
            > ask a pri=2 mem=1024 relax=false *:2
            > heartbeat h2
              alloc a c3 on h2 pri=2 <memory:1024, vCores:1> node-local
            > table a
              pri=2 <memory:1024, vCores:1>: *=1(strict)
            > heartbeat h2
            > schedule
        "#]],
    );
}
