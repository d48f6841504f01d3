//! The table of protocol methods: each method of each protocol Spindle
//! serves or calls, defined once as a [`Method`] constant that carries the
//! protocol name, the method name, the request and response messages as type
//! parameters, and what Hadoop declares about repeating it ([`Idempotence`]).
//!
//! Clients and servers both name a method through its constant, so a method
//! name is written nowhere else and the types of a call are checked where it
//! is made: [`crate::RpcProxy::call`] takes a `&Method<Req, Resp>` and the
//! request it types, and answers the response it types;
//! [`crate::Service::handle`] registers a handler whose request and response
//! must be the method's.
//!
//! One module per protocol, its methods in the order of the `rpc`s of the
//! protocol's `.proto` service; each module's `ALL` lists them in that order
//! (with their messages as [`Signature`]s), and a test holds the table to
//! those `.proto` files: every `rpc` is here with the same request and
//! response types, and nothing else is.

use std::marker::PhantomData;

pub use crate::retry::Idempotence;

pub mod application_client;
pub mod application_master;
pub mod container_management;
pub mod ha_service;
pub mod resource_manager_administration;
pub mod resource_tracker;

/// One method of one protocol: `Req` is the message a call sends, `Resp`
/// the one its answer carries. The constants of this module's protocol
/// modules are the ones Spindle uses; a test or tool may define one for a
/// protocol of its own.
pub struct Method<Req, Resp> {
    /// The protocol name that calls carry in their request header
    /// (`declaringClassProtocolName`; see [`crate::protocols`]).
    pub protocol: &'static str,
    /// The method name, as the `rpc` of the protocol's `.proto` service.
    pub name: &'static str,
    /// Whether a call may be sent again after it may have reached the server.
    pub idempotence: Idempotence,
    /// The message types, without owning or sending any: `fn(Req) -> Resp`
    /// keeps a `Method` `Copy`, `Send` and `Sync` whatever they are.
    types: PhantomData<fn(Req) -> Resp>,
}

impl<Req, Resp> Method<Req, Resp> {
    /// A method of `protocol` named `name` that Hadoop marks `@Idempotent`.
    pub const fn idempotent(protocol: &'static str, name: &'static str) -> Self {
        Method::new(protocol, name, Idempotence::Idempotent)
    }

    /// A method Hadoop marks `@AtMostOnce`: the server recognises a repeat.
    pub const fn at_most_once(protocol: &'static str, name: &'static str) -> Self {
        Method::new(protocol, name, Idempotence::AtMostOnce)
    }

    /// A method with neither mark: never sent twice once it may have run.
    pub const fn not_idempotent(protocol: &'static str, name: &'static str) -> Self {
        Method::new(protocol, name, Idempotence::NotIdempotent)
    }

    const fn new(protocol: &'static str, name: &'static str, idempotence: Idempotence) -> Self {
        Method {
            protocol,
            name,
            idempotence,
            types: PhantomData,
        }
    }

    /// The method's name and the names of its message types, for lists of a
    /// protocol's methods (whose messages differ from method to method).
    pub const fn signature(&self) -> Signature {
        Signature {
            name: self.name,
            request: std::any::type_name::<Req>,
            response: std::any::type_name::<Resp>,
        }
    }
}

// Written out rather than derived: a derive would ask `Req` and `Resp` to be
// `Clone` and `Debug` too, which the messages need not be for a method to be.
impl<Req, Resp> Clone for Method<Req, Resp> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Req, Resp> Copy for Method<Req, Resp> {}

impl<Req, Resp> std::fmt::Debug for Method<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Method")
            .field("protocol", &self.protocol)
            .field("name", &self.name)
            .field("idempotence", &self.idempotence)
            .field("request", &std::any::type_name::<Req>())
            .field("response", &std::any::type_name::<Resp>())
            .finish()
    }
}

/// A method without its type parameters: its name and the Rust paths of its
/// request and response messages (`hadoop_protos::yarn::AllocateRequestProto`).
/// The `ALL` list of each protocol module holds these, so that one list can
/// name methods whose messages differ.
#[derive(Clone, Copy)]
pub struct Signature {
    /// The method name.
    pub name: &'static str,
    /// The request message's type name ([`std::any::type_name`]).
    pub request: fn() -> &'static str,
    /// The response message's type name.
    pub response: fn() -> &'static str,
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}({}) -> {}",
            self.name,
            (self.request)(),
            (self.response)()
        )
    }
}
