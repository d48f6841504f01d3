//! The simulated NodeManagers: registration, heartbeats with their
//! containers' statuses, what the RM tells them, crashes.

use super::*;

impl World {
    pub(super) fn statuses(&self, i: usize) -> Vec<ContainerStatus> {
        self.nms[i]
            .containers
            .iter()
            .map(|(id, c)| ContainerStatus {
                container: *id,
                running: c.exit.is_none(),
                complete: c.exit.is_some(),
                exit_status: c.exit.unwrap_or(-1000),
                diagnostics: String::new(),
                resource: c.resource,
            })
            .collect()
    }

    pub(super) fn nm_act(&mut self, i: usize) {
        let nm = &self.nms[i];
        let command = if nm.registered {
            let used = nm
                .containers
                .values()
                .filter(|c| c.exit.is_none())
                .fold(Resource::ZERO, |acc, c| acc + c.resource);
            Command::NodeHeartbeat(NodeHeartbeat {
                heartbeat: Heartbeat {
                    id: nm.id.clone(),
                    response_id: nm.response_id,
                    health: healthy(),
                    num_containers: nm.containers.len() as i32,
                    used,
                },
                containers: self.statuses(i),
                log_reports: Vec::new(),
                known_container_token_key: None,
                known_nm_token_key: None,
            })
        } else {
            let running_apps: BTreeSet<ApplicationId> =
                nm.containers.values().map(|c| c.attempt.app).collect();
            Command::RegisterNode(RegisterNode {
                registration: Registration {
                    id: nm.id.clone(),
                    http_port: 8_042,
                    capability: Resource::new(NODE_MB, NODE_VCORES),
                    nm_version: "sim".into(),
                    health: healthy(),
                    rack: None,
                },
                containers: self.statuses(i),
                running_apps: running_apps.into_iter().collect(),
                log_reports: Vec::new(),
            })
        };
        let rm = self.nms[i].rm;
        let call = self.send_request(rm, Actor::Nm(i), command);
        self.nms[i].call = Some(call);
        let jitter = self.rng.random_range(0..100);
        self.wake_in(Actor::Nm(i), HEARTBEAT_MS + jitter);
    }

    pub(super) fn nm_reply(&mut self, i: usize, reply: Reply) {
        match reply {
            Reply::RegisterNode(NodeRegistration::Accepted(_)) => {
                let line = format!(
                    "{}: registered with {} containers",
                    self.nms[i].id,
                    self.nms[i].containers.len()
                );
                self.note(line);
                self.nms[i].registered = true;
                self.nms[i].response_id = 0;
            }
            Reply::RegisterNode(NodeRegistration::Rejected(why)) => {
                self.note(format!("{}: registration rejected: {why}", self.nms[i].id));
            }
            Reply::NodeHeartbeat(answer) => match answer.reply.action {
                NodeAction::Normal => {
                    self.nms[i].response_id = answer.reply.response_id;
                    let work = answer.work;
                    for c in &work.cleanup_containers {
                        self.kill_container(i, *c);
                    }
                    let apps: BTreeSet<ApplicationId> = work.cleanup_apps.iter().copied().collect();
                    let doomed: Vec<ContainerId> = self.nms[i]
                        .containers
                        .iter()
                        .filter(|(_, c)| apps.contains(&c.attempt.app) && c.exit.is_none())
                        .map(|(id, _)| *id)
                        .collect();
                    for c in doomed {
                        self.kill_container(i, c);
                    }
                    for c in &work.acked {
                        if self.nms[i]
                            .containers
                            .get(c)
                            .is_some_and(|x| x.exit.is_some())
                        {
                            self.nms[i].containers.remove(c);
                        }
                    }
                }
                NodeAction::Resync => {
                    self.nms[i].registered = false;
                }
                NodeAction::Shutdown => {
                    self.note(format!(
                        "{}: told to shut down; restarts empty",
                        self.nms[i].id
                    ));
                    self.crash_nm(i);
                }
            },
            other => self.note(format!("nm{i}: unexpected reply {other:?}")),
        }
    }

    /// Kills a container of node `i` (a cleanup, or the node going down).
    pub(super) fn kill_container(&mut self, i: usize, c: ContainerId) {
        let Some(container) = self.nms[i].containers.get_mut(&c) else {
            return;
        };
        if container.exit.is_none() {
            container.exit = Some(-106);
            if container.am {
                let attempt = container.attempt;
                self.am_dies(attempt);
            }
        }
    }

    /// A container's process ends by itself.
    pub(super) fn container_exit(&mut self, i: usize, c: ContainerId, exit: i32) {
        if let Some(container) = self.nms[i].containers.get_mut(&c) {
            if container.exit.is_none() {
                container.exit = Some(exit);
            }
        }
    }

    /// Node `i` crashes: every container dies; it comes back empty.
    pub(super) fn crash_nm(&mut self, i: usize) {
        let ams: Vec<ApplicationAttemptId> = self.nms[i]
            .containers
            .values()
            .filter(|c| c.am && c.exit.is_none())
            .map(|c| c.attempt)
            .collect();
        for a in ams {
            self.am_dies(a);
        }
        let nm = &mut self.nms[i];
        nm.containers.clear();
        nm.registered = false;
        nm.away = true;
        nm.call = None;
        let back = self.rng.random_range(1_000..20_000);
        self.after(back, Event::NmBack(i));
    }
}
