//! The queues the RM reports and accepts applications into, read from
//! `capacity-scheduler.xml` in the capacity scheduler's key scheme.
//!
//! This is the flat form: leaf queues directly under `root`. Hierarchies, limits and
//! the scheduling policies themselves belong to the scheduler core.

use std::collections::BTreeMap;
use std::path::Path;

use spindle_common::conf::Configuration;

const PREFIX: &str = "yarn.scheduler.capacity.";

/// A queue's running state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    Running,
    Stopped,
}

/// One leaf queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Queue {
    /// Short name (`default`).
    pub name: String,
    /// Full path (`root.default`).
    pub path: String,
    /// Guaranteed share of the cluster, in percent.
    pub capacity_pct: f32,
    /// Upper bound, in percent.
    pub max_capacity_pct: f32,
    pub state: QueueState,
}

/// The queue configuration in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Queues {
    leaves: BTreeMap<String, Queue>,
}

impl Default for Queues {
    /// The cluster without a capacity-scheduler.xml: one `default` queue with
    /// everything.
    fn default() -> Self {
        let mut leaves = BTreeMap::new();
        leaves.insert(
            "default".to_string(),
            Queue {
                name: "default".into(),
                path: "root.default".into(),
                capacity_pct: 100.0,
                max_capacity_pct: 100.0,
                state: QueueState::Running,
            },
        );
        Queues { leaves }
    }
}

impl Queues {
    /// Reads `capacity-scheduler.xml` from `conf_dir`, or the default single queue
    /// when there is none. Errors name the file and the offending key.
    pub fn load(conf_dir: Option<&Path>) -> Result<Queues, String> {
        let Some(path) = conf_dir
            .map(|d| d.join("capacity-scheduler.xml"))
            .filter(|p| p.exists())
        else {
            return Ok(Queues::default());
        };
        let mut conf = Configuration::with_defaults();
        conf.add_resource(&path).map_err(|e| e.to_string())?;
        Self::from_conf(&conf).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Builds the queue set from capacity-scheduler keys.
    pub fn from_conf(conf: &Configuration) -> Result<Queues, String> {
        let root_queues = conf
            .get(&format!("{PREFIX}root.queues"))
            .unwrap_or_else(|| "default".to_string());
        let names: Vec<String> = root_queues
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if names.is_empty() {
            return Err(format!("{PREFIX}root.queues lists no queue"));
        }
        let mut leaves = BTreeMap::new();
        let mut total = 0.0f32;
        for name in &names {
            let path = format!("root.{name}");
            if conf.get(&format!("{PREFIX}{path}.queues")).is_some() {
                return Err(format!(
                    "queue {path}: nested queues ({PREFIX}{path}.queues) are not supported by this \
                     flat queue set yet"
                ));
            }
            let pct = |key: &str, default: Option<f32>| -> Result<f32, String> {
                let full = format!("{PREFIX}{path}.{key}");
                match conf.get(&full) {
                    None => default.ok_or_else(|| format!("queue {path}: {full} is required")),
                    Some(v) => {
                        let parsed: f32 = v
                            .trim()
                            .parse()
                            .map_err(|_| format!("queue {path}: {full} = '{v}' is not a number"))?;
                        // Hadoop uses -1 for "no limit" on maximum-capacity.
                        if key == "maximum-capacity" && parsed == -1.0 {
                            return Ok(100.0);
                        }
                        if !(0.0..=100.0).contains(&parsed) {
                            return Err(format!(
                                "queue {path}: {full} = '{v}' must be between 0 and 100"
                            ));
                        }
                        Ok(parsed)
                    }
                }
            };
            let default_cap = (names.len() == 1).then_some(100.0);
            let capacity = pct("capacity", default_cap)?;
            let max_capacity = pct("maximum-capacity", Some(100.0))?;
            if max_capacity < capacity {
                return Err(format!(
                    "queue {path}: maximum-capacity {max_capacity} is below capacity {capacity}"
                ));
            }
            let state_key = format!("{PREFIX}{path}.state");
            let state = match conf.get(&state_key).as_deref().map(str::trim) {
                None | Some("RUNNING") => QueueState::Running,
                Some("STOPPED") => QueueState::Stopped,
                Some(other) => {
                    return Err(format!(
                        "queue {path}: {state_key} = '{other}' must be RUNNING or STOPPED"
                    ))
                }
            };
            total += capacity;
            leaves.insert(
                name.clone(),
                Queue {
                    name: name.clone(),
                    path,
                    capacity_pct: capacity,
                    max_capacity_pct: max_capacity,
                    state,
                },
            );
        }
        if (total - 100.0).abs() > 0.01 {
            return Err(format!(
                "the capacities of the children of root add up to {total}, not 100"
            ));
        }
        Ok(Queues { leaves })
    }

    /// Looks a queue up by short name or full path.
    pub fn get(&self, name: &str) -> Option<&Queue> {
        let short = name.strip_prefix("root.").unwrap_or(name);
        self.leaves.get(short)
    }

    pub fn leaves(&self) -> impl Iterator<Item = &Queue> {
        self.leaves.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn default_is_one_full_queue() {
        let q = Queues::from_conf(&conf(&[])).expect("default");
        assert_eq!(q, Queues::default());
        assert_eq!(q.get("root.default").map(|q| q.capacity_pct), Some(100.0));
    }

    #[test]
    fn two_queues_must_sum_to_100() {
        let ok = conf(&[
            ("yarn.scheduler.capacity.root.queues", "a, b"),
            ("yarn.scheduler.capacity.root.a.capacity", "70"),
            ("yarn.scheduler.capacity.root.b.capacity", "30"),
            ("yarn.scheduler.capacity.root.b.maximum-capacity", "-1"),
            ("yarn.scheduler.capacity.root.b.state", "STOPPED"),
        ]);
        let q = Queues::from_conf(&ok).expect("valid");
        assert_eq!(
            q.get("b").map(|q| (q.max_capacity_pct, q.state)),
            Some((100.0, QueueState::Stopped))
        );
        let bad = conf(&[
            ("yarn.scheduler.capacity.root.queues", "a,b"),
            ("yarn.scheduler.capacity.root.a.capacity", "70"),
            ("yarn.scheduler.capacity.root.b.capacity", "20"),
        ]);
        let err = Queues::from_conf(&bad).expect_err("sum 90");
        assert!(err.contains("90"), "{err}");
    }

    #[test]
    fn errors_name_the_key() {
        let bad = conf(&[
            ("yarn.scheduler.capacity.root.queues", "a"),
            ("yarn.scheduler.capacity.root.a.capacity", "lots"),
        ]);
        let err = Queues::from_conf(&bad).expect_err("not a number");
        assert!(
            err.contains("yarn.scheduler.capacity.root.a.capacity"),
            "{err}"
        );
        let missing = conf(&[("yarn.scheduler.capacity.root.queues", "a,b")]);
        assert!(Queues::from_conf(&missing).is_err());
    }
}
