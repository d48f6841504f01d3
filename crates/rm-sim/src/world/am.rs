//! The simulated ApplicationMasters: registration, allocate with response
//! ids and absolute asks, their containers started on the nodes, lost
//! containers found and their tasks run again, unregistration.

use super::*;

impl World {
    pub(super) fn start_am(
        &mut self,
        attempt: ApplicationAttemptId,
        nm: usize,
        container: ContainerId,
    ) {
        let Some(app) = self
            .clients
            .iter()
            .position(|c| matches!(&c.phase, ClientPhase::Acknowledged(id) | ClientPhase::Submitting(id) if *id == attempt.app))
        else {
            return;
        };
        let rm = self.clients[app].rm;
        let tasks = self.clients[app].tasks;
        self.ams.insert(
            attempt,
            Am {
                attempt,
                app,
                rm,
                phase: AmPhase::Registering,
                response_id: 0,
                tasks_left: tasks,
                running: BTreeMap::new(),
                to_release: Vec::new(),
                completed: BTreeMap::new(),
                answers: BTreeSet::new(),
                asks_sent: None,
                amrm_key_id: 0,
                node: nm,
                am_container: container,
                call: None,
                checked_ms: self.now_ms,
                missing: BTreeSet::new(),
                lost: BTreeSet::new(),
            },
        );
        let delay = self.rng.random_range(100..2_000);
        self.wake_in(Actor::Am(attempt), delay);
    }

    /// The AM process is gone (crashed, or its container killed).
    pub(super) fn am_dies(&mut self, attempt: ApplicationAttemptId) {
        if let Some(am) = self.ams.get_mut(&attempt) {
            am.phase = AmPhase::Done;
            am.call = None;
        }
    }

    /// Every 10 s an AM asks the nodes of its running containers after them
    /// (Hadoop's NMClient `getContainerStatus`; MapReduce's task timeout and
    /// Spark's executor loss do the same job): a container its node did not
    /// have at two checks in a row, and that no RM reported meanwhile, is
    /// lost — after an RM restart no RM may ever report it — and its task
    /// runs again.
    pub(super) fn am_checks_containers(&mut self, a: ApplicationAttemptId) {
        let Some(am) = self.ams.get(&a) else { return };
        if self.now_ms < am.checked_ms + 10_000 {
            return;
        }
        let absent: BTreeSet<ContainerId> = am
            .running
            .keys()
            .filter(|c| !self.nms.iter().any(|n| n.containers.contains_key(c)))
            .copied()
            .collect();
        let Some(am) = self.ams.get_mut(&a) else {
            return;
        };
        am.checked_ms = self.now_ms;
        let lost: Vec<ContainerId> = absent.intersection(&am.missing).copied().collect();
        am.missing = absent;
        for c in &lost {
            am.running.remove(c);
            am.missing.remove(c);
            am.lost.insert(*c);
        }
        for c in lost {
            self.note(format!(
                "{a}: {c} is gone from its node: its task runs again"
            ));
        }
    }

    pub(super) fn am_act(&mut self, a: ApplicationAttemptId) {
        self.am_checks_containers(a);
        let Some(am) = self.ams.get(&a) else { return };
        let rm = am.rm;
        let command = match am.phase {
            AmPhase::Done => return,
            AmPhase::Registering => Command::RegisterApplicationMaster(RegisterApplicationMaster {
                attempt: a,
                host: "amhost".into(),
                rpc_port: 7_000,
                tracking_url: String::new(),
            }),
            AmPhase::Running if am.tasks_left == 0 && am.running.is_empty() => {
                if let Some(am) = self.ams.get_mut(&a) {
                    am.phase = AmPhase::Finishing;
                }
                Command::FinishApplicationMaster(FinishApplicationMaster {
                    attempt: a,
                    status: FinalStatus::Succeeded,
                    diagnostics: String::new(),
                    tracking_url: String::new(),
                })
            }
            AmPhase::Finishing => Command::FinishApplicationMaster(FinishApplicationMaster {
                attempt: a,
                status: FinalStatus::Succeeded,
                diagnostics: String::new(),
                tracking_url: String::new(),
            }),
            AmPhase::Running => {
                let mb = self.clients[am.app].task_mb;
                let wanted = am.tasks_left.saturating_sub(am.running.len()) as i32;
                // The ask table is absolute: send it when it changed, or
                // whole after registering again.
                let asks = if am.asks_sent != Some(wanted) {
                    vec![ResourceAsk::new(1, ANY, Resource::new(mb, 1), wanted)]
                } else {
                    Vec::new()
                };
                let releases = am.to_release.clone();
                Command::Allocate(Allocate {
                    attempt: a,
                    amrm_key_id: am.amrm_key_id,
                    request: AllocateRequest {
                        response_id: am.response_id,
                        progress: Some(0.5),
                        asks,
                        releases,
                        ..AllocateRequest::default()
                    },
                })
            }
        };
        let sent_asks = match &command {
            Command::Allocate(c) => c.request.asks.first().map(|ask| ask.num_containers),
            _ => None,
        };
        let call = self.send_request(rm, Actor::Am(a), command);
        if let Some(am) = self.ams.get_mut(&a) {
            am.call = Some(call);
            if sent_asks.is_some() {
                am.asks_sent = sent_asks;
            }
        }
        let next = self.rng.random_range(500..1_500);
        self.wake_in(Actor::Am(a), next);
    }

