//! The apiserver's lists from etcd, as k8s.io/apiserver's `etcd3/store.go` GetList reads
//! them: pages of `limit` keys, the first at the revision asked for (0: etcd's current),
//! each next one from the last key + `\0` pinned to the first's revision; each page a
//! Range, or from 1.37 on an etcd that has it (3.7 on) a RangeStream of the same request
//! (`streamChunks`), which counts nothing: an apiserver refused one (Unimplemented) reads
//! the list through Range from its start and remembers it ([`RangeStreamSupport`]).

use bytes::Bytes;
use etcdlat_core::invariant::Invariant;
use etcdlat_core::workload::kubernetes::Verb;

use super::checks::Checks;
use super::stream::RangeStreamSupport;
use crate::transport::Kv;
use crate::transport::message::{KeyValue, RangeRequest, ResponseHeader};

/// Through RangeStream, when its apiserver's support allows: whose support, and which
/// apiserver it is.
pub(super) type Streaming<'a> = Option<(&'a RangeStreamSupport, u32)>;

/// What one list read.
#[derive(Debug, Default)]
pub(super) struct Listed {
    /// Pages (requests) it took.
    pub pages: u64,
    /// Keys and value bytes it received.
    pub keys: u64,
    pub value_bytes: u64,
    /// The first page's header.
    pub header: Option<ResponseHeader>,
    /// What the first page counted of the range (Range pages only; a RangeStream counts
    /// nothing).
    pub count: Option<u64>,
    /// Pages that took longer than the list SLO: each page is an API call of its own (a
    /// `continue`), timed from its send to its answer.
    pub slow_pages: u64,
    /// The slowest page, microseconds.
    pub slowest_page_us: u64,
}

/// Lists `req`'s range in pages of its limit, through RangeStream with `stream` when its
/// apiserver tries it, showing `each` every key-value; the keys of Range pages are checked
/// to come in order ([`Invariant::ListOrder`]).
pub(super) async fn list(
    kv: &mut Kv,
    req: RangeRequest,
    stream: Streaming<'_>,
    checks: &Checks,
    mut each: impl FnMut(&KeyValue),
) -> Result<Listed, tonic::Status> {
    let tried = stream.filter(|(support, apiserver)| support.supported(*apiserver));
    if let Some((support, apiserver)) = tried {
        match pages(kv, req.clone(), true, checks, &mut each).await {
            Err(refused) if refused.code() == tonic::Code::Unimplemented => {
                support.refused(apiserver);
            }
            listed => return listed,
        }
    }
    pages(kv, req, false, checks, &mut each).await
}

async fn pages(
    kv: &mut Kv,
    mut req: RangeRequest,
    stream: bool,
    checks: &Checks,
    each: &mut impl FnMut(&KeyValue),
) -> Result<Listed, tonic::Status> {
    let mut listed = Listed::default();
    let mut last_key = Bytes::new();
    let limit = Verb::List.slo().map_or(u128::MAX, |(_, limit)| limit.as_micros());
    loop {
        let sent = std::time::Instant::now();
        let (more, header) = if stream {
            let got = kv.range_stream_each(&req, &mut *each).await?;
            listed.keys += got.keys;
            listed.value_bytes += got.value_bytes;
            let more = got.more && !got.last_key.is_empty();
            if !got.last_key.is_empty() {
                last_key = got.last_key;
            }
            (more, got.header)
        } else {
            let resp = kv.range(req.clone()).await?;
            for kv in &resp.kvs {
                each(kv);
                if kv.key <= last_key && !last_key.is_empty() {
                    checks.violated(Invariant::ListOrder);
                }
                last_key = kv.key.clone();
                listed.value_bytes += kv.value.len() as u64;
            }
            listed.keys += resp.kvs.len() as u64;
            if listed.pages == 0 {
                listed.count = Some(resp.count.max(0) as u64);
            }
            (resp.more && !resp.kvs.is_empty(), resp.header)
        };
        let page_us = sent.elapsed().as_micros();
        listed.slow_pages += u64::from(page_us > limit);
        listed.slowest_page_us =
            listed.slowest_page_us.max(u64::try_from(page_us).unwrap_or(u64::MAX));
        listed.pages += 1;
        if listed.pages == 1 {
            if req.revision == 0 {
                req.revision = header.map_or(0, |h| h.revision);
            }
            listed.header = header;
        }
        if !more {
            return Ok(listed);
        }
        req.key = next_key(&last_key);
    }
}

/// The key after `key`: `key + "\0"`, where the apiserver's next page starts.
pub(super) fn next_key(key: &[u8]) -> Bytes {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    Bytes::from(next)
}
