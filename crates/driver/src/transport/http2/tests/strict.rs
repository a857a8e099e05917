//! What the client checks of what it reads beyond framing (issue 41): response heads and
//! trailers as RFC 9113 8.1 and 8.3 shape them, PRIORITY frames, a trailers-only OK on a
//! streaming call, and the GOAWAY the client sends when it ends a connection itself.

use super::*;
use crate::transport::watch::WatchReceiver;

/// Sends `fields` as a header block on `stream`, ending it when `end`.
async fn send_fields(peer: &mut Peer, stream: u32, end: bool, fields: &[(&str, &str)]) {
    let flags = codec::END_HEADERS | if end { codec::END_STREAM } else { 0 };
    peer.send(codec::HEADERS, flags, stream, &block(fields)).await;
}

#[tokio::test]
async fn informational_heads_are_skipped_for_the_final_one() {
    let (connection, mut peer) = connect().await;
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    send_fields(&mut peer, 1, false, &[(":status", "100")]).await;
    send_fields(&mut peer, 1, false, &[(":status", "103"), ("link", "</a>")]).await;
    peer.head(1).await;
    peer.send(codec::DATA, 0, 1, b"body").await;
    peer.ok(1).await;
    assert_eq!(answer(&mut recv).await.unwrap(), (200, b"body".to_vec(), Some("0".into())));
}

#[tokio::test]
async fn heads_and_trailers_shaped_against_rfc_9113_fail_their_stream() {
    let (connection, mut peer) = connect().await;
    type Fields = &'static [(&'static str, &'static str)];
    let cases: [(&str, Fields, bool, Fields); 5] = [
        ("a repeated :status", &[(":status", "200"), (":status", "200")], false, &[]),
        ("a pseudo-header after a field", &[("x-a", "1"), (":status", "200")], false, &[]),
        ("an informational head ending the stream", &[(":status", "100")], true, &[]),
        ("101 (no upgrade in HTTP/2)", &[(":status", "101")], false, &[]),
        ("trailers with :status", &[(":status", "200")], false, &[(":status", "200")]),
    ];
    let mut id = 1;
    for (what, head_fields, end, trailers) in cases {
        let mut recv =
            connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
        assert_eq!(peer.next(codec::HEADERS).await.0.stream, id);
        send_fields(&mut peer, id, end, head_fields).await;
        if !trailers.is_empty() {
            send_fields(&mut peer, id, true, trailers).await;
        }
        let e = answer(&mut recv).await;
        assert!(matches!(e, Err(Error::Malformed(_))), "{what}: {e:?}");
        let (r, code) = peer.next(codec::RST_STREAM).await;
        assert_eq!((r.stream, &code[..]), (id, &codec::PROTOCOL_ERROR.to_be_bytes()[..]), "{what}");
        id += 2;
    }
}

#[tokio::test]
async fn priority_frames_of_the_wrong_size_or_depending_on_themselves_fail_their_stream() {
    let (connection, mut peer) = connect().await;
    let mut first =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    let mut second =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"2"), None).unwrap();
    // Lawful ones, on a stream open and on one never opened, change nothing.
    peer.send(codec::PRIORITY_FRAME, 0, 1, &[0, 0, 0, 0, 16]).await;
    peer.send(codec::PRIORITY_FRAME, 0, 9, &[0, 0, 0, 1, 16]).await;
    peer.send(codec::PRIORITY_FRAME, 0, 1, &[0, 0, 0, 0]).await;
    peer.send(codec::PRIORITY_FRAME, 0, 3, &[0, 0, 0, 3, 16]).await;
    let (r, code) = peer.next(codec::RST_STREAM).await;
    assert_eq!((r.stream, &code[..]), (1, &codec::FRAME_SIZE_ERROR.to_be_bytes()[..]));
    let (r, code) = peer.next(codec::RST_STREAM).await;
    assert_eq!((r.stream, &code[..]), (3, &codec::PROTOCOL_ERROR.to_be_bytes()[..]));
    assert!(matches!(first.head().await, Err(Error::Malformed(_))));
    assert!(matches!(second.head().await, Err(Error::Malformed(_))));
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Ok(()))));
}

#[tokio::test]
async fn priority_on_stream_0_or_of_the_wrong_size_on_a_stream_never_opened_ends_the_connection() {
    for (bytes, code) in [
        (frame(codec::PRIORITY_FRAME, 0, 0, &[0, 0, 0, 1, 16]), codec::PROTOCOL_ERROR),
        (frame(codec::PRIORITY_FRAME, 0, 9, &[0, 0, 0, 1, 16, 0]), codec::FRAME_SIZE_ERROR),
    ] {
        let (_connection, mut peer) = connect().await;
        peer.socket.write_all(&bytes).await.unwrap();
        let (_, payload) = peer.next(codec::GOAWAY).await;
        assert_eq!(codec::u32_at(&payload, 4), Some(code));
    }
}

#[tokio::test]
async fn an_ok_trailers_only_answer_ends_a_watch_stream_without_error() {
    let (connection, mut peer) = connect().await;
    let (_send, recv) = connection.open(&mut None, &head("/watch"), false).unwrap();
    let mut watch = WatchReceiver::new(recv);
    peer.next(codec::HEADERS).await;
    let fields = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "0")];
    send_fields(&mut peer, 1, true, &fields).await;
    assert_eq!(watch.raw().await.unwrap(), None, "ended, OK");
}

#[tokio::test]
async fn the_client_sends_a_go_away_when_it_ends_a_connection_itself() {
    // Every handle and stream gone: a graceful close.
    let (connection, mut peer) = connect().await;
    drop(connection);
    let (_, payload) = peer.next(codec::GOAWAY).await;
    assert_eq!(codec::u32_at(&payload, 4), Some(codec::NO_ERROR), "graceful");
    // A keepalive ping unanswered.
    let (connection, mut peer) =
        connect_with(Duration::from_millis(50), Duration::from_millis(100)).await;
    let _recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::PING).await;
    let (_, payload) = peer.next(codec::GOAWAY).await;
    assert_eq!(codec::u32_at(&payload, 4), Some(codec::NO_ERROR), "keepalive");
}
