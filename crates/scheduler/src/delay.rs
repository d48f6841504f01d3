//! Delay scheduling: per request key, how far locality may be relaxed
//! now. See [`LocalityDelay`] for the two rules (capacity and fair).
//!
//! # Counting opportunities
//!
//! A scheduling opportunity is a node heartbeat on which a request key was
//! offered the node: the node had room for the key's container and the
//! key's rows allow it there at some locality. As in Hadoop, the
//! opportunity is counted *before* the decision ([`offered`]), so the
//! offer being made is one of those counted: with a node locality delay of
//! `d`, a request whose host is busy declines `d` heartbeats of other
//! nodes and takes a rack-local node on the next one.
//!
//! Continuous passes ([`crate::Scheduler::schedule`]) place at the level
//! the count allows but count nothing: they run far more often than
//! heartbeats arrive, and counting them would make the delay depend on how
//! often the RM runs passes. Keys that name only `*` never wait and keep
//! no count.

use crate::output::Locality;
use crate::queue_config::LocalityDelay;

/// Waiting state of one request key of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DelayState {
    /// Scheduling opportunities counted since the count was last reset.
    pub opportunities: u64,
    /// The fair rule's current level (starts node-local).
    pub level: Locality,
}

impl Default for DelayState {
    fn default() -> Self {
        DelayState {
            opportunities: 0,
            level: Locality::NodeLocal,
        }
    }
}

/// What the rule needs to know about the request and the cluster.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DelayContext {
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Containers still wanted at `*`.
    pub outstanding: u32,
    /// Distinct resource names the key has rows for, `*` included.
    pub locations: usize,
}

impl DelayContext {
    /// Whether the key has anything to wait for: a rule is in force and
    /// the key names a host or rack. Keys for which this is false keep no
    /// state.
    pub fn waits(&self, rule: &LocalityDelay) -> bool {
        self.locations > 1
            && match *rule {
                LocalityDelay::Off => false,
                LocalityDelay::Capacity { .. } => true,
                LocalityDelay::Fair {
                    node_threshold,
                    rack_threshold,
                } => node_threshold >= 0.0 && rack_threshold >= 0.0,
            }
    }
}

/// The least local placement allowed now.
pub(crate) fn allowed(rule: &LocalityDelay, state: &DelayState, ctx: DelayContext) -> Locality {
    if !ctx.waits(rule) {
        return Locality::OffSwitch;
    }
    match *rule {
        LocalityDelay::Off => Locality::OffSwitch,
        LocalityDelay::Capacity {
            node_locality_delay,
            rack_locality_additional_delay,
        } => {
            let nodes = i64::try_from(ctx.nodes).unwrap_or(i64::MAX);
            let seen = i64::try_from(state.opportunities).unwrap_or(i64::MAX);
            let off_switch = if rack_locality_additional_delay > -1 {
                seen > nodes.min(node_locality_delay.saturating_add(rack_locality_additional_delay))
            } else {
                let requested = ctx.locations.saturating_sub(1) as f64;
                let factor = if nodes > 0 {
                    (requested / nodes as f64).min(1.0)
                } else {
                    1.0
                };
                (nodes as f64).min(f64::from(ctx.outstanding) * factor) < seen as f64
            };
            if off_switch {
                Locality::OffSwitch
            } else if nodes.min(node_locality_delay) < seen {
                Locality::RackLocal
            } else {
                Locality::NodeLocal
            }
        }
        LocalityDelay::Fair { .. } => state.level,
    }
}

/// Counts one scheduling opportunity (a heartbeat offering the key a
/// node), before the placement decision. Under the fair rule, a count
/// above nodes × threshold relaxes the level one step and restarts the
/// count.
pub(crate) fn offered(rule: &LocalityDelay, state: &mut DelayState, nodes: usize) {
    state.opportunities = state.opportunities.saturating_add(1);
    if let LocalityDelay::Fair {
        node_threshold,
        rack_threshold,
    } = *rule
    {
        let threshold = match state.level {
            Locality::NodeLocal => node_threshold,
            Locality::RackLocal => rack_threshold,
            Locality::OffSwitch => return,
        };
        if state.opportunities as f64 > nodes as f64 * threshold.min(1.0) {
            state.level = match state.level {
                Locality::NodeLocal => Locality::RackLocal,
                _ => Locality::OffSwitch,
            };
            state.opportunities = 0;
        }
    }
}

