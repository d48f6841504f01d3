//! Feeding the core: every input and continuous pass goes through here,
//! numbered as a step, with the invariant check after it when the run
//! asks for one; the core's decisions (allocations and completed
//! containers) are taken into the simulated cluster and applications.

use spindle_common::ContainerId;
use spindle_scheduler::{CompletionCause, Decisions, Input, Locality};

use super::{AppState, Engine, Ev, NodeLife, Role, SimContainer, AM_SLOT};
use crate::error::SimError;

impl Engine<'_> {
    pub(super) fn feed(&mut self, input: Input) -> Result<(), SimError> {
        self.steps += 1;
        let desc = self.s.check_invariants.then(|| describe(&input));
        let kind = input.kind();
        let d = match self.sched.handle(self.now, input) {
            Ok(d) => d,
            Err(source) => {
                return Err(SimError::Scheduler {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: desc.unwrap_or_else(|| kind.to_string()),
                    source: Box::new(source),
                })
            }
        };
        self.apply(d)?;
        if let Some(desc) = desc {
            self.verify(&desc)?;
        }
        Ok(())
    }

    pub(super) fn pass(&mut self) -> Result<(), SimError> {
        self.steps += 1;
        let d = self
            .sched
            .schedule(self.now, self.max_pass)
            .map_err(|source| SimError::Scheduler {
                seed: self.s.seed,
                step: self.steps,
                time_ms: self.now,
                input: "a continuous scheduling pass".into(),
                source: Box::new(source),
            })?;
        self.apply(d)?;
        if self.s.check_invariants {
            self.verify("a continuous scheduling pass")?;
        }
        Ok(())
    }

    fn verify(&self, after: &str) -> Result<(), SimError> {
        let fail = |violation: String| SimError::Invariant {
            seed: self.s.seed,
            step: self.steps,
            time_ms: self.now,
            input: after.to_string(),
            violation,
        };
        self.sched
            .check_invariants()
            .map_err(|v| fail(v.to_string()))?;
        let c = self.sched.cluster();
        if c.containers != self.containers.len() || c.used != self.used {
            return Err(fail(format!(
                "the core holds {} containers using {}, the simulator {} using {}",
                c.containers,
                c.used,
                self.containers.len(),
                self.used
            )));
        }
        if c.nodes != self.live_nodes || c.capability != self.capacity {
            return Err(fail(format!(
                "the core has {} nodes with {}, the simulator {} with {}",
                c.nodes, c.capability, self.live_nodes, self.capacity
            )));
        }
        Ok(())
    }

    /// Takes in what the core decided.
    fn apply(&mut self, d: Decisions) -> Result<(), SimError> {
        let mut am_failures: Vec<(usize, bool)> = Vec::new();
        for al in d.allocations {
            let a = app_index(&al.container);
            let Some(&n) = self.node_index.get(&al.node) else {
                return Err(SimError::Invariant {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: "an allocation".into(),
                    violation: format!(
                        "container {} was placed on unknown node {}",
                        al.container, al.node
                    ),
                });
            };
            self.metrics.allocations += 1;
            match al.locality {
                Locality::NodeLocal => self.metrics.locality.node_local += 1,
                Locality::RackLocal => self.metrics.locality.rack_local += 1,
                Locality::OffSwitch => self.metrics.locality.off_switch += 1,
            }
            let node = &mut self.nodes[n];
            if node.containers.is_empty() && node.life == NodeLife::Live {
                self.empty_nodes -= 1;
            }
            node.containers.insert(al.container);
            self.used += al.resource;
            let Some(app) = self.apps.get(a) else {
                return Err(SimError::Invariant {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: "an allocation".into(),
                    violation: format!(
                        "container {} belongs to no simulated application",
                        al.container
                    ),
                });
            };
            let attempt = al.container.attempt.attempt_id;
            let is_am = app.state == AppState::WaitingAm
                && attempt == app.attempt
                && app.am_container.is_none();
            let role = if is_am {
                let app = &mut self.apps[a];
                app.am_container = Some(al.container);
                if let Some(since) = app.waiting_since.remove(&AM_SLOT) {
                    self.waiting.remove(&(since, a, AM_SLOT));
                }
                let at = self.now + self.w.cluster.launch_delay_ms;
                self.push(at, Ev::AmLaunched { app: a, attempt });
                Role::Am
            } else {
                self.apps[a].inbox_alloc.push(al.clone());
                Role::Unassigned
            };
            self.containers.insert(
                al.container,
                SimContainer {
                    app: a,
                    attempt,
                    node: n,
                    resource: al.resource,
                    role,
                    exited: false,
                },
            );
        }
        for c in d.completed {
            let Some(sc) = self.containers.remove(&c.container) else {
                continue;
            };
            self.used -= sc.resource;
            let node = &mut self.nodes[sc.node];
            node.containers.remove(&c.container);
            if node.containers.is_empty() && node.life == NodeLife::Live {
                node.idle_since = self.now;
                self.empty_nodes += 1;
            }
            let app = &mut self.apps[sc.app];
            let current = sc.attempt == app.attempt
                && matches!(app.state, AppState::WaitingAm | AppState::Running);
            match sc.role {
                Role::Am => {
                    if current {
                        am_failures.push((sc.app, c.cause != CompletionCause::NodeLost));
                    }
                }
                _ => {
                    if current {
                        app.inbox_done.push(c);
                    }
                }
            }
        }
        if self.containers.len() > self.metrics.peak_containers {
            self.record_peak();
        }
        for (a, counts) in am_failures {
            self.fail_attempt(a, counts)?;
        }
        Ok(())
    }
}

