//! An in-process gRPC server that answers etcd's KV API instantly: the ceiling the client
//! can reach, for benchmarks of the client's own cost. It is never used to claim that a
//! feature works against etcd.
//!
//! Put, Range, DeleteRange, Txn and Compact answer at once with an empty response and a
//! header; Status and MemberList describe a one-member cluster (so the driver can connect);
//! everything else is `Unimplemented`.
//!
//! [`NullServer::keeping`] starts one that keeps what is put (a small multi-version store,
//! revisions counted as etcd counts them) and misbehaves as told ([`Misbehave`]): a server
//! that is wrong on purpose, so that tests can show the audit notices.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

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
use etcd_client::proto::{
    PbKeyValue, PbResponseOp, PbTxnOpRequest, PbTxnOpResponse, PbTxnRequestOp,
};
use tonic::codegen::tokio_stream;
use tonic::{Request, Response, Status};

/// The null server's member id.
const MEMBER: u64 = 1;

fn header() -> Option<PbResponseHeader> {
    at(1)
}

fn at(revision: i64) -> Option<PbResponseHeader> {
    Some(PbResponseHeader { cluster_id: 1, member_id: MEMBER, revision, raft_term: 1 })
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

/// How a keeping null server ([`NullServer::keeping`]) goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehave {
    /// Nothing: it keeps every write and answers reads at its current revision.
    Never,
    /// Acknowledges the `n`th put (from 1) with a revision of its own, and never stores it.
    DropPut(u64),
    /// Answers linearizable ranges at the revision before its current one, as a member
    /// behind would (what it returns is that revision's).
    StaleReads,
}

/// The keeping server's store: every change, in revision order.
#[derive(Debug)]
struct Store {
    misbehave: Misbehave,
    revision: i64,
    puts: u64,
    /// (revision, key, value; `None` for a delete).
    changes: Vec<(i64, Vec<u8>, Option<Vec<u8>>)>,
}

impl Store {
    /// `key` at `revision`: its mod revision and value, if it exists there.
    fn get(&self, key: &[u8], revision: i64) -> Option<PbKeyValue> {
        let (rev, _, value) =
            self.changes.iter().rev().find(|(r, k, _)| *r <= revision && k == key)?;
        value.as_ref().map(|value| PbKeyValue {
            key: key.to_vec(),
            mod_revision: *rev,
            value: value.clone(),
            ..Default::default()
        })
    }

    /// A range of one key (ranges of several keys read nothing).
    fn range(&self, req: &PbRangeRequest) -> PbRangeResponse {
        let mut revision = self.revision;
        if self.misbehave == Misbehave::StaleReads && !req.serializable {
            revision = (revision - 1).max(1);
        }
        let read_at = if req.revision > 0 { req.revision } else { revision };
        let kvs: Vec<PbKeyValue> = if req.range_end.is_empty() {
            self.get(&req.key, read_at).into_iter().collect()
        } else {
            Vec::new()
        };
        PbRangeResponse { header: at(revision), count: kvs.len() as i64, kvs, ..Default::default() }
    }

    /// Puts `(key, value)`s at one new revision.
    fn put(&mut self, writes: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> i64 {
        self.revision += 1;
        for (key, value) in writes {
            self.puts += 1;
            if self.misbehave != Misbehave::DropPut(self.puts) {
                self.changes.push((self.revision, key, Some(value)));
            }
        }
        self.revision
    }
}

/// The KV service of a keeping null server.
#[derive(Debug, Clone)]
struct Keeping(Arc<Mutex<Store>>);

impl Keeping {
    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[tonic::codegen::async_trait]
impl PbKvService for Keeping {
    async fn range(&self, req: Request<PbRangeRequest>) -> Answer<PbRangeResponse> {
        Ok(Response::new(self.store().range(req.get_ref())))
    }

    type RangeStreamStream = tokio_stream::Empty<Result<PbRangeStreamResponse, Status>>;

    async fn range_stream(&self, _: Request<PbRangeRequest>) -> Answer<Self::RangeStreamStream> {
        Err(Status::unimplemented("range stream"))
    }

    async fn put(&self, req: Request<PbPutRequest>) -> Answer<PbPutResponse> {
        let PbPutRequest { key, value, .. } = req.into_inner();
        let revision = self.store().put([(key, value)]);
        Ok(Response::new(PbPutResponse { header: at(revision), ..Default::default() }))
    }

    async fn delete_range(&self, req: Request<PbDeleteRequest>) -> Answer<PbDeleteResponse> {
        let mut store = self.store();
        let key = req.into_inner().key;
        let deleted = i64::from(store.get(&key, store.revision).is_some());
        if deleted > 0 {
            store.revision += 1;
            let revision = store.revision;
            store.changes.push((revision, key, None));
        }
        Ok(Response::new(PbDeleteResponse {
            header: at(store.revision),
            deleted,
            ..Default::default()
        }))
    }

    async fn txn(&self, req: Request<PbTxnRequest>) -> Answer<PbTxnResponse> {
        let mut store = self.store();
        let ops = req.into_inner().success;
        let puts: Vec<(Vec<u8>, Vec<u8>)> = ops
            .iter()
            .filter_map(|op| match &op.request {
                Some(PbTxnOpRequest::RequestPut(p)) => Some((p.key.clone(), p.value.clone())),
                _ => None,
            })
            .collect();
        let revision = if puts.is_empty() { store.revision } else { store.put(puts) };
        let responses = ops
            .iter()
            .map(|PbTxnRequestOp { request }| PbResponseOp {
                response: Some(match request {
                    Some(PbTxnOpRequest::RequestRange(r)) => {
                        PbTxnOpResponse::ResponseRange(store.range(r))
                    }
                    _ => PbTxnOpResponse::ResponsePut(PbPutResponse {
                        header: at(revision),
                        ..Default::default()
                    }),
                }),
            })
            .collect();
        Ok(Response::new(PbTxnResponse { header: at(revision), succeeded: true, responses }))
    }

    async fn compact(&self, _: Request<PbCompactionRequest>) -> Answer<PbCompactionResponse> {
        Ok(Response::new(PbCompactionResponse { header: at(self.store().revision) }))
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
        Self::serve(Null)
    }

    /// Starts a server that keeps what is put, and misbehaves as `misbehave` says: to show
    /// that checks notice a wrong server, never to claim that anything works against etcd.
    ///
    /// # Panics
    /// As [`NullServer::start`].
    #[must_use]
    pub fn keeping(misbehave: Misbehave) -> Self {
        Self::serve(Keeping(Arc::new(Mutex::new(Store {
            misbehave,
            revision: 1,
            puts: 0,
            changes: Vec::new(),
        }))))
    }

    fn serve<K: PbKvService>(kv: K) -> Self {
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
                        .add_service(PbKvServer::new(kv))
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
