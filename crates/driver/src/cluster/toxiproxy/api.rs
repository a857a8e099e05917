//! The HTTP API of a toxiproxy server, as far as fault steps need it: that it answers, its
//! proxies, and toxics created on and removed from them.
//!
//! HTTP/1.1 on a tokio `TcpStream`, one connection per request (`Connection: close`): a
//! fault step makes a handful of requests, which needs no pool and no HTTP crate.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::error::ToxiproxyError;

/// How long one request to the API may take, connecting included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest answer read from the API (a list of proxies with their toxics).
const MAX_ANSWER: usize = 8 << 20;

/// A toxiproxy server's API, at `http://HOST:PORT`.
#[derive(Debug, Clone)]
pub(super) struct Client {
    /// The URL as given, for messages.
    api: String,
    /// `HOST:PORT`, to connect to and to send as `Host`.
    authority: String,
}

/// An answer: status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Client {
    /// A client of the API at `api` (`http://HOST:PORT`, a trailing `/` allowed); nothing is
    /// sent yet.
    pub(super) fn new(api: &str) -> Result<Self, ToxiproxyError> {
        let invalid = |reason| ToxiproxyError::Api { api: api.to_owned(), reason };
        let rest = api
            .strip_prefix("http://")
            .ok_or_else(|| invalid("must be http://HOST:PORT (toxiproxy's API is plain HTTP)"))?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#', '@']) {
            return Err(invalid("must be http://HOST:PORT, without a path"));
        }
        let port = authority.rsplit_once(':').map(|(_, p)| p).filter(|_| !authority.ends_with(']'));
        match port.map(str::parse::<u16>) {
            Some(Ok(p)) if p > 0 && !authority.starts_with(':') => {}
            _ => return Err(invalid("needs a host and a port (toxiproxy's API listens on 8474)")),
        }
        Ok(Self { api: api.to_owned(), authority: authority.to_owned() })
    }

    /// The API's URL as given.
    pub(super) fn api(&self) -> &str {
        &self.api
    }

    /// The server's version (`GET /version`): that it answers at all.
    pub(super) async fn version(&self) -> Result<String, ToxiproxyError> {
        let answer = self.call("GET", "/version", None).await?;
        Ok(String::from_utf8_lossy(&answer.body).trim().to_owned())
    }

    /// The names of the server's proxies (`GET /proxies`).
    pub(super) async fn proxies(&self) -> Result<Vec<String>, ToxiproxyError> {
        let (request, answer) = ("GET /proxies", self.call("GET", "/proxies", None).await?);
        match self.json(request, &answer)? {
            Value::Object(proxies) => Ok(proxies.keys().cloned().collect()),
            _ => Err(self.malformed(request, "no JSON object of proxies")),
        }
    }

    /// The names of a proxy's toxics (`GET /proxies/{proxy}/toxics`); `None` when the server
    /// has no such proxy.
    pub(super) async fn toxics(&self, proxy: &str) -> Result<Option<Vec<String>>, ToxiproxyError> {
        let path = format!("/proxies/{}/toxics", escape(proxy));
        let answer = match self.call("GET", &path, None).await {
            Err(ToxiproxyError::Refused { status: 404, .. }) => return Ok(None),
            other => other?,
        };
        let request = format!("GET {path}");
        let Value::Array(toxics) = self.json(&request, &answer)? else {
            return Err(self.malformed(&request, "no JSON array of toxics"));
        };
        let names = toxics.iter().filter_map(|t| t.get("name")?.as_str().map(str::to_owned));
        Ok(Some(names.collect()))
    }

    /// Creates toxic `name` of toxiproxy's type `kind` on `stream` (`upstream`, client to
    /// server, or `downstream`) of `proxy` (`POST /proxies/{proxy}/toxics`), always in effect
    /// (toxicity 1).
    pub(super) async fn create_toxic(
        &self,
        proxy: &str,
        (name, kind, stream): (&str, &str, &str),
        attributes: &Value,
    ) -> Result<(), ToxiproxyError> {
        let body = json!({
            "name": name,
            "type": kind,
            "stream": stream,
            "toxicity": 1.0,
            "attributes": attributes,
        });
        let path = format!("/proxies/{}/toxics", escape(proxy));
        self.call("POST", &path, Some(&body)).await.map(drop)
    }

    /// Removes a toxic (`DELETE /proxies/{proxy}/toxics/{toxic}`); false when it (or the
    /// proxy) was already gone.
    pub(super) async fn delete_toxic(
        &self,
        proxy: &str,
        name: &str,
    ) -> Result<bool, ToxiproxyError> {
        let path = format!("/proxies/{}/toxics/{}", escape(proxy), escape(name));
        match self.call("DELETE", &path, None).await {
            Ok(_) => Ok(true),
            Err(ToxiproxyError::Refused { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One request on a connection of its own, within [`REQUEST_TIMEOUT`]; an answer that
    /// is not 2xx is [`ToxiproxyError::Refused`].
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ToxiproxyError> {
        let request = || format!("{method} {path}");
        let exchange = async {
            let mut stream = TcpStream::connect(&self.authority)
                .await
                .map_err(|error| ToxiproxyError::Unreachable { api: self.api.clone(), error })?;
            let body = body.map(Value::to_string).unwrap_or_default();
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: etcdlat\r\nAccept: application/json\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                self.authority,
                body.len()
            );
            let mut raw = Vec::new();
            let io = async {
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(body.as_bytes()).await?;
                (&mut stream).take(MAX_ANSWER as u64 + 1).read_to_end(&mut raw).await
            };
            io.await
                .map_err(|error| ToxiproxyError::Unreachable { api: self.api.clone(), error })?;
            if raw.len() > MAX_ANSWER {
                return Err(self.malformed(&request(), "an answer of more than 8 MiB"));
            }
            parse_answer(&raw).map_err(|what| self.malformed(&request(), what))
        };
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| ToxiproxyError::Timeout { api: self.api.clone(), request: request() })??;
        if (200..300).contains(&answer.status) {
            return Ok(answer);
        }
        // toxiproxy's errors are `{"error": "...", "status": N}`.
        let message = serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).trim().to_owned());
        Err(ToxiproxyError::Refused {
            api: self.api.clone(),
            request: request(),
            status: answer.status,
            message,
        })
    }

    fn json(&self, request: &str, answer: &Answer) -> Result<Value, ToxiproxyError> {
        serde_json::from_slice(&answer.body).map_err(|_| self.malformed(request, "no JSON"))
    }

    fn malformed(&self, request: &str, what: &'static str) -> ToxiproxyError {
        ToxiproxyError::Malformed { api: self.api.clone(), request: request.to_owned(), what }
    }
}

