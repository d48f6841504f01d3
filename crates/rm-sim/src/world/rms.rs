//! The simulated RMs: activations built through the RM's own door, commands
//! handled as the owner task handles them (the store write before the
//! answer), step-downs, and the launcher of AM containers.

use super::*;

impl World {
    pub(super) fn generation_of(&self, rm: usize) -> Option<u64> {
        self.rms[rm].active.as_ref().map(|a| a.generation)
    }

    /// The RM whose store writes succeed, if it is serving.
    pub(super) fn owner(&self) -> Option<usize> {
        let fence = self.store.fence()?;
        (0..self.rms.len()).find(|&i| {
            self.rms[i]
                .active
                .as_ref()
                .is_some_and(|a| a.epoch == fence)
        })
    }

    pub(super) fn activate(&mut self, rm: usize) -> Result<(), String> {
        if !self.rms[rm].up || self.rms[rm].active.is_some() {
            return Ok(());
        }
        let now = self.now();
        let recovered = self.store.open(now.wall_ms as i64);
        let epoch = recovered.epoch;
        let key_seed = self.rng.random();
        let built = self
            .conf
            .build(
                Acl::parse("*"),
                now,
                Some(FromStore {
                    recovered,
                    max_completed: 10_000,
                }),
                key_seed,
            )
            .map_err(|e| format!("rm{rm}: the state could not be built: {e}"))?;
        self.generation += 1;
        let generation = self.generation;
        self.note(format!(
            "rm{rm}: active, epoch {epoch}, recovery {:?}",
            built.recovery
        ));
        let mut active = Active {
            persistence: Persistence::new(&built.state, built.keys_stored),
            state: built.state,
            epoch,
            generation,
        };
        // What recovery changed is stored before the first command.
        let due = active.persistence.due(&mut active.state);
        if !due.ops.is_empty() {
            if let Err(e) = self.store.write(epoch, &due.ops) {
                self.note(format!("rm{rm}: the first write failed ({e}): standby"));
                self.schedule_recovery(rm);
                return Ok(());
            }
            active.persistence.written(&due);
        }
        // Every acknowledged submission survives the restart or failover.
        let admin = Caller::user(USER);
        for app in self.acknowledged.keys() {
            if active.state.app_report(app, &admin).is_err() {
                return Err(format!(
                    "rm{rm} (epoch {epoch}) recovered without acknowledged application {app}"
                ));
            }
        }
        self.rms[rm].active = Some(active);
        self.after(TICK_MS, Event::Tick { rm, generation });
        // The other RM, if it thought itself active, is deposed: it carries
        // on until a store write fails or its session ends.
        for other in 0..self.rms.len() {
            if other != rm {
                if let Some(g) = self.generation_of(other) {
                    let end = self.rng.random_range(1_000..SESSION_MS);
                    self.after(
                        end,
                        Event::SessionEnds {
                            rm: other,
                            generation: g,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// Drops the RM's state (it becomes standby, or stays down).
    pub(super) fn step_down(&mut self, rm: usize) {
        if self.rms[rm].active.take().is_some() {
            self.schedule_recovery(rm);
        }
    }

    /// After an RM stopped serving: with HA the other takes over after the
    /// election's delay; without, the RM is started again.
    pub(super) fn schedule_recovery(&mut self, rm: usize) {
        let next = if self.ha { 1 - rm } else { rm };
        if self.ha && self.rms[next].active.is_some() {
            return;
        }
        let delay = self.rng.random_range(1_000..8_000);
        self.rms[next].up = true;
        self.after(delay, Event::Activate(next));
    }

    /// Handles `command` on RM `rm` as its owner task does: the command,
    /// then its changes written to the store before the answer leaves. An
    /// RM that is not active answers standby; a failed write makes it stop
    /// serving and nothing is answered.
    pub(super) fn handle(
        &mut self,
        rm: usize,
        from: Option<Actor>,
        call: u64,
        command: Command,
    ) -> Result<(), String> {
        let now = self.now();
        let name = command.name();
        let Some(active) = self.rms[rm].active.as_mut() else {
            if let Some(to) = from {
                if self.rms[rm].up {
                    self.send_answer(to, call, Answer::Standby);
                }
            }
            return Ok(());
        };
        self.report.commands += 1;
        let shown = self.options.verbose.then(|| format!("{command:?}"));
        let (reply, effects) = active.state.handle(now, command);
        if let Some(shown) = shown {
            if !matches!(reply, Reply::Tick) {
                let mut shown = shown;
                shown.truncate(600);
                let mut answered = format!("{reply:?}");
                answered.truncate(600);
                eprintln!(
                    "{:>8} ms  rm{rm} <- {from:?}: {shown}\n{:>8}     -> {answered}",
                    self.now_ms, ""
                );
            }
        }
        let Some(active) = self.rms[rm].active.as_mut() else {
            return Ok(());
        };
        active
            .state
            .check_invariants()
            .map_err(|e| format!("rm{rm} after {name} from {from:?}: {e}"))?;
        let due = active.persistence.due(&mut active.state);
        let epoch = active.epoch;
        let generation = active.generation;
        if !due.ops.is_empty() {
            match self.store.write(epoch, &due.ops) {
                Ok(()) => {
                    if self.store.fence() != Some(epoch) {
                        return Err(format!(
                            "rm{rm} (epoch {epoch}) wrote while the store belongs to {:?}",
                            self.store.fence()
                        ));
                    }
                    if let Some(a) = self.rms[rm].active.as_mut() {
                        a.persistence.written(&due);
                    }
                }
                Err(e) => {
                    self.note(format!("rm{rm}: store write failed after {name}: {e}"));
                    self.step_down(rm);
                    return Ok(());
                }
            }
        }
        if let Some(to) = from {
            self.send_answer(to, call, Answer::Reply(Box::new(reply), generation));
        }
        for effect in effects {
            let delay = self.rng.random_range(20..500);
            self.after(
                delay,
                Event::Launch {
                    rm,
                    generation,
                    effect: Box::new(effect),
                },
            );
        }
        Ok(())
    }

    pub(super) fn request(
        &mut self,
        rm: usize,
        from: Actor,
        call: u64,
        command: Command,
    ) -> Result<(), String> {
        if !self.rms[rm].up {
            // Connection refused: the caller's timer resends.
            return Ok(());
        }
        self.handle(rm, Some(from), call, command)
    }

    /// The RM's launcher: starts the AM container on its node, then tells
    /// the RM how it went.
    pub(super) fn launch(
        &mut self,
        rm: usize,
        generation: u64,
        effect: Effect,
    ) -> Result<(), String> {
        if self.generation_of(rm) != Some(generation) {
            // The activation that asked is gone: so is its launcher.
            return Ok(());
        }
        let Effect::LaunchAm {
            attempt,
            node,
            container_token,
            ..
        } = effect;
        let token = ContainerTokenIdentifier::decode(&container_token.identifier)
            .map_err(|e| format!("an AM container token does not decode: {e}"))?;
        let container = token.container;
        if !self.granted.insert(container) {
            return Err(format!(
                "AM container {container} of {attempt} was granted before"
            ));
        }
        self.report.containers_granted += 1;
        let nm = self.nms.iter().position(|n| n.id == node);
        let outcome = match nm {
            Some(i) if !self.nms[i].away && self.nms[i].registered => {
                self.nms[i].containers.insert(
                    container,
                    NmContainer {
                        attempt,
                        resource: token.resource,
                        am: true,
                        exit: None,
                    },
                );
                self.start_am(attempt, i, container);
                Command::AmLaunched(AmLaunched { attempt })
            }
            _ => Command::AmLaunchFailed(AmLaunchFailed {
                attempt,
                reason: format!("{node} did not answer"),
            }),
        };
        self.handle(rm, None, 0, outcome)
    }
}
