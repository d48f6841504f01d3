//! The fair scheduler's `yarn-site.xml` keys: placement defaults, the
//! delay-scheduling thresholds and the containers assigned per heartbeat.

use spindle_common::conf::Configuration;
use spindle_scheduler::{HeartbeatAssignment, LocalityDelay};

use super::{
    ALLOW_UNDECLARED_POOLS_KEY, ASSIGN_MULTIPLE_KEY, DYNAMIC_MAX_ASSIGN_KEY,
    LOCALITY_THRESHOLD_NODE_KEY, LOCALITY_THRESHOLD_RACK_KEY, MAX_ASSIGN_KEY,
    USER_AS_DEFAULT_QUEUE_KEY,
};
use crate::queue_files::placement::FairRule;
use crate::queue_files::queue_file::QueueFileError;

const DEFAULT_LOCALITY_THRESHOLD: f64 = -1.0;

pub(super) struct SiteSettings {
    user_as_default_queue: bool,
    allow_undeclared_pools: bool,
    pub(super) locality: LocalityDelay,
    pub(super) heartbeat: HeartbeatAssignment,
}

impl SiteSettings {
    pub(super) fn read(site: &Configuration) -> Result<SiteSettings, QueueFileError> {
        let set = |key: &str| site.get_trimmed(key).is_some_and(|v| !v.is_empty());
        let conf_err = |e| QueueFileError::from_conf("yarn-site.xml", e);
        let boolean = |key: &str, default: bool| -> Result<bool, QueueFileError> {
            if set(key) {
                site.get_bool(key).map_err(conf_err)
            } else {
                Ok(default)
            }
        };
        let threshold = |key: &str| -> Result<f64, QueueFileError> {
            if !set(key) {
                return Ok(DEFAULT_LOCALITY_THRESHOLD);
            }
            let v = site.get_f64(key).map_err(conf_err)?;
            if v > 1.0 || v.is_nan() {
                return Err(QueueFileError::from_conf(
                    "yarn-site.xml",
                    site.invalid_value(
                        key,
                        "must be a fraction of the cluster's nodes between 0 and 1, \
                         or negative to disable delay scheduling",
                    ),
                ));
            }
            Ok(v)
        };
        let assign_multiple = boolean(ASSIGN_MULTIPLE_KEY, false)?;
        let dynamic_max_assign = boolean(DYNAMIC_MAX_ASSIGN_KEY, true)?;
        let max_assign = if set(MAX_ASSIGN_KEY) {
            site.get_i64(MAX_ASSIGN_KEY).map_err(conf_err)?
        } else {
            -1
        };
        let max_containers = if !assign_multiple {
            Some(1)
        } else if dynamic_max_assign {
            tracing::info!(
                "{DYNAMIC_MAX_ASSIGN_KEY} is on: Hadoop assigns up to half of a node's free \
                 resources per heartbeat; Spindle assigns without a per-heartbeat count limit"
            );
            None
        } else if max_assign <= 0 {
            None
        } else {
            Some(usize::try_from(max_assign).unwrap_or(usize::MAX))
        };
        Ok(SiteSettings {
            user_as_default_queue: boolean(USER_AS_DEFAULT_QUEUE_KEY, true)?,
            allow_undeclared_pools: boolean(ALLOW_UNDECLARED_POOLS_KEY, true)?,
            locality: LocalityDelay::Fair {
                node_threshold: threshold(LOCALITY_THRESHOLD_NODE_KEY)?,
                rack_threshold: threshold(LOCALITY_THRESHOLD_RACK_KEY)?,
            },
            heartbeat: HeartbeatAssignment {
                max_containers,
                max_off_switch: None,
            },
        })
    }

    /// Hadoop's placement policy when the file gives none: `specified`,
    /// then `user` if user-as-default-queue, then `default` unless the
    /// user rule always places; queues may be created when
    /// allow-undeclared-pools.
    pub(super) fn default_rules(&self) -> Vec<FairRule> {
        let create = self.allow_undeclared_pools;
        let mut rules = vec![FairRule::Specified { create }];
        if self.user_as_default_queue {
            rules.push(FairRule::User { create });
        }
        if !self.user_as_default_queue || !create {
            rules.push(FairRule::Default {
                queue: "root.default".to_string(),
                create: true,
            });
        }
        rules
    }
}

#[cfg(test)]
mod tests {
    use spindle_scheduler::LocalityDelay;

    use super::super::test_support::{place, placed, FILE};
    use super::super::*;

    #[test]
    fn default_policy_from_yarn_site() {
        let mut site = Configuration::empty();
        site.set(ALLOW_UNDECLARED_POOLS_KEY, "false");
        let xml = "<allocations><queue name=\"eng\"/></allocations>";
        let file = from_str(xml, FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        // specified(create=false), user(create=false), default(create=true).
        assert_eq!(place(&file, "eng", "alice", &[]), placed("root.eng", false));
        assert_eq!(
            place(&file, "nope", "alice", &[]),
            placed("root.default", false)
        );
        assert_eq!(
            place(&file, "default", "alice", &[]),
            placed("root.default", false)
        );

        let mut site = Configuration::empty();
        site.set(USER_AS_DEFAULT_QUEUE_KEY, "false");
        let file = from_str(xml, FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            place(&file, "default", "alice", &[]),
            placed("root.default", false)
        );
        assert_eq!(place(&file, "new", "alice", &[]), placed("root.new", true));
        assert_eq!(
            file.placement.describe(),
            "fair: placement rules specified(create=true), default(queue=root.default, create=true)"
        );
    }

    #[test]
    fn yarn_site_scheduling_keys() {
        let mut site = Configuration::empty();
        site.set(LOCALITY_THRESHOLD_NODE_KEY, "0.5");
        site.set(LOCALITY_THRESHOLD_RACK_KEY, "0.25");
        site.set(ASSIGN_MULTIPLE_KEY, "true");
        site.set(DYNAMIC_MAX_ASSIGN_KEY, "false");
        site.set(MAX_ASSIGN_KEY, "4");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.locality,
            LocalityDelay::Fair {
                node_threshold: 0.5,
                rack_threshold: 0.25
            }
        );
        assert_eq!(file.heartbeat.max_containers, Some(4));
        site.set(MAX_ASSIGN_KEY, "-1");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.heartbeat.max_containers, None);
        site.set(DYNAMIC_MAX_ASSIGN_KEY, "true");
        site.set(MAX_ASSIGN_KEY, "4");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.heartbeat.max_containers, None);

        site.set(LOCALITY_THRESHOLD_NODE_KEY, "2");
        let e = from_str("<allocations/>", FILE, &site).expect_err("threshold above 1");
        assert_eq!(e.key.as_deref(), Some(LOCALITY_THRESHOLD_NODE_KEY));
        site.set(LOCALITY_THRESHOLD_NODE_KEY, "0.5");
        site.set(ASSIGN_MULTIPLE_KEY, "often");
        let e = from_str("<allocations/>", FILE, &site).expect_err("not a boolean");
        assert_eq!(e.key.as_deref(), Some(ASSIGN_MULTIPLE_KEY));
    }
}
