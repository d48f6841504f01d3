//! Service-level authorization on a real server: the check runs once per
//! connection, after its context names the user and protocol, with what
//! the connection authenticated as; a refused caller gets Hadoop's FATAL
//! AuthorizationException and no call is served.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hadoop_protos::common::UserInformationProto;
use spindle_ipc::server::{ConnectionCaller, ServiceAuthorization};
use spindle_ipc::{
    class, CallContext, ClientOptions, IpcClient, IpcError, Method, RpcError, RpcServer,
    ServerConfig, Service,
};

const PROTOCOL: &str = "org.apache.spindle.test.AuthorizedProtocol";
const WHOAMI: Method<UserInformationProto, UserInformationProto> =
    Method::idempotent(PROTOCOL, "whoami");

/// Lets only alice in, and counts the connections it was asked about.
#[derive(Debug, Default)]
struct OnlyAlice(AtomicUsize);

impl ServiceAuthorization for OnlyAlice {
    fn authorize<'a>(
        &'a self,
        caller: ConnectionCaller<'a>,
        protocol: &'a str,
        _from: IpAddr,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            if caller.user == "alice" {
                Ok(())
            } else {
                Err(format!(
                    "User {} (auth:SIMPLE) is not authorized for protocol interface {protocol}: \
                     denied by configured ACL",
                    caller.user
                ))
            }
        })
    }
}

#[tokio::test]
async fn a_refused_caller_gets_the_authorization_exception_and_no_call() {
    let served = Arc::new(AtomicUsize::new(0));
    let counted = served.clone();
    let service = Service::new(PROTOCOL).handle(
        &WHOAMI,
        move |ctx: CallContext, _req: UserInformationProto| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, RpcError>(UserInformationProto {
                    effective_user: Some(ctx.user),
                    real_user: None,
                })
            }
        },
    );
    let authz = Arc::new(OnlyAlice::default());
    let config = ServerConfig {
        authorization: Some(authz.clone()),
        ..ServerConfig::default()
    };
    let server = RpcServer::bind("127.0.0.1:0".parse().expect("addr"), vec![service], config)
        .await
        .expect("bind");
    let addr = server.local_addr().to_string();
    let call = |user: &'static str| {
        let addr = addr.clone();
        async move {
            let client = IpcClient::connect(&addr, ClientOptions::new(user, PROTOCOL)).await?;
            client
                .call_method(&WHOAMI, &UserInformationProto::default())
                .await
        }
    };
    let run = async {
        let ok = call("alice").await.expect("alice is let in");
        assert_eq!(ok.effective_user.as_deref(), Some("alice"));
        let err = call("bob").await.expect_err("bob is refused");
        match &err {
            IpcError::Remote {
                class_name,
                message,
            } => {
                assert_eq!(class_name, class::AUTHORIZATION);
                assert!(
                    message.contains("User bob (auth:SIMPLE) is not authorized"),
                    "{message}"
                );
            }
            IpcError::Closed { detail, .. } => {
                assert!(
                    detail.contains("User bob (auth:SIMPLE) is not authorized"),
                    "{detail}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("in time");
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "only alice's call was served"
    );
    assert_eq!(
        authz.0.load(Ordering::SeqCst),
        2,
        "asked once per connection"
    );
}
