//! The methods Spindle's clients call, with what Hadoop's protocol
//! interfaces declare about repeating them (`@Idempotent`, `@AtMostOnce`;
//! see [`Method`]).

use crate::retry::Method;

/// `ApplicationClientProtocol` (and `ApplicationBaseProtocol`): all
/// `@Idempotent`.
pub mod application_client {
    use super::Method;

    pub const GET_NEW_APPLICATION: Method = Method::idempotent("getNewApplication");
    pub const SUBMIT_APPLICATION: Method = Method::idempotent("submitApplication");
    pub const FORCE_KILL_APPLICATION: Method = Method::idempotent("forceKillApplication");
    pub const GET_APPLICATION_REPORT: Method = Method::idempotent("getApplicationReport");
    pub const GET_APPLICATIONS: Method = Method::idempotent("getApplications");
}

/// `ApplicationMasterProtocol`: registering is `@Idempotent`; `allocate`
/// and `finishApplicationMaster` are `@AtMostOnce` (the ResourceManager
/// recognises a repeated heartbeat by its response id).
pub mod application_master {
    use super::Method;

    pub const REGISTER_APPLICATION_MASTER: Method = Method::idempotent("registerApplicationMaster");
    pub const ALLOCATE: Method = Method::at_most_once("allocate");
    pub const FINISH_APPLICATION_MASTER: Method = Method::at_most_once("finishApplicationMaster");
}

/// `ContainerManagementProtocol`. Hadoop annotates none of its methods. A
/// start repeated after the node acted on it is refused ("already
/// running"), so it is never sent twice; stopping a stopped container
/// succeeds and a status query changes nothing, so those may be.
pub mod container_management {
    use super::Method;

    pub const START_CONTAINERS: Method = Method::not_idempotent("startContainers");
    pub const STOP_CONTAINERS: Method = Method::idempotent("stopContainers");
    pub const GET_CONTAINER_STATUSES: Method = Method::idempotent("getContainerStatuses");
}

/// `ResourceTracker`: registering and unregistering are `@Idempotent`; a
/// heartbeat is `@AtMostOnce` (recognised by its response id).
pub mod resource_tracker {
    use super::Method;

    pub const REGISTER_NODE_MANAGER: Method = Method::idempotent("registerNodeManager");
    pub const NODE_HEARTBEAT: Method = Method::at_most_once("nodeHeartbeat");
    pub const UN_REGISTER_NODE_MANAGER: Method = Method::idempotent("unRegisterNodeManager");
}
