//! The simulated clients: new application, submission (retried as the same
//! one), kill; and an RM delegation token asked for, renewed and cancelled.

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
            ClientPhase::Acknowledged(_) => match &c.token {
                TokenPlan::Wanted { .. } => Command::GetDelegationToken(GetDelegationToken {
                    owner: TOKEN_OWNER.into(),
                    renewer: USER.into(),
                    real_user: None,
                }),
                TokenPlan::Held {
                    token,
                    renewed: false,
                    ..
                } => Command::RenewDelegationToken(RenewDelegationToken {
                    token: token.clone(),
                    renewer: USER.into(),
                }),
                TokenPlan::Held {
                    token,
                    cancel: true,
                    ..
                } => {
                    // Gone from the moment the RM may handle the cancel.
                    if let Ok(ident) = RmDelegationTokenIdentifier::decode(&token.identifier) {
                        self.tokens.remove(&ident.sequence_number);
                    }
                    Command::CancelDelegationToken(CancelDelegationToken {
                        token: token.clone(),
                        canceller: TOKEN_OWNER.into(),
                        short: USER.into(),
                    })
                }
                _ => return,
            },
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
                            } else if self.clients[i].token != TokenPlan::None {
                                self.wake_in(Actor::Client(i), 2_000);
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
            Reply::GetDelegationToken(issued) => {
                if let TokenPlan::Wanted { cancel } = self.clients[i].token {
                    // The client's own reckoning of the renew date (the
                    // scenario's interval), not the RM's answer, is what
                    // the check holds the RM to.
                    let token = issued.token;
                    let ident = RmDelegationTokenIdentifier::decode(&token.identifier)
                        .expect("the RM's own token identifier");
                    let until = self.now().wall_ms as i64 + DAY_MS;
                    self.note(format!(
                        "client {i}: delegation token {}",
                        ident.sequence_number
                    ));
                    self.tokens
                        .insert(ident.sequence_number, (token.clone(), until));
                    self.report.delegation_tokens += 1;
                    self.clients[i].token = TokenPlan::Held {
                        token,
                        renewed: false,
                        cancel,
                    };
                    self.wake_in(Actor::Client(i), 1_000);
                }
            }
            Reply::RenewDelegationToken(r) => {
                if let TokenPlan::Held { token, renewed, .. } = &mut self.clients[i].token {
                    *renewed = true;
                    let sequence = RmDelegationTokenIdentifier::decode(&token.identifier)
                        .map_or(0, |t| t.sequence_number);
                    match r {
                        Ok(until) => {
                            if let Some(t) = self.tokens.get_mut(&sequence) {
                                t.1 = until;
                            }
                        }
                        Err(e) => self.note(format!("client {i}: renewal refused: {e:?}")),
                    }
                    self.wake_in(Actor::Client(i), 1_000);
                }
            }
            Reply::CancelDelegationToken(r) => {
                if let TokenPlan::Held { token, .. } = &self.clients[i].token {
                    // Cancelled now, or by an earlier try whose answer was
                    // lost ("Token not found"): gone either way.
                    let sequence = RmDelegationTokenIdentifier::decode(&token.identifier)
                        .map_or(0, |t| t.sequence_number);
                    self.note(format!("client {i}: token {sequence} cancelled: {r:?}"));
                    self.clients[i].token = TokenPlan::Done;
                }
            }
            other => self.note(format!("client {i}: unexpected reply {other:?}")),
        }
    }
}
