//! A protocol's methods: the typed handlers a server dispatches calls to.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use prost::Message;

use super::CallContext;
use crate::error::RpcError;
use crate::methods::Method;

pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, RpcError>> + Send>>;
pub(crate) type Handler = Arc<dyn Fn(CallContext, Bytes) -> HandlerFuture + Send + Sync>;

/// One protocol's methods: a handler per method name, which the server finds
/// by the protocol and method names of each call's request header.
pub struct Service {
    protocol: String,
    pub(crate) methods: HashMap<String, Handler>,
}

impl Service {
    /// A service of `protocol` (see [`crate::protocols`]) with no method yet.
    pub fn new(protocol: impl Into<String>) -> Self {
        Service {
            protocol: protocol.into(),
            methods: HashMap::new(),
        }
    }

    /// The protocol name calls must carry to reach this service.
    pub fn protocol(&self) -> &str {
        &self.protocol
    }

    /// Registers `handler` for `method`, a method of the table
    /// ([`crate::methods`]) of this service's protocol: the handler must
    /// take the method's request and answer its response, or this does not
    /// compile. Decoding and errors as for [`Service::method`].
    pub fn handle<Req, Resp, F, Fut>(self, method: &Method<Req, Resp>, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        debug_assert_eq!(
            method.protocol, self.protocol,
            "{} registered on a service of another protocol",
            method.name
        );
        self.method(method.name, handler)
    }

    /// Registers a handler for the method named `name`, its message types
    /// taken from the handler: the raw form of [`Service::handle`], for a
    /// method outside the table (the wire tests serve Java's captures). The
    /// request body is decoded as `Req` before the handler runs; a body that
    /// does not decode is answered with an error naming the message type, and
    /// the connection stays open.
    pub fn method<Req, Resp, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let boxed: Handler = Arc::new(move |ctx: CallContext, body: Bytes| {
            let handler = handler.clone();
            Box::pin(async move {
                let req = Req::decode(body).map_err(|e| {
                    let type_name = std::any::type_name::<Req>();
                    let short = type_name.rsplit("::").next().unwrap_or(type_name);
                    RpcError::io(format!(
                        "cannot decode {short} for {}.{}: {e}",
                        ctx.protocol, ctx.method
                    ))
                })?;
                let resp = handler(ctx, req).await?;
                Ok(resp.encode_to_vec())
            })
        });
        self.methods.insert(name.to_string(), boxed);
        self
    }

    /// Registers methods that exist in Hadoop's protocol but that Spindle does not
    /// serve: they answer a clear YarnException naming the method (never a hang).
    /// Spindle's servers name them by the table's constants
    /// (`methods::application_client::GET_DELEGATION_TOKEN.name`).
    pub fn unsupported(mut self, names: &[&str]) -> Self {
        for name in names {
            let protocol = self.protocol.clone();
            let method = name.to_string();
            let boxed: Handler = Arc::new(move |_ctx, _body| {
                let err = RpcError::not_supported(&protocol, &method);
                Box::pin(async move { Err(err) })
            });
            self.methods.insert(name.to_string(), boxed);
        }
        self
    }
}

/// A [`Service`] whose handlers share a state `S` (the daemon's context):
/// each handler is a named `async fn(Arc<S>, CallContext, Req) -> Result<Resp,
/// RpcError>`, registered in one line, so a reader finds the handler of any
/// method by its name.
///
/// ```
/// # use std::sync::Arc;
/// # use spindle_ipc::methods::application_client::GET_NEW_APPLICATION;
/// # use spindle_ipc::{protocols, CallContext, RpcError, Service};
/// # use hadoop_protos::yarn as pb;
/// struct Daemon;
/// async fn get_new_application(
///     _d: Arc<Daemon>,
///     _call: CallContext,
///     _req: pb::GetNewApplicationRequestProto,
/// ) -> Result<pb::GetNewApplicationResponseProto, RpcError> {
///     Ok(Default::default())
/// }
/// let service: Service = Service::new(protocols::APPLICATION_CLIENT)
///     .with_state(Arc::new(Daemon))
///     .handle(&GET_NEW_APPLICATION, get_new_application)
///     .into();
/// ```
pub struct StatefulService<S> {
    service: Service,
    state: Arc<S>,
}

impl Service {
    /// Handlers registered on the result receive `state` as their first argument.
    pub fn with_state<S: Send + Sync + 'static>(self, state: Arc<S>) -> StatefulService<S> {
        StatefulService {
            service: self,
            state,
        }
    }
}

impl<S: Send + Sync + 'static> StatefulService<S> {
    /// Registers `handler` for `method` (see [`Service::handle`]).
    pub fn handle<Req, Resp, F, Fut>(mut self, method: &Method<Req, Resp>, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(Arc<S>, CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let state = self.state.clone();
        self.service = self
            .service
            .handle(method, move |call, req| handler(state.clone(), call, req));
        self
    }

    /// Registers a handler by method name (see [`Service::method`]).
    pub fn method<Req, Resp, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(Arc<S>, CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let state = self.state.clone();
        self.service = self
            .service
            .method(name, move |call, req| handler(state.clone(), call, req));
        self
    }

    /// See [`Service::unsupported`].
    pub fn unsupported(mut self, names: &[&str]) -> Self {
        self.service = self.service.unsupported(names);
        self
    }
}

impl<S> From<StatefulService<S>> for Service {
    fn from(s: StatefulService<S>) -> Service {
        s.service
    }
}