    pub(super) fn am_reply(
        &mut self,
        a: ApplicationAttemptId,
        reply: Reply,
        generation: u64,
    ) -> Result<(), String> {
        match reply {
            Reply::RegisterApplicationMaster(r) => match r {
                // A lost answer: the second registration finds the first.
                Ok(_) | Err(Refusal::AmAlreadyRegistered(_)) => {
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Running;
                        am.asks_sent = None;
                        am.response_id = 0;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: registration refused ({e:?}): the AM exits"));
                    self.am_exits(a, 1);
                }
            },
            Reply::Allocate(r) => match r {
                Ok(reply) => self.allocated(a, reply, generation)?,
                Err(Refusal::AmNotRegistered(_)) => {
                    // After an RM restart: register again, resend everything.
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Registering;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: allocate refused ({e:?}): the AM exits"));
                    self.am_exits(a, 1);
                }
            },
            Reply::FinishApplicationMaster(r) => match r {
                Ok(true) => {
                    self.note(format!("{a}: unregistered"));
                    self.am_exits(a, 0);
                }
                Ok(false) => {}
                Err(Refusal::AmNotRegistered(_)) => {
                    if let Some(am) = self.ams.get_mut(&a) {
                        am.phase = AmPhase::Registering;
                    }
                }
                Err(e) => {
                    self.note(format!("{a}: finish refused ({e:?}): the AM exits"));
                    self.am_exits(a, 0);
                }
            },
            other => self.note(format!("{a}: unexpected reply {other:?}")),
        }
        Ok(())
    }

    pub(super) fn allocated(
        &mut self,
        a: ApplicationAttemptId,
        reply: AllocateReply,
        generation: u64,
    ) -> Result<(), String> {
        let Some(am) = self.ams.get_mut(&a) else {
            return Ok(());
        };
        if am.phase == AmPhase::Done {
            return Ok(());
        }
        if !am.answers.insert((generation, reply.response_id)) {
            self.note(format!(
                "{a}: answer {} of the same RM activation again: taken already",
                reply.response_id
            ));
            return Ok(());
        }
        am.response_id = reply.response_id;
        am.to_release.clear();
        if let Some(token) = &reply.amrm_token {
            if let Ok(id) = AmRmTokenIdentifier::decode(&token.identifier) {
                am.amrm_key_id = id.key_id;
            }
        }
        // What the RM's table holds now: the count sent, less what it granted.
        am.asks_sent = am
            .asks_sent
            .map(|n| n.saturating_sub(reply.allocated.len() as i32));
        if reply.shutdown {
            self.note(format!("{a}: told to shut down"));
            self.am_exits(a, 0);
            return Ok(());
        }
        let mut heard = Vec::new();
        for done in &reply.completed {
            // Once per RM activation: after a restart or failover a node
            // reports what it had not had acknowledged again, and the new
            // RM passes it on (as Hadoop's does; AMs take completions as
            // at-least-once across RMs). Within one activation only a
            // container first reported lost (-100, its node gone) may be
            // reported again: a node that comes back with it running has it
            // taken back, as Hadoop's recoverContainersOnNode does.
            let first = am
                .completed
                .insert((done.container, generation), done.exit_status);
            if first.is_some_and(|exit| exit != spindle_common::exit_status::ABORTED) {
                let listed: Vec<String> = reply
                    .completed
                    .iter()
                    .map(|c| format!("{}({})", c.container, c.exit_status))
                    .collect();
                return Err(format!(
                    "{a} heard twice from one RM activation that container {} completed \
                     (answer {}: {})",
                    done.container,
                    reply.response_id,
                    listed.join(", ")
                ));
            }
            heard.push(format!(
                "{a}: hears {} completed ({})",
                done.container, done.exit_status
            ));
            am.missing.remove(&done.container);
            let counted =
                am.running.remove(&done.container).is_some() || am.lost.remove(&done.container);
            if counted && done.exit_status == 0 {
                am.tasks_left = am.tasks_left.saturating_sub(1);
            }
        }
        for line in heard {
            self.note(line);
        }
        let mut start = Vec::new();
        for c in &reply.allocated {
            start.push((c.id, c.node.clone(), c.resource));
        }
        for (id, node, resource) in start {
            if !self.granted.insert(id) {
                return Err(format!("container {id} was granted twice (now to {a})"));
            }
            self.report.containers_granted += 1;
            let nm = self.nms.iter().position(|n| n.id == node);
            let am = self.ams.get_mut(&a).expect("the AM");
            let over = am.running.len() >= am.tasks_left;
            // A NodeManager takes containers only once registered (Hadoop's
            // NMNotYetReadyException before that).
            match nm {
                Some(i) if !self.nms[i].away && self.nms[i].registered && !over => {
                    am.running.insert(id, 0);
                    let line = format!("{a}: starts {id} on {}", self.nms[i].id);
                    self.note(line);
                    self.nms[i].containers.insert(
                        id,
                        NmContainer {
                            attempt: a,
                            resource,
                            am: false,
                            exit: None,
                        },
                    );
                    let run = self.rng.random_range(500..15_000);
                    let exit = if self.rng.random_bool(0.05) { 1 } else { 0 };
                    self.after(
                        run,
                        Event::ContainerExit {
                            nm: i,
                            container: id,
                            exit,
                        },
                    );
                }
                _ => {
                    am.to_release.push(id);
                    self.note(format!("{a}: gives back {id}"));
                }
            }
        }
        Ok(())
    }

    /// The AM process ends with `exit`: its container exits.
    pub(super) fn am_exits(&mut self, a: ApplicationAttemptId, exit: i32) {
        let Some(am) = self.ams.get_mut(&a) else {
            return;
        };
        am.phase = AmPhase::Done;
        am.call = None;
        let (node, container) = (am.node, am.am_container);
        let delay = self.rng.random_range(50..1_000);
        self.after(
            delay,
            Event::ContainerExit {
                nm: node,
                container,
                exit,
            },
        );
    }
}
