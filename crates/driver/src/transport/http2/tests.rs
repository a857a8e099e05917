//! The client against a scripted server on loopback: frames written and read by hand, so
//! that what the client does with each thing a server may send is seen exactly (etcd itself
//! is driven by the driver's and the CLI's tests).

use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::codec::tests::decoded;
use super::codec::{self, Head, RequestHead};
use super::{Connection, Error, RecvStream};
use crate::transport::io::Io;

/// The server's end of a connection.
struct Peer {
    socket: TcpStream,
    buf: BytesMut,
}

impl Peer {
    /// The next frame the client sent.
    async fn frame(&mut self) -> (Head, Bytes) {
        loop {
            if let Some(head) = Head::peek(&self.buf)
                && self.buf.len() >= codec::HEADER_LEN + head.len
            {
                let mut frame = self.buf.split_to(codec::HEADER_LEN + head.len);
                frame.advance(codec::HEADER_LEN);
                return (head, frame.freeze());
            }
            let n =
                tokio::time::timeout(Duration::from_secs(30), self.socket.read_buf(&mut self.buf))
                    .await
                    .expect("a frame within 30 s")
                    .unwrap();
            assert!(n > 0, "the client closed the connection");
        }
    }

    /// The next frame of `kind`, skipping the others.
    async fn next(&mut self, kind: u8) -> (Head, Bytes) {
        loop {
            let (head, payload) = self.frame().await;
            if head.kind == kind {
                return (head, payload);
            }
        }
    }

    async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut frame = Vec::new();
        codec::put_head(&mut frame, payload.len(), kind, flags, stream);
        frame.extend_from_slice(payload);
        self.socket.write_all(&frame).await.unwrap();
    }

    /// A response head (`:status` 200, gRPC's content type) on `stream`.
    async fn head(&mut self, stream: u32) {
        self.send(codec::HEADERS, codec::END_HEADERS, stream, &block(&[(":status", "200")])).await;
    }

    /// OK trailers ending `stream`.
    async fn ok(&mut self, stream: u32) {
        let trailers = block(&[("grpc-status", "0")]);
        self.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, stream, &trailers).await;
    }
}

/// A header block of literals with new names, as any encoder may send.
fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.push(value.len() as u8);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// A connection to a scripted server, its task running, and the server's end after the
/// client's preface and SETTINGS (which go out at once).
async fn connect() -> (Connection, Peer) {
    connect_with(super::task::KEEPALIVE_INTERVAL, super::task::KEEPALIVE_TIMEOUT).await
}

/// [`connect`], with keepalive pings every `interval` given up after `timeout`.
async fn connect_with(interval: Duration, timeout: Duration) -> (Connection, Peer) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socket = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (connection, task) = Connection::with_keepalive(Io::Plain(socket), interval, timeout);
    tokio::spawn(task);
    let (socket, _) = listener.accept().await.unwrap();
    let mut peer = Peer { socket, buf: BytesMut::new() };
    while peer.buf.len() < codec::PREFACE.len() {
        peer.socket.read_buf(&mut peer.buf).await.unwrap();
    }
    assert_eq!(&peer.buf[..codec::PREFACE.len()], codec::PREFACE);
    peer.buf.advance(codec::PREFACE.len());
    let (settings, payload) = peer.frame().await;
    assert_eq!(settings.kind, codec::SETTINGS);
    let read: Vec<_> = codec::settings(&payload).unwrap().collect();
    assert!(read.contains(&(codec::SETTINGS_ENABLE_PUSH, 0)), "{read:?}");
    peer.send(codec::SETTINGS, 0, 0, &[]).await;
    (connection, peer)
}

const GRPC: [(&[u8], &[u8]); 1] = [(b"content-type", b"application/grpc")];

fn head(path: &str) -> RequestHead<'_> {
    RequestHead { https: false, authority: "etcd:2379", path, fields: &GRPC }
}

