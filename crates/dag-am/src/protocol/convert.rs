//! The session core's values to and from their wire forms: the one place
//! either is built from the other.
//!
//! The core (`spindle-dag`) stays free of serde: its purity test allows no
//! dependency beyond `thiserror`. So the wire types of [`super::messages`]
//! declare the JSON, and each is converted here from the core type it
//! carries. Every conversion takes the core value apart with a full
//! pattern (a field left off the wire is named with `_`), so a field added
//! to a core type fails the build here until its wire form is decided.

use spindle_dag::session::{self, Assignment, DagStatus, SessionCounters, SessionReport};
use spindle_dag::session::{WorkerOutcome, WorkerStatus as CoreWorker};
use spindle_dag::{AttemptId, DagId, TaskId};

use super::messages::{
    AttemptRef, Counters, DagStatusReport, GroupStatus, StatusReport, TaskAssignment, TaskInput,
    WireOutcome, WorkerStatus,
};

impl From<AttemptId> for AttemptRef {
    fn from(id: AttemptId) -> AttemptRef {
        let AttemptId {
            task:
                TaskId {
                    dag: DagId(dag),
                    vertex,
                    task,
                },
            attempt,
        } = id;
        AttemptRef {
            dag,
            vertex,
            task,
            attempt,
        }
    }
}

impl From<AttemptRef> for AttemptId {
    fn from(a: AttemptRef) -> AttemptId {
        let AttemptRef {
            dag,
            vertex,
            task,
            attempt,
        } = a;
        AttemptId {
            task: TaskId {
                dag: DagId(dag),
                vertex,
                task,
            },
            attempt,
        }
    }
}

impl From<WireOutcome> for WorkerOutcome {
    fn from(outcome: WireOutcome) -> WorkerOutcome {
        match outcome {
            WireOutcome::Succeeded => WorkerOutcome::Succeeded,
            WireOutcome::Failed { reason } => WorkerOutcome::Failed { reason },
            WireOutcome::Killed { reason } => WorkerOutcome::Killed { reason },
            WireOutcome::InputLost { reason } => WorkerOutcome::InputLost { reason },
        }
    }
}

/// The assignment on the wire: each input is the URL of the output server
/// of the worker holding it (an address nobody serves when that worker is
/// gone: the fetch fails and the attempt is retried, or the DAG fails).
impl From<Assignment> for TaskAssignment {
    fn from(a: Assignment) -> TaskAssignment {
        let Assignment {
            attempt,
            dag_name,
            vertex,
            vertex_tasks,
            partitions,
            command,
            inputs,
            resource,
        } = a;
        let dag = attempt.task.dag.0;
        let inputs = inputs
            .into_iter()
            .map(|i| {
                let session::TaskInput {
                    vertex,
                    vertex_index: producer,
                    task: t,
                    from,
                } = i;
                let url = match from {
                    Some(addr) => format!("http://{addr}/outputs/{dag}/{producer}/{t}"),
                    None => format!("unavailable://{dag}/{producer}/{t}"),
                };
                TaskInput {
                    vertex,
                    task: t,
                    url,
                }
            })
            .collect();
        TaskAssignment {
            attempt: attempt.into(),
            dag_name,
            vertex,
            vertex_tasks,
            partitions,
            command,
            inputs,
            memory_mb: resource.memory_mb,
            vcores: resource.vcores,
        }
    }
}

impl StatusReport {
    /// What `spindle dag status` shows of the core's report, for the YARN
    /// application `application`.
    pub fn from_core(application: &str, report: SessionReport) -> StatusReport {
        let SessionReport {
            groups,
            workers,
            dags,
            counters,
        } = report;
        StatusReport {
            application: application.to_string(),
            groups: groups.into_iter().map(GroupStatus::from).collect(),
            workers: workers.into_iter().map(WorkerStatus::from).collect(),
            dags: dags.into_iter().map(DagStatusReport::from).collect(),
            counters: Counters::from(&counters),
        }
    }
}

impl From<session::GroupStatus> for GroupStatus {
    fn from(g: session::GroupStatus) -> GroupStatus {
        let session::GroupStatus {
            name,
            worker_resource,
            priority: _,
            status_line,
            workers,
            requests_outstanding: _,
            requested_workers,
            autoscale_state,
            usage_bp,
            pending_tasks: _,
            task_capacity_mb: _,
            task_used_mb: _,
        } = g;
        GroupStatus {
            name,
            worker_memory_mb: worker_resource.memory_mb,
            worker_vcores: worker_resource.vcores,
            status_line,
            workers,
            requested_workers,
            autoscale_state: autoscale_state.map(|s| s.to_string()),
            usage_bp,
        }
    }
}

