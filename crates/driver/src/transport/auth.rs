//! etcd authentication: one token per run, shared by every connection and renewed when the
//! server stops accepting it.
//!
//! etcd checks a password with bcrypt, which costs the server tens of milliseconds of CPU;
//! authenticating once per connection would load a 1,000-connection run with a minute of
//! bcrypt before it starts. So a run authenticates once, and whoever first sees the token
//! rejected ("invalid auth token": a member restarted, or a JWT expired) renews it while
//! the others wait for the new one.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use http::HeaderValue;
use http::header::HeaderName;
use tonic::{Code, Status};

use super::message::{AuthenticateRequest, AuthenticateResponse};
use super::security::Credentials;

/// The header a request's token goes in.
pub(super) static TOKEN: HeaderName = HeaderName::from_static("token");

/// The token of a run.
pub(crate) struct Auth {
    credentials: Credentials,
    /// Bumped at every new token; 0 until the first.
    generation: AtomicU64,
    /// The current token; `None` inside when the cluster has authentication disabled.
    token: Mutex<Option<Option<HeaderValue>>>,
    /// Held while a token is being fetched, so one request fetches and the rest wait.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").field("user", &self.credentials.user()).finish_non_exhaustive()
    }
}

impl Auth {
    pub(crate) fn new(credentials: Credentials) -> Self {
        Self {
            credentials,
            generation: AtomicU64::new(0),
            token: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The user the run authenticates as.
    pub(crate) fn user(&self) -> &str {
        self.credentials.user()
    }

    /// The generation of the current token: a request compares it with the one its cached
    /// token came from, without a lock.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current token and its generation, calling `authenticate` (with the run's
    /// credentials) first when there is none yet. `None` as token: the cluster does not
    /// have authentication enabled.
    pub(crate) async fn token<F, Fut>(
        &self,
        authenticate: F,
    ) -> Result<(u64, Option<HeaderValue>), Status>
    where
        F: FnOnce(AuthenticateRequest) -> Fut,
        Fut: Future<Output = Result<AuthenticateResponse, Status>>,
    {
        if let Some(current) = self.current() {
            return Ok(current);
        }
        self.refresh(0, authenticate).await?;
        self.current().ok_or_else(|| Status::unauthenticated("no token after authenticating"))
    }

    fn current(&self) -> Option<(u64, Option<HeaderValue>)> {
        let token = self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let token = token.as_ref()?.clone();
        Some((self.generation(), token))
    }

    /// Fetches a new token with `authenticate` unless one newer than generation `stale` has
    /// arrived meanwhile.
    pub(crate) async fn refresh<F, Fut>(&self, stale: u64, authenticate: F) -> Result<(), Status>
    where
        F: FnOnce(AuthenticateRequest) -> Fut,
        Fut: Future<Output = Result<AuthenticateResponse, Status>>,
    {
        let _fetching = self.fetching.lock().await;
        if self.generation() != stale {
            return Ok(());
        }
        let request = AuthenticateRequest {
            name: self.credentials.user().to_owned(),
            password: self.credentials.password().to_owned(),
        };
        let answer = authenticate(request).await;
        let token = match answer {
            Ok(r) => Some(HeaderValue::from_str(&r.token).map_err(|_| {
                Status::internal("the server's auth token is not a valid header value")
            })?),
            // etcd's own client goes on without a token when auth is off.
            Err(s)
                if s.code() == Code::FailedPrecondition && s.message().contains("not enabled") =>
            {
                tracing::warn!(
                    user = self.credentials.user(),
                    "the cluster does not have authentication enabled; going on without a token"
                );
                None
            }
            Err(s) => return Err(s),
        };
        *self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Whether `status` says the token a request carried is no longer accepted.
    pub(crate) fn is_stale_token(status: &Status) -> bool {
        status.code() == Code::Unauthenticated && status.message().contains("invalid auth token")
    }
}
