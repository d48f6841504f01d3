//! RESYNC from a ResourceManager that restarted: a real NodeManager with a
//! running container, against a fake ResourceManager that answers a
//! heartbeat with RESYNC.
//!
//! Without work-preserving recovery (the default: the RM's
//! `yarn.resourcemanager.recovery.enabled` is false) the node kills its
//! containers before it registers again, so no process outlives what the
//! new ResourceManager knows, and the registration reports them complete.
//! With recovery and work preservation on, the containers keep running and
//! are reported running.

mod common;

use std::sync::Arc;

use common::{clc, container, group_members, start_node, WAIT};
use hadoop_protos::yarn::{ContainerStateProto, RegisterNodeManagerRequestProto};
use spindle_common::conf::keys;
use spindle_nm::{exit_status, ContainerPhase, NmExit, NmState};

/// A container whose launch script waits on two children of its own.
const LONG_RUNNER: &str = "sleep 600 & sleep 600 & wait";

/// The container's state and exit status in a registration.
fn reported(
    reg: &RegisterNodeManagerRequestProto,
    id: &spindle_common::ContainerId,
) -> Option<(i32, i32)> {
    reg.container_statuses
        .iter()
        .find(|s| {
            s.container_id
                .as_ref()
                .and_then(spindle_nm::wire::container_id_from_proto)
                .as_ref()
                == Some(id)
        })
        .map(|s| {
            (
                s.container_state.unwrap_or(-1),
                s.container_exit_status.unwrap_or(0),
            )
        })
}

/// Waits until no live process is left in the process group `pgid`.
async fn wait_for_group_to_exit(pgid: i32, when: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "container processes {left:?} still run {when}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn resync_without_work_preserving_recovery_kills_the_containers_first() {
    // The fake RM looks at the container's process group the moment the
    // node registers again.
    let pgid = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let seen = pgid.clone();
    let on_register: common::OnRegister = Arc::new(move |_req| {
        let leader = seen.load(std::sync::atomic::Ordering::SeqCst);
        let alive = group_members(leader).contains(&leader);
        format!("launch script alive: {alive}")
    });
    let (node, _tmp) = start_node(|_| {}, Some(on_register)).await;
    let id = container(1, 2);
    node.start(id, clc(&[LONG_RUNNER])).expect("started");
    let running = node.wait_phase(&id, ContainerPhase::Running).await;
    let pid = running.pid.expect("pid");
    pgid.store(pid, std::sync::atomic::Ordering::SeqCst);
    // Wait until the script has started its children.
    let deadline = std::time::Instant::now() + WAIT;
    while group_members(pid).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the children never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    node.rm.resync_next();
    node.rm
        .wait_until("a second registration and heartbeats after it", |rm| {
            rm.heartbeats_after_registration(2) >= 2
        })
        .await;

    // Killed before the node registered again: the registration reports the
    // container complete, and every process of its group that was still
    // there then (SIGKILL is delivered, but a process takes a moment to
    // exit) is gone soon after, long before the node stops.
    assert_eq!(
        node.rm.lock().observed_at_reregistration,
        vec!["launch script alive: false".to_string()],
        "the container still ran when the node registered again"
    );
    wait_for_group_to_exit(pid, "after the resync").await;
    let regs = node.rm.registrations();
    assert_eq!(regs.len(), 2);
    assert_eq!(
        reported(&regs[1], &id),
        Some((
            ContainerStateProto::CComplete as i32,
            exit_status::KILLED_BY_RESOURCEMANAGER
        )),
        "the registration reports the killed container: {:?}",
        regs[1].container_statuses
    );
    assert!(
        regs[1]
            .running_applications
            .iter()
            .filter_map(spindle_nm::wire::app_id_from_proto)
            .any(|a| a == id.app()),
        "the application is still reported, for the RM to clean up"
    );
    let done = node.nm.containers().report(&id).expect("still tracked");
    assert_eq!(done.phase, ContainerPhase::Done);
    assert_eq!(done.exit_status, exit_status::KILLED_BY_RESOURCEMANAGER);
    assert_eq!(node.nm.state(), NmState::Running);
    assert_eq!(node.nm.session().registrations, 2);

    // New containers start under the new registration.
    let next = container(2, 1);
    node.start(next, clc(&["true"]))
        .expect("started after the resync");
    let done = node
        .nm
        .containers()
        .wait_done(&next, WAIT)
        .await
        .expect("done");
    assert_eq!(done.exit_status, 0, "{done:?}");
    assert_eq!(node.nm.stop().await, NmExit::Stopped);
}

#[tokio::test]
async fn resync_with_work_preserving_recovery_keeps_the_containers() {
    let (node, _tmp) = start_node(
        |conf| {
            conf.set(keys::RM_RECOVERY_ENABLED, "true");
            conf.set(keys::RM_WORK_PRESERVING_RECOVERY_ENABLED, "true");
        },
        None,
    )
    .await;
    let id = container(1, 2);
    node.start(id, clc(&[LONG_RUNNER])).expect("started");
    let pid = node
        .wait_phase(&id, ContainerPhase::Running)
        .await
        .pid
        .expect("pid");
    node.rm.resync_next();
    node.rm
        .wait_until("a second registration and heartbeats after it", |rm| {
            rm.heartbeats_after_registration(2) >= 2
        })
        .await;
    let regs = node.rm.registrations();
    assert_eq!(
        reported(&regs[1], &id).map(|(state, _)| state),
        Some(ContainerStateProto::CRunning as i32)
    );
    assert!(!group_members(pid).is_empty(), "the container was killed");
    assert_eq!(
        node.nm.containers().report(&id).map(|r| r.phase),
        Some(ContainerPhase::Running)
    );
    // A clean stop still takes every container with it.
    assert_eq!(node.nm.stop().await, NmExit::Stopped);
    wait_for_group_to_exit(pid, "after the node stopped").await;
}
