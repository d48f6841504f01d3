//! The response frames a server writes: a call's header, an ERROR reply (the
//! connection stays open) and a FATAL one (the connection closes after it).

use bytes::Bytes;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::RpcResponseHeaderProto;
use tokio::sync::mpsc;

use crate::error::RpcError;
use crate::frame::{encode_frame_raw, IPC_VERSION};

pub(super) fn response_header(
    cid: i32,
    client_id: &[u8],
    retry: i32,
    status: RpcStatusProto,
) -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        // The response call id is uint32 on the wire: −33 goes out as 4294967263.
        call_id: cid as u32,
        status: status as i32,
        server_ipc_version_num: Some(u32::from(IPC_VERSION)),
        client_id: Some(client_id.to_vec()),
        retry_count: Some(retry),
        ..Default::default()
    }
}

pub(super) async fn send_error(
    tx: &mpsc::Sender<Bytes>,
    cid: i32,
    client_id: &[u8],
    retry: i32,
    err: &RpcError,
) {
    let mut header = response_header(cid, client_id, retry, RpcStatusProto::Error);
    header.exception_class_name = Some(err.class_name.clone());
    header.error_msg = Some(err.message.clone());
    header.error_detail = Some(err.code as i32);
    let _ = tx.send(encode_frame_raw(&header, None)).await;
}

pub(super) fn fatal_frame(
    cid: i32,
    client_id: &[u8],
    class_name: &str,
    msg: &str,
    code: RpcErrorCodeProto,
) -> Bytes {
    let mut header = response_header(cid, client_id, -1, RpcStatusProto::Fatal);
    header.exception_class_name = Some(class_name.to_string());
    header.error_msg = Some(msg.to_string());
    header.error_detail = Some(code as i32);
    encode_frame_raw(&header, None)
}