/// The status and body of an HTTP/1.1 answer read to its end (`Content-Length`, chunked, or
/// until the server closed the connection).
fn parse_answer(raw: &[u8]) -> Result<Answer, &'static str> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no HTTP answer")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "an HTTP head that is not text")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .filter(|l| l.starts_with("HTTP/1."))
        .and_then(|l| l.split(' ').nth(1)?.parse().ok())
        .ok_or("no HTTP status line")?;
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| "a bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        rest.get(..n).ok_or("a body shorter than its Content-Length")?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Answer { status, body })
}

/// A chunked body's bytes.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").ok_or("a cut chunk")?;
        let size = std::str::from_utf8(&rest[..eol]).map_err(|_| "a bad chunk size")?;
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| "a bad chunk size")?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).ok_or("a cut chunk")?);
        rest = rest.get(size + 2..).ok_or("a cut chunk")?;
    }
}

/// `segment` escaped for a URL path (anything but letters, digits and `-._~`).
fn escape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_urls_are_http_host_port() {
        for ok in ["http://127.0.0.1:8474", "http://toxiproxy:8474/", "http://[::1]:8474"] {
            Client::new(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "127.0.0.1:8474",
            "https://h:8474",
            "http://h",
            "http://h:0",
            "http://:8474",
            "http://h:8474/api",
            "http://[::1]",
        ] {
            let e = Client::new(bad).unwrap_err();
            assert!(e.to_string().starts_with("network.toxiproxy = "), "{bad}: {e}");
        }
    }

    #[test]
    fn answers_are_read_by_length_chunks_or_close() {
        let a = parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra").unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, b"{}".as_slice()));
        let chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n\
                        4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n";
        let a = parse_answer(chunked).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (404, b"{\"a\":1}".as_slice()));
        let a = parse_answer(b"HTTP/1.0 204 No Content\r\n\r\n").unwrap();
        assert_eq!((a.status, a.body.len()), (204, 0));
        assert!(parse_answer(b"SSH-2.0-OpenSSH\r\n").is_err());
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(
            parse_answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{}").is_err()
        );
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(escape("etcd0-client_1.x~"), "etcd0-client_1.x~");
        assert_eq!(escape("a b/c"), "a%20b%2Fc");
    }
}
