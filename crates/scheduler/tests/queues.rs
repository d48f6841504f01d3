//! Queue semantics of the three schedulers (capacity, fair, FIFO's single
//! queue), delay scheduling, per-heartbeat caps, live reconfiguration and
//! container packing under each scheduler.
//!
//! Traces that read well are scenario snapshots (`UPDATE_EXPECT=1 cargo
//! test -p spindle-scheduler --test queues` rewrites them after a
//! deliberate change); long passes are summarized to one line per command
//! (`alloc: APP×COUNT ...`, in order of first allocation). Convergence
//! (shares under churn, DRF) is measured through the API with numeric
//! assertions. The scheduler's invariants are checked after every step.

use std::fmt::Write as _;

use expect_test::{expect, Expect};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::scenario::{self, Scenario};
use spindle_scheduler::{
    AppOrdering, ContainerExit, Decisions, HeartbeatAssignment, Input, LocalityDelay, QueueConfig,
    QueueShare, QueueTreeConfig, ResourceAsk, ResourceCalculatorKind, Scheduler, SchedulerConfig,
    SchedulerError, SchedulerKind, ANY,
};

// ----------------------------------------------------------------------
// Scenario helpers

fn trace(script: &str) -> String {
    match scenario::run(script) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

fn check(script: &str, expected: Expect) {
    expected.assert_eq(&trace(script));
}

/// Like [`check`], with each command's allocations folded into one line.
fn check_summary(script: &str, expected: Expect) {
    expected.assert_eq(&summarize(&trace(script)));
}

/// Runs a script line by line and hands back the scenario, for numeric
/// checks on the scheduler's reports.
fn run(script: &str) -> Scenario {
    let mut s = Scenario::new();
    for (i, line) in script.lines().enumerate() {
        if let Err(e) = s.step(line) {
            panic!("line {}: {e}\n{}", i + 1, s.trace());
        }
    }
    s
}

/// Replaces the `alloc` lines after each command by one line counting
/// allocations per application, in order of first allocation.
fn summarize(trace: &str) -> String {
    fn flush(out: &mut String, counts: &mut Vec<(String, usize)>) {
        if counts.is_empty() {
            return;
        }
        let cells: Vec<String> = counts.iter().map(|(a, n)| format!("{a}×{n}")).collect();
        let _ = writeln!(out, "  alloc: {}", cells.join(" "));
        counts.clear();
    }
    let mut out = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in trace.lines() {
        if let Some(rest) = line.strip_prefix("  alloc ") {
            let app = rest.split(' ').next().unwrap_or_default().to_string();
            match counts.iter_mut().find(|(a, _)| *a == app) {
                Some((_, n)) => *n += 1,
                None => counts.push((app, 1)),
            }
        } else {
            flush(&mut out, &mut counts);
            out.push_str(line);
            out.push('\n');
        }
    }
    flush(&mut out, &mut counts);
    out
}

/// `count` nodes `n01`.. of `mb` MB and `vcores` in rack `/r1`.
fn nodes(count: usize, mb: i64, vcores: i32) -> String {
    (1..=count)
        .map(|i| format!("node n{i:02} rack=/r1 mem={mb} vcores={vcores}\n"))
        .collect()
}

/// How many containers `app` was granted so far in the scenario's trace.
fn allocations(s: &Scenario, app: &str) -> usize {
    let prefix = format!("  alloc {app} ");
    s.trace().lines().filter(|l| l.starts_with(&prefix)).count()
}

fn queue_used_mb(s: &Scenario, path: &str) -> i64 {
    match s.scheduler().and_then(|x| x.queue(path)) {
        Some(q) => q.used.memory_mb,
        None => panic!("no queue {path}"),
    }
}

// ----------------------------------------------------------------------
// API helpers for measurements

struct Harness {
    s: Scheduler,
    now: u64,
    apps: i32,
}

impl Harness {
    fn new(config: SchedulerConfig) -> Harness {
        match Scheduler::new(config) {
            Ok(s) => Harness { s, now: 0, apps: 0 },
            Err(e) => panic!("{e}"),
        }
    }

    fn input(&mut self, input: Input) -> Result<Decisions, SchedulerError> {
        self.now += 1;
        let r = self.s.handle(self.now, input);
        if let Err(e) = self.s.check_invariants() {
            panic!("{e}");
        }
        r
    }

    fn ok(&mut self, input: Input) -> Decisions {
        match self.input(input) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        }
    }

    fn nodes(&mut self, count: usize, capability: Resource) {
        for i in 0..count {
            self.ok(Input::NodeAdded {
                node: NodeId::new(format!("n{i:04}"), 8041),
                rack: format!("/r{}", i % 4),
                capability,
            });
        }
    }

    /// An application with an unmanaged AM (so AM limits stay out of the
    /// measurement).
    fn app(&mut self, queue: &str, user: &str) -> ApplicationAttemptId {
        self.apps += 1;
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1, self.apps), 1);
        self.ok(Input::AppAdded {
            attempt,
            queue: queue.into(),
            user: user.into(),
            priority: 0,
            unmanaged_am: true,
        });
        attempt
    }

    fn ask(&mut self, attempt: ApplicationAttemptId, capability: Resource, count: i32) {
        self.ok(Input::AsksUpdated {
            attempt,
            asks: vec![ResourceAsk::new(1, ANY, capability, count)],
            releases: vec![],
            blacklist_add: vec![],
            blacklist_remove: vec![],
        });
    }

    /// One continuous pass of at most `max` containers; returns how many
    /// it allocated.
    fn schedule(&mut self, max: usize) -> usize {
        self.now += 1;
        let d = match self.s.schedule(self.now, max) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        if let Err(e) = self.s.check_invariants() {
            panic!("{e}");
        }
        d.allocations.len()
    }

    /// Continuous passes until one allocates nothing; returns how many
    /// containers they allocated.
    fn schedule_all(&mut self) -> usize {
        let mut total = 0;
        loop {
            let n = self.schedule(usize::MAX);
            if n == 0 {
                return total;
            }
            total += n;
        }
    }

    fn complete(&mut self, container: ContainerId) {
        self.ok(Input::ContainerCompleted {
            container,
            exit: ContainerExit::Finished {
                exit_status: 0,
                diagnostics: String::new(),
            },
        });
    }

    fn live(&self) -> Vec<ContainerId> {
        self.s
            .apps()
            .into_iter()
            .flat_map(|a| a.containers)
            .collect()
    }

    fn used(&self, queue: &str) -> Resource {
        match self.s.queue(queue) {
            Some(q) => q.used,
            None => panic!("no queue {queue}"),
        }
    }

    fn app_used(&self, attempt: &ApplicationAttemptId) -> Resource {
        match self.s.app(attempt) {
            Some(a) => a.used,
            None => panic!("no attempt {attempt}"),
        }
    }
}

/// xorshift64*: picks which containers finish during churn.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        usize::try_from(x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64).unwrap_or(0)
    }
}

/// Completes about `percent`% of the live containers, chosen at random.
fn churn(h: &mut Harness, rng: &mut Rng, percent: usize) -> usize {
    let live = h.live();
    let mut done = 0;
    for c in live {
        if rng.below(100) < percent {
            h.complete(c);
            done += 1;
        }
    }
    done
}

fn capacity_leaf(name: &str, capacity: f64, maximum: f64) -> QueueConfig {
    let mut q = QueueConfig::leaf(
        name,
        QueueShare::Capacity {
            capacity_pct: capacity,
            maximum_pct: maximum,
        },
    );
    q.user_limit_factor = None;
    q
}

fn capacity_tree(children: Vec<QueueConfig>) -> QueueTreeConfig {
    QueueTreeConfig {
        kind: SchedulerKind::Capacity,
        root: QueueConfig::parent(
            "root",
            QueueShare::Capacity {
                capacity_pct: 100.0,
                maximum_pct: 100.0,
            },
            children,
        ),
        ..QueueTreeConfig::fifo()
    }
}

fn fair_leaf(name: &str, weight: f64) -> QueueConfig {
    let mut q = QueueConfig::leaf(
        name,
        QueueShare::Fair {
            weight,
            min: None,
            max: None,
        },
    );
    q.ordering = AppOrdering::Fair;
    q
}

fn fair_tree(root_ordering: AppOrdering, children: Vec<QueueConfig>) -> QueueTreeConfig {
    let mut root = QueueConfig::parent(
        "root",
        QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: None,
        },
        children,
    );
    root.ordering = root_ordering;
    QueueTreeConfig {
        kind: SchedulerKind::Fair,
        root,
        ..QueueTreeConfig::fifo()
    }
}

const GB: Resource = Resource::new(1024, 1);

// ----------------------------------------------------------------------
// Capacity scheduler

/// Two queues with guarantees of 70% and 30%, both wanting everything,
/// hold 70% and 30% of the cluster, and keep that split while containers
/// finish and are replaced.
#[test]
fn capacity_guarantees_split_a_contended_cluster() {
    let mut h = Harness::new(SchedulerConfig {
        queues: capacity_tree(vec![
            capacity_leaf("a", 70.0, 100.0),
            capacity_leaf("b", 30.0, 100.0),
        ]),
        ..SchedulerConfig::default()
    });
    h.nodes(10, Resource::new(10 * 1024, 10));
    for (queue, user) in [("a", "alice"), ("b", "bob"), ("a", "carol")] {
        let app = h.app(queue, user);
        h.ask(app, GB, 10_000);
    }
    assert_eq!(h.schedule_all(), 100);
    assert_eq!(h.used("root.a").memory_mb, 70 * 1024);
    assert_eq!(h.used("root.b").memory_mb, 30 * 1024);

    let mut rng = Rng(0x5eed);
    for round in 0..40 {
        let done = churn(&mut h, &mut rng, 20);
        assert_eq!(h.schedule_all(), done, "round {round}: the cluster refills");
        assert_eq!(h.used("root.a").memory_mb, 70 * 1024, "round {round}");
        assert_eq!(h.used("root.b").memory_mb, 30 * 1024, "round {round}");
    }
}

