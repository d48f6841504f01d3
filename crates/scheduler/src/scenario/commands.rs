//! Every command but `config`, `queue` and `unqueue`: each becomes a
//! scheduler [`Input`], a pass, or a print of the state.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use spindle_common::{ApplicationAttemptId, ApplicationId, Resource};

use crate::input::{ContainerExit, Input, NodeUpdate, ResourceAsk};

use super::args::{
    boolean, container_arg, node_and_options, number, only_keys, optional, options, required,
};
use super::config::delay_or_heartbeat;
use super::render::node_name;
use super::{Scenario, CLUSTER_TIMESTAMP};

impl Scenario {
    pub(super) fn command(&mut self, command: &str, args: &[&str]) -> Result<(), String> {
        match command {
            "node" => {
                let (node, opts) = node_and_options(args)?;
                let rack = required(&opts, "rack")?.to_string();
                let capability = Resource::new(
                    number("mem", required(&opts, "mem")?)?,
                    number("vcores", required(&opts, "vcores")?)?,
                );
                only_keys(&opts, &["rack", "mem", "vcores"])?;
                self.input(Input::NodeAdded {
                    node,
                    rack,
                    capability,
                })
            }
            "update" | "heartbeat" => {
                let (node, opts) = node_and_options(args)?;
                let mut update = NodeUpdate::heartbeat();
                if command == "update" {
                    only_keys(&opts, &["mem", "vcores", "healthy", "schedulable"])?;
                    if opts.contains_key("mem") || opts.contains_key("vcores") {
                        let current = self
                            .scheduler()
                            .and_then(|s| s.node(&node))
                            .map_or(Resource::ZERO, |n| n.capability);
                        update.capability = Some(Resource::new(
                            optional(&opts, "mem", current.memory_mb)?,
                            optional(&opts, "vcores", current.vcores)?,
                        ));
                    }
                    update.healthy = opts
                        .get("healthy")
                        .map(|v| boolean("healthy", v))
                        .transpose()?;
                    update.schedulable = opts
                        .get("schedulable")
                        .map(|v| boolean("schedulable", v))
                        .transpose()?;
                } else {
                    only_keys(&opts, &[])?;
                }
                self.input(Input::NodeUpdated { node, update })
            }
            "remove" => {
                let (node, opts) = node_and_options(args)?;
                only_keys(&opts, &[])?;
                self.input(Input::NodeRemoved { node })
            }
            "app" => {
                let (name, rest) = args.split_first().ok_or("app needs a name")?;
                if self.apps.contains_key(*name) {
                    return Err(format!("application '{name}' was already declared"));
                }
                let opts = options(rest)?;
                only_keys(&opts, &["queue", "user", "priority", "unmanaged"])?;
                let number_of_app =
                    i32::try_from(self.apps.len() + 1).map_err(|e| e.to_string())?;
                let attempt = ApplicationAttemptId::new(
                    ApplicationId::new(CLUSTER_TIMESTAMP, number_of_app),
                    1,
                );
                self.apps.insert(name.to_string(), attempt);
                self.names.insert(attempt, name.to_string());
                self.input(Input::AppAdded {
                    attempt,
                    queue: opts.get("queue").copied().unwrap_or("default").to_string(),
                    user: opts.get("user").copied().unwrap_or("user").to_string(),
                    priority: optional(&opts, "priority", 0)?,
                    unmanaged_am: opts
                        .get("unmanaged")
                        .map(|v| boolean("unmanaged", v))
                        .transpose()?
                        .unwrap_or(false),
                })
            }
            "reload" => {
                let opts = options(args)?;
                only_keys(
                    &opts,
                    &[
                        "node_delay",
                        "rack_delay",
                        "node_threshold",
                        "rack_threshold",
                        "hb_max",
                        "hb_offswitch",
                    ],
                )?;
                let (mut locality, mut heartbeat) = self
                    .scheduler()
                    .map(|s| (s.config().locality, s.config().heartbeat))
                    .ok_or("the scheduler is not running")?;
                for (key, value) in &opts {
                    delay_or_heartbeat(key, value, &mut locality, &mut heartbeat)?;
                }
                let queues = self
                    .pending_queues
                    .take()
                    .or_else(|| self.scheduler().map(|s| s.queue_config().clone()))
                    .ok_or("no queue tree to reload")?;
                self.input(Input::QueuesReconfigured {
                    queues: Box::new(queues),
                    locality,
                    heartbeat,
                })
            }
            "priority" => {
                let attempt = self.app_arg(args)?;
                let priority = number("priority", args.get(1).ok_or("priority APP P")?)?;
                if args.len() > 2 {
                    return Err("priority takes an application and a number".into());
                }
                self.input(Input::AppPriorityUpdated { attempt, priority })
            }
            "move" => {
                let attempt = self.app_arg(args)?;
                let queue = args.get(1).ok_or("move APP QUEUE")?.to_string();
                if args.len() > 2 {
                    return Err("move takes an application and a queue".into());
                }
                self.input(Input::AppMoved { attempt, queue })
            }
            "finish" => {
                let attempt = self.app_arg(args)?;
                self.input(Input::AppRemoved { attempt })
            }
            "ask" => self.ask(args),
            "release" => {
                let attempt = self.app_arg(args)?;
                let releases = args[1..]
                    .iter()
                    .map(|c| container_arg(attempt, c, self.config.epoch))
                    .collect::<Result<Vec<_>, _>>()?;
                self.input(Input::AsksUpdated {
                    attempt,
                    asks: Vec::new(),
                    releases,
                    blacklist_add: Vec::new(),
                    blacklist_remove: Vec::new(),
                })
            }
            "blacklist" => {
                let attempt = self.app_arg(args)?;
                let mut blacklist_add = Vec::new();
                let mut blacklist_remove = Vec::new();
                for arg in &args[1..] {
                    if let Some(name) = arg.strip_prefix('+') {
                        blacklist_add.push(name.to_string());
                    } else if let Some(name) = arg.strip_prefix('-') {
                        blacklist_remove.push(name.to_string());
                    } else {
                        return Err(format!("blacklist entries are +NAME or -NAME, not '{arg}'"));
                    }
                }
                self.input(Input::AsksUpdated {
                    attempt,
                    asks: Vec::new(),
                    releases: Vec::new(),
                    blacklist_add,
                    blacklist_remove,
                })
            }
            "complete" | "expire" | "kill" => {
                let attempt = self.app_arg(args)?;
                let c = args.get(1).ok_or("which container? (cN)")?;
                let container = container_arg(attempt, c, self.config.epoch)?;
                let opts = options(&args[2..])?;
                let exit = match command {
                    "complete" => {
                        only_keys(&opts, &["exit"])?;
                        ContainerExit::Finished {
                            exit_status: optional(&opts, "exit", 0)?,
                            diagnostics: String::new(),
                        }
                    }
                    "expire" => {
                        only_keys(&opts, &[])?;
                        ContainerExit::Expired
                    }
                    _ => {
                        only_keys(&opts, &[])?;
                        ContainerExit::KilledByResourceManager {
                            diagnostics: "killed by the scenario".into(),
                        }
                    }
                };
                self.input(Input::ContainerCompleted { container, exit })
            }
            "schedule" => {
                let opts = options(args)?;
                only_keys(&opts, &["max"])?;
                let max = optional(&opts, "max", usize::MAX)?;
                let now = self.now_ms;
                let result = self.sched_mut()?.schedule(now, max);
                self.record(result);
                Ok(())
            }
            "tick" => {
                let ms = args.first().ok_or("tick needs a time in ms")?;
                self.now_ms = number("tick", ms)?;
                self.input(Input::Tick)
            }
            "table" => {
                let attempt = self.app_arg(args)?;
                self.print_table(attempt);
                Ok(())
            }
            "nodes" => {
                self.print_nodes();
                Ok(())
            }
            "apps" => {
                self.print_apps();
                Ok(())
            }
            "queues" => {
                self.print_queues();
                Ok(())
            }
            "counts" => {
                let nodes = self.scheduler().map(|s| s.nodes()).unwrap_or_default();
                let cells: Vec<String> = nodes
                    .iter()
                    .map(|n| format!("{}={}", node_name(&n.id), n.containers.len()))
                    .collect();
                let empty = nodes.iter().filter(|n| n.containers.is_empty()).count();
                let _ = writeln!(self.trace, "  counts: {}", cells.join(" "));
                let _ = writeln!(self.trace, "  empty nodes: {empty} of {}", nodes.len());
                Ok(())
            }
            "headroom" => {
                let attempt = self.app_arg(args)?;
                let room = self
                    .scheduler()
                    .and_then(|s| s.headroom(&attempt))
                    .ok_or("the application is not in the scheduler")?;
                let _ = writeln!(
                    self.trace,
                    "  headroom: {}MB,{}vc",
                    room.memory_mb, room.vcores
                );
                Ok(())
            }
            "order" => {
                let order = self
                    .scheduler()
                    .map(|s| s.serving_order())
                    .unwrap_or_default();
                let names: Vec<String> = order.iter().map(|a| self.app_name(a)).collect();
                let _ = writeln!(self.trace, "  order: {}", names.join(" "));
                Ok(())
            }
            _ => Err(format!("unknown command '{command}'")),
        }
    }

