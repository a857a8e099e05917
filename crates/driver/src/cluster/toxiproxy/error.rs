//! Why toxiproxy could not be used: its API's URL, the server, or what `[network.proxies]`
//! names.

/// Why toxiproxy could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToxiproxyError {
    /// `network.toxiproxy` is not `http://HOST:PORT`.
    #[error("network.toxiproxy = {api:?}: {reason}")]
    Api {
        /// The URL as given.
        api: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// Nothing answers at the API's address.
    #[error("cannot reach toxiproxy at {api}: {error}")]
    Unreachable {
        /// The API's URL.
        api: String,
        /// Why the connection failed.
        error: std::io::Error,
    },

    /// The API took longer than 5 s to answer a request.
    #[error("toxiproxy at {api} did not answer {request} within 5s")]
    Timeout {
        /// The API's URL.
        api: String,
        /// The request, as `METHOD /path`.
        request: String,
    },

    /// The API answered with an error.
    #[error("toxiproxy at {api} refused {request}: HTTP {status}: {message}")]
    Refused {
        /// The API's URL.
        api: String,
        /// The request, as `METHOD /path`.
        request: String,
        /// The HTTP status.
        status: u16,
        /// toxiproxy's own message (the answer's `error`).
        message: String,
    },

    /// The answer is not the HTTP or JSON toxiproxy sends.
    #[error("toxiproxy at {api} answered {request} with {what}; is it toxiproxy's API?")]
    Malformed {
        /// The API's URL.
        api: String,
        /// The request, as `METHOD /path`.
        request: String,
        /// What was wrong with the answer.
        what: &'static str,
    },

    /// `network.proxies` names a proxy the server does not have.
    #[error(
        "toxiproxy at {api} has no proxy {proxy:?} (network.proxies.{member}); its proxies: {known}"
    )]
    NoProxy {
        /// The API's URL.
        api: String,
        /// The proxy named.
        proxy: String,
        /// The member it was named for.
        member: String,
        /// The proxies the server has, comma-separated.
        known: String,
    },

    /// `network.proxies` maps a member the cluster does not have.
    #[error("network.proxies.{member}: the cluster has no member {member:?} (members: {members})")]
    NoMember {
        /// The member named.
        member: String,
        /// The cluster's members, comma-separated.
        members: String,
    },
}
