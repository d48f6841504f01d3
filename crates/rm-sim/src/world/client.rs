//! The simulated clients: new application, submission (retried as the same
//! one), kill.

use super::*;

impl World {
    pub(super) fn client_act(&mut self, i: usize) {
        let c = &self.clients[i];
        let command = match &c.phase {
            ClientPhase::Waiting | ClientPhase::GettingId => {
                Command::NewApplication(NewApplication)
            }
            ClientPhase::Submitting(id) => Command::SubmitApplication(SubmitApplication {
                submission: Submission {
                    id: *id,
                    name: format!("sim-{i}"),
                    queue: c.queue.into(),
                    app_type: "SIM".into(),
                    tags: BTreeSet::new(),
                    priority: None,
                    am_resource: Resource::new(1024, 1),
                    max_attempts: c.max_attempts,
                    unmanaged_am: false,
                    keep_containers: c.keep_containers,
                },
                launch: AmLaunchContext::default(),
                user: USER.into(),
                groups: Vec::new(),
            }),
            ClientPhase::Acknowledged(id) if c.kill && !c.killed => {
                Command::KillApplication(KillApplication {
                    app: *id,
                    user: USER.into(),
                    groups: Vec::new(),
                    reason: None,
                    from: None,
                })
            }
            ClientPhase::Acknowledged(_) => return,
        };
        if matches!(c.phase, ClientPhase::Waiting) {
            self.clients[i].phase = ClientPhase::GettingId;
        }
        let rm = self.clients[i].rm;
        let call = self.send_request(rm, Actor::Client(i), command);
        self.clients[i].call = Some(call);
        self.wake_in(Actor::Client(i), RPC_TIMEOUT_MS / 3);
    }

    pub(super) fn client_reply(&mut self, i: usize, reply: Reply) {
        match reply {
            Reply::NewApplication(id) => {
                if self.clients[i].phase == ClientPhase::GettingId {
                    self.clients[i].phase = ClientPhase::Submitting(id);
                    self.wake_in(Actor::Client(i), 10);
                }
            }
            Reply::SubmitApplication(r) => {
                if let ClientPhase::Submitting(id) = self.clients[i].phase {
                    match r {
                        Ok(()) => {
                            self.note(format!("client {i}: {id} acknowledged"));
                            self.clients[i].phase = ClientPhase::Acknowledged(id);
                            self.acknowledged.insert(id, i);
                            self.report.apps_acknowledged += 1;
                            if self.clients[i].kill {
                                let at = self.rng.random_range(1_000..30_000);
                                self.wake_in(Actor::Client(i), at);
                            }
                        }
                        Err(e) => {
                            // An id of an RM that restarted since: ask again.
                            self.note(format!("client {i}: submission refused ({e:?}): a new id"));
                            self.clients[i].phase = ClientPhase::Waiting;
                            self.wake_in(Actor::Client(i), 100);
                        }
                    }
                }
            }
            Reply::KillApplication(r) => {
                if r.is_ok() {
                    self.clients[i].killed = true;
                }
            }
            other => self.note(format!("client {i}: unexpected reply {other:?}")),
        }
    }
}
