//! An AM's allocate call as the core sees it: new request rows,
//! releases and blacklist changes, all validated before any is applied,
//! so that a refused update changes nothing.

use spindle_common::{ApplicationAttemptId, ContainerId};

use super::{Scheduler, MAX_RESOURCE_NAME_BYTES};
use crate::asks::{AskRow, RequestKey, RowUpdate};
use crate::error::SchedulerError;
use crate::input::{ResourceAsk, ANY};
use crate::output::{exit_status, CompletionCause, Decisions, NodeAction};

impl Scheduler {
    pub(super) fn update_asks(
        &mut self,
        attempt: ApplicationAttemptId,
        asks: Vec<ResourceAsk>,
        releases: Vec<ContainerId>,
        blacklist_add: Vec<String>,
        blacklist_remove: Vec<String>,
    ) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };

        // Validate everything before changing anything.
        let mut updates = Vec::with_capacity(asks.len());
        for (index, ask) in asks.into_iter().enumerate() {
            let invalid = |reason: String| SchedulerError::InvalidAsk {
                attempt,
                index,
                reason,
            };
            if ask.resource_name.is_empty() || ask.resource_name.len() > MAX_RESOURCE_NAME_BYTES {
                return Err(invalid(format!(
                    "resource name must have 1 to {MAX_RESOURCE_NAME_BYTES} bytes"
                )));
            }
            let Ok(count) = u32::try_from(ask.num_containers) else {
                return Err(invalid(format!(
                    "negative number of containers {} at {}",
                    ask.num_containers, ask.resource_name
                )));
            };
            let capability = self.normalize(ask.capability).map_err(invalid)?;
            updates.push(RowUpdate {
                key: RequestKey::new(ask.priority, ask.allocation_request_id, capability),
                resource_name: ask.resource_name,
                row: AskRow {
                    count,
                    relax_locality: ask.relax_locality,
                },
            });
        }
        let rows = app.asks.rows_after(&updates);
        let max = self.config.limits.max_asks_per_app;
        if rows > max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_asks_per_app",
                requested: rows,
                max,
                context: format!("outstanding request rows of {attempt}"),
            });
        }
        for container in &releases {
            if container.attempt != attempt {
                return Err(SchedulerError::InvalidRelease {
                    attempt,
                    container: *container,
                });
            }
        }
        for name in blacklist_add.iter().chain(&blacklist_remove) {
            if name.is_empty() || name.len() > MAX_RESOURCE_NAME_BYTES || name == ANY {
                return Err(SchedulerError::InvalidBlacklist {
                    attempt,
                    reason: format!(
                        "'{name}' is not a host or rack name (1 to {MAX_RESOURCE_NAME_BYTES} bytes, not '*')"
                    ),
                });
            }
        }
        let mut blacklist = app.blacklist.clone();
        blacklist.extend(blacklist_add);
        for name in &blacklist_remove {
            blacklist.remove(name);
        }
        let max = self.config.limits.max_blacklist_per_app;
        if blacklist.len() > max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_blacklist_per_app",
                requested: blacklist.len(),
                max,
                context: format!("blacklist of {attempt}"),
            });
        }

        // Apply.
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.asks.apply(updates);
            app.blacklist = blacklist;
            let asks = &app.asks;
            app.delay.retain(|key, _| asks.any_count(key) > 0);
        }
        self.refresh_app(attempt);
        let mut decisions = Decisions::default();
        for container in releases {
            // Unknown ids (already completed, released twice) are ignored.
            if let Some(done) = self.finish_container(
                container,
                CompletionCause::ReleasedByApplication,
                exit_status::ABORTED,
                "released by the application master".to_string(),
            ) {
                decisions.node_actions.push(NodeAction::KillContainer {
                    node: done.node.clone(),
                    container,
                });
                decisions.completed.push(done);
            }
        }
        Ok(decisions)
    }
}