/// Polls `f` once, with a waker that does nothing.
fn now<T>(f: impl FnOnce(&mut std::task::Context<'_>) -> Poll<T>) -> Poll<T> {
    f(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// Reads a whole answer: head, body, trailers' grpc-status.
async fn answer(recv: &mut RecvStream) -> Result<(u16, Vec<u8>, Option<String>), Error> {
    let head = recv.head().await?;
    let mut body = Vec::new();
    while let Some(chunk) = recv.data().await {
        body.extend_from_slice(&chunk?);
    }
    let trailers = recv.trailers().await?;
    let status = trailers.and_then(|t| t.grpc_status).map(|s| s.to_str().unwrap().to_owned());
    Ok((head.status.unwrap().as_u16(), body, status))
}

#[tokio::test]
async fn a_unary_call_goes_out_as_headers_and_data_and_its_answer_comes_back() {
    let (connection, mut peer) = connect().await;
    let mut recv = connection
        .send_unary(&head("/etcdserverpb.KV/Put"), Bytes::from_static(b"hello"), None)
        .unwrap();
    let (h, block) = peer.next(codec::HEADERS).await;
    assert_eq!((h.stream, h.flags), (1, codec::END_HEADERS));
    let sent = decoded(&block);
    assert_eq!(sent[0], (":method".into(), "POST".into()));
    assert!(sent.contains(&(":path".into(), "/etcdserverpb.KV/Put".into())), "{sent:?}");
    assert!(sent.contains(&(":authority".into(), "etcd:2379".into())), "{sent:?}");
    assert!(sent.contains(&("content-type".into(), "application/grpc".into())), "{sent:?}");
    let (d, data) = peer.next(codec::DATA).await;
    assert_eq!((d.stream, d.flags, &data[..]), (1, codec::END_STREAM, &b"hello"[..]));
    peer.head(1).await;
    peer.send(codec::DATA, 0, 1, b"world").await;
    peer.ok(1).await;
    assert_eq!(answer(&mut recv).await.unwrap(), (200, b"world".to_vec(), Some("0".into())));
    // The next stream is 3, and a padded DATA frame gives its data without the padding.
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    assert_eq!(peer.next(codec::HEADERS).await.0.stream, 3);
    peer.head(3).await;
    peer.send(codec::DATA, codec::PADDED, 3, &[3, b'a', b'b', 0, 0, 0]).await;
    peer.ok(3).await;
    assert_eq!(answer(&mut recv).await.unwrap().1, b"ab");
}

#[tokio::test]
async fn the_servers_pings_are_acknowledged_with_their_payload() {
    let (connection, mut peer) = connect().await;
    peer.send(codec::PING, 0, 0, b"12345678").await;
    let (h, payload) = peer.next(codec::PING).await;
    assert_eq!((h.flags, &payload[..]), (codec::ACK, &b"12345678"[..]), "alone, at its deadline");
    // With a request going out meanwhile, it is still sent (with the request, or after).
    peer.send(codec::PING, 0, 0, b"abcdefgh").await;
    let _recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    let (h, payload) = peer.next(codec::PING).await;
    assert_eq!((h.flags, &payload[..]), (codec::ACK, &b"abcdefgh"[..]));
}

#[tokio::test]
async fn data_waits_for_the_servers_window_and_goes_when_it_opens() {
    let (connection, mut peer) = connect().await;
    let mut settings = Vec::new();
    settings.extend_from_slice(&codec::SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes());
    settings.extend_from_slice(&10u32.to_be_bytes());
    peer.send(codec::SETTINGS, 0, 0, &settings).await;
    // Its acknowledgement says the setting was applied.
    loop {
        let (h, _) = peer.next(codec::SETTINGS).await;
        if h.flags & codec::ACK != 0 {
            break;
        }
    }
    let (mut send, _recv) = connection.open(&head("/p"), false).unwrap();
    send.send_data(Bytes::from(vec![7u8; 100]), true).unwrap();
    let (d, data) = peer.next(codec::DATA).await;
    assert_eq!((d.flags, data.len()), (0, 10), "what the stream's window allows");
    peer.send(codec::WINDOW_UPDATE, 0, 1, &90u32.to_be_bytes()).await;
    let (d, data) = peer.next(codec::DATA).await;
    assert_eq!((d.flags, data.len()), (codec::END_STREAM, 90), "the rest, once it opened");
}

#[tokio::test]
async fn a_go_away_fails_the_streams_it_did_not_serve_and_closes_the_connection_to_new_ones() {
    let (connection, mut peer) = connect().await;
    let mut first = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    let mut second = connection.send_unary(&head("/p"), Bytes::from_static(b"2"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.next(codec::DATA).await;
    let mut away = 1u32.to_be_bytes().to_vec();
    away.extend_from_slice(&0u32.to_be_bytes());
    away.extend_from_slice(b"graceful");
    peer.send(codec::GOAWAY, 0, 0, &away).await;
    let failed = second.head().await.unwrap_err();
    assert!(matches!(failed, Error::GoAway { code: 0, .. }), "{failed:?}");
    assert_eq!(crate::transport::status::http2_status(failed).code(), tonic::Code::Unavailable);
    assert!(matches!(now(|cx| connection.poll_ready(cx)), Poll::Ready(Err(Error::GoAway { .. }))));
    // The stream it serves is answered.
    peer.head(1).await;
    peer.send(codec::DATA, 0, 1, b"one").await;
    peer.ok(1).await;
    assert_eq!(answer(&mut first).await.unwrap().1, b"one");
}

#[tokio::test]
async fn a_reset_stream_fails_with_its_code_and_the_connection_goes_on() {
    let (connection, mut peer) = connect().await;
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::RST_STREAM, 0, 1, &codec::REFUSED_STREAM.to_be_bytes()).await;
    let e = recv.head().await.unwrap_err();
    assert!(matches!(e, Error::Reset(codec::REFUSED_STREAM)), "{e:?}");
    assert_eq!(crate::transport::status::http2_status(e).code(), tonic::Code::Unavailable);
    // DATA before a head is the server's mistake on that stream alone: it is reset.
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"2"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::DATA, 0, 3, b"early").await;
    assert!(matches!(recv.head().await, Err(Error::Malformed(_))));
    let (r, code) = peer.next(codec::RST_STREAM).await;
    assert_eq!((r.stream, &code[..]), (3, &codec::PROTOCOL_ERROR.to_be_bytes()[..]));
    assert!(matches!(now(|cx| connection.poll_ready(cx)), Poll::Ready(Ok(()))));
}

#[tokio::test]
async fn a_reset_after_the_whole_answer_stops_the_request_body_and_the_answer_stands() {
    let (connection, mut peer) = connect().await;
    let (mut send, mut recv) = connection.open(&head("/p"), false).unwrap();
    send.send_data(Bytes::from_static(b"request"), false).unwrap();
    peer.next(codec::DATA).await;
    // Answered before the request's body ended, then told to stop sending it.
    peer.head(1).await;
    peer.send(codec::DATA, 0, 1, b"answer").await;
    peer.ok(1).await;
    peer.send(codec::RST_STREAM, 0, 1, &0u32.to_be_bytes()).await;
    assert_eq!(answer(&mut recv).await.unwrap(), (200, b"answer".to_vec(), Some("0".into())));
    assert!(send.send_data(Bytes::new(), true).is_err(), "the body is not sent on");
    // Nothing more goes out on the stream, not even a reset when its handles go.
    drop((send, recv));
    let mut next = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    let (h, _) = peer.next(codec::HEADERS).await;
    assert_eq!(h.stream, 3);
    let (d, _) = peer.frame().await;
    assert_eq!((d.kind, d.stream), (codec::DATA, 3), "no frame on stream 1 before it");
    peer.head(3).await;
    peer.ok(3).await;
    assert!(answer(&mut next).await.is_ok());
}

#[tokio::test]
async fn a_stream_given_up_before_its_answer_is_reset() {
    let (connection, mut peer) = connect().await;
    let recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    drop(recv);
    let (r, code) = peer.next(codec::RST_STREAM).await;
    assert_eq!((r.stream, &code[..]), (1, &codec::CANCEL.to_be_bytes()[..]));
}

#[tokio::test]
async fn the_servers_limit_on_concurrent_streams_is_kept() {
    let (connection, mut peer) = connect().await;
    let mut settings = codec::SETTINGS_MAX_CONCURRENT_STREAMS.to_be_bytes().to_vec();
    settings.extend_from_slice(&1u32.to_be_bytes());
    peer.send(codec::SETTINGS, 0, 0, &settings).await;
    loop {
        let (h, _) = peer.next(codec::SETTINGS).await;
        if h.flags & codec::ACK != 0 {
            break;
        }
    }
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    assert!(now(|cx| connection.poll_ready(cx)).is_pending(), "one stream open: no room");
    peer.next(codec::DATA).await;
    peer.head(1).await;
    peer.ok(1).await;
    answer(&mut recv).await.unwrap();
    assert!(matches!(now(|cx| connection.poll_ready(cx)), Poll::Ready(Ok(()))));
}

#[tokio::test]
async fn a_lost_connection_fails_its_streams_and_new_ones() {
    let (connection, mut peer) = connect().await;
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    drop(peer);
    let e = recv.head().await.unwrap_err();
    assert!(matches!(e, Error::Io(_)), "{e:?}");
    assert_eq!(crate::transport::status::http2_status(e).code(), tonic::Code::Unavailable);
    assert!(matches!(now(|cx| connection.poll_ready(cx)), Poll::Ready(Err(_))));
}

#[tokio::test]
async fn a_frame_over_the_size_allowed_ends_the_connection() {
    let (connection, mut peer) = connect().await;
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.head(1).await;
    peer.send(codec::DATA, 0, 1, &vec![0; codec::DEFAULT_MAX_FRAME + 1]).await;
    let mut got = Ok(());
    while let Some(chunk) = recv.data().await {
        if let Err(e) = chunk {
            got = Err(e);
            break;
        }
    }
    assert!(matches!(got, Err(Error::Protocol(_))), "{got:?}");
    let (g, _) = peer.next(codec::GOAWAY).await;
    assert_eq!(g.stream, 0);
}

#[tokio::test]
async fn keepalive_pings_go_while_streams_are_open_and_an_unanswered_one_closes_the_connection() {
    let (interval, timeout) = (Duration::from_millis(50), Duration::from_millis(200));
    let (connection, mut peer) = connect_with(interval, timeout).await;
    // No stream open: no ping (etcd closes connections that ping idle).
    let idle = tokio::time::timeout(interval * 3, peer.next(codec::PING)).await;
    assert!(idle.is_err(), "a ping with no stream open");
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    // A stream is open: a ping comes after the interval; answered, another follows.
    let (p, data) = peer.next(codec::PING).await;
    assert_eq!(p.flags, 0);
    peer.send(codec::PING, codec::ACK, 0, &data).await;
    let (_, again) = peer.next(codec::PING).await;
    assert_ne!(again, data, "each ping has its own payload");
    // Not answered: the connection closes, failing the stream.
    let e = recv.head().await.unwrap_err();
    assert!(matches!(e, Error::Closed(m) if m.contains("keepalive")), "{e:?}");
    assert!(matches!(now(|cx| connection.poll_ready(cx)), Poll::Ready(Err(_))));
}

// ===== What a server's HPACK encoder may send (issue 26) =====
//
// grpc-go's encoder, etcd's, Huffman-codes a string when that is shorter and adds every
// field to its dynamic table, so that later responses on the connection name it by index.

/// A header block as a server's HPACK encoder writes it.
#[derive(Default)]
struct Hpack(Vec<u8>);

impl Hpack {
    /// A field of either table, by index (62 is the dynamic table's newest).
    fn indexed(mut self, index: usize) -> Self {
        codec::put_int(&mut self.0, 0x80, 7, index);
        self
    }

    /// A literal added to the dynamic table, with its name.
    fn add(mut self, name: &str, value: &str, huffman: bool) -> Self {
        self.0.push(0x40);
        self.string(name, huffman).string(value, huffman)
    }

    /// A literal added to the dynamic table, its name by index.
    fn add_named(mut self, index: usize, value: &str, huffman: bool) -> Self {
        codec::put_int(&mut self.0, 0x40, 6, index);
        self.string(value, huffman)
    }

    /// A literal not added to the table, its name by index.
    fn literal(mut self, index: usize, value: &str, huffman: bool) -> Self {
        codec::put_int(&mut self.0, 0, 4, index);
        self.string(value, huffman)
    }

    /// A dynamic table size update.
    fn resize(mut self, size: usize) -> Self {
        codec::put_int(&mut self.0, 0x20, 5, size);
        self
    }

    fn string(mut self, s: &str, huffman: bool) -> Self {
        let coded = if huffman { super::hpack::tests::huffman(s.as_bytes()) } else { s.into() };
        codec::put_int(&mut self.0, if huffman { 0x80 } else { 0 }, 7, coded.len());
        self.0.extend_from_slice(&coded);
        self
    }
}

/// Static table indexes.
const STATUS_200: usize = 8;
const CONTENT_TYPE: usize = 31;

/// A whole answer on a stream opened with [`Connection::open`] (every field kept): head,
/// body, trailers.
async fn full_answer(recv: &mut RecvStream) -> (super::Meta, Vec<u8>, Option<super::Meta>) {
    let head = recv.head().await.unwrap();
    let mut body = Vec::new();
    while let Some(chunk) = recv.data().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    (head, body, recv.trailers().await.unwrap())
}

fn text(value: Option<&http::HeaderValue>) -> Option<&str> {
    value.map(|v| v.to_str().unwrap())
}

/// A unary call (stream 1) answered as grpc-go answers the first on a connection:
/// `:status` from the static table, content-type and then grpc-status and grpc-message
/// added to the dynamic table. After it, 62 is grpc-message, 63 grpc-status, 64
/// content-type.
async fn first_call_fills_the_table(connection: &Connection, peer: &mut Peer) {
    let mut first = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    let head_block =
        Hpack::default().indexed(STATUS_200).add_named(CONTENT_TYPE, "application/grpc", true);
    peer.send(codec::HEADERS, codec::END_HEADERS, 1, &head_block.0).await;
    peer.send(codec::DATA, 0, 1, b"one").await;
    let trailers = Hpack::default().add("grpc-status", "0", false).add("grpc-message", "", false);
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, 1, &trailers.0).await;
    assert_eq!(answer(&mut first).await.unwrap(), (200, b"one".to_vec(), Some("0".into())));
}

/// Opens a stream that keeps every field (stream `id`), answers it with `head_block`,
/// `body` and `trailers`, and reads the answer.
async fn full_exchange(
    connection: &Connection,
    peer: &mut Peer,
    id: u32,
    (head_block, body, trailers): (Hpack, &[u8], Hpack),
) -> (super::Meta, Vec<u8>, Option<super::Meta>) {
    let (_send, mut recv) = connection.open(&head("/p"), true).unwrap();
    assert_eq!(peer.next(codec::HEADERS).await.0.stream, id);
    peer.send(codec::HEADERS, codec::END_HEADERS, id, &head_block.0).await;
    peer.send(codec::DATA, 0, id, body).await;
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, id, &trailers.0).await;
    full_answer(&mut recv).await
}

#[tokio::test]
async fn huffman_coded_heads_and_trailers_are_decoded() {
    let (connection, mut peer) = connect().await;
    let head_block = Hpack::default()
        .literal(STATUS_200, "200", true)
        .literal(CONTENT_TYPE, "application/grpc+proto", true)
        .add("x-etcd-member", "infra1", true);
    let trailers = Hpack::default().add("grpc-status", "5", true).add(
        "grpc-message",
        "etcdserver: key not found",
        true,
    );
    let (head, body, trailers) =
        full_exchange(&connection, &mut peer, 1, (head_block, b"answer", trailers)).await;
    assert_eq!(head.status, Some(http::StatusCode::OK));
    assert_eq!(text(head.headers.get("content-type")), Some("application/grpc+proto"));
    assert_eq!(text(head.headers.get("x-etcd-member")), Some("infra1"));
    assert_eq!(body, b"answer");
    let trailers = trailers.unwrap();
    assert_eq!(text(trailers.grpc_status.as_ref()), Some("5"));
    assert_eq!(text(trailers.grpc_message.as_ref()), Some("etcdserver: key not found"));
}

#[tokio::test]
async fn dynamic_table_entries_of_one_answer_are_named_by_index_in_later_ones() {
    let (connection, mut peer) = connect().await;
    // The first answer is on a unary stream, which keeps only gRPC's status fields: the
    // others still go into the table.
    first_call_fills_the_table(&connection, &mut peer).await;
    let head_block = Hpack::default().indexed(STATUS_200).indexed(64);
    let trailers = Hpack::default().indexed(63).indexed(62);
    let (head, body, trailers) =
        full_exchange(&connection, &mut peer, 3, (head_block, b"two", trailers)).await;
    assert_eq!(head.status, Some(http::StatusCode::OK));
    assert_eq!(text(head.headers.get("content-type")), Some("application/grpc"));
    assert_eq!(body, b"two");
    let trailers = trailers.unwrap();
    assert_eq!(text(trailers.grpc_status.as_ref()), Some("0"));
    assert_eq!(text(trailers.headers.get("grpc-message")), Some(""));
}

#[tokio::test]
async fn a_table_size_update_at_the_start_of_a_block_empties_the_table_as_the_server_says() {
    let (connection, mut peer) = connect().await;
    first_call_fills_the_table(&connection, &mut peer).await;
    // The server empties its table (size 0) and takes it back up to the 4096 bytes the
    // client allows, both before the block's first field.
    let head_block = Hpack::default().resize(0).resize(4_096).indexed(STATUS_200);
    let head_block = head_block.add_named(CONTENT_TYPE, "application/grpc", false);
    let trailers = Hpack::default().add("grpc-status", "0", false);
    let (answered, _, trailers) =
        full_exchange(&connection, &mut peer, 3, (head_block, b"", trailers)).await;
    assert_eq!(text(answered.headers.get("content-type")), Some("application/grpc"));
    assert_eq!(text(trailers.unwrap().grpc_status.as_ref()), Some("0"));
    // The table holds the two entries added since: a third, from before the update, is
    // gone (it would be grpc-message), and naming it ends the connection with
    // COMPRESSION_ERROR.
    let mut third = connection.send_unary(&head("/p"), Bytes::from_static(b"3"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::HEADERS, codec::END_HEADERS, 5, &Hpack::default().indexed(64).0).await;
    let e = third.head().await.unwrap_err();
    assert!(matches!(&e, Error::Protocol(m) if m.contains("index 64")), "{e:?}");
    let (_, away) = peer.next(codec::GOAWAY).await;
    assert_eq!(codec::u32_at(&away, 4), Some(codec::COMPRESSION_ERROR));
}

#[tokio::test]
async fn a_table_size_update_after_a_field_or_over_the_limit_ends_the_connection() {
    for (block, why) in [
        (Hpack::default().indexed(STATUS_200).resize(0), "after a header field"),
        (Hpack::default().resize(4_097), "over the 4096 allowed"),
    ] {
        let (connection, mut peer) = connect().await;
        let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
        peer.next(codec::DATA).await;
        peer.send(codec::HEADERS, codec::END_HEADERS, 1, &block.0).await;
        let e = recv.head().await.unwrap_err();
        assert!(matches!(&e, Error::Protocol(m) if m.contains(why)), "{e:?}");
        let (_, away) = peer.next(codec::GOAWAY).await;
        assert_eq!(codec::u32_at(&away, 4), Some(codec::COMPRESSION_ERROR));
    }
}

#[tokio::test]
async fn a_head_split_over_headers_and_continuation_frames_is_decoded_whole() {
    let (connection, mut peer) = connect().await;
    let (_send, mut recv) = connection.open(&head("/p"), true).unwrap();
    peer.next(codec::HEADERS).await;
    let long = "v".repeat(300);
    let block = Hpack::default()
        .indexed(STATUS_200)
        .literal(CONTENT_TYPE, "application/grpc", false)
        .add("x-long", &long, false)
        .0;
    // Cut inside the long value's string: the fragments mean nothing apart.
    let (a, rest) = block.split_at(20);
    let (b, c) = rest.split_at(150);
    peer.send(codec::HEADERS, 0, 1, a).await;
    peer.send(codec::CONTINUATION, 0, 1, b).await;
    peer.send(codec::CONTINUATION, codec::END_HEADERS, 1, c).await;
    // Trailers too, the stream's end on their HEADERS frame.
    let trailers = Hpack::default().add("grpc-status", "0", false).0;
    let (a, b) = trailers.split_at(5);
    peer.send(codec::HEADERS, codec::END_STREAM, 1, a).await;
    peer.send(codec::CONTINUATION, codec::END_HEADERS, 1, b).await;
    let (head, body, trailers) = full_answer(&mut recv).await;
    assert_eq!(head.status, Some(http::StatusCode::OK));
    assert_eq!(text(head.headers.get("content-type")), Some("application/grpc"));
    assert_eq!(text(head.headers.get("x-long")), Some(long.as_str()));
    assert!(body.is_empty());
    assert_eq!(text(trailers.unwrap().grpc_status.as_ref()), Some("0"));
}

#[tokio::test]
async fn a_trailers_only_answer_fails_the_call_with_its_grpc_status() {
    let (connection, mut peer) = connect().await;
    // A gRPC error with no message: one HEADERS with the status and the stream's end.
    let error = Hpack::default()
        .indexed(STATUS_200)
        .add_named(CONTENT_TYPE, "application/grpc", true)
        .add("grpc-status", "5", false)
        .add("grpc-message", "etcdserver: requested lease not found", true);
    // The unary path: the call fails with the status from the head.
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, 1, &error.0).await;
    let answered = recv.head().await.unwrap();
    let status = crate::transport::unary::answer_body(&answered).unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), "etcdserver: requested lease not found");
    assert!(recv.data().await.is_none(), "no DATA");
    // etcd-client's path, every field kept: the same status from the head's fields (the
    // second time by index, as the server's table now has them).
    let (_send, mut recv) = connection.open(&head("/p"), true).unwrap();
    peer.next(codec::HEADERS).await;
    let again = Hpack::default().indexed(STATUS_200).indexed(64).indexed(63).indexed(62);
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, 3, &again.0).await;
    let answered = recv.head().await.unwrap();
    let status = crate::transport::status::grpc_status(&answered.headers).unwrap().unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), "etcdserver: requested lease not found");
    assert!(recv.data().await.is_none(), "no DATA");
    assert!(recv.trailers().await.unwrap().is_none(), "the head was the trailers");
}