impl From<CoreWorker> for WorkerStatus {
    fn from(w: CoreWorker) -> WorkerStatus {
        let CoreWorker {
            worker,
            host,
            group,
            capacity,
            used,
            running_attempts,
            draining,
        } = w;
        WorkerStatus {
            worker: worker.to_string(),
            host,
            group,
            capacity_mb: capacity.memory_mb,
            used_mb: used.memory_mb,
            running_attempts,
            draining,
        }
    }
}

impl From<DagStatus> for DagStatusReport {
    fn from(d: DagStatus) -> DagStatusReport {
        let DagStatus {
            id: DagId(id),
            name,
            client,
            group,
            queue,
            state,
            reason,
            total_tasks,
            succeeded_tasks,
            running_attempts,
            pending_tasks,
            elapsed_ms,
        } = d;
        DagStatusReport {
            id,
            name,
            client,
            group,
            queue,
            state: state.to_string(),
            reason,
            total_tasks,
            succeeded_tasks,
            running_attempts,
            pending_tasks,
            elapsed_ms,
        }
    }
}

impl From<&SessionCounters> for Counters {
    fn from(c: &SessionCounters) -> Counters {
        let SessionCounters {
            containers_requested,
            scale_out_requested,
            initial_requested,
            requests_cancelled,
            workers_started,
            scale_in_released,
            workers_stopped,
            workers_lost,
            workers_recycled,
            scale_outs,
            scale_ins,
            attempts_started,
            attempts_failed,
            inputs_lost,
        } = *c;
        Counters {
            containers_requested,
            scale_out_requested,
            initial_requested,
            requests_cancelled,
            workers_started,
            scale_in_released,
            workers_stopped,
            workers_lost,
            workers_recycled,
            scale_outs,
            scale_ins,
            attempts_started,
            attempts_failed,
            inputs_lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use spindle_dag::Resource;

    use super::*;

    #[test]
    fn attempt_ids_survive_the_wire() {
        let id = AttemptId {
            task: TaskId {
                dag: DagId(9),
                vertex: 2,
                task: 41,
            },
            attempt: 3,
        };
        let wire = AttemptRef::from(id);
        assert_eq!(
            wire,
            AttemptRef {
                dag: 9,
                vertex: 2,
                task: 41,
                attempt: 3
            }
        );
        assert_eq!(AttemptId::from(wire), id);
        assert_eq!(wire.to_string(), id.to_string());
    }

    #[test]
    fn each_outcome_keeps_its_kind_and_reason() {
        let reason = || "r".to_string();
        let cases = [
            (WireOutcome::Succeeded, WorkerOutcome::Succeeded),
            (
                WireOutcome::Failed { reason: reason() },
                WorkerOutcome::Failed { reason: reason() },
            ),
            (
                WireOutcome::Killed { reason: reason() },
                WorkerOutcome::Killed { reason: reason() },
            ),
            (
                WireOutcome::InputLost { reason: reason() },
                WorkerOutcome::InputLost { reason: reason() },
            ),
        ];
        for (wire, core) in cases {
            assert_eq!(WorkerOutcome::from(wire), core);
        }
    }

    /// An input whose worker is gone gets an address nobody serves.
    #[test]
    fn inputs_of_gone_workers_are_unavailable() {
        let attempt = AttemptId {
            task: TaskId {
                dag: DagId(4),
                vertex: 1,
                task: 0,
            },
            attempt: 1,
        };
        let input = |task: u32, from: Option<&str>| session::TaskInput {
            vertex: "map".into(),
            vertex_index: 0,
            task,
            from: from.map(str::to_string),
        };
        let a = TaskAssignment::from(Assignment {
            attempt,
            dag_name: "wc".into(),
            vertex: "reduce".into(),
            vertex_tasks: 1,
            partitions: 0,
            command: "reduce".into(),
            inputs: vec![input(0, Some("h1:9000")), input(1, None)],
            resource: Resource::new(512, 2),
        });
        let urls: Vec<&str> = a.inputs.iter().map(|i| i.url.as_str()).collect();
        assert_eq!(
            urls,
            ["http://h1:9000/outputs/4/0/0", "unavailable://4/0/1"]
        );
        assert_eq!((a.memory_mb, a.vcores), (512, 2));
        assert_eq!(a.attempt, AttemptRef::from(attempt));
    }
}
