//! DAGs: submissions, kills, finished attempts, the task schedulers'
//! decisions (with where each input is fetched from), DAG ends and the
//! history.

use std::collections::BTreeMap;

use super::{
    Assignment, DagEnd, DagRecord, Notice, Session, SessionEffect, TaskInput, WorkerOutcome,
};
use crate::container_scheduler::GroupSpec;
use crate::dag::{DagSpec, EdgeKind};
use crate::task_scheduler::{AttemptOutcome, DagEvent, Input as TsInput, TaskDecisions};
use crate::{AttemptId, DagId, WorkerId};

impl Session {
    /// A client submits a DAG. Returns its id, or why it was refused.
    pub(super) fn submit(
        &mut self,
        now: u64,
        client: &str,
        spec: DagSpec,
        group: Option<GroupSpec>,
        queue: Option<String>,
    ) -> Result<DagId, String> {
        if self.stopping {
            return Err("the session is stopping".into());
        }
        let group_spec = match group {
            None => GroupSpec::new(
                self.config.default_group.clone(),
                self.config.worker_resource,
            ),
            Some(g) => g,
        };
        let dag = spec
            .validate(&self.config.cores.task.limits.dag)
            .map_err(|e| format!("DAG '{}' rejected: {e}", spec.name))?;
        for v in dag.vertices() {
            if !v.resource.fits_in(&group_spec.worker_resource) {
                return Err(format!(
                    "vertex '{}' needs {} per task, more than a worker of ContainerGroup '{}' has ({})",
                    v.name, v.resource, group_spec.name, group_spec.worker_resource
                ));
            }
        }
        let group = group_spec.name.clone();
        self.ensure_group(now, client, group_spec)?;
        let id = DagId(self.next_dag);
        let name = spec.name.clone();
        let result = match self.groups.get_mut(&group) {
            Some(g) => {
                let r = g.ts.handle(
                    now,
                    TsInput::SubmitDag {
                        id,
                        client: client.to_string(),
                        queue,
                        spec,
                    },
                );
                self.core_steps += 1;
                if self.check_every_step && self.violation.is_none() {
                    if let Err(e) = g.ts.check_invariants() {
                        self.violation = Some(format!("group {group}: {e}"));
                    }
                }
                r
            }
            None => return Err(format!("ContainerGroup '{group}' is gone")),
        };
        let decisions = match result {
            Ok(d) => d,
            Err(e) => {
                self.maybe_release_group(now, client, &group);
                return Err(e.to_string());
            }
        };
        self.next_dag += 1;
        let queue_name = self
            .groups
            .get(&group)
            .and_then(|g| g.ts.dag_report(id))
            .map(|r| r.queue)
            .unwrap_or_default();
        if let Some(g) = self.groups.get_mut(&group) {
            *g.owners.entry(client.to_string()).or_default() += 1;
            // A new DAG gets fresh attempts at starting workers.
            g.start_failures = 0;
        }
        self.notice(Notice::DagSubmitted {
            dag: id,
            name: name.clone(),
            client: client.to_string(),
            group: group.clone(),
            queue: queue_name.clone(),
        });
        self.dags.insert(
            id,
            DagRecord {
                name,
                client: client.to_string(),
                group: group.clone(),
                queue: queue_name,
                total_tasks: dag.total_tasks(),
                dag,
                end: None,
                submitted_ms: now,
                finished_ms: None,
                succeeded_tasks: 0,
                outputs: BTreeMap::new(),
            },
        );
        self.apply_task_decisions(now, &group, decisions);
        Ok(id)
    }

    /// A client kills a DAG.
    pub(super) fn kill(&mut self, now: u64, dag: DagId, client: &str) -> Result<(), String> {
        let Some(record) = self.dags.get(&dag) else {
            return Err(format!("no DAG {dag} in this session"));
        };
        if record.end.is_some() {
            return Err(format!("DAG {dag} has already ended"));
        }
        let group = record.group.clone();
        self.ts_input(
            now,
            &group,
            TsInput::KillDag {
                id: dag,
                reason: format!("killed by {client}"),
            },
        );
        Ok(())
    }

    /// A worker reports the end of an attempt; whether to settle.
    pub(super) fn attempt_finished(
        &mut self,
        now: u64,
        worker: &WorkerId,
        id: AttemptId,
        outcome: WorkerOutcome,
    ) -> bool {
        match self.attempts.get(&id) {
            Some(w) if w == worker => {}
            _ => {
                self.notice(Notice::IgnoredAttemptEnd {
                    worker: worker.clone(),
                    attempt: id,
                });
                return false;
            }
        }
        self.attempts.remove(&id);
        let Some(record) = self.dags.get_mut(&id.task.dag) else {
            return false;
        };
        let group = record.group.clone();
        let outcome = match outcome {
            WorkerOutcome::Succeeded => {
                if record.end.is_none() {
                    record
                        .outputs
                        .insert((id.task.vertex, id.task.task), worker.clone());
                }
                AttemptOutcome::Succeeded
            }
            WorkerOutcome::Failed { reason } => {
                self.counters.attempts_failed += 1;
                self.notice(Notice::AttemptFailed {
                    worker: worker.clone(),
                    attempt: id,
                    reason: reason.clone(),
                });
                AttemptOutcome::Failed { reason }
            }
            WorkerOutcome::Killed { reason } => AttemptOutcome::Killed { reason },
            // Retried without counting as a failure; if the producer's worker
            // is gone, the task scheduler makes the output again first.
            WorkerOutcome::InputLost { reason } => {
                self.counters.inputs_lost += 1;
                self.notice(Notice::InputLost {
                    worker: worker.clone(),
                    attempt: id,
                    reason: reason.clone(),
                });
                AttemptOutcome::Killed {
                    reason: format!("input lost: {reason}"),
                }
            }
        };
        self.ts_input(
            now,
            &group,
            TsInput::AttemptFinished {
                attempt: id,
                outcome,
            },
        );
        if let Some(g) = self.workers.get(worker).and_then(|w| w.group.clone()) {
            self.offer_worker(now, &g, worker);
        }
        true
    }

