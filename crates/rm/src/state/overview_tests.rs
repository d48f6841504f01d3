//! The web UI's queries (`overview.rs`): cluster totals, attempts with
//! their AM nodes, and the users of each leaf queue.

use spindle_common::resource::Resource;

use super::test_support::{capacity_queues, state_with};
use crate::model::access::Caller;
use crate::model::apps::AppState;
use crate::model::refusal::Refusal;

fn two_queues() -> super::test_support::TestRm {
    state_with(capacity_queues(&[
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.b.capacity", "50"),
        ("root.a.maximum-am-resource-percent", "1.0"),
        ("root.b.maximum-am-resource-percent", "1.0"),
    ]))
}

#[test]
fn totals_count_nodes_resources_and_apps_by_state() {
    let mut s = two_queues();
    let empty = s.overview_totals();
    assert_eq!(empty.nodes.active, 0);
    assert_eq!(empty.capability, Resource::new(0, 0));
    assert!(empty.apps_by_state.iter().all(|(_, n)| *n == 0));
    assert_eq!(empty.apps_by_state.len(), AppState::ALL.len());

    s.add_node("h1", Resource::new(8192, 8), 0);
    s.submit_to("a", "bob", None, 1);
    s.submit_to("b", "carol", None, 1);
    s.submit_to("a", "bob", None, 1);
    assert_eq!(s.run_ams(2).len(), 3);
    let o = s.overview_totals();
    assert_eq!(o.nodes.active, 1);
    assert_eq!(o.capability, Resource::new(8192, 8));
    assert_eq!(o.used, Resource::new(3 * 1024, 3));
    let count = |state| {
        o.apps_by_state
            .iter()
            .find(|(s, _)| *s == state)
            .map(|(_, n)| *n)
    };
    assert_eq!(count(AppState::Running), Some(3));
    assert_eq!(count(AppState::Finished), Some(0));
}

#[test]
fn attempts_name_the_am_node_and_need_view_access() {
    let mut s = two_queues();
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    let id = s.submit_to("a", "bob", None, 1);
    let attempts = s.run_ams(2);
    let list = s
        .attempts_with_am_nodes(&id, &Caller::user("bob"))
        .expect("the owner views its attempts");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].report.id, attempts[0]);
    assert_eq!(list[0].am_node.as_ref(), Some(&node));
    assert_eq!(list[0].am_node_http_address.as_deref(), Some("h1:8042"));

    let unknown = spindle_common::ids::ApplicationId::new(id.cluster_timestamp, 999);
    assert_eq!(
        s.attempts_with_am_nodes(&unknown, &Caller::user("bob")),
        Err(Refusal::ApplicationNotFound(unknown))
    );
}

#[test]
fn queue_users_list_unfinished_apps_per_leaf() {
    let mut s = two_queues();
    s.add_node("h1", Resource::new(8192, 8), 0);
    s.submit_to("a", "bob", None, 1);
    s.submit_to("a", "bob", None, 1);
    s.submit_to("b", "carol", None, 1);
    assert_eq!(s.run_ams(2).len(), 3);
    s.submit_to("b", "carol", None, 3);
    let users = s.active_queue_users();
    let a = users.get("root.a").expect("root.a has users");
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].user.as_str(), a[0].apps, a[0].running), ("bob", 2, 2));
    let b = users.get("root.b").expect("root.b has users");
    assert_eq!(
        (b[0].user.as_str(), b[0].apps, b[0].running),
        ("carol", 2, 1)
    );
    assert!(!users.contains_key("root"));
}

/// Under the fair scheduler's defaults each user's applications go to
/// `root.<user>`, a queue placement creates on demand: the queue file does
/// not have it, the scheduler does. Its applications count in its parent
/// (`root`) and its users are listed, as for queues of the file.
#[test]
fn queues_placement_created_count_in_their_parents_and_list_their_users() {
    use spindle_common::conf::Configuration;

    use crate::queue_files::fair;

    let xml = "<allocations><queue name=\"etl\"/></allocations>";
    let queues = fair::from_str(xml, "fair-scheduler.xml", &Configuration::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut s = super::test_support::state_with(queues);
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    let app = s.submit_to("default", "dora", None, 1);
    // The fair scheduler places on node heartbeats.
    s.heartbeat(&node, Vec::new(), 2);
    assert_eq!(s.run_ams(3).len(), 1);
    let queue = s.apps.get(&app).expect("submitted").queue.clone();
    assert_eq!(
        queue, "root.dora",
        "placed in the user's queue, made on demand"
    );
    assert_eq!(s.leaf_of(&queue).as_deref(), Some("root.dora"));

    let admin = Caller::user("yarn");
    let root = s
        .queue_info("root", false, true, false, &admin)
        .expect("root");
    assert_eq!(root.statistics.submitted, 1, "{root:?}");
    assert_eq!(root.statistics.running, 1, "{root:?}");
    let leaf = s
        .queue_info("root.dora", false, false, false, &admin)
        .expect("the on-demand queue");
    assert_eq!(leaf.statistics.running, 1, "{leaf:?}");
    let users = s.queue_users();
    assert_eq!(
        users.get("root.dora").map(|u| u[0].user.as_str()),
        Some("dora")
    );
}
