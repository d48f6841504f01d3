//! Pipelining on one connection, the per-connection in-flight limit, and the idle timeout.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::*;
use hadoop_protos::yarn::{
    GetApplicationsRequestProto, GetApplicationsResponseProto, GetClusterNodesRequestProto,
    GetClusterNodesResponseProto, GetNewApplicationRequestProto, GetNewApplicationResponseProto,
    NodeStateProto,
};
use spindle_ipc::{IpcError, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

/// Checks the reply to the slow call (getNewApplication).
fn assert_slow_reply(reply: &Reply, cid: i32) {
    reply.assert_success(cid as u32, &RAW_CLIENT_ID);
    let resp: GetNewApplicationResponseProto = reply.body();
    let id = resp.application_id.expect("an application id");
    assert_eq!((id.id, id.cluster_timestamp), (Some(2), Some(CLUSTER_TS)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_calls_are_answered_as_they_complete() {
    bounded(async {
        // Slow enough that the fast calls overtake it however loaded the machine is.
        let bench = Bench::with_slow(config(), Duration::from_secs(4)).await;
        let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
        let nodes_req = GetClusterNodesRequestProto {
            node_states: vec![NodeStateProto::NsUnhealthy as i32],
        };
        // Three calls in one write; the first is slow.
        let mut bytes = call_frame(0, SLOW_METHOD, &GetNewApplicationRequestProto {});
        bytes.extend(call_frame(
            1,
            "getApplications",
            &tagged_apps_request("one"),
        ));
        bytes.extend(call_frame(2, "getClusterNodes", &nodes_req));
        peer.send(&bytes).await;

        let first = peer.reply().await;
        let second = peer.reply().await;
        let third = peer.reply().await;
        let early: HashSet<u32> = [first.header.call_id, second.header.call_id].into();
        assert_eq!(
            early,
            HashSet::from([1, 2]),
            "the fast calls overtake the slow one"
        );
        assert_slow_reply(&third, 0);
        for reply in [&first, &second] {
            if reply.header.call_id == 1 {
                assert_tagged_success(reply, 1, "one");
            } else {
                reply.assert_success(2, &RAW_CLIENT_ID);
                let resp: GetClusterNodesResponseProto = reply.body();
                assert_eq!(resp.node_reports, vec![node_report(&nodes_req)]);
            }
        }
        peer.expect_quiet(Duration::from_millis(100)).await;
        bench.healthy("after pipelining").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_limit_serialises_calls_on_a_connection() {
    bounded(async {
        let bench = Bench::with_slow(
            ServerConfig {
                max_in_flight_per_connection: 1,
                ..config()
            },
            Duration::from_millis(300),
        )
        .await;
        let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
        let mut bytes = call_frame(0, SLOW_METHOD, &GetNewApplicationRequestProto {});
        bytes.extend(call_frame(1, "getApplications", &tagged_apps_request("a")));
        bytes.extend(call_frame(2, "getApplications", &tagged_apps_request("b")));
        peer.send(&bytes).await;
        // With one slot, the server does not start call 1 before call 0 has finished.
        assert_slow_reply(&peer.reply().await, 0);
        assert_tagged_success(&peer.reply().await, 1, "a");
        assert_tagged_success(&peer.reply().await, 2, "b");
        // Other connections have their own slots.
        bench.healthy("with a saturated connection").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipc_client_runs_fifty_concurrent_calls() {
    bounded(async {
        let ts = start(config(), Duration::from_millis(1000)).await;
        let client = good_client(&ts.addr).await;
        let mut set = JoinSet::new();
        // A slow call in the mix must not hold up the others.
        {
            let client = client.clone();
            set.spawn(async move {
                let resp: GetNewApplicationResponseProto = client
                    .call(SLOW_METHOD, &GetNewApplicationRequestProto {})
                    .await
                    .expect("slow call");
                assert!(resp.application_id.is_some());
                "slow".to_string()
            });
        }
        for i in 0..50 {
            let client = client.clone();
            set.spawn(async move {
                if i % 5 == 4 {
                    let req = GetClusterNodesRequestProto {
                        node_states: vec![1 + (i / 5) % 8],
                    };
                    let resp: GetClusterNodesResponseProto = client
                        .call("getClusterNodes", &req)
                        .await
                        .unwrap_or_else(|e| panic!("nodes call {i}: {e}"));
                    assert_eq!(resp.node_reports, vec![node_report(&req)], "call {i}");
                } else {
                    let tag = format!("call-{i}");
                    let req = GetApplicationsRequestProto {
                        application_tags: vec![tag.clone()],
                        ..Default::default()
                    };
                    let resp: GetApplicationsResponseProto = client
                        .call("getApplications", &req)
                        .await
                        .unwrap_or_else(|e| panic!("apps call {i}: {e}"));
                    assert_eq!(resp.applications.len(), 1, "call {i}");
                    assert_eq!(resp.applications[0].application_tags, vec![tag], "call {i}");
                }
                format!("{i}")
            });
        }
        let mut done = Vec::new();
        while let Some(r) = step("a concurrent call", set.join_next()).await {
            done.push(r.expect("call task"));
        }
        assert_eq!(done.len(), 51);
        // The fifty fast calls were not queued behind the slow one (1 s).
        assert_eq!(done.last().map(String::as_str), Some("slow"), "{done:?}");
        // Each call had its own id on the one connection.
        let ids: HashSet<i32> = ts.probe.calls().iter().map(|c| c.call_id).collect();
        assert_eq!(ids.len(), 51);
        assert!(client.is_open());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipc_client_pipelines_past_a_slow_call() {
    bounded(async {
        let ts = start(config(), Duration::from_millis(800)).await;
        let client = good_client(&ts.addr).await;
        let slow_client = client.clone();
        let slow = tokio::spawn(async move {
            slow_client
                .call::<_, GetNewApplicationResponseProto>(
                    SLOW_METHOD,
                    &GetNewApplicationRequestProto {},
                )
                .await
        });
        // Wait until the slow call is running on the server.
        let deadline = Instant::now() + STEP;
        while !ts.probe.calls().iter().any(|c| c.method == SLOW_METHOD) {
            assert!(
                Instant::now() < deadline,
                "the slow call never reached the server"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for i in 0..5 {
            assert_served(&client, &format!("fast-{i}")).await;
        }
        assert!(
            !slow.is_finished(),
            "fast calls completed while the slow one runs"
        );
        let resp = step("slow call", slow)
            .await
            .expect("slow task")
            .expect("slow call");
        assert!(resp.application_id.is_some());
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Idle timeout
// ---------------------------------------------------------------------------------------

fn short_idle() -> ServerConfig {
    ServerConfig {
        idle_timeout: Duration::from_millis(300),
        ..config()
    }
}

#[tokio::test]
async fn idle_connection_is_closed() {
    bounded(async {
        let ts = start(short_idle(), Duration::ZERO).await;
        let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
        assert_call_works(&mut peer, 0, "before idling").await;
        let idle_from = Instant::now();
        assert_eq!(peer.read_to_end().await, b"", "closed without a message");
        let idle = idle_from.elapsed();
        assert!(
            idle >= Duration::from_millis(250),
            "closed after only {idle:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn connection_without_a_context_also_times_out() {
    bounded(async {
        let ts = start(short_idle(), Duration::ZERO).await;
        let mut peer = RawPeer::connect(&ts.addr).await;
        peer.send(&preamble(0)).await;
        assert_eq!(peer.read_to_end().await, b"");
    })
    .await;
}

/// A Hadoop client pings only while it waits for a call, so pings from a connection with
/// nothing in flight are not activity: such a connection is closed when its idle time is
/// up. (Pings used to keep any connection open for ever, which let a flood of pinging
/// connections hold every slot of the server.)
#[tokio::test]
async fn pings_alone_do_not_keep_an_idle_connection_open() {
    bounded(async {
        let ts = start(short_idle(), Duration::ZERO).await;
        let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
        assert_call_works(&mut peer, 0, "before pinging").await;
        let ping = frame_of(&[&prost::Message::encode_to_vec(&rpc_header(
            -4,
            &RAW_CLIENT_ID,
        ))]);
        // A ping every 100 ms, a third of the idle timeout, until the server closes.
        let deadline = Instant::now() + STEP;
        loop {
            assert!(
                Instant::now() < deadline,
                "a connection that only pings was never closed"
            );
            // Once the server has closed, a write may fail: the read below tells.
            let _ = peer.stream.write_all(&ping).await;
            let mut buf = [0u8; 64];
            match tokio::time::timeout(Duration::from_millis(100), peer.stream.read(&mut buf)).await
            {
                Err(_) => continue,
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => panic!("a ping got an answer: {:02x?}", &buf[..n]),
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_with_a_call_in_flight_is_not_idle() {
    bounded(async {
        let ts = start(short_idle(), Duration::from_secs(4)).await;
        let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
        peer.call(0, SLOW_METHOD, &GetNewApplicationRequestProto {})
            .await;
        let deadline = Instant::now() + STEP;
        while !ts.probe.calls().iter().any(|c| c.method == SLOW_METHOD) {
            assert!(
                Instant::now() < deadline,
                "the slow call never reached the server"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Time is the subject here: the wait runs well past the idle timeout
        // (300 ms) while call 0 runs on the server (4 s), and the connection
        // must not be closed meanwhile.
        tokio::time::sleep(Duration::from_millis(700)).await;
        // The server still reads this connection: a new call is answered before call 0.
        assert_call_works(&mut peer, 1, "while a slow call runs").await;
        assert_slow_reply(&peer.reply().await, 0);
        // With nothing in flight it becomes idle again and is closed.
        assert_eq!(peer.read_to_end().await, b"");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipc_client_with_a_slow_call_outlives_the_idle_timeout() {
    bounded(async {
        let ts = start(short_idle(), Duration::from_millis(1000)).await;
        let client = good_client(&ts.addr).await;
        let slow: GetNewApplicationResponseProto = step(
            "slow call",
            client.call(SLOW_METHOD, &GetNewApplicationRequestProto {}),
        )
        .await
        .expect("a call longer than the idle timeout completes");
        assert!(slow.application_id.is_some());
        assert!(client.is_open());
        assert_served(&client, "right after the slow call").await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Server lifecycle
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// As Hadoop's `Server.stop()` (which closes every connection), a dropped
/// server stops accepting and closes the connections it had: a client sees
/// the RM go away, and retries or fails over, instead of being served by a
/// server its owner let go.
async fn dropping_the_server_stops_accepting_and_closes_open_connections() {
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let addr = ts.addr.clone();
        let client = good_client(&addr).await;
        assert_served(&client, "before the drop").await;
        drop(ts.server);

        // New connections are refused once the accept task has gone.
        let deadline = Instant::now() + STEP;
        loop {
            match tokio::net::TcpStream::connect(&addr).await {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
                // A connection caught in the backlog while the listener closes is reset.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    assert!(Instant::now() < deadline, "never refused after the drop");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("unexpected connect error {e}"),
                Ok(_) => {
                    assert!(Instant::now() < deadline, "still accepting after the drop");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        // The connection opened before is closed: the client notices, and a call fails.
        let deadline = Instant::now() + STEP;
        while client.is_open() {
            assert!(
                Instant::now() < deadline,
                "the open connection was never closed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let req = GetApplicationsRequestProto::default();
        let err = step(
            "a call after the drop",
            client.call::<_, GetApplicationsResponseProto>("getApplications", &req),
        )
        .await
        .expect_err("the server is gone");
        assert!(matches!(err, IpcError::Closed { .. }), "{err:?}");
    })
    .await;
}
