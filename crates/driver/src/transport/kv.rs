//! The KV client of the hot path: one future per request, the same type for every
//! put, range and delete, carrying the run's auth token.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderValue;

use super::auth::Auth;
use super::channel::Channel;
use super::frame::{Body, decode, frame, frame_guarded, frame_put};
use super::message::{
    GuardedWrite, PUT, PutRequest, PutResponse, RANGE, RangeRequest, RangeResponse, TXN,
    TxnRequest, TxnResponse,
};
use super::unary::{Outgoing, Unary};

/// A KV client over one connection, carrying the run's token when it has one.
#[derive(Clone, Debug)]
pub(crate) struct Kv {
    conn: Channel,
    /// The token last used and its generation, so a request reads the shared token only
    /// when it has changed.
    token: Option<(u64, Option<HeaderValue>)>,
}

impl Kv {
    pub(crate) fn new(conn: Channel) -> Self {
        Self { conn, token: None }
    }

    /// The connection requests go on.
    pub(super) fn channel(&self) -> &Channel {
        &self.conn
    }

    /// Sends `body` to `path`, with the run's token when it has one, and answers the
    /// response message's bytes. The one await of the hot path: every logical client holds
    /// this future, so it is the same type for every request and decoding happens after.
    pub(crate) fn call(&mut self, path: &'static str, body: Body) -> Call<'_> {
        Call { kv: self, path, body, unary: Unary::new(), token: None, renewed: false }
    }
}

/// The future of [`Kv::call`], written by hand to stay small (see [`Unary`]).
pub(crate) struct Call<'k> {
    kv: &'k mut Kv,
    path: &'static str,
    body: Body,
    unary: Unary,
    /// The run's token being fetched (a connection's first request) or renewed (after
    /// "invalid auth token"): boxed, as it is rare and may authenticate.
    token: Option<TokenFetch>,
    /// Whether the token was renewed for this request already: it is resent once.
    renewed: bool,
}

type TokenFetch =
    Pin<Box<dyn Future<Output = Result<(u64, Option<HeaderValue>), tonic::Status>> + Send>>;

impl Future for Call<'_> {
    type Output = Result<Bytes, tonic::Status>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            if let Some(fetch) = &mut this.token {
                let fetched = ready!(fetch.as_mut().poll(cx));
                this.token = None;
                this.kv.token = Some(fetched?);
            }
            let Kv { conn, token } = &mut *this.kv;
            let send_with = if this.unary.is_unsent() {
                match cached_token(conn, token) {
                    Some(token) => token,
                    None => {
                        this.token = Some(fetch_token(conn, None));
                        continue;
                    }
                }
            } else {
                None
            };
            // The body is kept only while a stale token may make it go out once more.
            let keep_body = conn.auth().is_some() && !this.renewed;
            let out =
                Outgoing { path: this.path, body: &mut this.body, token: send_with, keep_body };
            match ready!(this.unary.poll(cx, conn, out)) {
                // A member restarted or the token expired: renew it once and send again.
                Err(status) if Auth::is_stale_token(&status) && !this.renewed => {
                    // A token is cached only when the connection carries auth.
                    let Some((used, _)) = token else { return Poll::Ready(Err(status)) };
                    this.renewed = true;
                    this.token = Some(fetch_token(conn, Some(*used)));
                    this.unary = Unary::new();
                }
                result => return Poll::Ready(result),
            }
        }
    }
}

/// The token to send while the run's token has not changed since `cached` was taken (and
/// none without auth); `None` when it must be fetched.
#[inline]
fn cached_token<'t>(
    conn: &Channel,
    cached: &'t Option<(u64, Option<HeaderValue>)>,
) -> Option<Option<&'t HeaderValue>> {
    let Some(auth) = conn.auth() else { return Some(None) };
    match cached {
        Some((generation, token)) if *generation == auth.generation() && *generation != 0 => {
            Some(token.as_ref())
        }
        _ => None,
    }
}

/// The run's current token and its generation, authenticating first if there is none
/// yet, or renewing it first if `stale` (the generation a rejected token came from).
pub(super) fn fetch_token(conn: &Channel, stale: Option<u64>) -> TokenFetch {
    let conn = conn.clone();
    Box::pin(async move {
        let Some(auth) = conn.auth() else { return Ok((0, None)) };
        if let Some(stale) = stale {
            auth.refresh(stale, |request| conn.authenticate(request)).await?;
        }
        auth.token(|request| conn.authenticate(request)).await
    })
}

impl Kv {
    /// The run's token for a call made outside [`Kv::call`] (a stream): the cached one
    /// while it is current, else fetched (none without auth).
    pub(super) async fn token(&mut self) -> Result<Option<HeaderValue>, tonic::Status> {
        if let Some(token) = cached_token(&self.conn, &self.token) {
            return Ok(token.cloned());
        }
        let fetched = fetch_token(&self.conn, None).await?;
        let token = fetched.1.clone();
        self.token = Some(fetched);
        Ok(token)
    }

    pub(crate) async fn put(&mut self, req: PutRequest) -> Result<PutResponse, tonic::Status> {
        decode(&self.call(PUT, frame_put(&req)).await?)
    }

    pub(crate) async fn range(
        &mut self,
        req: RangeRequest,
    ) -> Result<RangeResponse, tonic::Status> {
        decode(&self.call(RANGE, frame(&req)).await?)
    }

    pub(crate) async fn txn(&mut self, req: TxnRequest) -> Result<TxnResponse, tonic::Status> {
        decode(&self.call(TXN, frame(&req)).await?)
    }

    /// One of the apiserver's writes, a transaction framed by hand ([`GuardedWrite`]).
    pub(crate) async fn guarded(
        &mut self,
        write: &GuardedWrite<'_>,
    ) -> Result<TxnResponse, tonic::Status> {
        decode(&self.call(TXN, frame_guarded(write)).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_in_flight_stays_small() {
        // Every logical client holds its call's future, 100,000 at once in the largest runs
        // (benches/README.md): 72 and 184 bytes when written, with some room for compilers.
        assert!(std::mem::size_of::<Unary>() <= 96, "{}", std::mem::size_of::<Unary>());
        let call = std::mem::size_of::<Call<'static>>();
        assert!(call <= 224, "{call}");
    }
}
