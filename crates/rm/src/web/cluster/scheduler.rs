//! `/ws/v1/cluster/scheduler`: Hadoop's `SchedulerTypeInfo` in the shape of
//! the scheduler in use: `CapacitySchedulerInfo` (a queue tree of
//! `CapacitySchedulerQueueInfo` / `CapacitySchedulerLeafQueueInfo`),
//! `FairSchedulerInfo` (`FairSchedulerQueueInfo` /
//! `FairSchedulerLeafQueueInfo`) or `FifoSchedulerInfo`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use spindle_common::resource::Resource;
use spindle_scheduler::{AppOrdering, SchedulerKind};

use super::dao::resource;
use crate::model::reports::{QueueInfo, QueueUser};

/// What the scheduler resource is built from.
pub struct SchedulerView {
    pub kind: SchedulerKind,
    /// The root queue with its whole subtree.
    pub root: QueueInfo,
    /// Users of each leaf queue, by path.
    pub users: BTreeMap<String, Vec<QueueUser>>,
    /// What the nodes offer, in total.
    pub cluster: Resource,
    pub used: Resource,
    pub nodes: i64,
    pub containers: i64,
    pub min_allocation: Resource,
    pub max_allocation: Resource,
}

/// `{"schedulerInfo": ...}`, the inside of `{"scheduler": ...}`.
pub fn scheduler_info(v: &SchedulerView) -> Value {
    let info = match v.kind {
        SchedulerKind::Capacity => capacity_root(v),
        SchedulerKind::Fair => json!({
            "type": "fairScheduler",
            "rootQueue": fair_queue(v, &v.root),
        }),
        SchedulerKind::Fifo => fifo(v),
    };
    json!({ "schedulerInfo": info })
}

fn percent(part: i64, whole: i64) -> f32 {
    if whole > 0 {
        (part as f64 * 100.0 / whole as f64) as f32
    } else {
        0.0
    }
}

fn fifo(v: &SchedulerView) -> Value {
    let total = v.cluster.memory_mb;
    let used_capacity = if total > 0 {
        json!(v.used.memory_mb as f32 / total as f32)
    } else {
        // Java's 0f/0f.
        json!("NaN")
    };
    json!({
        "type": "fifoScheduler",
        "capacity": 1.0,
        "usedCapacity": used_capacity,
        "qstate": v.root.queue.state.name(),
        "minQueueMemoryCapacity": v.min_allocation.memory_mb,
        "maxQueueMemoryCapacity": v.max_allocation.memory_mb,
        "numNodes": v.nodes,
        "usedNodeCapacity": v.used.memory_mb,
        "availNodeCapacity": v.cluster.saturating_sub_non_negative(v.used).memory_mb,
        "totalNodeCapacity": total,
        "numContainers": v.containers,
    })
}

fn capacity_root(v: &SchedulerView) -> Value {
    let q = &v.root.queue;
    let used = percent(q.used.memory_mb, v.cluster.memory_mb);
    json!({
        "type": "capacityScheduler",
        "capacity": 100.0,
        "usedCapacity": used,
        "maxCapacity": 100.0,
        "queueName": "root",
        "queuePath": "root",
        "queues": children(v, &v.root, capacity_queue),
        "capacities": partitions(100.0, used, 100.0, 100.0, used, 100.0),
        "health": {"lastrun": 0, "operationsInfo": [], "lastRunDetails": []},
        "maximumAllocation": resource(v.max_allocation),
        "queuePriority": 0,
        "orderingPolicyInfo": "utilization",
        "mode": "percentage",
        "queueType": "parent",
        "creationMethod": "static",
    })
}

/// `{"queue": [...]}` of a queue's children, or null without children.
fn children(
    v: &SchedulerView,
    q: &QueueInfo,
    each: fn(&SchedulerView, &QueueInfo) -> Value,
) -> Value {
    if q.children.is_empty() {
        return Value::Null;
    }
    json!({"queue": q.children.iter().map(|c| each(v, c)).collect::<Vec<_>>()})
}

