//! The AM's edge of the session core ([`spindle_dag::session`]): every
//! real event becomes a [`SessionInput`], every [`SessionEffect`] an
//! [`Effect`] for the AM's I/O layer ([`crate::am`]) — a message to a
//! worker, a container request, a launch or a release — or a log line.
//!
//! No decision is made here: which task runs where, when workers start,
//! stop, move or scale, where inputs come from, when a group goes, all
//! come from the core. What this module adds is the wire: DAG files
//! become DAG specs, effects for workers become [`AmToWorker`] messages,
//! and the core's values travel in their wire forms (attempts as
//! [`AttemptRef`], outcomes as [`WireOutcome`], assignments with their
//! inputs' URLs, the [`StatusReport`] of `spindle dag status`), converted
//! by `protocol/convert.rs`.

use spindle_dag::session::{CoreName, DagEnd, Notice, Session as Core, SessionEffect};
use spindle_dag::{DagId, Resource, WorkerId};
use tracing::{debug, error, info, warn};

use crate::dagfile::DagFile;
use crate::protocol::{AmToWorker, AttemptRef, Counters, StatusReport, WireOutcome};

pub use spindle_dag::session::{keys, Reply, SessionConfig, SessionInput};

/// What the I/O layer must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send a message to a registered worker.
    Send {
        worker: WorkerId,
        message: AmToWorker,
    },
    /// Add one container request to the scheduler's table.
    RequestContainer { priority: i32, resource: Resource },
    /// Withdraw one outstanding container request.
    CancelContainerRequest { priority: i32, resource: Resource },
    /// Start a worker in this granted container.
    LaunchWorker {
        container: WorkerId,
        group: String,
        resource: Resource,
    },
    /// Give the container back to the ResourceManager.
    ReleaseContainer { container: WorkerId },
}

/// The session core and the effects it decided, not yet carried out.
pub struct Session {
    core: Core,
    effects: Vec<Effect>,
}

impl Session {
    /// A session with its default ContainerGroup registered.
    pub fn new(config: SessionConfig) -> Result<Session, String> {
        Ok(Session {
            core: Core::new(config)?,
            effects: Vec::new(),
        })
    }

    /// Effects decided since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn counters(&self) -> Counters {
        Counters::from(self.core.counters())
    }

    /// Hands one event to the session core and translates its effects;
    /// returns the reply to the event, if it was a request.
    pub fn handle(&mut self, now_ms: u64, input: SessionInput) -> Option<Reply> {
        let mut reply = None;
        for effect in self.core.handle(now_ms, input) {
            match effect {
                SessionEffect::Reply(r) => reply = Some(r),
                other => self.translate(other),
            }
        }
        reply
    }

    /// What `spindle dag status` shows.
    pub fn status(&self, application: &str, dag: Option<DagId>) -> Result<StatusReport, String> {
        Ok(StatusReport::from_core(application, self.core.report(dag)?))
    }

    fn translate(&mut self, effect: SessionEffect) {
        let send = |worker: WorkerId, message: AmToWorker| Effect::Send { worker, message };
        let effect = match effect {
            SessionEffect::Reply(_) => return,
            SessionEffect::RequestContainer {
                priority, resource, ..
            } => Effect::RequestContainer { priority, resource },
            SessionEffect::CancelContainerRequest {
                priority, resource, ..
            } => Effect::CancelContainerRequest { priority, resource },
            SessionEffect::LaunchWorker {
                container,
                group,
                resource,
                ..
            } => Effect::LaunchWorker {
                container,
                group,
                resource,
            },
            SessionEffect::ReleaseContainer { container } => Effect::ReleaseContainer { container },
            SessionEffect::Assign { worker, assignment } => {
                send(worker, AmToWorker::Assign(Box::new((*assignment).into())))
            }
            SessionEffect::KillAttempt { worker, attempt } => send(
                worker,
                AmToWorker::Kill {
                    attempt: attempt.into(),
                },
            ),
            SessionEffect::DagDone { worker, dag } => {
                send(worker, AmToWorker::DagDone { dag: dag.0 })
            }
            SessionEffect::MoveWorker { worker, to, .. } => {
                info!(%worker, group = %to, "worker moves to another ContainerGroup");
                send(worker, AmToWorker::Reinit { group: to })
            }
            SessionEffect::StopWorker { worker, reason } => {
                send(worker, AmToWorker::Stop { reason })
            }
            SessionEffect::DagEnded { dag, name, end } => {
                let state = end.state();
                match &end {
                    DagEnd::Succeeded => info!(dag = %dag, name = %name, "DAG {state}"),
                    DagEnd::Failed { reason } | DagEnd::Killed { reason } => {
                        warn!(dag = %dag, name = %name, reason = %reason, "DAG {state}")
                    }
                }
                return;
            }
            SessionEffect::Notice(notice) => {
                log(&notice);
                return;
            }
        };
        self.effects.push(effect);
    }
}

