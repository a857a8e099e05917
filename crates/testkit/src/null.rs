//! An in-process gRPC server that answers etcd's KV API instantly: the ceiling the client
//! can reach, for benchmarks of the client's own cost. It is never used to claim that a
//! feature works against etcd.
//!
//! Put, Range, DeleteRange, Txn and Compact answer at once with an empty response and a
//! header; Status and MemberList describe a one-member cluster (so the driver can connect);
//! everything else is `Unimplemented`.

use std::net::SocketAddr;

use etcd_client::proto::{
    PbAlarmRequest, PbAlarmResponse, PbClusterServer, PbClusterService, PbCompactionRequest,
    PbCompactionResponse, PbDefragmentRequest, PbDefragmentResponse, PbDeleteRequest,
    PbDeleteResponse, PbDowngradeRequest, PbDowngradeResponse, PbHashKvRequest, PbHashKvResponse,
    PbHashRequest, PbHashResponse, PbKvServer, PbKvService, PbMaintenanceServer,
    PbMaintenanceService, PbMember, PbMemberAddRequest, PbMemberAddResponse, PbMemberListRequest,
    PbMemberListResponse, PbMemberPromoteRequest, PbMemberPromoteResponse, PbMemberRemoveRequest,
    PbMemberRemoveResponse, PbMemberUpdateRequest, PbMemberUpdateResponse, PbMoveLeaderRequest,
    PbMoveLeaderResponse, PbPutRequest, PbPutResponse, PbRangeRequest, PbRangeResponse,
    PbRangeStreamResponse, PbResponseHeader, PbSnapshotRequest, PbSnapshotResponse,
    PbStatusRequest, PbStatusResponse, PbTxnRequest, PbTxnResponse,
};
use tonic::codegen::tokio_stream;
use tonic::{Request, Response, Status};

/// The null server's member id.
const MEMBER: u64 = 1;

fn header() -> Option<PbResponseHeader> {
    Some(PbResponseHeader { cluster_id: 1, member_id: MEMBER, revision: 1, raft_term: 1 })
}

type Answer<T> = Result<Response<T>, Status>;

#[derive(Debug, Default, Clone, Copy)]
struct Null;

#[tonic::codegen::async_trait]
impl PbKvService for Null {
    async fn range(&self, _: Request<PbRangeRequest>) -> Answer<PbRangeResponse> {
        Ok(Response::new(PbRangeResponse { header: header(), ..Default::default() }))
    }

    type RangeStreamStream = tokio_stream::Empty<Result<PbRangeStreamResponse, Status>>;

    async fn range_stream(&self, _: Request<PbRangeRequest>) -> Answer<Self::RangeStreamStream> {
        Err(Status::unimplemented("range stream"))
    }

    async fn put(&self, _: Request<PbPutRequest>) -> Answer<PbPutResponse> {
        Ok(Response::new(PbPutResponse { header: header(), ..Default::default() }))
    }

    async fn delete_range(&self, _: Request<PbDeleteRequest>) -> Answer<PbDeleteResponse> {
        Ok(Response::new(PbDeleteResponse { header: header(), ..Default::default() }))
    }

    async fn txn(&self, _: Request<PbTxnRequest>) -> Answer<PbTxnResponse> {
        Ok(Response::new(PbTxnResponse { header: header(), succeeded: true, ..Default::default() }))
    }

    async fn compact(&self, _: Request<PbCompactionRequest>) -> Answer<PbCompactionResponse> {
        Ok(Response::new(PbCompactionResponse { header: header() }))
    }
}

#[tonic::codegen::async_trait]
impl PbMaintenanceService for Null {
    async fn alarm(&self, _: Request<PbAlarmRequest>) -> Answer<PbAlarmResponse> {
        Err(Status::unimplemented("alarm"))
    }

    async fn status(&self, _: Request<PbStatusRequest>) -> Answer<PbStatusResponse> {
        Ok(Response::new(PbStatusResponse {
            header: header(),
            version: "null".to_owned(),
            leader: MEMBER,
            raft_term: 1,
            ..Default::default()
        }))
    }

    async fn defragment(&self, _: Request<PbDefragmentRequest>) -> Answer<PbDefragmentResponse> {
        Err(Status::unimplemented("defragment"))
    }

    async fn hash(&self, _: Request<PbHashRequest>) -> Answer<PbHashResponse> {
        Err(Status::unimplemented("hash"))
    }

    async fn hash_kv(&self, _: Request<PbHashKvRequest>) -> Answer<PbHashKvResponse> {
        Err(Status::unimplemented("hash kv"))
    }

    type SnapshotStream = tokio_stream::Empty<Result<PbSnapshotResponse, Status>>;

    async fn snapshot(&self, _: Request<PbSnapshotRequest>) -> Answer<Self::SnapshotStream> {
        Err(Status::unimplemented("snapshot"))
    }

    async fn move_leader(&self, _: Request<PbMoveLeaderRequest>) -> Answer<PbMoveLeaderResponse> {
        Err(Status::unimplemented("move leader"))
    }

    async fn downgrade(&self, _: Request<PbDowngradeRequest>) -> Answer<PbDowngradeResponse> {
        Err(Status::unimplemented("downgrade"))
    }
}

#[tonic::codegen::async_trait]
impl PbClusterService for Null {
    async fn member_add(&self, _: Request<PbMemberAddRequest>) -> Answer<PbMemberAddResponse> {
        Err(Status::unimplemented("member add"))
    }

    async fn member_remove(
        &self,
        _: Request<PbMemberRemoveRequest>,
    ) -> Answer<PbMemberRemoveResponse> {
        Err(Status::unimplemented("member remove"))
    }

    async fn member_update(
        &self,
        _: Request<PbMemberUpdateRequest>,
    ) -> Answer<PbMemberUpdateResponse> {
        Err(Status::unimplemented("member update"))
    }

    async fn member_list(&self, _: Request<PbMemberListRequest>) -> Answer<PbMemberListResponse> {
        Ok(Response::new(PbMemberListResponse {
            header: header(),
            members: vec![PbMember { id: MEMBER, name: "null".to_owned(), ..Default::default() }],
        }))
    }

    async fn member_promote(
        &self,
        _: Request<PbMemberPromoteRequest>,
    ) -> Answer<PbMemberPromoteResponse> {
        Err(Status::unimplemented("member promote"))
    }
}

/// A null server running on its own thread and runtime (so that its CPU time is not the
/// client's), stopped when dropped.
#[derive(Debug)]
pub struct NullServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NullServer {
    /// Starts the server on a free loopback port.
    ///
    /// # Panics
    /// When no port or thread can be had.
    #[must_use]
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the listener's address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("null-etcd".to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the null server's runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    let incoming = tonic::transport::server::TcpIncoming::from(listener)
                        .with_nodelay(Some(true));
                    let _ = tonic::transport::Server::builder()
                        .add_service(PbKvServer::new(Null))
                        .add_service(PbMaintenanceServer::new(Null))
                        .add_service(PbClusterServer::new(Null))
                        .serve_with_incoming_shutdown(incoming, async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })
            .expect("the null server's thread");
        Self { addr, stop: Some(stop), thread: Some(thread) }
    }

    /// Its endpoint, `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for NullServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