fn partitions(
    capacity: f32,
    used: f32,
    max: f32,
    absolute: f32,
    absolute_used: f32,
    absolute_max: f32,
) -> Value {
    json!({"queueCapacitiesByPartition": [{
        "partitionName": "",
        "capacity": capacity,
        "usedCapacity": used,
        "maxCapacity": max,
        "absoluteCapacity": absolute,
        "absoluteUsedCapacity": absolute_used,
        "absoluteMaxCapacity": absolute_max,
        "maxAMLimitPercentage": 10.0,
    }]})
}

fn capacity_queue(v: &SchedulerView, info: &QueueInfo) -> Value {
    let q = &info.queue;
    let capacity = (q.capacity * 100.0) as f32;
    let max_capacity = (q.maximum_capacity * 100.0) as f32;
    let absolute = (q.absolute_capacity * 100.0) as f32;
    let absolute_max = (q.absolute_maximum_capacity * 100.0) as f32;
    let used_capacity = percent(q.used.memory_mb, q.guaranteed.memory_mb);
    let absolute_used = percent(q.used.memory_mb, v.cluster.memory_mb);
    let mut o = Map::new();
    if q.leaf {
        o.insert("type".into(), json!("capacitySchedulerLeafQueueInfo"));
    }
    o.insert("queuePath".into(), json!(q.path));
    o.insert("capacity".into(), json!(capacity));
    o.insert("usedCapacity".into(), json!(used_capacity));
    o.insert("maxCapacity".into(), json!(max_capacity));
    o.insert("absoluteCapacity".into(), json!(absolute));
    o.insert("absoluteMaxCapacity".into(), json!(absolute_max));
    o.insert("absoluteUsedCapacity".into(), json!(absolute_used));
    o.insert("numApplications".into(), json!(q.apps));
    o.insert(
        "maxParallelApps".into(),
        json!(q.max_running_apps.map_or(i64::from(i32::MAX), |m| m as i64)),
    );
    o.insert("queueName".into(), json!(q.name));
    o.insert("isAbsoluteResource".into(), json!(false));
    o.insert("state".into(), json!(q.state.name()));
    o.insert("resourcesUsed".into(), resource(q.used));
    o.insert("hideReservationQueues".into(), json!(false));
    o.insert("nodeLabels".into(), json!(["*"]));
    o.insert("allocatedContainers".into(), json!(0));
    o.insert("reservedContainers".into(), json!(0));
    o.insert("pendingContainers".into(), json!(0));
    o.insert(
        "capacities".into(),
        partitions(
            capacity,
            used_capacity,
            max_capacity,
            absolute,
            absolute_used,
            absolute_max,
        ),
    );
    o.insert(
        "resources".into(),
        json!({"resourceUsagesByPartition": [{
            "partitionName": "",
            "used": resource(q.used),
            "reserved": resource(Resource::default()),
            "pending": resource(Resource::default()),
            "amUsed": resource(q.am_used),
        }]}),
    );
    o.insert("minEffectiveCapacity".into(), resource(q.guaranteed));
    o.insert("maxEffectiveCapacity".into(), resource(q.maximum));
    o.insert("maximumAllocation".into(), resource(v.max_allocation));
    o.insert("queuePriority".into(), json!(0));
    o.insert(
        "orderingPolicyInfo".into(),
        json!(match q.ordering {
            AppOrdering::Fifo => "fifo",
            AppOrdering::Fair | AppOrdering::Drf => "fair",
        }),
    );
    o.insert("autoCreateChildQueueEnabled".into(), json!(false));
    o.insert("mode".into(), json!("percentage"));
    o.insert(
        "queueType".into(),
        json!(if q.leaf { "leaf" } else { "parent" }),
    );
    o.insert(
        "creationMethod".into(),
        json!(if q.dynamic { "dynamicLegacy" } else { "static" }),
    );
    if q.leaf {
        let users = v.users.get(&q.path).map(Vec::as_slice).unwrap_or_default();
        let containers: i64 = 0;
        o.insert("numActiveApplications".into(), json!(q.running_apps));
        o.insert(
            "numPendingApplications".into(),
            json!(q.apps.saturating_sub(q.running_apps)),
        );
        o.insert("numContainers".into(), json!(containers));
        o.insert("maxApplications".into(), json!(10000));
        o.insert("maxApplicationsPerUser".into(), json!(10000));
        o.insert("userLimit".into(), json!(100));
        o.insert(
            "users".into(),
            if users.is_empty() {
                Value::Null
            } else {
                json!({"user": users.iter().map(user_info).collect::<Vec<_>>()})
            },
        );
        o.insert("userLimitFactor".into(), json!(1.0));
        o.insert("configuredMaxAMResourceLimit".into(), json!(0.1));
        o.insert("usedAMResource".into(), resource(q.am_used));
        o.insert("preemptionDisabled".into(), json!(true));
        o.insert("intraQueuePreemptionDisabled".into(), json!(true));
        o.insert("defaultPriority".into(), json!(0));
        o.insert("isAutoCreatedLeafQueue".into(), json!(false));
        o.insert("maxApplicationLifetime".into(), json!(-1));
        o.insert("defaultApplicationLifetime".into(), json!(-1));
    } else {
        o.insert("queues".into(), children(v, info, capacity_queue));
    }
    Value::Object(o)
}