/// A queue alone grows past its guarantee up to its maximum capacity and
/// no further. When the other queue's application arrives it gets what is
/// free; nothing is preempted, and as the big queue's containers finish
/// the freed room goes to the queue under its guarantee first.
#[test]
fn capacity_elasticity_up_to_maximum_and_back() {
    let completions: String = (1..=15).map(|i| format!("complete a1 c{i}\n")).collect();
    let s = run(&format!(
        "config scheduler=capacity\n\
         queue root.a capacity=70 max=80 ulf=none\n\
         queue root.b capacity=30 max=100 ulf=none\n\
         {}\
         app a1 queue=a user=alice\n\
         ask a1 pri=1 mem=1024 *:200\n\
         schedule\n\
         schedule\n\
         queues\n\
         app b1 queue=b user=bob\n\
         ask b1 pri=1 mem=1024 *:200\n\
         schedule\n\
         queues\n\
         {completions}\
         schedule\n\
         queues\n",
        nodes(10, 10240, 10)
    ));
    assert_eq!(queue_used_mb(&s, "root.a"), 70 * 1024);
    assert_eq!(queue_used_mb(&s, "root.b"), 30 * 1024);
    let summary: String = summarize(s.trace())
        .lines()
        .filter(|l| !l.contains("> node ") && !l.contains("done a1") && !l.contains("> complete"))
        .map(|l| format!("{l}\n"))
        .collect();
    expect![[r#"
        > config scheduler=capacity
        > queue root.a capacity=70 max=80 ulf=none
        > queue root.b capacity=30 max=100 ulf=none
        > app a1 queue=a user=alice
        > ask a1 pri=1 mem=1024 *:200
        > schedule
          alloc: a1×80
        > schedule
        > queues
          root guaranteed=102400MB,100vc max=102400MB,100vc used=81920MB,80vc am=1024MB apps=1 running=1
          root.a guaranteed=71680MB,70vc max=81920MB,80vc used=81920MB,80vc am=1024MB apps=1 running=1
          root.b guaranteed=30720MB,30vc max=102400MB,100vc used=0MB,0vc am=0MB apps=0 running=0
        > app b1 queue=b user=bob
        > ask b1 pri=1 mem=1024 *:200
        > schedule
          alloc: b1×20
        > queues
          root guaranteed=102400MB,100vc max=102400MB,100vc used=102400MB,100vc am=2048MB apps=2 running=2
          root.a guaranteed=71680MB,70vc max=81920MB,80vc used=81920MB,80vc am=1024MB apps=1 running=1
          root.b guaranteed=30720MB,30vc max=102400MB,100vc used=20480MB,20vc am=1024MB apps=1 running=1
        > schedule
          alloc: b1×10 a1×5
        > queues
          root guaranteed=102400MB,100vc max=102400MB,100vc used=102400MB,100vc am=1024MB apps=2 running=2
          root.a guaranteed=71680MB,70vc max=81920MB,80vc used=71680MB,70vc am=0MB apps=1 running=1
          root.b guaranteed=30720MB,30vc max=102400MB,100vc used=30720MB,30vc am=1024MB apps=1 running=1
    "#]]
    .assert_eq(&summary);
}

/// `minimum-user-limit-percent` 50 splits a queue between two users even
/// under FIFO ordering, where the first application would otherwise take
/// everything. The split is Hadoop's: a user at or under its limit may
/// take one more container (so a queue with several users can grow past
/// its guarantee), hence 51 and 49.
#[test]
fn capacity_minimum_user_limit_percent_splits_between_users() {
    let script = |mulp: u32| {
        format!(
            "config scheduler=capacity\n\
             queue root.a capacity=100 ulf=none mulp={mulp}\n\
             {}\
             app a1 queue=a user=u1\n\
             ask a1 pri=1 mem=1024 *:80\n\
             app a2 queue=a user=u2\n\
             ask a2 pri=1 mem=1024 *:80\n\
             schedule\n",
            nodes(10, 10240, 10)
        )
    };
    let allocs = |t: String| {
        summarize(&t)
            .lines()
            .filter(|l| l.starts_with("  alloc:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(allocs(trace(&script(50))), "  alloc: a1×51 a2×49");
    // Without the floor the first user takes what it asked for.
    assert_eq!(allocs(trace(&script(100))), "  alloc: a1×80 a2×20");
}

/// A user stays active (and so keeps its share of the queue) while one of
/// its applications has pending requests, as in Hadoop, even when that
/// application can take nothing in this pass (parked: its containers fit on
/// no node's free space). Before, parking took the user out of the count
/// for the rest of the pass and the other user's limit doubled.
#[test]
fn a_user_whose_application_waits_for_space_keeps_its_share() {
    let script = format!(
        "config scheduler=capacity\n\
         queue root.a capacity=100 ulf=none mulp=50\n\
         {}\
         app a1 queue=a user=u1\n\
         ask a1 pri=1 mem=1024 *:1\n\
         schedule\n\
         app a2 queue=a user=u2\n\
         ask a2 pri=1 mem=1024 *:69\n\
         schedule\n\
         ask a1 pri=2 mem=4096 *:1\n\
         ask a2 pri=1 mem=1024 *:30\n\
         schedule\n",
        nodes(10, 10240, 10)
    );
    let allocs: Vec<String> = summarize(&trace(&script))
        .lines()
        .filter(|l| l.starts_with("  alloc:"))
        .map(str::to_string)
        .collect();
    // With u1 idle, u2 takes 69 GB. Then u1 asks for 4 GB, which fits on no
    // node (each has 3 GB free): u1 waits, and counts as an active user, so
    // u2, already above the two-user limit (half the queue), gets nothing
    // more in that pass. (Parked, u1 used to drop out of the count and u2
    // took the last 30 GB.)
    assert_eq!(
        allocs,
        vec!["  alloc: a1×1", "  alloc: a2×69"],
        "{allocs:?}"
    );
}

/// The headroom an AM is told is what it may still be given: the cluster's
/// free resources, below every queue maximum on its path, and below its
/// user's limit (Hadoop's `CapacityHeadroomProvider`), not the whole
/// cluster's free resources.
#[test]
fn headroom_is_bounded_by_the_queue_maximum_and_the_user_limit() {
    let script = format!(
        "config scheduler=capacity\n\
         queue root.a capacity=20 max=30 ulf=none\n\
         queue root.b capacity=80\n\
         {}\
         app a1 queue=a user=u1\n\
         ask a1 pri=1 mem=1024 *:5\n\
         schedule\n\
         headroom a1\n\
         app a2 queue=a user=u2\n\
         ask a2 pri=1 mem=1024 *:40\n\
         schedule\n\
         headroom a1\n\
         app b1 queue=b user=u3\n\
         ask b1 pri=1 mem=1024 *:90\n\
         schedule\n\
         headroom b1\n",
        nodes(10, 10240, 10)
    );
    let got = summarize(&trace(&script));
    let lines: Vec<&str> = got
        .lines()
        .filter(|l| l.starts_with("  headroom:") || l.starts_with("  alloc:"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "  alloc: a1×5",
            // u1's limit while the queue is under its 20 GB guarantee is the
            // guarantee: 15 GB left (the vcores follow the same bounds).
            "  headroom: 15360MB,15vc",
            // u2 fills the queue up to its 30 GB maximum: nothing is left
            // for u1, whatever its user limit and the cluster's free 70 GB.
            "  alloc: a2×25",
            "  headroom: 0MB,0vc",
            // b1 takes the 70 GB free: the cluster is full.
            "  alloc: b1×70",
            "  headroom: 0MB,0vc",
        ],
        "{got}"
    );
}

/// `user-limit-factor` caps each user at factor × the queue's guarantee
/// (here 2 × 20%), however much room the queue's maximum leaves; a second
/// user gets its own 40%.
#[test]
fn capacity_user_limit_factor_caps_each_user() {
    check_summary(
        &format!(
            "config scheduler=capacity\n\
             queue root.a capacity=20 max=100 ulf=2\n\
             queue root.b capacity=80 max=100\n\
             {}\
             app a1 queue=a user=u1\n\
             ask a1 pri=1 mem=1024 *:100\n\
             schedule\n\
             app a2 queue=a user=u2\n\
             ask a2 pri=1 mem=1024 *:100\n\
             schedule\n\
             queues\n",
            nodes(10, 10240, 10)
        ),
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=20 max=100 ulf=2
            > queue root.b capacity=80 max=100
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
            > app a1 queue=a user=u1
            > ask a1 pri=1 mem=1024 *:100
            > schedule
              alloc: a1×41
            > app a2 queue=a user=u2
            > ask a2 pri=1 mem=1024 *:100
            > schedule
              alloc: a2×41
            > queues
              root guaranteed=102400MB,100vc max=102400MB,100vc used=83968MB,82vc am=2048MB apps=2 running=2
              root.a guaranteed=20480MB,20vc max=102400MB,100vc used=83968MB,82vc am=2048MB apps=2 running=2
              root.b guaranteed=81920MB,80vc max=102400MB,100vc used=0MB,0vc am=0MB apps=0 running=0
        "#]],
    );
}

/// Two Spark applications of one user in a small capacity queue (the
/// first-contact report): 2 NMs of 8 GB, `alpha` 70 % and `beta` 30 % (at
/// most 50 %), `user-limit-factor` 1, AM share 0.5; each application an AM
/// of 2 GB then two 2 GB executors. The user's limit is 30 % of 16 GB
/// (4915 MB, 5120 MB rounded up to the minimum allocation). Hadoop refuses
/// a user only when their usage is already above the limit, so with both
/// AMs running (4 GB) the user takes one more container: the first
/// application gets an executor, finishes, and the second gets both of
/// its executors. A hard `used + ask <= factor × guarantee` cap left both
/// applications waiting for ever.
#[test]
fn capacity_two_apps_of_one_user_at_the_user_limit_both_get_executors() {
    check_summary(
        r"
        config scheduler=capacity
        queue root.alpha capacity=70
        queue root.beta capacity=30 max=50 ulf=1 am=0.5
        node n1 rack=/r1 mem=8192 vcores=8
        node n2 rack=/r1 mem=8192 vcores=8
        app s1 queue=beta user=u
        app s2 queue=beta user=u
        ask s1 pri=0 mem=2048 *:1
        ask s2 pri=0 mem=2048 *:1
        schedule
        ask s1 pri=1 mem=2048 *:2
        ask s2 pri=1 mem=2048 *:2
        schedule
        finish s1
        schedule
        queues
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.alpha capacity=70
            > queue root.beta capacity=30 max=50 ulf=1 am=0.5
            > node n1 rack=/r1 mem=8192 vcores=8
            > node n2 rack=/r1 mem=8192 vcores=8
            > app s1 queue=beta user=u
            > app s2 queue=beta user=u
            > ask s1 pri=0 mem=2048 *:1
            > ask s2 pri=0 mem=2048 *:1
            > schedule
              alloc: s1×1
            > ask s1 pri=1 mem=2048 *:2
            > ask s2 pri=1 mem=2048 *:2
            > schedule
              alloc: s1×2
            > finish s1
              done s1 c1 on n1 exit=-100 application-finished
              done s1 c2 on n2 exit=-100 application-finished
              done s1 c3 on n1 exit=-100 application-finished
              kill s1 c1 on n1
              kill s1 c2 on n2
              kill s1 c3 on n1
            > schedule
              alloc: s2×3
            > queues
              root guaranteed=16384MB,16vc max=16384MB,16vc used=6144MB,3vc am=2048MB apps=1 running=1
              root.alpha guaranteed=11468MB,11vc max=16384MB,16vc used=0MB,0vc am=0MB apps=0 running=0
              root.beta guaranteed=4915MB,4vc max=8192MB,8vc used=6144MB,3vc am=2048MB apps=1 running=1
        "#]],
    );
}

/// The capacity scheduler's per-user AM limit (Hadoop's
/// `getUserAMResourceLimitPerPartition`): the AM share of the queue's
/// guarantee times the user's part of it (here `minimum-user-limit-percent`
/// 50) times `user-limit-factor`: 5 GB × 0.5 × 0.5 × 1, 2 GB rounded up. The
/// queue's own AM limit (half of the 10 GB it may use now) has room for
/// all four AMs; user `u` may hold two, so its third waits until one of
/// its applications ends, while user `v` starts its AM.
#[test]
fn capacity_user_am_limit_holds_back_a_users_third_am() {
    check_summary(
        r"
        config scheduler=capacity
        queue root.a capacity=50 max=100 mulp=50 am=0.5
        queue root.b capacity=50
        node n1 rack=/r1 mem=10240 vcores=10
        app u1 queue=a user=u
        app u2 queue=a user=u
        app u3 queue=a user=u
        app v1 queue=a user=v
        ask u1 pri=0 mem=1024 *:1
        ask u2 pri=0 mem=1024 *:1
        ask u3 pri=0 mem=1024 *:1
        ask v1 pri=0 mem=1024 *:1
        schedule
        finish u1
        schedule
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=50 max=100 mulp=50 am=0.5
            > queue root.b capacity=50
            > node n1 rack=/r1 mem=10240 vcores=10
            > app u1 queue=a user=u
            > app u2 queue=a user=u
            > app u3 queue=a user=u
            > app v1 queue=a user=v
            > ask u1 pri=0 mem=1024 *:1
            > ask u2 pri=0 mem=1024 *:1
            > ask u3 pri=0 mem=1024 *:1
            > ask v1 pri=0 mem=1024 *:1
            > schedule
              alloc: u1×1 u2×1 v1×1
            > finish u1
              done u1 c1 on n1 exit=-100 application-finished
              kill u1 c1 on n1
            > schedule
              alloc: u3×1
        "#]],
    );
}

/// `maximum-am-resource-percent`: a second AM waits while the queue's AMs
/// would exceed the share; the first always runs, even above it. The
/// running application's other containers are not held back.
#[test]
fn capacity_am_limit_holds_back_the_second_am() {
    check(
        r"
        config scheduler=capacity
        # 5% of 10 GB: 512 MB, less than one AM.
        queue root.a capacity=100 am=0.05 ulf=none
        node n1 rack=/r1 mem=10240 vcores=10
        app a1 queue=a
        app a2 queue=a
        ask a1 pri=0 mem=1024 *:1
        ask a2 pri=0 mem=1024 *:1
        schedule
        ask a1 pri=1 mem=1024 *:2
        schedule
        apps
        finish a1
        schedule
        queues
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=100 am=0.05 ulf=none
            > node n1 rack=/r1 mem=10240 vcores=10
            > app a1 queue=a
            > app a2 queue=a
            > ask a1 pri=0 mem=1024 *:1
            > ask a2 pri=0 mem=1024 *:1
            > schedule
              alloc a1 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > ask a1 pri=1 mem=1024 *:2
            > schedule
              alloc a1 c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a1 c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > apps
              a1 queue=root.a used=3072MB,3vc pending=0MB,0vc containers=3
              a2 queue=root.a used=0MB,0vc pending=1024MB,1vc containers=0
            > finish a1
              done a1 c1 on n1 exit=-100 application-finished
              done a1 c2 on n1 exit=-100 application-finished
              done a1 c3 on n1 exit=-100 application-finished
              kill a1 c1 on n1
              kill a1 c2 on n1
              kill a1 c3 on n1
            > schedule
              alloc a2 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > queues
              root guaranteed=10240MB,10vc max=10240MB,10vc used=1024MB,1vc am=1024MB apps=1 running=1
              root.a guaranteed=10240MB,10vc max=10240MB,10vc used=1024MB,1vc am=1024MB apps=1 running=1
        "#]],
    );
}

/// Three levels: `root.eng` (50%, maximum 60%) holds `etl` (with leaves
/// `x` and `y`) and `adhoc`. Each leaf alone could grow to 60% of the
/// cluster; together they stop at eng's 60%, split by the guarantees
/// below it. `root.sales` then takes the remaining 40%.
/// The AM share applies to what an elastic queue may use now, not only to
/// its guarantee (Hadoop: the larger of the guarantee and the queue's
/// current limit): on an idle cluster a queue guaranteed 50% but allowed
/// 100% starts a second AM that its guarantee alone would hold back; once
/// the other queue fills the cluster, the limit shrinks back to the
/// guarantee's share.
#[test]
fn capacity_am_limit_follows_the_queues_current_limit() {
    let s = run(&format!(
        "config scheduler=capacity\n\
         # 10% of a 10 GB guarantee is 1 GB: one AM; 10% of 20 GB is two.\n\
         queue root.a capacity=50 max=100 am=0.1 ulf=none\n\
         queue root.b capacity=50 max=100 ulf=none\n\
         {}\
         app a1 queue=a\n\
         app a2 queue=a\n\
         app a3 queue=a\n\
         ask a1 pri=0 mem=1024 *:1\n\
         ask a2 pri=0 mem=1024 *:1\n\
         ask a3 pri=0 mem=1024 *:1\n\
         schedule\n",
        nodes(2, 10240, 10)
    ));
    let running: Vec<&str> = ["a1", "a2", "a3"]
        .into_iter()
        .filter(|app| allocations(&s, app) > 0)
        .collect();
    assert_eq!(
        running,
        ["a1", "a2"],
        "two AMs fit 10% of the 20 GB queue a may use"
    );

    // Queue b takes everything else; a's current limit falls to what it
    // holds (2 GB), below its guarantee, so the limit is the guarantee's
    // 1 GB again and a third AM waits even after a2 finishes.
    let s = run(&format!(
        "config scheduler=capacity\n\
         queue root.a capacity=50 max=100 am=0.1 ulf=none\n\
         queue root.b capacity=50 max=100 ulf=none\n\
         {}\
         app b1 queue=b\n\
         ask b1 pri=0 mem=1024 *:18\n\
         schedule\n\
         app a1 queue=a\n\
         app a2 queue=a\n\
         ask a1 pri=0 mem=1024 *:1\n\
         ask a2 pri=0 mem=1024 *:1\n\
         schedule\n",
        nodes(2, 10240, 10)
    ));
    assert_eq!(allocations(&s, "a1"), 1);
    assert_eq!(
        allocations(&s, "a2"),
        0,
        "with the cluster full, a's AM limit is 10% of its 10 GB guarantee"
    );
}

#[test]
fn capacity_three_levels_enforce_parent_maxima() {
    let s = run(&format!(
        "config scheduler=capacity\n\
         queue root.eng capacity=50 max=60\n\
         queue root.eng.etl capacity=50 max=100\n\
         queue root.eng.etl.x capacity=50 max=100 ulf=none\n\
         queue root.eng.etl.y capacity=50 max=100 ulf=none\n\
         queue root.eng.adhoc capacity=50 max=100 ulf=none\n\
         queue root.sales capacity=50 max=100 ulf=none\n\
         {}\
         app x1 queue=x\n\
         app y1 queue=y\n\
         app ad1 queue=adhoc\n\
         ask x1 pri=1 mem=1024 *:100\n\
         ask y1 pri=1 mem=1024 *:100\n\
         ask ad1 pri=1 mem=1024 *:100\n\
         schedule\n\
         queues\n\
         app s1 queue=sales\n\
         ask s1 pri=1 mem=1024 *:100\n\
         schedule\n",
        nodes(10, 10240, 10)
    ));
    let gb = |path| queue_used_mb(&s, path) / 1024;
    assert_eq!(gb("root.eng"), 60);
    assert_eq!(gb("root.eng.etl"), 30);
    assert_eq!(gb("root.eng.etl.x"), 15);
    assert_eq!(gb("root.eng.etl.y"), 15);
    assert_eq!(gb("root.eng.adhoc"), 30);
    assert_eq!(gb("root.sales"), 40);
    let summary: String = summarize(s.trace())
        .lines()
        .filter(|l| l.starts_with("  alloc:") || l.contains("root"))
        .filter(|l| !l.starts_with("> "))
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    expect![[r#"
        alloc: x1×15 ad1×30 y1×15
        root guaranteed=102400MB,100vc max=102400MB,100vc used=61440MB,60vc am=3072MB apps=3 running=3
        root.eng guaranteed=51200MB,50vc max=61440MB,60vc used=61440MB,60vc am=3072MB apps=3 running=3
        root.eng.etl guaranteed=25600MB,25vc max=61440MB,60vc used=30720MB,30vc am=2048MB apps=2 running=2
        root.eng.etl.x guaranteed=12800MB,12vc max=61440MB,60vc used=15360MB,15vc am=1024MB apps=1 running=1
        root.eng.etl.y guaranteed=12800MB,12vc max=61440MB,60vc used=15360MB,15vc am=1024MB apps=1 running=1
        root.eng.adhoc guaranteed=25600MB,25vc max=61440MB,60vc used=30720MB,30vc am=1024MB apps=1 running=1
        root.sales guaranteed=51200MB,50vc max=102400MB,100vc used=0MB,0vc am=0MB apps=0 running=0
        alloc: s1×40
    "#]]
    .assert_eq(&summary);
}

// ----------------------------------------------------------------------
// Fair scheduler

/// Weights 1 : 2 : 3, every queue saturated with small containers, 20%
/// of the containers finishing each round: after the cluster has settled,
/// each queue's share of the cluster is within 5% of its weighted share.
#[test]
fn fair_weighted_shares_converge() {
    let mut h = Harness::new(SchedulerConfig {
        queues: fair_tree(
            AppOrdering::Fair,
            vec![
                fair_leaf("a", 1.0),
                fair_leaf("b", 2.0),
                fair_leaf("c", 3.0),
            ],
        ),
        ..SchedulerConfig::default()
    });
    h.nodes(20, Resource::new(16 * 1024, 16));
    for queue in ["a", "b", "c"] {
        for user in ["u1", "u2"] {
            let app = h.app(queue, user);
            h.ask(app, GB, 100_000);
        }
    }
    assert_eq!(h.schedule_all(), 320);
    let mut rng = Rng(42);
    let mut worst: f64 = 0.0;
    for round in 0..60 {
        let done = churn(&mut h, &mut rng, 20);
        assert_eq!(h.schedule_all(), done);
        if round < 10 {
            continue;
        }
        let total = 320.0 * 1024.0;
        for (queue, weight) in [("root.a", 1.0), ("root.b", 2.0), ("root.c", 3.0)] {
            let share = h.used(queue).memory_mb as f64 / total;
            let ideal = weight / 6.0;
            let error = (share - ideal).abs() / ideal;
            worst = worst.max(error);
            assert!(
                error <= 0.05,
                "round {round}: {queue} holds {share:.4} of the cluster, weighted share {ideal:.4}"
            );
        }
    }
    // The shares are not merely within 5%: the ordering keeps them within
    // a container or two of exact.
    assert!(worst < 0.03, "worst relative error {worst}");
}

/// A queue below its `minResources` is served before every queue that is
/// not, whatever the weights; past it, weights decide.
#[test]
fn fair_min_resources_are_served_first() {
    check_summary(
        &format!(
            "config scheduler=fair\n\
             queue root.a weight=1 min=40960,40\n\
             queue root.b weight=3\n\
             {}\
             app b1 queue=b\n\
             app a1 queue=a\n\
             ask b1 pri=1 mem=1024 *:100\n\
             ask a1 pri=1 mem=1024 *:100\n\
             schedule max=30\n\
             schedule max=20\n\
             schedule\n\
             queues\n",
            nodes(10, 10240, 10)
        ),
        expect![[r#"
            > config scheduler=fair
            > queue root.a weight=1 min=40960,40
            > queue root.b weight=3
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
            > app b1 queue=b
            > app a1 queue=a
            > ask b1 pri=1 mem=1024 *:100
            > ask a1 pri=1 mem=1024 *:100
            > schedule max=30
              alloc: a1×30
            > schedule max=20
              alloc: a1×10 b1×10
            > schedule
              alloc: b1×50
            > queues
              root guaranteed=102400MB,100vc max=102400MB,100vc used=102400MB,100vc am=2048MB apps=2 running=2
              root.a guaranteed=25600MB,25vc max=102400MB,100vc used=40960MB,40vc am=1024MB apps=1 running=1
              root.b guaranteed=76800MB,75vc max=102400MB,100vc used=61440MB,60vc am=1024MB apps=1 running=1
        "#]],
    );
}

/// `maxResources` caps a queue below what its weight would give it; the
/// rest goes to the others.
#[test]
fn fair_max_resources_cap_a_queue() {
    let s = run(&format!(
        "config scheduler=fair\n\
         queue root.a weight=3 maxres=20480,100\n\
         queue root.b weight=1\n\
         {}\
         app a1 queue=a\n\
         app b1 queue=b\n\
         ask a1 pri=1 mem=1024 *:100\n\
         ask b1 pri=1 mem=1024 *:100\n\
         schedule\n\
         schedule\n",
        nodes(10, 10240, 10)
    ));
    assert_eq!(queue_used_mb(&s, "root.a"), 20 * 1024);
    assert_eq!(queue_used_mb(&s, "root.b"), 80 * 1024);
}

/// DRF: one application asks memory-heavy containers (4 GB, 1 vcore),
/// the other cpu-heavy ones (1 GB, 4 vcores). While the cluster has room
/// for both, every container goes to the one with the smaller dominant
/// share, so their dominant shares (memory for the first, vcores for the
/// second) stay within one container of each other, through churn too.
/// Memory-only fair ordering would instead equalize memory, giving the
/// cpu-heavy application four times the containers.
#[test]
fn fair_drf_equalizes_dominant_shares() {
    let cluster = Resource::new(20 * 32 * 1024, 20 * 32);
    let dominant = |r: Resource| {
        (r.memory_mb as f64 / cluster.memory_mb as f64)
            .max(f64::from(r.vcores) / f64::from(cluster.vcores))
    };
    // One container is 1/160 of either resource.
    let one = 1.0 / 160.0 + 1e-9;
    let run = |ordering: AppOrdering, rounds: usize| {
        let mut leaf = fair_leaf("a", 1.0);
        leaf.ordering = ordering;
        let mut tree = fair_tree(AppOrdering::Fair, vec![leaf]);
        tree.resource_calculator = ResourceCalculatorKind::Dominant;
        let mut h = Harness::new(SchedulerConfig {
            queues: tree,
            maximum_allocation: Resource::new(8192, 8),
            ..SchedulerConfig::default()
        });
        h.nodes(20, Resource::new(32 * 1024, 32));
        let memory_heavy = h.app("a", "m");
        let cpu_heavy = h.app("a", "c");
        h.ask(memory_heavy, Resource::new(4096, 1), 10_000);
        h.ask(cpu_heavy, Resource::new(1024, 4), 10_000);
        // 100 containers: well within the cluster either way.
        assert_eq!(h.schedule(100), 100);
        let mut rng = Rng(7);
        for _ in 0..rounds {
            let done = churn(&mut h, &mut rng, 20);
            assert_eq!(h.schedule(done), done);
            let (m, c) = (h.app_used(&memory_heavy), h.app_used(&cpu_heavy));
            assert!((dominant(m) - dominant(c)).abs() <= one, "{m} vs {c}");
        }
        (h.app_used(&memory_heavy), h.app_used(&cpu_heavy))
    };

    let (m, c) = run(AppOrdering::Drf, 30);
    assert_eq!(m, Resource::new(50 * 4096, 50), "{m} vs {c}");
    assert_eq!(c, Resource::new(50 * 1024, 200), "{m} vs {c}");

    let (m, c) = run(AppOrdering::Fair, 0);
    assert_eq!(m, Resource::new(20 * 4096, 20), "{m} vs {c}");
    assert_eq!(c, Resource::new(80 * 1024, 320), "{m} vs {c}");
}

/// Queue-level DRF: two queues under a `drf` parent, one running
/// memory-heavy and one cpu-heavy containers, get equal dominant shares.
#[test]
fn fair_drf_between_queues() {
    let mut tree = fair_tree(
        AppOrdering::Drf,
        vec![fair_leaf("mem", 1.0), fair_leaf("cpu", 1.0)],
    );
    tree.resource_calculator = ResourceCalculatorKind::Dominant;
    let mut h = Harness::new(SchedulerConfig {
        queues: tree,
        maximum_allocation: Resource::new(8192, 8),
        ..SchedulerConfig::default()
    });
    h.nodes(20, Resource::new(32 * 1024, 32));
    let m = h.app("mem", "u");
    let c = h.app("cpu", "u");
    h.ask(m, Resource::new(4096, 1), 10_000);
    h.ask(c, Resource::new(1024, 4), 10_000);
    assert_eq!(h.schedule(100), 100);
    assert_eq!(h.used("root.mem"), Resource::new(50 * 4096, 50));
    assert_eq!(h.used("root.cpu"), Resource::new(50 * 1024, 200));
}

/// `maxRunningApps`: a third application in a queue limited to two waits,
/// unscheduled, and runs when one of the first two finishes.
#[test]
fn fair_max_running_apps() {
    check(
        r"
        config scheduler=fair
        queue root.a running=2
        node n1 rack=/r1 mem=8192 vcores=8
        app a1 queue=a
        app a2 queue=a
        app a3 queue=a
        ask a1 pri=0 mem=1024 *:1
        ask a2 pri=0 mem=1024 *:1
        ask a3 pri=0 mem=1024 *:1
        schedule
        queues
        finish a1
        queues
        schedule
        ",
        expect![[r#"
            > config scheduler=fair
            > queue root.a running=2
            > node n1 rack=/r1 mem=8192 vcores=8
            > app a1 queue=a
            > app a2 queue=a
            > app a3 queue=a
            > ask a1 pri=0 mem=1024 *:1
            > ask a2 pri=0 mem=1024 *:1
            > ask a3 pri=0 mem=1024 *:1
            > schedule
              alloc a1 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
              alloc a2 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=2048MB,2vc am=2048MB apps=3 running=2
              root.a guaranteed=8192MB,8vc max=8192MB,8vc used=2048MB,2vc am=2048MB apps=3 running=2
            > finish a1
              done a1 c1 on n1 exit=-100 application-finished
              kill a1 c1 on n1
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=2 running=2
              root.a guaranteed=8192MB,8vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=2 running=2
            > schedule
              alloc a3 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// A per-user running limit (`userMaxAppsDefault` 1) holds a user's second
/// application back across queues while other users' run.
#[test]
fn fair_per_user_running_limit() {
    check(
        r"
        config scheduler=fair user_max_apps=1
        queue root.a
        queue root.b
        node n1 rack=/r1 mem=8192 vcores=8
        app a1 queue=a user=alice
        app a2 queue=b user=alice
        app b1 queue=b user=bob
        ask a1 pri=0 mem=1024 *:1
        ask a2 pri=0 mem=1024 *:1
        ask b1 pri=0 mem=1024 *:1
        schedule
        finish a1
        schedule
        ",
        expect![[r#"
            > config scheduler=fair user_max_apps=1
            > queue root.a
            > queue root.b
            > node n1 rack=/r1 mem=8192 vcores=8
            > app a1 queue=a user=alice
            > app a2 queue=b user=alice
            > app b1 queue=b user=bob
            > ask a1 pri=0 mem=1024 *:1
            > ask a2 pri=0 mem=1024 *:1
            > ask b1 pri=0 mem=1024 *:1
            > schedule
              alloc a1 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
              alloc b1 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > finish a1
              done a1 c1 on n1 exit=-100 application-finished
              kill a1 c1 on n1
            > schedule
              alloc a2 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// With a dynamic leaf template, an application naming a missing leaf
/// under an existing parent creates it; without one it is refused. A
/// leaf is never created under a leaf or a missing parent.
#[test]
fn fair_dynamic_leaves() {
    check(
        r"
        config scheduler=fair dynamic=true
        queue root.users
        queue root.users.alice
        node n1 rack=/r1 mem=8192 vcores=8
        app a1 queue=root.users.bob
        app a2 queue=root.users.alice.sub
        app a3 queue=root.nope.x
        ask a1 pri=0 mem=1024 *:1
        schedule
        queues
        ",
        expect![[r#"
            > config scheduler=fair dynamic=true
            > queue root.users
            > queue root.users.alice
            > node n1 rack=/r1 mem=8192 vcores=8
            > app a1 queue=root.users.bob
            > app a2 queue=root.users.alice.sub
              error: application attempt appattempt_1_0002_000001 cannot be added to queue root.users.alice.sub: queue root.users.alice.sub cannot be created: root.users.alice is a leaf queue
            > app a3 queue=root.nope.x
              error: application attempt appattempt_1_0003_000001 cannot be added to queue root.nope.x: queue root.nope.x cannot be created: its parent root.nope does not exist
            > ask a1 pri=0 mem=1024 *:1
            > schedule
              alloc a1 c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
              root.users guaranteed=8192MB,8vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
              root.users.alice guaranteed=4096MB,4vc max=8192MB,8vc used=0MB,0vc am=0MB apps=0 running=0
              root.users.bob guaranteed=4096MB,4vc max=8192MB,8vc used=1024MB,1vc am=1024MB apps=1 running=1
        "#]],
    );
    check(
        r"
        config scheduler=fair
        queue root.users
        queue root.users.alice
        app a1 queue=root.users.bob
        queues
        ",
        expect![[r#"
            > config scheduler=fair
            > queue root.users
            > queue root.users.alice
            > app a1 queue=root.users.bob
              error: application attempt appattempt_1_0001_000001 cannot be added to queue root.users.bob: queue root.users.bob does not exist and this scheduler does not create queues
            > queues
              root guaranteed=0MB,0vc max=0MB,0vc used=0MB,0vc am=0MB apps=0 running=0
              root.users guaranteed=0MB,0vc max=0MB,0vc used=0MB,0vc am=0MB apps=0 running=0
              root.users.alice guaranteed=0MB,0vc max=0MB,0vc used=0MB,0vc am=0MB apps=0 running=0
        "#]],
    );
}

// ----------------------------------------------------------------------
// Locality and delay scheduling

/// A node-local placement wins when a requested host has room: on that
/// host's heartbeat at once, and in a continuous pass over a node spread
/// would otherwise prefer.
#[test]
fn node_local_wins_when_available() {
    check(
        r"
        config scheduler=capacity node_delay=40
        node h1 rack=/r1 mem=8192 vcores=8
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=8192 vcores=8
        app a
        ask a pri=1 mem=1024 h2:1 /r1:1 *:1
        heartbeat h2
        ask a pri=2 mem=1024 h2:1 /r1:1 *:1
        schedule
        ",
        expect![[r#"
            > config scheduler=capacity node_delay=40
            > node h1 rack=/r1 mem=8192 vcores=8
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=8192 vcores=8
            > app a
            > ask a pri=1 mem=1024 h2:1 /r1:1 *:1
            > heartbeat h2
              alloc a c1 on h2 pri=1 <memory:1024, vCores:1> node-local
            > ask a pri=2 mem=1024 h2:1 /r1:1 *:1
            > schedule
              alloc a c2 on h2 pri=2 <memory:1024, vCores:1> node-local
        "#]],
    );
}

/// The capacity rule, with `node-locality-delay` 2 and
/// `rack-locality-additional-delay` 1: a request for a busy host declines
/// two heartbeats of other nodes and takes a rack-local node on the
/// third; a request whose rack is full too declines three heartbeats and
/// goes off-switch on the fourth. Continuous passes place at the level the
/// count allows but do not count.
#[test]
fn capacity_delay_waits_node_locality_delay_heartbeats() {
    check(
        r"
        config scheduler=capacity node_delay=2 rack_delay=1
        node h1 rack=/r1 mem=2048 vcores=2
        node h2 rack=/r1 mem=1024 vcores=1
        node h3 rack=/r2 mem=4096 vcores=4
        node h4 rack=/r2 mem=4096 vcores=4
        app filler
        ask filler pri=1 mem=2048 *:1
        heartbeat h1
        app job
        # h1 is busy: two heartbeats of h2 are declined, the third taken.
        ask job pri=1 mem=1024 h1:1 /r1:1 *:1
        heartbeat h2
        schedule
        schedule
        heartbeat h2
        schedule
        heartbeat h2
        # The whole rack is busy now. The third heartbeat off the rack
        # allows rack-local (no use: the rack is full), the fourth is taken
        # off-switch.
        ask job pri=2 mem=1024 h1:1 /r1:1 *:1
        heartbeat h3
        heartbeat h4
        heartbeat h3
        schedule
        heartbeat h4
        # Once rack-local is allowed, a continuous pass places on the rack.
        complete job c1
        ask job pri=3 mem=1024 h1:1 /r1:1 *:1
        heartbeat h3
        heartbeat h3
        schedule
        heartbeat h3
        schedule
        ",
        expect![[r#"
            > config scheduler=capacity node_delay=2 rack_delay=1
            > node h1 rack=/r1 mem=2048 vcores=2
            > node h2 rack=/r1 mem=1024 vcores=1
            > node h3 rack=/r2 mem=4096 vcores=4
            > node h4 rack=/r2 mem=4096 vcores=4
            > app filler
            > ask filler pri=1 mem=2048 *:1
            > heartbeat h1
              alloc filler c1 on h1 pri=1 <memory:2048, vCores:1> off-switch
            > app job
            > ask job pri=1 mem=1024 h1:1 /r1:1 *:1
            > heartbeat h2
            > schedule
            > schedule
            > heartbeat h2
            > schedule
            > heartbeat h2
              alloc job c1 on h2 pri=1 <memory:1024, vCores:1> rack-local
            > ask job pri=2 mem=1024 h1:1 /r1:1 *:1
            > heartbeat h3
            > heartbeat h4
            > heartbeat h3
            > schedule
            > heartbeat h4
              alloc job c2 on h4 pri=2 <memory:1024, vCores:1> off-switch
            > complete job c1
              done job c1 on h2 exit=0 exited
            > ask job pri=3 mem=1024 h1:1 /r1:1 *:1
            > heartbeat h3
            > heartbeat h3
            > schedule
            > heartbeat h3
            > schedule
              alloc job c3 on h2 pri=3 <memory:1024, vCores:1> rack-local
        "#]],
    );
}

/// Both capacity delays are capped by the cluster's size: with 4 nodes a
/// `node-locality-delay` of 40 waits 4 heartbeats, not 40. Without an
/// additional rack delay (-1) off-switch comes after more than
/// outstanding × (locations asked / nodes) opportunities, capped likewise.
#[test]
fn capacity_delay_is_capped_by_cluster_size() {
    check(
        r"
        config scheduler=capacity node_delay=40 rack_delay=0
        node h1 rack=/r1 mem=1024 vcores=1
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=4096 vcores=4
        node h4 rack=/r2 mem=4096 vcores=4
        app filler
        ask filler pri=1 mem=1024 *:1
        heartbeat h1
        app job
        ask job pri=1 mem=1024 h1:1 /r1:1 *:1
        heartbeat h2
        heartbeat h2
        heartbeat h2
        heartbeat h2
        heartbeat h2
        ",
        expect![[r#"
            > config scheduler=capacity node_delay=40 rack_delay=0
            > node h1 rack=/r1 mem=1024 vcores=1
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=4096 vcores=4
            > node h4 rack=/r2 mem=4096 vcores=4
            > app filler
            > ask filler pri=1 mem=1024 *:1
            > heartbeat h1
              alloc filler c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > app job
            > ask job pri=1 mem=1024 h1:1 /r1:1 *:1
            > heartbeat h2
            > heartbeat h2
            > heartbeat h2
            > heartbeat h2
            > heartbeat h2
              alloc job c1 on h2 pri=1 <memory:1024, vCores:1> rack-local
        "#]],
    );
    // rack_delay -1: 4 containers wanted, 3 locations (h1, /r1, *) on 4
    // nodes: off-switch after more than 4 × min(2 / 4, 1) = 2.
    check(
        r"
        config scheduler=capacity node_delay=40 rack_delay=-1
        node h1 rack=/r1 mem=1024 vcores=1
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=4096 vcores=4
        node h4 rack=/r2 mem=4096 vcores=4
        app filler
        ask filler pri=1 mem=1024 *:1
        heartbeat h1
        app job
        ask job pri=1 mem=1024 h1:4 /r1:4 *:4
        heartbeat h3
        heartbeat h3
        heartbeat h3
        ",
        expect![[r#"
            > config scheduler=capacity node_delay=40 rack_delay=-1
            > node h1 rack=/r1 mem=1024 vcores=1
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=4096 vcores=4
            > node h4 rack=/r2 mem=4096 vcores=4
            > app filler
            > ask filler pri=1 mem=1024 *:1
            > heartbeat h1
              alloc filler c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > app job
            > ask job pri=1 mem=1024 h1:4 /r1:4 *:4
            > heartbeat h3
            > heartbeat h3
            > heartbeat h3
              alloc job c1 on h3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c2 on h3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on h3 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c4 on h3 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// The fair rule with thresholds 0.5 on 4 nodes: the level relaxes to
/// rack-local once more than 2 opportunities were counted at node-local
/// (on the third heartbeat), then to off-switch once more than 2 more were
/// counted at rack-local (on the sixth); a node-local grant tightens it
/// again.
#[test]
fn fair_delay_thresholds() {
    check(
        r"
        config scheduler=fair node_threshold=0.5 rack_threshold=0.5 hb_max=1
        node h1 rack=/r1 mem=1024 vcores=1
        node h2 rack=/r1 mem=1024 vcores=1
        node h3 rack=/r2 mem=4096 vcores=4
        node h4 rack=/r2 mem=4096 vcores=4
        app filler
        ask filler pri=1 mem=1024 *:2
        heartbeat h1
        heartbeat h2
        app job
        # Rack /r1 is full.
        ask job pri=1 mem=1024 h1:3 /r1:3 *:3
        heartbeat h3
        heartbeat h3
        heartbeat h3
        schedule
        heartbeat h4
        heartbeat h4
        heartbeat h4
        # A node-local grant tightens the level again: h3 waits anew.
        complete filler c1
        heartbeat h1
        heartbeat h3
        heartbeat h3
        ",
        expect![[r#"
            > config scheduler=fair node_threshold=0.5 rack_threshold=0.5 hb_max=1
            > node h1 rack=/r1 mem=1024 vcores=1
            > node h2 rack=/r1 mem=1024 vcores=1
            > node h3 rack=/r2 mem=4096 vcores=4
            > node h4 rack=/r2 mem=4096 vcores=4
            > app filler
            > ask filler pri=1 mem=1024 *:2
            > heartbeat h1
              alloc filler c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > heartbeat h2
              alloc filler c2 on h2 pri=1 <memory:1024, vCores:1> off-switch
            > app job
            > ask job pri=1 mem=1024 h1:3 /r1:3 *:3
            > heartbeat h3
            > heartbeat h3
            > heartbeat h3
            > schedule
            > heartbeat h4
            > heartbeat h4
            > heartbeat h4
              alloc job c1 on h4 pri=1 <memory:1024, vCores:1> off-switch
            > complete filler c1
              done filler c1 on h1 exit=0 exited
            > heartbeat h1
              alloc job c2 on h1 pri=1 <memory:1024, vCores:1> node-local
            > heartbeat h3
            > heartbeat h3
        "#]],
    );
}

/// A request that names only `*` never waits, however long the delay.
#[test]
fn any_only_requests_never_wait() {
    for config in [
        "config scheduler=capacity node_delay=40 rack_delay=40",
        "config scheduler=fair node_threshold=1 rack_threshold=1",
    ] {
        let t = trace(&format!(
            "{config}\n\
             node h1 rack=/r1 mem=4096 vcores=4\n\
             node h2 rack=/r2 mem=4096 vcores=4\n\
             app a\n\
             ask a pri=1 mem=1024 *:2\n\
             heartbeat h2\n"
        ));
        assert!(
            t.ends_with(
                "> heartbeat h2\n  \
                 alloc a c1 on h2 pri=1 <memory:1024, vCores:1> off-switch\n  \
                 alloc a c2 on h2 pri=1 <memory:1024, vCores:1> off-switch\n"
            ),
            "{t}"
        );
    }
}

// ----------------------------------------------------------------------
// Per-heartbeat caps

/// `assignmultiple` off (at most one container per heartbeat), and a cap
/// on off-switch containers per heartbeat that leaves node-local ones
/// alone.
#[test]
fn heartbeat_caps() {
    check(
        r"
        config scheduler=fair hb_max=1
        node h1 rack=/r1 mem=8192 vcores=8
        app a
        ask a pri=1 mem=1024 *:3
        heartbeat h1
        heartbeat h1
        schedule
        ",
        expect![[r#"
            > config scheduler=fair hb_max=1
            > node h1 rack=/r1 mem=8192 vcores=8
            > app a
            > ask a pri=1 mem=1024 *:3
            > heartbeat h1
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > heartbeat h1
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > schedule
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
    check(
        r"
        config scheduler=capacity hb_offswitch=2
        node h1 rack=/r1 mem=16384 vcores=16
        app a
        ask a pri=1 mem=1024 h1:3 /r1:3 *:8
        heartbeat h1
        heartbeat h1
        ",
        expect![[r#"
            > config scheduler=capacity hb_offswitch=2
            > node h1 rack=/r1 mem=16384 vcores=16
            > app a
            > ask a pri=1 mem=1024 h1:3 /r1:3 *:8
            > heartbeat h1
              alloc a c1 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c2 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c3 on h1 pri=1 <memory:1024, vCores:1> node-local
              alloc a c4 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c5 on h1 pri=1 <memory:1024, vCores:1> off-switch
            > heartbeat h1
              alloc a c6 on h1 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c7 on h1 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

// ----------------------------------------------------------------------
// Reconfiguration

/// New capacities take effect at once; a configuration that drops a queue
/// holding applications, or turns such a leaf into a parent, is refused
/// and the old tree stays in force (invariants are checked after every
/// line).
#[test]
fn reconfiguration() {
    check_summary(
        r"
        config scheduler=capacity
        queue root.a capacity=50 ulf=none
        queue root.b capacity=50 ulf=none
        node n1 rack=/r1 mem=5120 vcores=5
        node n2 rack=/r1 mem=5120 vcores=5
        app a1 queue=a
        app b1 queue=b
        ask a1 pri=1 mem=1024 *:20
        ask b1 pri=1 mem=1024 *:20
        schedule
        queue root.a capacity=80
        queue root.b capacity=20
        reload
        queues
        complete b1 c1
        complete b1 c2
        complete b1 c3
        schedule
        queues

        unqueue root.b
        reload
        queue root.a.sub capacity=100
        reload
        queues
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=50 ulf=none
            > queue root.b capacity=50 ulf=none
            > node n1 rack=/r1 mem=5120 vcores=5
            > node n2 rack=/r1 mem=5120 vcores=5
            > app a1 queue=a
            > app b1 queue=b
            > ask a1 pri=1 mem=1024 *:20
            > ask b1 pri=1 mem=1024 *:20
            > schedule
              alloc: a1×5 b1×5
            > queue root.a capacity=80
            > queue root.b capacity=20
            > reload
            > queues
              root guaranteed=10240MB,10vc max=10240MB,10vc used=10240MB,10vc am=2048MB apps=2 running=2
              root.a guaranteed=8192MB,8vc max=10240MB,10vc used=5120MB,5vc am=1024MB apps=1 running=1
              root.b guaranteed=2048MB,2vc max=10240MB,10vc used=5120MB,5vc am=1024MB apps=1 running=1
            > complete b1 c1
              done b1 c1 on n2 exit=0 exited
            > complete b1 c2
              done b1 c2 on n2 exit=0 exited
            > complete b1 c3
              done b1 c3 on n2 exit=0 exited
            > schedule
              alloc: a1×3
            > queues
              root guaranteed=10240MB,10vc max=10240MB,10vc used=10240MB,10vc am=1024MB apps=2 running=2
              root.a guaranteed=8192MB,8vc max=10240MB,10vc used=8192MB,8vc am=1024MB apps=1 running=1
              root.b guaranteed=2048MB,2vc max=10240MB,10vc used=2048MB,2vc am=0MB apps=1 running=1
            > unqueue root.b
            > reload
              error: queue configuration refused: queue root.b holds applications (appattempt_1_0002_000001) and is missing from the new configuration
            > queue root.a.sub capacity=100
            > reload
              error: queue configuration refused: queue root.a holds applications (appattempt_1_0001_000001) and cannot become a parent queue
            > queues
              root guaranteed=10240MB,10vc max=10240MB,10vc used=10240MB,10vc am=1024MB apps=2 running=2
              root.a guaranteed=8192MB,8vc max=10240MB,10vc used=8192MB,8vc am=1024MB apps=1 running=1
              root.b guaranteed=2048MB,2vc max=10240MB,10vc used=2048MB,2vc am=0MB apps=1 running=1
        "#]],
    );
}

/// A refused reconfiguration through the API leaves the configuration in
/// force exactly as it was.
#[test]
fn refused_reconfiguration_keeps_the_old_tree() {
    let tree = capacity_tree(vec![
        capacity_leaf("a", 50.0, 100.0),
        capacity_leaf("b", 50.0, 100.0),
    ]);
    let mut h = Harness::new(SchedulerConfig {
        queues: tree.clone(),
        ..SchedulerConfig::default()
    });
    h.nodes(2, Resource::new(4096, 4));
    let a = h.app("b", "u");
    h.ask(a, GB, 3);
    h.schedule_all();
    let before = h.s.queues();
    let dropped = capacity_tree(vec![capacity_leaf("a", 100.0, 100.0)]);
    // The refused tree comes with new delay and heartbeat settings: none
    // of it takes effect.
    let r = h.input(Input::QueuesReconfigured {
        queues: Box::new(dropped),
        locality: LocalityDelay::Capacity {
            node_locality_delay: 5,
            rack_locality_additional_delay: -1,
        },
        heartbeat: HeartbeatAssignment {
            max_containers: Some(1),
            max_off_switch: Some(1),
        },
    });
    assert!(matches!(r, Err(SchedulerError::InvalidQueues(_))), "{r:?}");
    assert_eq!(h.s.queue_config(), &tree);
    assert_eq!(h.s.queues(), before);
    assert_eq!(h.s.config().locality, LocalityDelay::Off);
    assert_eq!(h.s.config().heartbeat, HeartbeatAssignment::default());
    // Valid tree, invalid setting: refused as a whole too.
    let r = h.input(Input::QueuesReconfigured {
        queues: Box::new(tree.clone()),
        locality: LocalityDelay::Off,
        heartbeat: HeartbeatAssignment {
            max_containers: Some(0),
            max_off_switch: None,
        },
    });
    assert!(matches!(r, Err(SchedulerError::InvalidQueues(_))), "{r:?}");
    assert_eq!(h.s.config().heartbeat, HeartbeatAssignment::default());
}

// ----------------------------------------------------------------------
// Packing under each scheduler

/// The seed's example (10 nodes × 10 slots, 20 containers, threshold
/// 0.8) packs 8 / 8 / 4 whichever scheduler orders the applications: node
/// selection is independent of queue ordering.
#[test]
fn packing_with_every_scheduler() {
    for scheduler in ["fifo", "capacity", "fair"] {
        let script = format!(
            "config scheduler={scheduler} selection=packing packing_threshold=0.8 packing_seed=1\n\
             {}\
             app job\n\
             ask job pri=1 mem=1024 *:20\n\
             schedule\n\
             counts\n",
            nodes(10, 10240, 10)
        );
        let t = trace(&script);
        let counts = t
            .lines()
            .find_map(|l| l.strip_prefix("  counts: "))
            .unwrap_or_else(|| panic!("no counts in {t}"));
        let mut used: Vec<u32> = counts
            .split(' ')
            .filter_map(|c| c.split_once('=').and_then(|(_, n)| n.parse().ok()))
            .filter(|&n| n > 0)
            .collect();
        used.sort_unstable();
        assert_eq!(used, [4, 8, 8], "{scheduler}: {counts}");
        assert!(t.contains("  empty nodes: 7 of 10"), "{scheduler}: {t}");
    }
}

/// While packing is in force heartbeats place nothing, not even on a
/// partly used node or on a host a request names: every container is
/// placed by a continuous pass, in packing order, so the heartbeats of
/// empty nodes cannot scatter containers over them.
#[test]
fn packing_places_only_in_continuous_passes() {
    check(
        r"
        config scheduler=capacity selection=packing packing_threshold=0.8 packing_min_nodes=0
        node n1 rack=/r1 mem=10240 vcores=10
        node n2 rack=/r1 mem=10240 vcores=10
        node n3 rack=/r1 mem=10240 vcores=10
        app a
        ask a pri=1 mem=1024 *:1
        heartbeat n1
        heartbeat n2
        heartbeat n3
        schedule
        ask a pri=1 mem=1024 *:2
        heartbeat n1
        heartbeat n2
        heartbeat n3
        schedule
        # A node-local request: the pass puts it on the host it names.
        ask a pri=2 mem=1024 n1:1 /r1:1 *:1
        heartbeat n1
        schedule
        # The fullest partly used node comes first.
        ask a pri=3 mem=1024 *:1
        schedule
        counts
        ",
        expect![[r#"
            > config scheduler=capacity selection=packing packing_threshold=0.8 packing_min_nodes=0
            > node n1 rack=/r1 mem=10240 vcores=10
            > node n2 rack=/r1 mem=10240 vcores=10
            > node n3 rack=/r1 mem=10240 vcores=10
            > app a
            > ask a pri=1 mem=1024 *:1
            > heartbeat n1
            > heartbeat n2
            > heartbeat n3
            > schedule
              alloc a c1 on n3 pri=1 <memory:1024, vCores:1> off-switch
            > ask a pri=1 mem=1024 *:2
            > heartbeat n1
            > heartbeat n2
            > heartbeat n3
            > schedule
              alloc a c2 on n3 pri=1 <memory:1024, vCores:1> off-switch
              alloc a c3 on n3 pri=1 <memory:1024, vCores:1> off-switch
            > ask a pri=2 mem=1024 n1:1 /r1:1 *:1
            > heartbeat n1
            > schedule
              alloc a c4 on n1 pri=2 <memory:1024, vCores:1> node-local
            > ask a pri=3 mem=1024 *:1
            > schedule
              alloc a c5 on n3 pri=3 <memory:1024, vCores:1> off-switch
            > counts
              counts: n1=1 n2=0 n3=4
              empty nodes: 1 of 3
        "#]],
    );
}

/// Under packing, heartbeats still count delay-scheduling opportunities,
/// so a request for a busy host relaxes at the same pace; the pass after
/// the third heartbeat places it on its rack.
#[test]
fn packing_heartbeats_count_delay_opportunities() {
    check(
        r"
        config scheduler=capacity selection=packing packing_min_nodes=0 node_delay=2 rack_delay=1
        node h1 rack=/r1 mem=1024 vcores=1
        node h2 rack=/r1 mem=4096 vcores=4
        node h3 rack=/r2 mem=4096 vcores=4
        app filler
        ask filler pri=1 mem=1024 h1:1 /r1:1 *:1
        schedule
        app job
        ask job pri=1 mem=1024 h1:1 /r1:1 *:1
        heartbeat h2
        heartbeat h3
        schedule
        heartbeat h2
        schedule
        ",
        expect![[r#"
            > config scheduler=capacity selection=packing packing_min_nodes=0 node_delay=2 rack_delay=1
            > node h1 rack=/r1 mem=1024 vcores=1
            > node h2 rack=/r1 mem=4096 vcores=4
            > node h3 rack=/r2 mem=4096 vcores=4
            > app filler
            > ask filler pri=1 mem=1024 h1:1 /r1:1 *:1
            > schedule
              alloc filler c1 on h1 pri=1 <memory:1024, vCores:1> node-local
            > app job
            > ask job pri=1 mem=1024 h1:1 /r1:1 *:1
            > heartbeat h2
            > heartbeat h3
            > schedule
            > heartbeat h2
            > schedule
              alloc job c1 on h2 pri=1 <memory:1024, vCores:1> rack-local
        "#]],
    );
}

/// Below `packing_min_nodes` the policy spreads, and heartbeats place on
/// their own node as under spread.
#[test]
fn packing_below_min_nodes_lets_heartbeats_place() {
    let t = trace(
        r"
        config selection=packing packing_min_nodes=5
        node n1 rack=/r1 mem=10240 vcores=10
        node n2 rack=/r1 mem=10240 vcores=10
        app a
        ask a pri=1 mem=1024 *:2
        schedule max=1
        heartbeat n2
        counts
        ",
    );
    assert!(
        t.ends_with("  counts: n1=1 n2=1\n  empty nodes: 0 of 2\n"),
        "{t}"
    );
}

/// Sanity of the helpers: the summary keeps every non-allocation line
/// and counts allocations per application in order of appearance.
#[test]
fn summary_folds_allocations() {
    let t = "> schedule\n  alloc b c1 on n1 pri=1 x off-switch\n  alloc a c1 on n1 pri=1 x off-switch\n  alloc b c2 on n1 pri=1 x off-switch\n> queues\n  root\n";
    assert_eq!(
        summarize(t),
        "> schedule\n  alloc: b×2 a×1\n> queues\n  root\n"
    );
}

/// A plain heartbeat does not re-key its node: under packing the random
/// place of an empty node is drawn once, when it becomes empty, so
/// heartbeats in between change no placement.
#[test]
fn packing_order_survives_heartbeats() {
    let script = |heartbeats: bool| {
        let mut s = String::from("config selection=packing packing_min_nodes=0 packing_seed=5\n");
        s.push_str(&nodes(8, 4096, 4));
        s.push_str("app a\nask a pri=1 mem=1024 *:6\n");
        if heartbeats {
            for i in 1..=8 {
                s.push_str(&format!("heartbeat n{i:02}\nheartbeat n{i:02}\n"));
            }
        }
        s.push_str("schedule\n");
        trace(&s)
            .lines()
            .filter(|l| l.starts_with("  alloc"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let quiet = script(false);
    assert_eq!(quiet.lines().count(), 6, "{quiet}");
    assert_eq!(script(true), quiet);
}

// ----------------------------------------------------------------------
// Reconfiguration of the delay rule and the per-heartbeat caps

/// `refreshQueues` brings new capacity delays with the tree (Hadoop's
/// reinitialize re-reads `node-locality-delay` and
/// `rack-locality-additional-delay`). A request for a host and a rack the
/// cluster does not have can only go off-switch: under the old delays it
/// declines three heartbeats (min(nodes, 10 + 0) = 3 counted), so the
/// third would still decline; with the delays lowered to 0 the counts
/// already made let it go off-switch on that heartbeat.
#[test]
fn reload_applies_new_capacity_delays() {
    check(
        r"
        config scheduler=capacity node_delay=10 rack_delay=0
        node n1 rack=/r1 mem=8192 vcores=8
        node n2 rack=/r1 mem=8192 vcores=8
        node n3 rack=/r1 mem=8192 vcores=8
        app job
        ask job pri=1 mem=1024 h9:1 /r2:1 *:1
        heartbeat n1
        heartbeat n2
        reload node_delay=0 rack_delay=0
        heartbeat n3
        ",
        expect![[r#"
            > config scheduler=capacity node_delay=10 rack_delay=0
            > node n1 rack=/r1 mem=8192 vcores=8
            > node n2 rack=/r1 mem=8192 vcores=8
            > node n3 rack=/r1 mem=8192 vcores=8
            > app job
            > ask job pri=1 mem=1024 h9:1 /r2:1 *:1
            > heartbeat n1
            > heartbeat n2
            > reload node_delay=0 rack_delay=0
            > heartbeat n3
              alloc job c1 on n3 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// The same request without the reload still waits on the third
/// heartbeat: the reload is what lets it go.
#[test]
fn without_reload_the_old_delays_hold() {
    let t = trace(
        r"
        config scheduler=capacity node_delay=10 rack_delay=0
        node n1 rack=/r1 mem=8192 vcores=8
        node n2 rack=/r1 mem=8192 vcores=8
        node n3 rack=/r1 mem=8192 vcores=8
        app job
        ask job pri=1 mem=1024 h9:1 /r2:1 *:1
        heartbeat n1
        heartbeat n2
        heartbeat n3
        heartbeat n1
        ",
    );
    let allocs: Vec<&str> = t.lines().filter(|l| l.contains(" alloc ")).collect();
    assert_eq!(
        allocs,
        ["  alloc job c1 on n1 pri=1 <memory:1024, vCores:1> off-switch"],
        "{t}"
    );
}

/// The fair scheduler's thresholds change with a reload too: with
/// thresholds of -1 (no delay) the request goes off-switch at once.
#[test]
fn reload_applies_new_fair_thresholds() {
    check(
        r"
        config scheduler=fair node_threshold=1.0 rack_threshold=1.0
        node n1 rack=/r1 mem=8192 vcores=8
        node n2 rack=/r1 mem=8192 vcores=8
        app job
        ask job pri=1 mem=1024 h9:1 /r2:1 *:1
        heartbeat n1
        reload node_threshold=-1 rack_threshold=-1
        heartbeat n2
        ",
        expect![[r#"
            > config scheduler=fair node_threshold=1.0 rack_threshold=1.0
            > node n1 rack=/r1 mem=8192 vcores=8
            > node n2 rack=/r1 mem=8192 vcores=8
            > app job
            > ask job pri=1 mem=1024 h9:1 /r2:1 *:1
            > heartbeat n1
            > reload node_threshold=-1 rack_threshold=-1
            > heartbeat n2
              alloc job c1 on n2 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// Per-heartbeat caps (capacity `per-node-heartbeat.*`, fair
/// `assignmultiple` / `max.assign`) change with a reload: one container
/// per heartbeat, then no cap, then two off-switch containers at most.
#[test]
fn reload_applies_new_heartbeat_caps() {
    check(
        r"
        config scheduler=capacity hb_max=1
        node n1 rack=/r1 mem=8192 vcores=8
        app job
        ask job pri=1 mem=1024 *:8
        heartbeat n1
        reload hb_max=none
        heartbeat n1
        complete job c2
        complete job c3
        complete job c4
        complete job c5
        reload hb_offswitch=2
        ask job pri=1 mem=1024 *:4
        heartbeat n1
        ",
        expect![[r#"
            > config scheduler=capacity hb_max=1
            > node n1 rack=/r1 mem=8192 vcores=8
            > app job
            > ask job pri=1 mem=1024 *:8
            > heartbeat n1
              alloc job c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > reload hb_max=none
            > heartbeat n1
              alloc job c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c4 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c5 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c6 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c7 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c8 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > complete job c2
              done job c2 on n1 exit=0 exited
            > complete job c3
              done job c3 on n1 exit=0 exited
            > complete job c4
              done job c4 on n1 exit=0 exited
            > complete job c5
              done job c5 on n1 exit=0 exited
            > reload hb_offswitch=2
            > ask job pri=1 mem=1024 *:4
            > heartbeat n1
              alloc job c9 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c10 on n1 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// An accepted reconfiguration puts the tree and both settings in force
/// together, and the configuration the scheduler reports says so.
#[test]
fn accepted_reconfiguration_reports_the_new_settings() {
    let tree = capacity_tree(vec![capacity_leaf("a", 100.0, 100.0)]);
    let mut h = Harness::new(SchedulerConfig {
        queues: tree.clone(),
        ..SchedulerConfig::default()
    });
    let wider = capacity_tree(vec![
        capacity_leaf("a", 60.0, 100.0),
        capacity_leaf("b", 40.0, 100.0),
    ]);
    let locality = LocalityDelay::Capacity {
        node_locality_delay: 7,
        rack_locality_additional_delay: 2,
    };
    let heartbeat = HeartbeatAssignment {
        max_containers: Some(3),
        max_off_switch: Some(1),
    };
    h.ok(Input::QueuesReconfigured {
        queues: Box::new(wider.clone()),
        locality,
        heartbeat,
    });
    assert_eq!(h.s.queue_config(), &wider);
    assert_eq!(h.s.config().queues, wider);
    assert_eq!(h.s.config().locality, locality);
    assert_eq!(h.s.config().heartbeat, heartbeat);
    // A priority update names a known attempt.
    let stranger = ApplicationAttemptId::new(ApplicationId::new(1, 99), 1);
    assert_eq!(
        h.input(Input::AppPriorityUpdated {
            attempt: stranger,
            priority: 3
        }),
        Err(SchedulerError::UnknownAttempt(stranger))
    );
}

// ----------------------------------------------------------------------
// Application priorities, ordering policies and the resource calculator
// under the capacity scheduler

/// A capacity leaf with the fifo ordering policy serves the higher
/// application priority first, then submission order (Hadoop's
/// FifoOrderingPolicy: priority, then FIFO); a priority update moves an
/// application in that order.
#[test]
fn capacity_fifo_leaf_orders_by_priority_then_submission() {
    check(
        r"
        config scheduler=capacity
        queue root.a capacity=100 ulf=none order=fifo
        node n1 rack=/r1 mem=6144 vcores=6
        app low queue=a priority=1
        app high queue=a priority=5
        app mid queue=a priority=3
        app late queue=a priority=5
        ask low pri=1 mem=1024 *:2
        ask high pri=1 mem=1024 *:2
        ask mid pri=1 mem=1024 *:2
        ask late pri=1 mem=1024 *:2
        order
        priority low 9
        order
        schedule
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=100 ulf=none order=fifo
            > node n1 rack=/r1 mem=6144 vcores=6
            > app low queue=a priority=1
            > app high queue=a priority=5
            > app mid queue=a priority=3
            > app late queue=a priority=5
            > ask low pri=1 mem=1024 *:2
            > ask high pri=1 mem=1024 *:2
            > ask mid pri=1 mem=1024 *:2
            > ask late pri=1 mem=1024 *:2
            > order
              order: high late mid low
            > priority low 9
            > order
              order: low high late mid
            > schedule
              alloc low c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc low c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc high c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc high c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc late c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc late c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
        "#]],
    );
}

/// A capacity leaf with the fair ordering policy shares between its
/// applications: the one with less memory in use is served next (then
/// submission order), so two equal applications alternate and split the
/// queue evenly, whatever their priorities; under fifo the first takes
/// all it asks for.
#[test]
fn capacity_fair_leaf_shares_between_applications() {
    let script = |order: &str| {
        format!(
            "config scheduler=capacity\n\
             queue root.a capacity=100 ulf=none order={order}\n\
             node n1 rack=/r1 mem=8192 vcores=8\n\
             app first queue=a priority=5\n\
             app second queue=a\n\
             ask first pri=1 mem=1024 *:8\n\
             ask second pri=1 mem=1024 *:8\n\
             schedule\n\
             apps\n\
             complete first c1\n\
             complete first c2\n\
             complete second c1\n\
             ask first pri=1 mem=1024 *:8\n\
             ask second pri=1 mem=1024 *:8\n\
             schedule\n\
             apps\n"
        )
    };
    check(
        &script("fair"),
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=100 ulf=none order=fair
            > node n1 rack=/r1 mem=8192 vcores=8
            > app first queue=a priority=5
            > app second queue=a
            > ask first pri=1 mem=1024 *:8
            > ask second pri=1 mem=1024 *:8
            > schedule
              alloc first c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc second c1 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc first c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc second c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc first c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc second c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc first c4 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc second c4 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > apps
              first queue=root.a used=4096MB,4vc pending=4096MB,4vc containers=4
              second queue=root.a used=4096MB,4vc pending=4096MB,4vc containers=4
            > complete first c1
              done first c1 on n1 exit=0 exited
            > complete first c2
              done first c2 on n1 exit=0 exited
            > complete second c1
              done second c1 on n1 exit=0 exited
            > ask first pri=1 mem=1024 *:8
            > ask second pri=1 mem=1024 *:8
            > schedule
              alloc first c5 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc first c6 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc second c5 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > apps
              first queue=root.a used=4096MB,4vc pending=6144MB,6vc containers=4
              second queue=root.a used=4096MB,4vc pending=7168MB,7vc containers=4
        "#]],
    );
    check_summary(
        &script("fifo"),
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=100 ulf=none order=fifo
            > node n1 rack=/r1 mem=8192 vcores=8
            > app first queue=a priority=5
            > app second queue=a
            > ask first pri=1 mem=1024 *:8
            > ask second pri=1 mem=1024 *:8
            > schedule
              alloc: first×8
            > apps
              first queue=root.a used=8192MB,8vc pending=0MB,0vc containers=8
              second queue=root.a used=0MB,0vc pending=8192MB,8vc containers=0
            > complete first c1
              done first c1 on n1 exit=0 exited
            > complete first c2
              done first c2 on n1 exit=0 exited
            > complete second c1
            > ask first pri=1 mem=1024 *:8
            > ask second pri=1 mem=1024 *:8
            > schedule
              alloc: first×2
            > apps
              first queue=root.a used=8192MB,8vc pending=6144MB,6vc containers=8
              second queue=root.a used=0MB,0vc pending=8192MB,8vc containers=0
        "#]],
    );
}

/// The resource calculator decides what "over capacity" means. Queue `a`
/// may use at most half the cluster (16 GB, 8 vcores of 32 GB, 16
/// vcores). With the default calculator only memory counts, so an
/// application asking for 1 GB / 4 vcores containers takes four (all the
/// vcores, 4 GB of memory); with the DominantResourceCalculator its vcores
/// count too and it stops at two (8 vcores = 50%), leaving room for `b`.
#[test]
fn capacity_dominant_resource_calculator_limits_by_vcores() {
    let script = |calculator: &str| {
        format!(
            "config scheduler=capacity calculator={calculator}\n\
             queue root.a capacity=50 max=50 ulf=none\n\
             queue root.b capacity=50 max=50 ulf=none\n\
             node n1 rack=/r1 mem=16384 vcores=8\n\
             node n2 rack=/r1 mem=16384 vcores=8\n\
             app cpu queue=a\n\
             ask cpu pri=1 mem=1024 vcores=4 *:8\n\
             schedule\n\
             app mem queue=b\n\
             ask mem pri=1 mem=2048 vcores=1 *:8\n\
             schedule\n\
             queues\n"
        )
    };
    check_summary(
        &script("memory"),
        expect![[r#"
            > config scheduler=capacity calculator=memory
            > queue root.a capacity=50 max=50 ulf=none
            > queue root.b capacity=50 max=50 ulf=none
            > node n1 rack=/r1 mem=16384 vcores=8
            > node n2 rack=/r1 mem=16384 vcores=8
            > app cpu queue=a
            > ask cpu pri=1 mem=1024 vcores=4 *:8
            > schedule
              alloc: cpu×4
            > app mem queue=b
            > ask mem pri=1 mem=2048 vcores=1 *:8
            > schedule
            > queues
              root guaranteed=32768MB,16vc max=32768MB,16vc used=4096MB,16vc am=1024MB apps=2 running=2
              root.a guaranteed=16384MB,8vc max=16384MB,8vc used=4096MB,16vc am=1024MB apps=1 running=1
              root.b guaranteed=16384MB,8vc max=16384MB,8vc used=0MB,0vc am=0MB apps=1 running=1
        "#]],
    );
    check_summary(
        &script("dominant"),
        expect![[r#"
            > config scheduler=capacity calculator=dominant
            > queue root.a capacity=50 max=50 ulf=none
            > queue root.b capacity=50 max=50 ulf=none
            > node n1 rack=/r1 mem=16384 vcores=8
            > node n2 rack=/r1 mem=16384 vcores=8
            > app cpu queue=a
            > ask cpu pri=1 mem=1024 vcores=4 *:8
            > schedule
              alloc: cpu×2
            > app mem queue=b
            > ask mem pri=1 mem=2048 vcores=1 *:8
            > schedule
              alloc: mem×8
            > queues
              root guaranteed=32768MB,16vc max=32768MB,16vc used=18432MB,16vc am=3072MB apps=2 running=2
              root.a guaranteed=16384MB,8vc max=16384MB,8vc used=2048MB,8vc am=1024MB apps=1 running=1
              root.b guaranteed=16384MB,8vc max=16384MB,8vc used=16384MB,8vc am=2048MB apps=1 running=1
        "#]],
    );
}

// ----------------------------------------------------------------------
// Moving an application between leaves

/// A move takes the application's usage (its AM container's as AM usage)
/// and its pending asks to the new leaf: the old leaf is discharged, the
/// new one charged, and from then on the new leaf's maximum bounds what the
/// application is given, while the old leaf's room goes to others.
#[test]
fn a_moved_application_takes_its_usage_and_asks_to_the_new_leaf() {
    check(
        r"
        config scheduler=capacity
        queue root.a capacity=50 max=100 ulf=none
        queue root.b capacity=50 max=50 ulf=none
        node n1 rack=/r1 mem=8192 vcores=8
        app job queue=a
        ask job pri=0 mem=1024 *:1
        schedule
        ask job pri=1 mem=1024 *:8
        schedule max=2
        queues
        move job b
        queues
        schedule
        queues
        move job root.nosuch
        move job b
        ",
        expect![[r#"
            > config scheduler=capacity
            > queue root.a capacity=50 max=100 ulf=none
            > queue root.b capacity=50 max=50 ulf=none
            > node n1 rack=/r1 mem=8192 vcores=8
            > app job queue=a
            > ask job pri=0 mem=1024 *:1
            > schedule
              alloc job c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > ask job pri=1 mem=1024 *:8
            > schedule max=2
              alloc job c2 on n1 pri=1 <memory:1024, vCores:1> off-switch
              alloc job c3 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=3072MB,3vc am=1024MB apps=1 running=1
              root.a guaranteed=4096MB,4vc max=8192MB,8vc used=3072MB,3vc am=1024MB apps=1 running=1
              root.b guaranteed=4096MB,4vc max=4096MB,4vc used=0MB,0vc am=0MB apps=0 running=0
            > move job b
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=3072MB,3vc am=1024MB apps=1 running=1
              root.a guaranteed=4096MB,4vc max=8192MB,8vc used=0MB,0vc am=0MB apps=0 running=0
              root.b guaranteed=4096MB,4vc max=4096MB,4vc used=3072MB,3vc am=1024MB apps=1 running=1
            > schedule
              alloc job c4 on n1 pri=1 <memory:1024, vCores:1> off-switch
            > queues
              root guaranteed=8192MB,8vc max=8192MB,8vc used=4096MB,4vc am=1024MB apps=1 running=1
              root.a guaranteed=4096MB,4vc max=8192MB,8vc used=0MB,0vc am=0MB apps=0 running=0
              root.b guaranteed=4096MB,4vc max=4096MB,4vc used=4096MB,4vc am=1024MB apps=1 running=1
            > move job root.nosuch
              error: application attempt appattempt_1_0001_000001 cannot be added to queue root.nosuch: no such leaf queue
            > move job b
        "#]],
    );
}

/// A move names a leaf the scheduler has (or, for a fair scheduler that
/// creates queues, may create) and an attempt it knows; otherwise it is
/// refused and nothing changes.
#[test]
fn moves_name_known_attempts_and_existing_leaves() {
    check(
        r"
        config scheduler=fair
        queue root.a weight=1
        node n1 rack=/r1 mem=4096 vcores=4
        app job queue=root.a
        ask job pri=0 mem=1024 *:1
        schedule
        move job root.c
        queues
        finish job
        move job root.a
        ",
        expect![[r#"
            > config scheduler=fair
            > queue root.a weight=1
            > node n1 rack=/r1 mem=4096 vcores=4
            > app job queue=root.a
            > ask job pri=0 mem=1024 *:1
            > schedule
              alloc job c1 on n1 pri=0 <memory:1024, vCores:1> off-switch
            > move job root.c
              error: application attempt appattempt_1_0001_000001 cannot be added to queue root.c: queue root.c does not exist and this scheduler does not create queues
            > queues
              root guaranteed=4096MB,4vc max=4096MB,4vc used=1024MB,1vc am=1024MB apps=1 running=1
              root.a guaranteed=4096MB,4vc max=4096MB,4vc used=1024MB,1vc am=1024MB apps=1 running=1
            > finish job
              done job c1 on n1 exit=-100 application-finished
              kill job c1 on n1
            > move job root.a
              error: application attempt appattempt_1_0001_000001 is not known (never added, or already removed)
        "#]],
    );
}
