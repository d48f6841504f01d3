//! The whole ResourceManager under a deterministic simulation, in the spirit
//! of TigerBeetle's VOPR and FoundationDB's simulator.
//!
//! One seed decides everything: the cluster (nodes, queues, HA or not), the
//! applications (their sizes, tasks, attempts), when clients act, how long
//! each message takes, and the faults — messages lost, duplicated, delayed
//! and so reordered; NodeManagers partitioned, or crashed and restarted
//! without their containers; ApplicationMasters crashing; state store writes
//! failing; the RM restarted between any two commands; with HA, a failover
//! while the deposed active keeps answering until its store writes fail or
//! its ZooKeeper session ends.
//!
//! What runs is the RM's real state (`spindle_rm::state::RmState`), built
//! through the RM's own door (`spindle_rm::state::build::StateConf::build`)
//! on every activation, with the store bookkeeping the owner task uses
//! (`spindle_rm::runtime::core::Persistence`) over an in-memory store fenced as the
//! ZooKeeper store is. The NodeManagers, ApplicationMasters and clients are
//! small models that speak the RM's commands the way Hadoop's clients do
//! (response ids and replays, re-registration after a restart, retried
//! submissions, failover to the other RM on a standby answer).
//!
//! After every step the invariants are checked ([`world`]'s `check`): the
//! RM's tables against the scheduler core; no container granted twice;
//! every acknowledged submission known to the current active RM; no write
//! accepted from an RM that is not the store's owner; no completed
//! container reported to its AM twice. Then faults stop and a liveness
//! phase runs: every acknowledged application must end. A failure names the
//! seed, the step and the last events, and the same seed replays it exactly
//! (`spindle rm-sim --seed N`).

mod store;
mod world;

pub use world::{run, Failure, Options, Report};
