//! Pins the JSON of every message of the session protocol, byte for byte,
//! so that a change of the wire types' Rust (where they are declared, how
//! they are converted from the session core's types) provably keeps the
//! format that clients, AMs and workers of other builds speak.
//!
//! Each message is written and read back: the text must be exactly the
//! pinned line and reading the line must give the value again. Lines older
//! builds wrote without the fields that have defaults must still parse.
//! The last tests go through the session core: the assignments, kills and
//! status reports the AM sends are the core's values converted to the wire.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;
use spindle_dag::{DagId, WorkerId};
use spindle_dag_am::dagfile::{DagFile, EdgeFile, EdgeKindFile, GroupFile, VertexFile};
use spindle_dag_am::protocol::{
    AmToWorker, AttemptRef, ClientRequest, ClientResponse, Counters, DagStatusReport, GroupStatus,
    Hello, StatusReport, TaskAssignment, TaskInput, WireOutcome, WorkerStatus, WorkerToAm,
};
use spindle_dag_am::session::{
    attempt_end, keys, submission, Effect, Reply, Session, SessionConfig, SessionInput,
};

/// `value` is written as exactly `json`, and `json` reads as `value`.
#[track_caller]
fn pin<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T, json: &str) {
    let text = serde_json::to_string(value).expect("serializes");
    assert_eq!(text, json);
    let back: T = serde_json::from_str(json).expect("parses");
    assert_eq!(&back, value);
}

/// `json` (as an older or terser writer sends it) reads as `value`.
#[track_caller]
fn reads<T: DeserializeOwned + PartialEq + Debug>(json: &str, value: &T) {
    let back: T = serde_json::from_str(json).expect("parses");
    assert_eq!(&back, value);
}

fn attempt() -> AttemptRef {
    AttemptRef {
        dag: 7,
        vertex: 1,
        task: 3,
        attempt: 2,
    }
}

#[test]
fn hellos() {
    pin(
        &Hello::Client {
            secret: "s3cret".into(),
            client: "alice@h1:42".into(),
        },
        r#"{"role":"client","secret":"s3cret","client":"alice@h1:42"}"#,
    );
    pin(
        &Hello::Worker {
            secret: "s3cret".into(),
            worker: "container_1_0001_01_000002".into(),
            http_addr: "h1:9000".into(),
        },
        r#"{"role":"worker","secret":"s3cret","worker":"container_1_0001_01_000002","http_addr":"h1:9000"}"#,
    );
}

fn full_dag_file() -> DagFile {
    DagFile {
        name: "wc".into(),
        queue: Some("etl".into()),
        group: Some(GroupFile {
            name: "big".into(),
            worker_memory_mb: 2048,
            worker_vcores: 2,
            properties: BTreeMap::from([("team".to_string(), "analytics".to_string())]),
        }),
        vertices: vec![
            VertexFile {
                name: "map".into(),
                tasks: 2,
                memory_mb: 256,
                vcores: 1,
                command: "map {task}".into(),
                priority: Some(0),
            },
            VertexFile {
                name: "reduce".into(),
                tasks: 1,
                memory_mb: 512,
                vcores: 2,
                command: "reduce".into(),
                priority: None,
            },
        ],
        edges: vec![
            EdgeFile {
                from: "map".into(),
                to: "reduce".into(),
                kind: EdgeKindFile::AllToAll,
            },
            EdgeFile {
                from: "reduce".into(),
                to: "out".into(),
                kind: EdgeKindFile::OneToOne,
            },
        ],
    }
}

fn minimal_dag_file() -> DagFile {
    DagFile {
        name: "one".into(),
        queue: None,
        group: None,
        vertices: vec![VertexFile {
            name: "v".into(),
            tasks: 1,
            memory_mb: 128,
            vcores: 1,
            command: "true".into(),
            priority: None,
        }],
        edges: vec![],
    }
}

