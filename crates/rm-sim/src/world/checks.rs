//! The invariants checked after every step and at the end, and the report
//! of what is left unfinished.

use super::*;

impl World {
    /// After every step: the store's owner knows every acknowledged
    /// application (the other checks run where their events happen).
    pub(super) fn check(&mut self) -> Result<(), String> {
        let Some(owner) = self.owner() else {
            return Ok(());
        };
        let admin = Caller::user(USER);
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        for app in self.acknowledged.keys() {
            if state.app_report(app, &admin).is_err() {
                return Err(format!(
                    "rm{owner}, the store's owner, does not know acknowledged application {app}"
                ));
            }
        }
        // Every delegation token handed out and not cancelled is taken by
        // the store's owner until its renew date, failovers or not.
        let wall = self.now().wall_ms as i64;
        let view = state.delegation_view();
        for (sequence, (token, until)) in &self.tokens {
            if wall < *until {
                if let Err(e) = view.check(&token.identifier, wall) {
                    return Err(format!(
                        "rm{owner}, the store's owner, refuses delegation token {sequence}: {e} (it holds {})", view.len()
                    ));
                }
            }
        }
        Ok(())
    }

    pub(super) fn ended(&self, app: &ApplicationId) -> bool {
        let Some(owner) = self.owner() else {
            return false;
        };
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        state
            .app_report(app, &Caller::user(USER))
            .is_ok_and(|r| r.app.state.is_final())
    }

    pub(super) fn ended_count(&self) -> usize {
        self.acknowledged.keys().filter(|a| self.ended(a)).count()
    }

    /// The acknowledged applications that have not ended, each with what
    /// the RM and the simulated AMs know of it.
    pub(super) fn unfinished(&self) -> Vec<String> {
        let admin = Caller::user(USER);
        let owner = self.owner();
        self.acknowledged
            .keys()
            .filter(|a| !self.ended(a))
            .map(|app| {
                let rm = owner
                    .and_then(|o| self.rms[o].active.as_ref())
                    .map(|a| {
                        let report = a.state.app_report(app, &admin);
                        let attempts = a.state.attempts_of(app, &admin);
                        let current = report.as_ref().ok().and_then(|r| r.current_attempt);
                        format!(
                            "RM: {:?}, attempt {:?} (used, asks, headroom: {:?}); attempts {:?}",
                            report.as_ref().map(|r| r.app.state),
                            current,
                            current.and_then(|c| a.state.scheduler_view(&c)),
                            attempts.map(|v| v
                                .iter()
                                .map(|r| format!("{}:{:?}", r.id, r.state))
                                .collect::<Vec<_>>())
                        )
                    })
                    .unwrap_or_else(|| "no owner".into());
                let ams: Vec<String> = self
                    .ams
                    .values()
                    .filter(|am| am.attempt.app == *app)
                    .map(|am| {
                        format!(
                            "{} {:?} left {} running {} node {} call {}",
                            am.attempt,
                            am.phase,
                            am.tasks_left,
                            am.running.len(),
                            am.node,
                            am.call.is_some()
                        )
                    })
                    .collect();
                let on_nodes: Vec<String> = self
                    .nms
                    .iter()
                    .flat_map(|n| {
                        n.containers
                            .iter()
                            .filter(|(_, c)| c.attempt.app == *app)
                            .map(move |(id, c)| format!("{id}@{}:{:?}", n.id, c.exit))
                    })
                    .collect();
                format!("\n    {app}: {rm}; AMs {ams:?}; containers {on_nodes:?}")
            })
            .chain(owner.and_then(|o| self.rms[o].active.as_ref()).map(|a| {
                let held: Vec<String> = a
                    .state
                    .held_containers()
                    .into_iter()
                    .map(|(node, used, containers)| {
                        let shown: Vec<String> = containers.iter().map(|c| c.to_string()).collect();
                        format!("{node}: {used} in {shown:?}")
                    })
                    .collect();
                format!("\n    the scheduler holds: {}", held.join("; "))
            }))
            .collect()
    }

    /// Once every application ended: the scheduler of the store's owner
    /// holds nothing (node and queue usage are the sum of live containers,
    /// and none is left).
    pub(super) fn nothing_held(&self) -> bool {
        let Some(owner) = self.owner() else {
            return false;
        };
        let state = &self.rms[owner].active.as_ref().expect("the owner").state;
        state
            .held_containers()
            .iter()
            .all(|(_, used, containers)| containers.is_empty() && used.is_zero())
    }

    pub(super) fn all_done(&mut self) -> bool {
        let clients_done = self
            .clients
            .iter()
            .all(|c| matches!(c.phase, ClientPhase::Acknowledged(_)));
        if !clients_done {
            return false;
        }
        let ended = self.ended_count();
        self.report.apps_ended = ended;
        ended == self.acknowledged.len()
    }
}