/// Updates the state after a container of the key was allocated.
pub(crate) fn allocated(rule: &LocalityDelay, state: &mut DelayState, locality: Locality) {
    match rule {
        LocalityDelay::Off => {}
        LocalityDelay::Capacity { .. } => {
            // Off-switch grants keep the count, so an application with many
            // off-switch containers is not made to wait for each one.
            if locality != Locality::OffSwitch {
                state.opportunities = 0;
            }
        }
        LocalityDelay::Fair { .. } => {
            // A grant more local than the level tightens it again; a grant
            // never loosens it (as in Hadoop).
            state.level = state.level.min(locality);
            state.opportunities = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(nodes: usize, outstanding: u32, locations: usize) -> DelayContext {
        DelayContext {
            nodes,
            outstanding,
            locations,
        }
    }

    #[test]
    fn any_only_requests_never_wait() {
        let rule = LocalityDelay::Capacity {
            node_locality_delay: 40,
            rack_locality_additional_delay: -1,
        };
        let s = DelayState::default();
        assert_eq!(allowed(&rule, &s, ctx(100, 5, 1)), Locality::OffSwitch);
    }

    #[test]
    fn capacity_rule() {
        let rule = LocalityDelay::Capacity {
            node_locality_delay: 3,
            rack_locality_additional_delay: 2,
        };
        let at = |opportunities| {
            allowed(
                &rule,
                &DelayState {
                    opportunities,
                    level: Locality::NodeLocal,
                },
                ctx(100, 1, 3),
            )
        };
        assert_eq!(at(3), Locality::NodeLocal);
        assert_eq!(at(4), Locality::RackLocal);
        assert_eq!(at(5), Locality::RackLocal);
        assert_eq!(at(6), Locality::OffSwitch);
        // The delay is capped by the cluster size.
        let small = allowed(
            &rule,
            &DelayState {
                opportunities: 2,
                level: Locality::NodeLocal,
            },
            ctx(1, 1, 3),
        );
        assert_eq!(small, Locality::OffSwitch);
        // Without an additional rack delay: outstanding × locality factor.
        let default_rule = LocalityDelay::Capacity {
            node_locality_delay: 40,
            rack_locality_additional_delay: -1,
        };
        let s = |opportunities| DelayState {
            opportunities,
            level: Locality::NodeLocal,
        };
        // 2 locations of 10 nodes asked, 10 containers: off-switch after
        // more than 2 opportunities, before the rack delay (min(10, 40)) is
        // up.
        assert_eq!(
            allowed(&default_rule, &s(2), ctx(10, 10, 3)),
            Locality::NodeLocal
        );
        assert_eq!(
            allowed(&default_rule, &s(3), ctx(10, 10, 3)),
            Locality::OffSwitch
        );
    }

    #[test]
    fn capacity_counts_reset_except_off_switch() {
        let rule = LocalityDelay::Capacity {
            node_locality_delay: 1,
            rack_locality_additional_delay: 0,
        };
        let mut s = DelayState::default();
        offered(&rule, &mut s, 10);
        offered(&rule, &mut s, 10);
        allocated(&rule, &mut s, Locality::OffSwitch);
        assert_eq!(s.opportunities, 2);
        allocated(&rule, &mut s, Locality::RackLocal);
        assert_eq!(s.opportunities, 0);
    }

    #[test]
    fn fair_rule_escalates_stepwise() {
        let rule = LocalityDelay::Fair {
            node_threshold: 0.5,
            rack_threshold: 0.2,
        };
        let mut s = DelayState::default();
        let c = ctx(10, 1, 3);
        for _ in 0..5 {
            offered(&rule, &mut s, 10);
            assert_eq!(allowed(&rule, &s, c), Locality::NodeLocal);
        }
        offered(&rule, &mut s, 10);
        assert_eq!(allowed(&rule, &s, c), Locality::RackLocal);
        offered(&rule, &mut s, 10);
        offered(&rule, &mut s, 10);
        assert_eq!(allowed(&rule, &s, c), Locality::RackLocal);
        offered(&rule, &mut s, 10);
        assert_eq!(allowed(&rule, &s, c), Locality::OffSwitch);
        allocated(&rule, &mut s, Locality::NodeLocal);
        assert_eq!(allowed(&rule, &s, c), Locality::NodeLocal);
        let off = LocalityDelay::Fair {
            node_threshold: -1.0,
            rack_threshold: -1.0,
        };
        assert_eq!(
            allowed(&off, &DelayState::default(), c),
            Locality::OffSwitch
        );
    }

    #[test]
    fn fair_grants_tighten_but_never_loosen() {
        let rule = LocalityDelay::Fair {
            node_threshold: 0.1,
            rack_threshold: 0.1,
        };
        let c = ctx(10, 1, 3);
        let mut s = DelayState::default();
        // An off-switch grant at node-local level (a key that named only
        // `*` at the time) leaves the level alone.
        allocated(&rule, &mut s, Locality::OffSwitch);
        assert_eq!(allowed(&rule, &s, c), Locality::NodeLocal);
        for _ in 0..4 {
            offered(&rule, &mut s, 10);
        }
        assert_eq!(allowed(&rule, &s, c), Locality::OffSwitch);
        allocated(&rule, &mut s, Locality::RackLocal);
        assert_eq!(allowed(&rule, &s, c), Locality::RackLocal);
        assert_eq!(s.opportunities, 0);
    }

    #[test]
    fn only_keys_with_locations_wait() {
        let capacity = LocalityDelay::Capacity {
            node_locality_delay: 1,
            rack_locality_additional_delay: -1,
        };
        assert!(ctx(10, 1, 2).waits(&capacity));
        assert!(!ctx(10, 1, 1).waits(&capacity));
        assert!(!ctx(10, 1, 3).waits(&LocalityDelay::Off));
        let fair_off = LocalityDelay::Fair {
            node_threshold: 0.5,
            rack_threshold: -1.0,
        };
        assert!(!ctx(10, 1, 3).waits(&fair_off));
    }
}
