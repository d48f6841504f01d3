//! `queue` and `unqueue`: edits of the queue tree being declared (the
//! initial one, or one pending a `reload`).

use spindle_common::Resource;

use crate::queue_config::{
    AppOrdering, QueueConfig, QueueRunState, QueueShare, ResourceBound, SchedulerKind,
};

use super::args::{number, only_keys, options};
use super::Scenario;

impl Scenario {
    /// `queue PATH opts...` / `unqueue PATH`: edits the pending tree.
    pub(super) fn declare_queue(&mut self, command: &str, args: &[&str]) -> Result<(), String> {
        let (path, rest) = args.split_first().ok_or("which queue?")?;
        let started = self.scheduler.is_some();
        let tree = match self.pending_queues.take() {
            Some(t) => t,
            None if started => self
                .scheduler()
                .map(|s| s.queue_config().clone())
                .ok_or("no scheduler")?,
            None => {
                // The first declaration replaces the default leaf.
                let mut t = self.config.queues.clone();
                t.root.children.clear();
                t
            }
        };
        let mut tree = tree;
        let names: Vec<&str> = path.split('.').collect();
        if names.first() != Some(&"root") || names.len() < 2 {
            return Err(format!("queue paths start with root. ('{path}')"));
        }
        let mut parent = &mut tree.root;
        for name in &names[1..names.len() - 1] {
            parent = parent
                .children
                .iter_mut()
                .find(|c| c.name == *name)
                .ok_or_else(|| format!("declare the parent of {path} first"))?;
        }
        let last = names[names.len() - 1];
        if command == "unqueue" {
            let before = parent.children.len();
            parent.children.retain(|c| c.name != last);
            if parent.children.len() == before {
                return Err(format!("no queue {path}"));
            }
            self.pending_queues = Some(tree);
            return Ok(());
        }
        let opts = options(rest)?;
        only_keys(
            &opts,
            &[
                "capacity", "max", "weight", "min", "maxres", "ulf", "mulp", "am", "running",
                "order", "state",
            ],
        )?;
        let kind = tree.kind;
        let index = match parent.children.iter().position(|c| c.name == last) {
            Some(i) => i,
            None => {
                let share = match kind {
                    SchedulerKind::Fair => QueueShare::Fair {
                        weight: 1.0,
                        min: None,
                        max: None,
                    },
                    _ => QueueShare::Capacity {
                        capacity_pct: 0.0,
                        maximum_pct: 100.0,
                    },
                };
                let mut leaf = QueueConfig::leaf(last, share);
                if kind == SchedulerKind::Fair {
                    leaf.ordering = AppOrdering::Fair;
                }
                parent.children.push(leaf);
                parent.children.len() - 1
            }
        };
        let q = &mut parent.children[index];
        let resource = |key: &str, v: &str| -> Result<Resource, String> {
            let (m, c) = v
                .split_once(',')
                .ok_or_else(|| format!("{key} takes MB,VCORES"))?;
            Ok(Resource::new(number(key, m)?, number(key, c)?))
        };
        for (key, value) in &opts {
            let value = *value;
            match (*key, &mut q.share) {
                ("capacity", QueueShare::Capacity { capacity_pct, .. }) => {
                    *capacity_pct = number(key, value)?
                }
                ("max", QueueShare::Capacity { maximum_pct, .. }) => {
                    *maximum_pct = number(key, value)?
                }
                ("weight", QueueShare::Fair { weight, .. }) => *weight = number(key, value)?,
                ("min", QueueShare::Fair { min, .. }) => {
                    *min = Some(ResourceBound::Absolute(resource(key, value)?))
                }
                ("maxres", QueueShare::Fair { max, .. }) => {
                    *max = Some(ResourceBound::Absolute(resource(key, value)?))
                }
                ("ulf", _) => {
                    q.user_limit_factor = if value == "none" {
                        None
                    } else {
                        Some(number(key, value)?)
                    }
                }
                ("mulp", _) => q.minimum_user_limit_percent = number(key, value)?,
                ("am", _) => {
                    q.max_am_share = if value == "none" {
                        None
                    } else {
                        Some(number(key, value)?)
                    }
                }
                ("running", _) => q.max_running_apps = Some(number(key, value)?),
                ("order", _) => {
                    q.ordering = match value {
                        "fifo" => AppOrdering::Fifo,
                        "fair" => AppOrdering::Fair,
                        "drf" => AppOrdering::Drf,
                        _ => return Err(format!("unknown order '{value}'")),
                    }
                }
                ("state", _) => {
                    q.state = match value {
                        "RUNNING" => QueueRunState::Running,
                        "STOPPED" => QueueRunState::Stopped,
                        _ => return Err(format!("unknown state '{value}'")),
                    }
                }
                (key, _) => return Err(format!("{key} does not apply to a {kind} queue")),
            }
        }
        self.pending_queues = Some(tree);
        Ok(())
    }
}
