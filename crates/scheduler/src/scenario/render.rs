//! How the trace shows the scheduler's decisions and state.

use std::fmt::Write as _;

use spindle_common::{ApplicationAttemptId, NodeId};

use crate::output::Decisions;
use crate::queue_config::QueueRunState;

use super::{Scenario, DEFAULT_NODE_PORT};

impl Scenario {
    pub(super) fn record(&mut self, result: Result<Decisions, crate::SchedulerError>) {
        let decisions = match result {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(self.trace, "  error: {e}");
                return;
            }
        };
        let mut lines = Vec::new();
        for a in &decisions.allocations {
            let mut line = format!(
                "alloc {} on {} pri={} {} {}",
                self.container_name(&a.container),
                node_name(&a.node),
                a.priority,
                a.resource,
                a.locality
            );
            if a.allocation_request_id != -1 {
                let _ = write!(line, " id={}", a.allocation_request_id);
            }
            lines.push(line);
        }
        for c in &decisions.completed {
            lines.push(format!(
                "done {} on {} exit={} {}",
                self.container_name(&c.container),
                node_name(&c.node),
                c.exit_status,
                c.cause
            ));
        }
        for action in &decisions.node_actions {
            match action {
                crate::NodeAction::KillContainer { node, container } => lines.push(format!(
                    "kill {} on {}",
                    self.container_name(container),
                    node_name(node)
                )),
            }
        }
        for line in lines {
            let _ = writeln!(self.trace, "  {line}");
        }
    }

    pub(super) fn print_table(&mut self, attempt: ApplicationAttemptId) {
        let Some(asks) = self.scheduler().and_then(|s| s.asks(&attempt)) else {
            let _ = writeln!(self.trace, "  (no such attempt)");
            return;
        };
        if asks.is_empty() {
            let _ = writeln!(self.trace, "  (no outstanding asks)");
            return;
        }
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for a in asks {
            let mut head = format!("pri={} {}", a.priority, a.capability);
            if a.allocation_request_id != -1 {
                let _ = write!(head, " id={}", a.allocation_request_id);
            }
            let mut cell = format!("{}={}", a.resource_name, a.num_containers);
            if !a.relax_locality {
                cell.push_str("(strict)");
            }
            match groups.last_mut() {
                Some((h, cells)) if *h == head => cells.push(cell),
                _ => groups.push((head, vec![cell])),
            }
        }
        for (head, cells) in groups {
            let _ = writeln!(self.trace, "  {head}: {}", cells.join(" "));
        }
    }

    pub(super) fn print_nodes(&mut self) {
        let nodes = self.scheduler().map(|s| s.nodes()).unwrap_or_default();
        for n in nodes {
            let containers: Vec<String> = n
                .containers
                .iter()
                .map(|c| self.container_name(c))
                .collect();
            let mut flags = String::new();
            if !n.healthy {
                flags.push_str(" unhealthy");
            }
            if !n.schedulable {
                flags.push_str(" unschedulable");
            }
            let _ = writeln!(
                self.trace,
                "  {} {} used={}/{}MB,{}/{}vc{} [{}]",
                node_name(&n.id),
                n.rack,
                n.used.memory_mb,
                n.capability.memory_mb,
                n.used.vcores,
                n.capability.vcores,
                flags,
                containers.join(", ")
            );
        }
    }

    pub(super) fn print_apps(&mut self) {
        let apps = self.scheduler().map(|s| s.apps()).unwrap_or_default();
        for a in apps {
            let _ = writeln!(
                self.trace,
                "  {} queue={} used={}MB,{}vc pending={}MB,{}vc containers={}{}",
                self.app_name(&a.attempt),
                a.queue,
                a.used.memory_mb,
                a.used.vcores,
                a.pending.memory_mb,
                a.pending.vcores,
                a.containers.len(),
                if a.blacklist.is_empty() {
                    String::new()
                } else {
                    format!(" blacklist={}", a.blacklist.join(","))
                }
            );
        }
    }

    pub(super) fn print_queues(&mut self) {
        let queues = self.scheduler().map(|s| s.queues()).unwrap_or_default();
        for q in queues {
            let _ = writeln!(
                self.trace,
                "  {} guaranteed={}MB,{}vc max={}MB,{}vc used={}MB,{}vc am={}MB apps={} running={}{}",
                q.path,
                q.guaranteed.memory_mb,
                q.guaranteed.vcores,
                q.maximum.memory_mb,
                q.maximum.vcores,
                q.used.memory_mb,
                q.used.vcores,
                q.am_used.memory_mb,
                q.apps,
                q.running_apps,
                if q.state == QueueRunState::Stopped {
                    " STOPPED"
                } else {
                    ""
                }
            );
        }
    }
}

pub(super) fn node_name(n: &NodeId) -> String {
    if n.port == DEFAULT_NODE_PORT {
        n.host.to_string()
    } else {
        n.to_string()
    }
}