#[test]
fn client_requests() {
    pin(
        &ClientRequest::Submit {
            dag: full_dag_file(),
            queue: Some("high".into()),
        },
        r#"{"op":"submit","dag":{"name":"wc","queue":"etl","group":{"name":"big","worker_memory_mb":2048,"worker_vcores":2,"properties":{"team":"analytics"}},"vertices":[{"name":"map","tasks":2,"memory_mb":256,"vcores":1,"command":"map {task}","priority":0},{"name":"reduce","tasks":1,"memory_mb":512,"vcores":2,"command":"reduce"}],"edges":[{"from":"map","to":"reduce","kind":"all-to-all"},{"from":"reduce","to":"out","kind":"one-to-one"}]},"queue":"high"}"#,
    );
    pin(
        &ClientRequest::Submit {
            dag: minimal_dag_file(),
            queue: None,
        },
        r#"{"op":"submit","dag":{"name":"one","vertices":[{"name":"v","tasks":1,"memory_mb":128,"vcores":1,"command":"true"}],"edges":[]},"queue":null}"#,
    );
    reads(
        r#"{"op":"submit","dag":{"name":"one","vertices":[{"name":"v","tasks":1,"memory_mb":128,"command":"true"}]}}"#,
        &ClientRequest::Submit {
            dag: minimal_dag_file(),
            queue: None,
        },
    );
    pin(
        &ClientRequest::Status { dag: Some(7) },
        r#"{"op":"status","dag":7}"#,
    );
    pin(
        &ClientRequest::Status { dag: None },
        r#"{"op":"status","dag":null}"#,
    );
    reads(r#"{"op":"status"}"#, &ClientRequest::Status { dag: None });
    pin(&ClientRequest::Kill { dag: 7 }, r#"{"op":"kill","dag":7}"#);
    pin(&ClientRequest::Stop, r#"{"op":"stop"}"#);
}

fn counters() -> Counters {
    Counters {
        containers_requested: 1,
        scale_out_requested: 2,
        initial_requested: 3,
        requests_cancelled: 4,
        workers_started: 5,
        scale_in_released: 6,
        workers_stopped: 7,
        workers_lost: 8,
        workers_recycled: 9,
        scale_outs: 10,
        scale_ins: 11,
        attempts_started: 12,
        attempts_failed: 13,
        inputs_lost: 14,
    }
}

const COUNTERS: &str = r#"{"containers_requested":1,"scale_out_requested":2,"initial_requested":3,"requests_cancelled":4,"workers_started":5,"scale_in_released":6,"workers_stopped":7,"workers_lost":8,"workers_recycled":9,"scale_outs":10,"scale_ins":11,"attempts_started":12,"attempts_failed":13,"inputs_lost":14}"#;

fn report() -> StatusReport {
    StatusReport {
        application: "application_1_0001".into(),
        groups: vec![
            GroupStatus {
                name: "All-In-One".into(),
                worker_memory_mb: 1024,
                worker_vcores: 1,
                status_line: "common = 0/0%".into(),
                workers: 2,
                requested_workers: 1,
                autoscale_state: Some("SCALE_OUT".into()),
                usage_bp: Some(8000),
            },
            GroupStatus {
                name: "big".into(),
                worker_memory_mb: 2048,
                worker_vcores: 2,
                status_line: String::new(),
                workers: 0,
                requested_workers: 0,
                autoscale_state: None,
                usage_bp: None,
            },
        ],
        workers: vec![
            WorkerStatus {
                worker: "container_1".into(),
                host: "h1".into(),
                group: Some("All-In-One".into()),
                capacity_mb: 1024,
                used_mb: 512,
                running_attempts: 1,
                draining: false,
            },
            WorkerStatus {
                worker: "container_2".into(),
                host: "h2".into(),
                group: None,
                capacity_mb: 0,
                used_mb: 0,
                running_attempts: 0,
                draining: true,
            },
        ],
        dags: vec![
            DagStatusReport {
                id: 1,
                name: "wc".into(),
                client: "alice".into(),
                group: "All-In-One".into(),
                queue: "common".into(),
                state: "RUNNING".into(),
                reason: None,
                total_tasks: 3,
                succeeded_tasks: 1,
                running_attempts: 1,
                pending_tasks: 1,
                elapsed_ms: 1500,
            },
            DagStatusReport {
                id: 2,
                name: "bad".into(),
                client: "bob".into(),
                group: "big".into(),
                queue: "etl".into(),
                state: "FAILED".into(),
                reason: Some("vertex v failed".into()),
                total_tasks: 1,
                succeeded_tasks: 0,
                running_attempts: 0,
                pending_tasks: 0,
                elapsed_ms: 20,
            },
        ],
        counters: counters(),
    }
}

#[test]
fn client_responses() {
    pin(
        &ClientResponse::Submitted { dag: 7 },
        r#"{"result":"submitted","dag":7}"#,
    );
    pin(
        &ClientResponse::Status(Box::new(report())),
        &format!(
            "{}{COUNTERS}}}",
            r#"{"result":"status","application":"application_1_0001","groups":[{"name":"All-In-One","worker_memory_mb":1024,"worker_vcores":1,"status_line":"common = 0/0%","workers":2,"requested_workers":1,"autoscale_state":"SCALE_OUT","usage_bp":8000},{"name":"big","worker_memory_mb":2048,"worker_vcores":2,"status_line":"","workers":0,"requested_workers":0,"autoscale_state":null,"usage_bp":null}],"workers":[{"worker":"container_1","host":"h1","group":"All-In-One","capacity_mb":1024,"used_mb":512,"running_attempts":1,"draining":false},{"worker":"container_2","host":"h2","group":null,"capacity_mb":0,"used_mb":0,"running_attempts":0,"draining":true}],"dags":[{"id":1,"name":"wc","client":"alice","group":"All-In-One","queue":"common","state":"RUNNING","reason":null,"total_tasks":3,"succeeded_tasks":1,"running_attempts":1,"pending_tasks":1,"elapsed_ms":1500},{"id":2,"name":"bad","client":"bob","group":"big","queue":"etl","state":"FAILED","reason":"vertex v failed","total_tasks":1,"succeeded_tasks":0,"running_attempts":0,"pending_tasks":0,"elapsed_ms":20}],"counters":"#
        ),
    );
    pin(
        &ClientResponse::Killed { dag: 7 },
        r#"{"result":"killed","dag":7}"#,
    );
    pin(&ClientResponse::Stopping, r#"{"result":"stopping"}"#);
    pin(
        &ClientResponse::Error {
            message: "no DAG dag_9 in this session".into(),
        },
        r#"{"result":"error","message":"no DAG dag_9 in this session"}"#,
    );
}

/// What AMs before `initial_requested`, `autoscale_state`, `usage_bp` and
/// `reason` existed (or writers that leave out `null`s) send still parses.
#[test]
fn fields_with_defaults_may_be_absent() {
    let mut c = counters();
    c.initial_requested = 0;
    reads(
        r#"{"containers_requested":1,"scale_out_requested":2,"requests_cancelled":4,"workers_started":5,"scale_in_released":6,"workers_stopped":7,"workers_lost":8,"workers_recycled":9,"scale_outs":10,"scale_ins":11,"attempts_started":12,"attempts_failed":13,"inputs_lost":14}"#,
        &c,
    );
    pin(&counters(), COUNTERS);
    reads(
        r#"{"name":"big","worker_memory_mb":2048,"worker_vcores":2,"status_line":"","workers":0,"requested_workers":0}"#,
        &report().groups[1],
    );
    reads(
        r#"{"id":1,"name":"wc","client":"alice","group":"All-In-One","queue":"common","state":"RUNNING","total_tasks":3,"succeeded_tasks":1,"running_attempts":1,"pending_tasks":1,"elapsed_ms":1500}"#,
        &report().dags[0],
    );
}

#[test]
fn worker_messages() {
    let assignment = TaskAssignment {
        attempt: attempt(),
        dag_name: "wc".into(),
        vertex: "reduce".into(),
        vertex_tasks: 4,
        partitions: 0,
        command: "reduce 3".into(),
        inputs: vec![
            TaskInput {
                vertex: "map".into(),
                task: 0,
                url: "http://h1:9000/outputs/7/0/0".into(),
            },
            TaskInput {
                vertex: "map".into(),
                task: 1,
                url: "unavailable://7/0/1".into(),
            },
        ],
        memory_mb: 512,
        vcores: 2,
    };
    pin(
        &AmToWorker::Assign(Box::new(assignment)),
        r#"{"type":"assign","attempt":{"dag":7,"vertex":1,"task":3,"attempt":2},"dag_name":"wc","vertex":"reduce","vertex_tasks":4,"partitions":0,"command":"reduce 3","inputs":[{"vertex":"map","task":0,"url":"http://h1:9000/outputs/7/0/0"},{"vertex":"map","task":1,"url":"unavailable://7/0/1"}],"memory_mb":512,"vcores":2}"#,
    );
    pin(
        &AmToWorker::Kill { attempt: attempt() },
        r#"{"type":"kill","attempt":{"dag":7,"vertex":1,"task":3,"attempt":2}}"#,
    );
    pin(
        &AmToWorker::DagDone { dag: 7 },
        r#"{"type":"dag_done","dag":7}"#,
    );
    pin(
        &AmToWorker::Reinit {
            group: "big".into(),
        },
        r#"{"type":"reinit","group":"big"}"#,
    );
    pin(
        &AmToWorker::Stop {
            reason: "session stopped by alice".into(),
        },
        r#"{"type":"stop","reason":"session stopped by alice"}"#,
    );
    let finished = |outcome: WireOutcome| WorkerToAm::Finished {
        attempt: attempt(),
        outcome,
    };
    let head = r#"{"type":"finished","attempt":{"dag":7,"vertex":1,"task":3,"attempt":2},"#;
    pin(
        &finished(WireOutcome::Succeeded),
        &format!(r#"{head}"outcome":"succeeded"}}"#),
    );
    pin(
        &finished(WireOutcome::Failed {
            reason: "exit 3".into(),
        }),
        &format!(r#"{head}"outcome":"failed","reason":"exit 3"}}"#),
    );
    pin(
        &finished(WireOutcome::Killed {
            reason: "killed by the DAG AM".into(),
        }),
        &format!(r#"{head}"outcome":"killed","reason":"killed by the DAG AM"}}"#),
    );
    pin(
        &finished(WireOutcome::InputLost {
            reason: "connection refused".into(),
        }),
        &format!(r#"{head}"outcome":"input_lost","reason":"connection refused"}}"#),
    );
}

#[test]
fn attempts_print_as_the_cores_ids() {
    assert_eq!(attempt().to_string(), "attempt_7_01_000003_2");
}

// ---- through the session core ----

fn config(pairs: &[(&str, &str)]) -> SessionConfig {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    SessionConfig::from_map(&map).expect("valid settings")
}

/// A word count of two maps and a reduce, on 512 MB workers.
fn word_count() -> DagFile {
    let vertex = |name: &str, tasks: u32, command: &str| VertexFile {
        name: name.into(),
        tasks,
        memory_mb: 512,
        vcores: 1,
        command: command.into(),
        priority: None,
    };
    DagFile {
        name: "wc".into(),
        queue: None,
        group: None,
        vertices: vec![
            vertex("map", 2, "map {task}"),
            vertex("reduce", 1, "reduce"),
        ],
        edges: vec![EdgeFile {
            from: "map".into(),
            to: "reduce".into(),
            kind: EdgeKindFile::AllToAll,
        }],
    }
}

/// The messages the effects send, as JSON lines, with their workers.
fn sent(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { worker, message } => Some(format!(
                "{worker} {}",
                serde_json::to_string(message).expect("json")
            )),
            _ => None,
        })
        .collect()
}

fn register(s: &mut Session, now: u64, name: &str, host: &str) -> Vec<Effect> {
    let granted = SessionInput::ContainerGranted {
        container: WorkerId::new(name),
        host: host.into(),
        priority: 1,
    };
    assert_eq!(s.handle(now, granted), None);
    let hello = SessionInput::WorkerRegistered {
        worker: WorkerId::new(name),
        address: format!("{host}:9000"),
    };
    assert_eq!(s.handle(now + 1, hello), Some(Reply::Registered));
    s.take_effects()
}

#[test]
fn the_cores_assignments_kills_and_reports_on_the_wire() {
    let mut s = Session::new(config(&[
        (keys::WORKER_MEMORY_MB, "512"),
        (keys::WORKER_VCORES, "1"),
    ]))
    .expect("session");
    let reply = s.handle(10, submission("alice", &word_count(), Some("etl".into())));
    assert_eq!(reply, Some(Reply::Submitted(DagId(1))));
    s.take_effects();
    let mut lines = sent(&register(&mut s, 20, "container_1", "h1"));
    lines.extend(sent(&register(&mut s, 30, "container_2", "h2")));
    assert_eq!(
        lines,
        [
            r#"container_1 {"type":"assign","attempt":{"dag":1,"vertex":0,"task":0,"attempt":1},"dag_name":"wc","vertex":"map","vertex_tasks":2,"partitions":1,"command":"map 0","inputs":[],"memory_mb":512,"vcores":1}"#,
            r#"container_2 {"type":"assign","attempt":{"dag":1,"vertex":0,"task":1,"attempt":1},"dag_name":"wc","vertex":"map","vertex_tasks":2,"partitions":1,"command":"map 1","inputs":[],"memory_mb":512,"vcores":1}"#,
        ]
    );
    let map = |task| AttemptRef {
        dag: 1,
        vertex: 0,
        task,
        attempt: 1,
    };
    let w1 = WorkerId::new("container_1");
    let w2 = WorkerId::new("container_2");
    s.handle(40, attempt_end(&w1, map(0), WireOutcome::Succeeded));
    s.handle(41, attempt_end(&w2, map(1), WireOutcome::Succeeded));
    assert_eq!(
        sent(&s.take_effects()),
        [
            r#"container_2 {"type":"assign","attempt":{"dag":1,"vertex":1,"task":0,"attempt":1},"dag_name":"wc","vertex":"reduce","vertex_tasks":1,"partitions":0,"command":"reduce","inputs":[{"vertex":"map","task":0,"url":"http://h1:9000/outputs/1/0/0"},{"vertex":"map","task":1,"url":"http://h2:9000/outputs/1/0/1"}],"memory_mb":512,"vcores":1}"#,
        ]
    );
    let status = serde_json::to_string(&s.status("application_1_0001", None).expect("status"))
        .expect("json");
    assert_eq!(
        status,
        r#"{"application":"application_1_0001","groups":[{"name":"All-In-One","worker_memory_mb":512,"worker_vcores":1,"status_line":"DAGScheduler All-In-One 1024MB: common = 0/50%","workers":2,"requested_workers":0,"autoscale_state":null,"usage_bp":null}],"workers":[{"worker":"container_1","host":"h1","group":"All-In-One","capacity_mb":512,"used_mb":0,"running_attempts":0,"draining":false},{"worker":"container_2","host":"h2","group":"All-In-One","capacity_mb":512,"used_mb":512,"running_attempts":1,"draining":false}],"dags":[{"id":1,"name":"wc","client":"alice","group":"All-In-One","queue":"common","state":"RUNNING","reason":null,"total_tasks":3,"succeeded_tasks":2,"running_attempts":1,"pending_tasks":0,"elapsed_ms":31}],"counters":{"containers_requested":2,"scale_out_requested":0,"initial_requested":0,"requests_cancelled":0,"workers_started":2,"scale_in_released":0,"workers_stopped":0,"workers_lost":0,"workers_recycled":0,"scale_outs":0,"scale_ins":0,"attempts_started":3,"attempts_failed":0,"inputs_lost":0}}"#
    );
    // Each outcome reaches the core as its own kind: a lost input is
    // retried without counting as a failure, a failure is counted.
    let reduce = AttemptRef {
        dag: 1,
        vertex: 1,
        task: 0,
        attempt: 1,
    };
    let lost = WireOutcome::InputLost {
        reason: "connection refused".into(),
    };
    s.handle(50, attempt_end(&w2, reduce, lost));
    let retry = AttemptRef {
        attempt: 2,
        ..reduce
    };
    let failed = WireOutcome::Failed {
        reason: "exit 3".into(),
    };
    s.handle(51, attempt_end(&w2, retry, failed));
    let c = serde_json::to_string(&s.counters()).expect("json");
    assert_eq!(
        c,
        r#"{"containers_requested":2,"scale_out_requested":0,"initial_requested":0,"requests_cancelled":0,"workers_started":2,"scale_in_released":0,"workers_stopped":0,"workers_lost":0,"workers_recycled":0,"scale_outs":0,"scale_ins":0,"attempts_started":5,"attempts_failed":1,"inputs_lost":1}"#
    );
    s.take_effects();
    // A kill of the DAG: its running attempt is killed, every worker told
    // the DAG is done, and the report shows why it ended (the killed
    // attempt runs until its worker reports it).
    let kill = SessionInput::KillDag {
        dag: DagId(1),
        client: "alice".into(),
    };
    assert_eq!(s.handle(60, kill), Some(Reply::Killed(DagId(1))));
    assert_eq!(
        sent(&s.take_effects()),
        [
            r#"container_2 {"type":"kill","attempt":{"dag":1,"vertex":1,"task":0,"attempt":3}}"#,
            r#"container_1 {"type":"dag_done","dag":1}"#,
            r#"container_2 {"type":"dag_done","dag":1}"#,
        ]
    );
    let dag = s.status("app", Some(DagId(1))).expect("status").dags;
    assert_eq!(
        serde_json::to_string(&dag).expect("json"),
        r#"[{"id":1,"name":"wc","client":"alice","group":"All-In-One","queue":"common","state":"KILLED","reason":"killed by alice","total_tasks":3,"succeeded_tasks":2,"running_attempts":1,"pending_tasks":0,"elapsed_ms":50}]"#
    );
}

#[test]
fn an_autoscaled_groups_state_on_the_wire() {
    use spindle_dag::config::keys as k;
    let mut s = Session::new(config(&[
        (k::ENABLE_AUTO_SCALING, "true"),
        (k::CHECK_MEMORY_USAGE_INTERVAL_SECS, "1"),
    ]))
    .expect("session");
    s.handle(0, submission("c", &word_count(), None));
    s.handle(1000, SessionInput::Tick);
    let groups = s.status("app", None).expect("status").groups;
    assert_eq!(
        serde_json::to_string(&groups).expect("json"),
        r#"[{"name":"All-In-One","worker_memory_mb":1024,"worker_vcores":1,"status_line":"DAGScheduler All-In-One 0MB: common = 2/0%","workers":0,"requested_workers":1,"autoscale_state":"SCALE_OUT","usage_bp":null}]"#
    );
}
