//! The simulated network: travel times and faults, connections that
//! deliver in order, calls that wait for one answer and are sent again, and
//! the failover proxy.

use super::*;

impl World {
    /// A message's travel time, and whether it is lost or duplicated.
    pub(super) fn travel(&mut self) -> (Option<u64>, bool) {
        let mut delay = self.rng.random_range(1..20);
        if !self.faults_on {
            return (Some(delay), false);
        }
        if self.rng.random_bool(0.03) {
            self.report.messages_lost += 1;
            return (None, false);
        }
        if self.rng.random_bool(0.08) {
            self.report.messages_delayed += 1;
            delay += self.rng.random_range(100..4_000);
        }
        let dup = self.rng.random_bool(0.02);
        if dup {
            self.report.messages_duplicated += 1;
        }
        (Some(delay), dup)
    }

    pub(super) fn send_request(&mut self, rm: usize, from: Actor, command: Command) -> Call {
        self.next_call += 1;
        let call = Call {
            id: self.next_call,
            command,
            sent_ms: self.now_ms,
        };
        self.resend(rm, from, &call);
        call
    }

    /// When a message sent now with `delay` arrives on connection `key`:
    /// never before the last one sent on it.
    pub(super) fn in_order(&mut self, key: (Actor, usize, bool), delay: u64) -> u64 {
        let at = (self.now_ms + delay).max(self.channels.get(&key).map_or(0, |t| t + 1));
        self.channels.insert(key, at);
        at
    }

    pub(super) fn resend(&mut self, rm: usize, from: Actor, call: &Call) {
        let (delay, dup) = self.travel();
        let Some(delay) = delay else { return };
        let copies = if dup { 2 } else { 1 };
        for _ in 0..copies {
            let at = self.in_order((from, rm, true), delay);
            self.at(
                at,
                Event::Request {
                    rm,
                    from,
                    call: call.id,
                    command: Box::new(call.command.clone()),
                },
            );
        }
    }

    pub(super) fn send_answer(&mut self, to: Actor, call: u64, answer: Answer) {
        // A duplicated answer would change nothing: a caller takes the
        // answer to its outstanding call once (duplicated requests are what
        // the RM must survive).
        let (delay, _) = self.travel();
        let Some(delay) = delay else { return };
        let rm = 0;
        let at = self.in_order((to, rm, false), delay);
        self.at(at, Event::Answer { to, call, answer });
    }

    pub(super) fn answer(&mut self, to: Actor, call: u64, answer: Answer) -> Result<(), String> {
        let pending = match to {
            Actor::Nm(i) => self
                .nms
                .get_mut(i)
                .and_then(|n| n.call.take_if(|c| c.id == call)),
            Actor::Am(a) => self
                .ams
                .get_mut(&a)
                .and_then(|am| am.call.take_if(|c| c.id == call)),
            Actor::Client(i) => self
                .clients
                .get_mut(i)
                .and_then(|c| c.call.take_if(|c| c.id == call)),
        };
        let Some(pending) = pending else {
            // Late, duplicated, or for an actor that is gone.
            return Ok(());
        };
        match answer {
            Answer::Standby => {
                // The failover proxy sends the same call to the other RM
                // (HA), after a pause: the call stays outstanding, unchanged,
                // so an RM that answered it before replays its answer.
                let other = |rm: usize| if self.rms.len() == 2 { 1 - rm } else { rm };
                let again = Some(Call {
                    sent_ms: self.now_ms.saturating_sub(RPC_TIMEOUT_MS),
                    ..pending
                });
                match to {
                    Actor::Nm(i) => {
                        self.nms[i].rm = other(self.nms[i].rm);
                        self.nms[i].call = again;
                    }
                    Actor::Am(a) => {
                        if let Some(am) = self.ams.get_mut(&a) {
                            am.rm = other(am.rm);
                            am.call = again;
                        }
                    }
                    Actor::Client(i) => {
                        self.clients[i].rm = other(self.clients[i].rm);
                        self.clients[i].call = again;
                    }
                }
                self.wake_in(to, RETRY_MS);
                Ok(())
            }
            Answer::Reply(reply, generation) => match to {
                Actor::Nm(i) => {
                    self.nm_reply(i, *reply);
                    Ok(())
                }
                Actor::Am(a) => self.am_reply(a, *reply, generation),
                Actor::Client(i) => {
                    self.client_reply(i, *reply);
                    Ok(())
                }
            },
        }
    }

    /// An actor's timer: resend a call that timed out, or act.
    pub(super) fn wake(&mut self, actor: Actor) -> Result<(), String> {
        let (rm, call) = match actor {
            Actor::Nm(i) => {
                if self.nms[i].away {
                    return Ok(());
                }
                (self.nms[i].rm, self.nms[i].call.clone())
            }
            Actor::Am(a) => match self.ams.get(&a) {
                Some(am) if am.phase != AmPhase::Done => (am.rm, am.call.clone()),
                _ => return Ok(()),
            },
            Actor::Client(i) => (self.clients[i].rm, self.clients[i].call.clone()),
        };
        if let Some(call) = call {
            if self.now_ms >= call.sent_ms + RPC_TIMEOUT_MS {
                // No answer: send the same call again, to the other RM too
                // now and then (the caller's failover proxy).
                let rm = if self.rms.len() == 2 && self.rng.random_bool(0.3) {
                    1 - rm
                } else {
                    rm
                };
                let call = Call {
                    sent_ms: self.now_ms,
                    ..call
                };
                match actor {
                    Actor::Nm(i) => {
                        self.nms[i].rm = rm;
                        self.nms[i].call = Some(call.clone());
                    }
                    Actor::Am(a) => {
                        if let Some(am) = self.ams.get_mut(&a) {
                            am.rm = rm;
                            am.call = Some(call.clone());
                        }
                    }
                    Actor::Client(i) => {
                        self.clients[i].rm = rm;
                        self.clients[i].call = Some(call.clone());
                    }
                }
                self.resend(rm, actor, &call);
            }
            self.wake_in(actor, RPC_TIMEOUT_MS / 3);
            return Ok(());
        }
        match actor {
            Actor::Nm(i) => self.nm_act(i),
            Actor::Am(a) => self.am_act(a),
            Actor::Client(i) => self.client_act(i),
        }
        Ok(())
    }
}