    pub(super) fn ask(&mut self, args: &[&str]) -> Result<(), String> {
        let attempt = self.app_arg(args)?;
        let mut opts = BTreeMap::new();
        let mut rows = Vec::new();
        for arg in &args[1..] {
            if let Some((k, v)) = arg.split_once('=') {
                opts.insert(k, v);
            } else if let Some((loc, count)) = arg.rsplit_once(':') {
                rows.push((loc.to_string(), number::<i32>("count", count)?));
            } else {
                return Err(format!("expected key=value or LOCATION:COUNT, got '{arg}'"));
            }
        }
        only_keys(&opts, &["pri", "mem", "vcores", "relax", "id"])?;
        let priority: i32 = number("pri", required(&opts, "pri")?)?;
        let capability = Resource::new(
            number("mem", required(&opts, "mem")?)?,
            optional(&opts, "vcores", 1)?,
        );
        let relax = opts
            .get("relax")
            .map(|v| boolean("relax", v))
            .transpose()?
            .unwrap_or(true);
        let id = optional(&opts, "id", -1)?;
        if rows.is_empty() {
            return Err("ask needs at least one LOCATION:COUNT".into());
        }
        let asks = rows
            .into_iter()
            .map(|(loc, n)| {
                ResourceAsk::new(priority, loc, capability, n)
                    .relax(relax)
                    .with_allocation_request_id(id)
            })
            .collect();
        self.input(Input::AsksUpdated {
            attempt,
            asks,
            releases: Vec::new(),
            blacklist_add: Vec::new(),
            blacklist_remove: Vec::new(),
        })
    }
}