    /// Carries out a group's TaskScheduler decisions.
    pub(super) fn apply_task_decisions(&mut self, now: u64, group: &str, d: TaskDecisions) {
        if let Some(line) = d.status_line {
            self.notice(Notice::StatusLine {
                group: group.to_string(),
                line,
            });
        }
        for a in d.assignments {
            let Some(record) = self.dags.get(&a.attempt.task.dag) else {
                self.notice(Notice::AssignmentOfUnknownDag { attempt: a.attempt });
                continue;
            };
            let vertex = a.attempt.task.vertex;
            let inputs = if self.locate_inputs {
                self.inputs_of(record, a.attempt)
            } else {
                Vec::new()
            };
            let partitions = record
                .dag
                .consumers(vertex)
                .find(|(_, k)| *k == EdgeKind::AllToAll)
                .and_then(|(c, _)| record.dag.vertex(c))
                .map(|v| v.tasks)
                .unwrap_or(0);
            let vertex_tasks = record.dag.vertex(vertex).map(|v| v.tasks).unwrap_or(0);
            let assignment = Assignment {
                attempt: a.attempt,
                dag_name: record.name.clone(),
                vertex: a.vertex_name,
                vertex_tasks,
                partitions,
                command: a.command,
                inputs,
                resource: a.resource,
            };
            self.counters.attempts_started += 1;
            self.attempts.insert(a.attempt, a.worker.clone());
            self.effects.push(SessionEffect::Assign {
                worker: a.worker,
                assignment: Box::new(assignment),
            });
        }
        for k in d.kills {
            self.effects.push(SessionEffect::KillAttempt {
                worker: k.worker,
                attempt: k.attempt,
            });
        }
        for e in d.dag_events {
            self.dag_ended(now, e);
        }
        for w in d.drained_workers {
            self.drained(now, group, &w);
        }
    }

    /// Where each input of the attempt is: for a one-to-one edge the
    /// producer task of the same index, for an all-to-all edge every
    /// producer task.
    fn inputs_of(&self, record: &DagRecord, attempt: AttemptId) -> Vec<TaskInput> {
        let mut inputs = Vec::new();
        for (producer, kind) in record.dag.producers(attempt.task.vertex) {
            let Some(pv) = record.dag.vertex(producer) else {
                continue;
            };
            let tasks: Vec<u32> = match kind {
                EdgeKind::OneToOne => vec![attempt.task.task],
                EdgeKind::AllToAll => (0..pv.tasks).collect(),
            };
            for t in tasks {
                let from = record
                    .outputs
                    .get(&(producer, t))
                    .and_then(|w| self.workers.get(w))
                    .map(|w| w.address.clone());
                inputs.push(TaskInput {
                    vertex: pv.name.clone(),
                    vertex_index: producer,
                    task: t,
                    from,
                });
            }
        }
        inputs
    }

    fn dag_ended(&mut self, now: u64, event: DagEvent) {
        let (id, end) = match event {
            DagEvent::Succeeded { dag } => (dag, DagEnd::Succeeded),
            DagEvent::Failed { dag, reason } => (dag, DagEnd::Failed { reason }),
            DagEvent::Killed { dag, reason } => (dag, DagEnd::Killed { reason }),
        };
        let Some(record) = self.dags.get_mut(&id) else {
            return;
        };
        if record.end.is_some() {
            return;
        }
        record.succeeded_tasks = if end == DagEnd::Succeeded {
            record.total_tasks
        } else {
            self.groups
                .get(&record.group)
                .and_then(|g| g.ts.dag_report(id))
                .map(|r| r.succeeded_tasks)
                .unwrap_or(record.outputs.len() as u64)
        };
        self.effects.push(SessionEffect::DagEnded {
            dag: id,
            name: record.name.clone(),
            end: end.clone(),
        });
        record.end = Some(end);
        record.finished_ms = Some(now);
        record.outputs.clear();
        let (client, group) = (record.client.clone(), record.group.clone());
        let workers: Vec<WorkerId> = self.workers.keys().cloned().collect();
        for w in workers {
            self.effects
                .push(SessionEffect::DagDone { worker: w, dag: id });
        }
        self.finished_order.push_back(id);
        while self.finished_order.len() > self.config.history {
            if let Some(old) = self.finished_order.pop_front() {
                self.dags.remove(&old);
            }
        }
        if let Some(g) = self.groups.get_mut(&group) {
            if let Some(n) = g.owners.get_mut(&client) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    g.owners.remove(&client);
                }
            }
        }
        self.maybe_release_group(now, &client, &group);
    }
}