/// `UserInfo` of a capacity scheduler leaf.
fn user_info(u: &QueueUser) -> Value {
    json!({
        "username": u.user,
        "resourcesUsed": resource(u.used),
        "numPendingApplications": u.pending_apps,
        "numActiveApplications": u.active_apps,
        "AMResourceUsed": resource(u.am_used),
        "userWeight": 1.0,
        "isActive": u.active_apps > 0,
    })
}

fn fair_queue(v: &SchedulerView, info: &QueueInfo) -> Value {
    let q = &info.queue;
    let mut o = Map::new();
    if q.leaf {
        o.insert("type".into(), json!("fairSchedulerLeafQueueInfo"));
    }
    o.insert(
        "maxApps".into(),
        json!(q.max_running_apps.map_or(i64::from(i32::MAX), |m| m as i64)),
    );
    o.insert("minResources".into(), resource(q.min_share));
    o.insert("maxResources".into(), resource(q.maximum));
    o.insert("usedResources".into(), resource(q.used));
    o.insert("amUsedResources".into(), resource(q.am_used));
    o.insert("amMaxResources".into(), resource(Resource::default()));
    o.insert("demandResources".into(), resource(q.used));
    o.insert("steadyFairResources".into(), resource(q.guaranteed));
    o.insert("fairResources".into(), resource(q.guaranteed));
    o.insert("clusterResources".into(), resource(v.cluster));
    o.insert("reservedResources".into(), resource(Resource::default()));
    o.insert("maxContainerAllocation".into(), resource(v.max_allocation));
    o.insert("allocatedContainers".into(), json!(0));
    o.insert("reservedContainers".into(), json!(0));
    o.insert("pendingContainers".into(), json!(0));
    o.insert("queueName".into(), json!(q.path));
    o.insert(
        "schedulingPolicy".into(),
        json!(match q.ordering {
            AppOrdering::Fifo => "fifo",
            AppOrdering::Fair => "fair",
            AppOrdering::Drf => "drf",
        }),
    );
    o.insert("preemptable".into(), json!(true));
    if q.leaf {
        o.insert(
            "numPendingApps".into(),
            json!(q.apps.saturating_sub(q.running_apps)),
        );
        o.insert("numActiveApps".into(), json!(q.running_apps));
    } else {
        o.insert("childQueues".into(), children(v, info, fair_queue));
    }
    Value::Object(o)
}
