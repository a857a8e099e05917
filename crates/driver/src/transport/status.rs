//! gRPC statuses from what the server sent: HTTP statuses, `grpc-status` headers and
//! trailers, and HTTP/2 errors, mapped as gRPC maps them.

use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};
use tonic::{Code, Status};

use super::http2::{self, Error, Meta};

static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

pub(super) fn check_http(status: http::StatusCode) -> Result<(), Status> {
    if status == http::StatusCode::OK {
        return Ok(());
    }
    // gRPC's mapping of HTTP statuses for responses that are not gRPC.
    let code = match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Err(Status::new(code, format!("HTTP status {status}")))
}

/// The gRPC status in `headers`, if they carry one.
pub(super) fn grpc_status(headers: &HeaderMap) -> Option<Result<(), Status>> {
    grpc_status_of(headers.get(&GRPC_STATUS), headers.get(&GRPC_MESSAGE))
}

/// The gRPC status in a response's head or trailers, if they carry one.
pub(super) fn meta_status(meta: &Meta) -> Option<Result<(), Status>> {
    grpc_status_of(meta.grpc_status.as_ref(), meta.grpc_message.as_ref())
}

/// The gRPC status that `grpc-status` and `grpc-message` say.
fn grpc_status_of(
    raw: Option<&HeaderValue>,
    message: Option<&HeaderValue>,
) -> Option<Result<(), Status>> {
    let raw = raw?;
    let Some(code) = raw.to_str().ok().and_then(|c| c.parse::<i32>().ok()) else {
        // As gRPC says a status it cannot read.
        let raw = String::from_utf8_lossy(raw.as_bytes());
        return Some(Err(Status::internal(format!("malformed grpc-status {raw:?}"))));
    };
    if code == 0 {
        return Some(Ok(()));
    }
    let message = message.map(|m| percent_decode(m.as_bytes())).unwrap_or_default();
    Some(Err(Status::new(Code::from_i32(code), message)))
}

/// gRPC's percent-encoding of `grpc-message`.
fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%'
            && let Some(hex) = raw.get(i + 1..i + 3)
            && hex.iter().all(u8::is_ascii_hexdigit)
        {
            // Two hex digits: from_str_radix alone would take a sign ("%+A").
            let hex = std::str::from_utf8(hex).unwrap_or_default();
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An HTTP/2 error as a gRPC status, as gRPC maps them.
pub(super) fn http2_status(e: Error) -> Status {
    let code = match &e {
        Error::Reset(http2::REFUSED_STREAM) => Code::Unavailable,
        Error::Reset(http2::CANCEL) => Code::Cancelled,
        Error::Reset(http2::ENHANCE_YOUR_CALM) => Code::ResourceExhausted,
        Error::Reset(http2::INADEQUATE_SECURITY) => Code::PermissionDenied,
        Error::Reset(_) | Error::Malformed(_) => Code::Internal,
        // The connection was lost or closed, or the server went away before serving the
        // stream.
        Error::GoAway { .. } | Error::Io(_) | Error::Protocol { .. } | Error::Closed(_) => {
            Code::Unavailable
        }
    };
    Status::new(code, format!("connection: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(
            percent_decode(b"etcdserver: request timed out"),
            "etcdserver: request timed out"
        );
        assert_eq!(percent_decode(b"a%20b%25c%"), "a b%c%");
        assert_eq!(percent_decode(b"%e2%9c%93"), "\u{2713}");
        // Two hex digits or nothing: from_str_radix's sign is not one.
        assert_eq!(percent_decode(b"%+A%-1%4"), "%+A%-1%4");
    }

    /// gRPC's percent-encoding: bytes outside printable ASCII, and `%`, as `%XX`.
    fn percent_encode(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b' '..=b'~' if b != b'%' => char::from(b).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }

    proptest::proptest! {
        /// Any grpc-status and grpc-message a server sends give a status or none, never a
        /// panic; a status that is not a number is Internal, naming what was sent.
        #[test]
        fn any_status_headers_are_read_without_panic(
            status in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            message in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_bytes(&status) {
                h.insert(&GRPC_STATUS, v);
            }
            if let Ok(v) = HeaderValue::from_bytes(&message) {
                h.insert(&GRPC_MESSAGE, v);
            }
            let parsed = std::str::from_utf8(&status).ok().and_then(|s| s.parse::<i32>().ok());
            match (grpc_status(&h), h.contains_key(&GRPC_STATUS)) {
                (None, present) => proptest::prop_assert!(!present),
                (Some(Ok(())), _) => proptest::prop_assert_eq!(parsed, Some(0)),
                (Some(Err(s)), _) if parsed.is_none() => {
                    proptest::prop_assert_eq!(s.code(), Code::Internal);
                    proptest::prop_assert!(s.message().starts_with("malformed grpc-status"));
                }
                (Some(Err(s)), _) => proptest::prop_assert_eq!(s.code(), Code::from_i32(parsed.unwrap())),
            }
            let _ = percent_decode(&message);
        }

        /// What gRPC servers encode, any text, decodes back to itself.
        #[test]
        fn percent_encoded_messages_round_trip(text in ".{0,40}") {
            proptest::prop_assert_eq!(percent_decode(percent_encode(&text).as_bytes()), text);
        }
    }

    #[test]
    fn statuses_from_headers() {
        let mut h = HeaderMap::new();
        assert!(grpc_status(&h).is_none());
        h.insert(&GRPC_STATUS, HeaderValue::from_static("0"));
        assert!(matches!(grpc_status(&h), Some(Ok(()))));
        h.insert(&GRPC_STATUS, HeaderValue::from_static("14"));
        h.insert(&GRPC_MESSAGE, HeaderValue::from_static("etcdserver:%20no%20leader"));
        let status = grpc_status(&h).unwrap().unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "etcdserver: no leader");
    }
}