fn app_index(container: &ContainerId) -> usize {
    usize::try_from(container.attempt.app.id)
        .unwrap_or(0)
        .wrapping_sub(1)
}

/// A short description of an input, for invariant failures.
fn describe(input: &Input) -> String {
    match input {
        Input::NodeAdded { node, .. } => format!("NodeAdded({node})"),
        Input::NodeUpdated { node, .. } => format!("NodeUpdated({node})"),
        Input::NodeRemoved { node } => format!("NodeRemoved({node})"),
        Input::AppAdded { attempt, queue, .. } => format!("AppAdded({attempt} in {queue})"),
        Input::AppRemoved { attempt } => format!("AppRemoved({attempt})"),
        Input::AsksUpdated {
            attempt,
            asks,
            releases,
            ..
        } => format!(
            "AsksUpdated({attempt}: {} row(s), {} release(s))",
            asks.len(),
            releases.len()
        ),
        Input::ContainerCompleted { container, .. } => format!("ContainerCompleted({container})"),
        other => other.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use spindle_common::Resource;

    use crate::engine::tests::{engine, step_until, workload, TINY};
    use crate::error::SimError;

    fn violation(r: Result<(), SimError>) -> String {
        match r {
            Err(e @ SimError::Invariant { .. }) => e.to_string(),
            Err(e) => panic!("not an invariant violation: {e}"),
            Ok(()) => panic!("the corrupted state passed the check"),
        }
    }

    #[test]
    fn verify_catches_a_simulator_that_disagrees_with_the_core() {
        let w = workload(TINY);
        let mut e = engine(&w, true);
        step_until(&mut e, |e| e.containers.len() == 3);
        assert!(e.verify("setup").is_ok());

        // The simulator believes a container uses more than the core says.
        let one = Resource::new(1024, 1);
        e.used += one;
        let msg = violation(e.verify("a test step"));
        assert!(
            msg.contains(
                "the core holds 3 containers using <memory:3072, vCores:3>, \
                 the simulator 3 using <memory:4096, vCores:4>"
            ),
            "{msg}"
        );
        assert!(msg.starts_with("seed 5, step "), "{msg}");
        assert!(msg.contains("after a test step"), "{msg}");
        assert!(msg.contains("--seed 5"), "{msg}");
        e.used -= one;

        // The simulator forgets a container the core holds.
        let first = e.containers.keys().next().copied();
        let Some(cid) = first else {
            panic!("no container");
        };
        let kept = e.containers.remove(&cid);
        let msg = violation(e.verify("a test step"));
        assert!(msg.contains("the core holds 3 containers"), "{msg}");
        assert!(msg.contains("the simulator 2 using"), "{msg}");
        if let Some(c) = kept {
            e.containers.insert(cid, c);
        }

        // The simulator counts a node the core does not have.
        e.live_nodes += 1;
        let msg = violation(e.verify("a test step"));
        assert!(
            msg.contains("the core has 2 nodes with <memory:8192, vCores:8>, the simulator 3 with"),
            "{msg}"
        );
        e.live_nodes -= 1;
        assert!(e.verify("repaired").is_ok());
    }

    #[test]
    fn a_corrupted_tally_fails_the_next_checked_step_of_a_run() {
        let w = workload(TINY);
        // With checks on, the step after the corruption fails the run.
        let mut e = engine(&w, true);
        step_until(&mut e, |e| !e.containers.is_empty());
        e.capacity += Resource::new(1024, 1);
        let err = match e.run_to(None) {
            Ok(r) => panic!("the run passed: {}", r.summary_text()),
            Err(err) => err,
        };
        assert!(matches!(err, SimError::Invariant { .. }), "{err}");
        assert_eq!(err.seed(), Some(5));
        assert!(
            err.to_string().contains("the core has 2 nodes with"),
            "{err}"
        );

        // Without checks nothing notices: the check is what catches it.
        let mut e = engine(&w, false);
        step_until(&mut e, |e| !e.containers.is_empty());
        e.capacity += Resource::new(1024, 1);
        assert!(e.run_to(None).is_ok());
    }
}