/// A client's submission: the DAG file's DAG, group and queue (`queue`,
/// the client's `--dag-queue`, overrides the file's).
pub fn submission(client: &str, file: &DagFile, queue: Option<String>) -> SessionInput {
    SessionInput::SubmitDag {
        client: client.to_string(),
        spec: file.to_spec(),
        group: file.group.as_ref().map(|g| g.to_spec()),
        queue: queue.or_else(|| file.queue.clone()),
    }
}

/// A worker's report of the end of an attempt.
pub fn attempt_end(worker: &WorkerId, attempt: AttemptRef, outcome: WireOutcome) -> SessionInput {
    SessionInput::AttemptFinished {
        worker: worker.clone(),
        attempt: attempt.into(),
        outcome: outcome.into(),
    }
}

/// Why a request was refused (any answer but the expected one).
pub fn refusal(reply: Option<Reply>) -> String {
    match reply {
        Some(Reply::Refused(reason)) => reason,
        other => format!("the session answered {other:?}"),
    }
}

/// The AM's log line for each notice (docs/dag.md quotes several).
fn log(notice: &Notice) {
    match notice {
        Notice::DagSubmitted {
            dag,
            name,
            client,
            group,
            queue,
        } => info!(dag = %dag, name = %name, %client, %group, queue = %queue, "DAG submitted"),
        Notice::ContainerForGoneGroup {
            container,
            priority,
        } => info!(%container, priority, "releasing a container for a group that is gone"),
        Notice::StartingWorker {
            container,
            host,
            group,
        } => info!(%container, %host, %group, "starting a worker"),
        Notice::LaunchFailed { container, error } => {
            warn!(%container, error = error.as_str(), "a worker could not be started")
        }
        Notice::StartsBlocked { reason, .. } => error!("{reason}"),
        Notice::WorkerRegistered {
            worker,
            host,
            address,
            group,
        } => {
            info!(%worker, host = %host, http_addr = %address, group = %group, "worker registered")
        }
        Notice::WorkerOnReleasedNode {
            worker,
            host,
            group,
        } => {
            info!(%worker, host = %host, group = %group, "worker arrived on a node released by scale-in")
        }
        Notice::IgnoredAttemptEnd { worker, attempt } => {
            warn!(%worker, %attempt, "ignoring the end of an attempt the worker does not run")
        }
        Notice::AttemptFailed {
            worker,
            attempt,
            reason,
        } => warn!(%worker, %attempt, %reason, "attempt failed"),
        Notice::InputLost {
            worker,
            attempt,
            reason,
        } => warn!(%worker, %attempt, %reason, "attempt could not fetch its input"),
        Notice::WorkerEndedBeforeRegistering { worker, why } => {
            warn!(%worker, why = why.as_str(), "a worker ended before it registered")
        }
        Notice::WorkerLost { worker, why } => warn!(%worker, why = why.as_str(), "worker lost"),
        Notice::StatusLine { line, .. } => info!("{line}"),
        Notice::AssignmentOfUnknownDag { attempt } => {
            error!(attempt = %attempt, "an assignment for an unknown DAG")
        }
        Notice::GroupReleased { group } => info!(group = group.as_str(), "ContainerGroup released"),
        Notice::WorkerDraining {
            worker,
            group,
            reason,
        } => debug!(%worker, group = group.as_str(), ?reason, "worker drains"),
        Notice::WorkerDrained {
            worker,
            group,
            reason,
        } => info!(%worker, group = group.as_str(), ?reason, "worker drained"),
        Notice::WorkerLeftGroup { worker, group } => {
            debug!(%worker, group = group.as_str(), "worker leaves its group's task scheduler")
        }
        Notice::RecycledInPlaceOfRequest { worker, group } => info!(
            %worker,
            group = %group,
            "a recycled worker takes the place of a worker request"
        ),
        Notice::TerminatingWorker { worker, reason } => info!(%worker, %reason, "stopping worker"),
        Notice::ScaleOutSkipped { group, count } => warn!(
            group = group.as_str(),
            count, "scale-out skipped: workers of this group cannot start"
        ),
        Notice::RequestCut {
            group,
            count,
            fit,
            cap,
        } => info!(
            group = group.as_str(),
            count, fit, "{cap} cuts the autoscaler's request"
        ),
        Notice::WorkersRequested {
            group,
            cause,
            count,
            usage_bp,
        } => match cause {
            spindle_dag::autoscaler::ScaleOutCause::Initial => info!(
                group = group.as_str(),
                count, "initial workers: requesting workers for an empty group"
            ),
            spindle_dag::autoscaler::ScaleOutCause::Usage => info!(
                group = group.as_str(),
                count,
                usage_bp = ?usage_bp,
                "scale-out: requesting workers"
            ),
        },
        Notice::RecycledForRequests {
            group,
            recycled,
            requested,
        } => info!(
            group = group.as_str(),
            recycled, requested, "recycled workers take the place of the autoscaler's requests"
        ),
        Notice::ScaleOutOver { group, count } => info!(
            group = group.as_str(),
            count, "scale-out over: withdrawing worker requests"
        ),
        Notice::NodesReleased {
            group,
            hosts,
            wait_for_active_dags,
            usage_bp,
            ..
        } => info!(
            group = group.as_str(),
            usage_bp = ?usage_bp,
            "scale-in: releasing nodes {} (workers finish the active DAGs first: {wait_for_active_dags})",
            hosts.join(",")
        ),
        Notice::CapHoldsBack {
            group,
            wanted,
            allowed,
            cap,
        } => info!(
            group = %group,
            wanted,
            allowed,
            "{cap} holds back the group's worker requests"
        ),
        Notice::CapReleased { group } => {
            info!(group = %group, "the caps on all workers no longer hold the group back")
        }
        Notice::InputForGoneGroup { group, input } => warn!(
            group = group.as_str(),
            input = %input,
            "input for a group that no longer exists"
        ),
        Notice::InputRefused {
            core: CoreName::TaskScheduler,
            group,
            error,
        } => error!(
            group = group.as_deref().unwrap_or_default(),
            error = %error,
            "the task scheduler refused an input"
        ),
        Notice::InputRefused {
            core: CoreName::ContainerScheduler,
            error,
            ..
        } => error!(error = %error, "the container scheduler refused an input"),
        Notice::InputRefused {
            core: CoreName::Autoscaler,
            group,
            error,
        } => error!(
            group = group.as_deref().unwrap_or_default(),
            error = %error,
            "the autoscaler refused a tick"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::dagfile::{EdgeFile, EdgeKindFile, VertexFile};
    use crate::protocol::TaskAssignment;

    fn config(pairs: &[(&str, &str)]) -> SessionConfig {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SessionConfig::from_map(&map).expect("valid settings")
    }

    /// A word count of two 512 MB maps and a reduce, on workers of 512 MB.
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

    fn session() -> Session {
        Session::new(config(&[
            (keys::WORKER_MEMORY_MB, "512"),
            (keys::WORKER_VCORES, "1"),
        ]))
        .expect("session")
    }

    fn w(name: &str) -> WorkerId {
        WorkerId::new(name)
    }

    /// The attempts the effects assign, with their workers.
    fn assigned(effects: &[Effect]) -> Vec<(WorkerId, TaskAssignment)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send {
                    worker,
                    message: AmToWorker::Assign(a),
                } => Some((worker.clone(), (**a).clone())),
                _ => None,
            })
            .collect()
    }

    /// A container of the default group (request priority 1) is granted on
    /// `host` and its worker registers; returns the effects.
    fn worker_on(s: &mut Session, now: u64, name: &str, host: &str) -> Vec<Effect> {
        let granted = SessionInput::ContainerGranted {
            container: w(name),
            host: host.into(),
            priority: 1,
        };
        assert_eq!(s.handle(now, granted), None);
        let hello = SessionInput::WorkerRegistered {
            worker: w(name),
            address: format!("{host}:9000"),
        };
        assert_eq!(s.handle(now + 1, hello), Some(Reply::Registered));
        s.take_effects()
    }

    /// The word count's maps, one on container_1 (h1), one on container_2
    /// (h2).
    fn maps_on_two_workers(s: &mut Session) -> Vec<(WorkerId, TaskAssignment)> {
        let reply = s.handle(10, submission("alice", &word_count(), Some("etl".into())));
        assert_eq!(reply, Some(Reply::Submitted(DagId(1))));
        let e = s.take_effects();
        assert!(
            e.contains(&Effect::RequestContainer {
                priority: 1,
                resource: Resource::new(512, 1)
            }),
            "{e:?}"
        );
        let mut maps = assigned(&worker_on(s, 20, "container_1", "h1"));
        maps.extend(assigned(&worker_on(s, 30, "container_2", "h2")));
        assert_eq!(maps.len(), 2, "{maps:?}");
        maps
    }

    #[test]
    fn inputs_become_urls_of_the_workers_output_servers() {
        let mut s = session();
        let maps = maps_on_two_workers(&mut s);
        assert_eq!(maps[0].1.command, "map 0");
        assert_eq!(maps[0].1.partitions, 1);
        assert!(maps[0].1.inputs.is_empty());
        for (i, (worker, a)) in maps.iter().enumerate() {
            let end = attempt_end(worker, a.attempt, WireOutcome::Succeeded);
            assert_eq!(s.handle(40 + i as u64, end), None);
        }
        let e = s.take_effects();
        let reduce = assigned(&e);
        assert_eq!(reduce.len(), 1, "{e:?}");
        let urls: Vec<&str> = reduce[0].1.inputs.iter().map(|i| i.url.as_str()).collect();
        assert_eq!(
            urls,
            vec![
                "http://h1:9000/outputs/1/0/0",
                "http://h2:9000/outputs/1/0/1"
            ]
        );
        assert_eq!(reduce[0].1.inputs[1].vertex, "map");
        assert_eq!((reduce[0].1.memory_mb, reduce[0].1.vcores), (512, 1));
        // The other worker, holding a map output, is lost: its container is
        // released, and the reduce is told to stop (the map runs again).
        let runner = reduce[0].0.clone();
        let other = if runner == w("container_1") {
            w("container_2")
        } else {
            w("container_1")
        };
        let why = "container completed with exit status 137".to_string();
        let gone = SessionInput::WorkerGone {
            worker: other.clone(),
            why,
        };
        s.handle(50, gone);
        let e = s.take_effects();
        assert!(
            e.contains(&Effect::ReleaseContainer {
                container: other.clone()
            }),
            "{e:?}"
        );
        assert!(
            e.contains(&Effect::Send {
                worker: runner.clone(),
                message: AmToWorker::Kill {
                    attempt: reduce[0].1.attempt
                }
            }),
            "{e:?}"
        );
        assert!(
            e.contains(&Effect::RequestContainer {
                priority: 1,
                resource: Resource::new(512, 1)
            }),
            "a replacement is asked for: {e:?}"
        );
    }

    #[test]
    fn wire_outcomes_and_the_status_report() {
        let mut s = session();
        let maps = maps_on_two_workers(&mut s);
        let lost = WireOutcome::InputLost {
            reason: "connection refused".into(),
        };
        s.handle(40, attempt_end(&maps[0].0, maps[0].1.attempt, lost));
        let failed = WireOutcome::Failed {
            reason: "exit 3".into(),
        };
        s.handle(41, attempt_end(&maps[1].0, maps[1].1.attempt, failed));
        let c = s.counters();
        assert_eq!((c.inputs_lost, c.attempts_failed), (1, 1));
        let report = s.status("application_1_0001", None).expect("status");
        assert_eq!(report.application, "application_1_0001");
        let dag = &report.dags[0];
        assert_eq!(
            (dag.id, dag.state.as_str(), dag.queue.as_str()),
            (1, "RUNNING", "common")
        );
        assert!(!dag.is_final());
        assert_eq!(report.groups[0].name, "All-In-One");
        assert_eq!(report.groups[0].worker_memory_mb, 512);
        assert!(report.groups[0].autoscale_state.is_none());
        assert_eq!(report.workers.len(), 2);
        assert_eq!(report.workers[0].worker, "container_1");
        assert_eq!(report.workers[0].capacity_mb, 512);
        assert_eq!(report.counters.attempts_started, 4, "two retries");
        let kill = |dag| SessionInput::KillDag {
            dag,
            client: "alice".into(),
        };
        assert_eq!(s.handle(50, kill(DagId(1))), Some(Reply::Killed(DagId(1))));
        let report = s.status("app", Some(DagId(1))).expect("status");
        assert_eq!(report.dags[0].state, "KILLED");
        assert_eq!(report.dags[0].reason.as_deref(), Some("killed by alice"));
        assert!(report.dags[0].is_final());
        let e = s.take_effects();
        assert!(
            e.iter().any(|e| matches!(
                e,
                Effect::Send {
                    message: AmToWorker::DagDone { dag: 1 },
                    ..
                }
            )),
            "{e:?}"
        );
        let again = s.handle(60, kill(DagId(1)));
        assert_eq!(refusal(again), "DAG dag_1 has already ended");
        let err = s.status("app", Some(DagId(9))).expect_err("unknown");
        assert_eq!(err, "no DAG dag_9 in this session");
    }

    #[test]
    fn stopping_releases_everything() {
        let mut s = Session::new(config(&[])).expect("session");
        s.handle(0, submission("c", &word_count(), None));
        worker_on(&mut s, 1, "container_1", "h1");
        let granted = SessionInput::ContainerGranted {
            container: w("container_2"),
            host: "h2".into(),
            priority: 1,
        };
        s.handle(3, granted);
        s.take_effects();
        let reason = "session stopped by alice".to_string();
        s.handle(4, SessionInput::Stop { reason });
        let e = s.take_effects();
        assert!(
            e.contains(&Effect::Send {
                worker: w("container_1"),
                message: AmToWorker::Stop {
                    reason: "session stopped by alice".into()
                }
            }),
            "{e:?}"
        );
        for c in ["container_1", "container_2"] {
            assert!(
                e.contains(&Effect::ReleaseContainer { container: w(c) }),
                "{c}: {e:?}"
            );
        }
        let refused = s.handle(10, submission("c", &word_count(), None));
        assert_eq!(refusal(refused), "the session is stopping");
    }
}
