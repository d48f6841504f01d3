//! Exit statuses YARN itself assigns to containers (Hadoop's `ContainerExitStatus`),
//! as AMs see them in completed container statuses. Any other value is the
//! container process's own exit code.

pub const SUCCESS: i32 = 0;
/// Not set: the container never ran or has not finished.
pub const INVALID: i32 = -1000;
/// Released by the application, lost with its node, or ended with its application.
pub const ABORTED: i32 = -100;
pub const DISKS_FAILED: i32 = -101;
pub const PREEMPTED: i32 = -102;
pub const KILLED_EXCEEDED_VMEM: i32 = -103;
pub const KILLED_EXCEEDED_PMEM: i32 = -104;
pub const KILLED_BY_APPMASTER: i32 = -105;
pub const KILLED_BY_RESOURCEMANAGER: i32 = -106;
pub const KILLED_AFTER_APP_COMPLETION: i32 = -107;
pub const KILLED_BY_CONTAINER_SCHEDULER: i32 = -108;
pub const KILLED_FOR_EXCESS_LOGS: i32 = -109;
