//! `ApplicationMasterProtocol`: what an ApplicationMaster calls on the
//! ResourceManager's scheduler port, authenticated by its AMRMToken.
//!
//! Registering is `@Idempotent`; `allocate` and `finishApplicationMaster`
//! are `@AtMostOnce`: the ResourceManager recognises a repeated heartbeat by
//! its response id and answers it again without acting twice.

use hadoop_protos::yarn as pb;

use super::{Method, Signature};
use crate::protocols::APPLICATION_MASTER as PROTOCOL;

/// Registers the attempt's AM: its host, RPC port and tracking URL.
pub const REGISTER_APPLICATION_MASTER: Method<
    pb::RegisterApplicationMasterRequestProto,
    pb::RegisterApplicationMasterResponseProto,
> = Method::idempotent(PROTOCOL, "registerApplicationMaster");

/// Unregisters the AM with the application's final status.
pub const FINISH_APPLICATION_MASTER: Method<
    pb::FinishApplicationMasterRequestProto,
    pb::FinishApplicationMasterResponseProto,
> = Method::at_most_once(PROTOCOL, "finishApplicationMaster");

/// The AM heartbeat: asks and releases out, granted and completed containers back.
pub const ALLOCATE: Method<pb::AllocateRequestProto, pb::AllocateResponseProto> =
    Method::at_most_once(PROTOCOL, "allocate");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    REGISTER_APPLICATION_MASTER.signature(),
    FINISH_APPLICATION_MASTER.signature(),
    ALLOCATE.signature(),
];
