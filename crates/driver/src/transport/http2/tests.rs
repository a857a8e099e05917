//! The client against a scripted server on loopback: frames written and read by hand, so
//! that what the client does with each thing a server may send is seen exactly (etcd itself
//! is driven by the driver's and the CLI's tests).

use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use proptest::prelude::{Just, Strategy, any, prop_oneof};
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
    let (connection, peer, _task) = connect_running(interval, timeout).await;
    (connection, peer)
}

/// [`connect_with`], and the connection's task's handle.
async fn connect_running(
    interval: Duration,
    timeout: Duration,
) -> (Connection, Peer, tokio::task::JoinHandle<Result<(), Error>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socket = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (connection, task) = Connection::with_keepalive(Io::Plain(socket), interval, timeout);
    let task = tokio::spawn(task);
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
    (connection, peer, task)
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
    assert!(matches!(
        now(|cx| connection.poll_ready(cx, &mut None)),
        Poll::Ready(Err(Error::GoAway { .. }))
    ));
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
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Ok(()))));
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
    assert!(
        now(|cx| connection.poll_ready(cx, &mut None)).is_pending(),
        "one stream open: no room"
    );
    peer.next(codec::DATA).await;
    peer.head(1).await;
    peer.ok(1).await;
    answer(&mut recv).await.unwrap();
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Ok(()))));
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
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Err(_))));
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
    assert!(matches!(got, Err(Error::Protocol { code: codec::FRAME_SIZE_ERROR, .. })), "{got:?}");
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
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Err(_))));
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
    assert!(matches!(&e, Error::Protocol { what, .. } if what.contains("index 64")), "{e:?}");
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
        assert!(matches!(&e, Error::Protocol { what, .. } if what.contains(why)), "{e:?}");
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

// ===== Corner cases: abandoned data, waiting for a stream slot, connection errors =====

/// The increments of the connection-level WINDOW_UPDATEs the client sent until it
/// acknowledged a PING of `payload` (sent now), skipping its other frames.
async fn connection_credit_until_ping(peer: &mut Peer, payload: [u8; 8]) -> u64 {
    peer.send(codec::PING, 0, 0, &payload).await;
    let mut credit = 0;
    loop {
        let (h, frame) = peer.frame().await;
        match h.kind {
            codec::WINDOW_UPDATE if h.stream == 0 => {
                credit += u64::from(codec::u31(&frame).unwrap());
            }
            codec::PING if h.flags & codec::ACK != 0 && frame[..] == payload => return credit,
            _ => {}
        }
    }
}

#[tokio::test]
async fn data_a_dropped_stream_left_unread_is_given_back_to_the_connections_window() {
    let (connection, mut peer) = connect().await;
    let (h, first) = peer.next(codec::WINDOW_UPDATE).await;
    let opened = super::state::CONNECTION_WINDOW - 65_535;
    assert_eq!((h.stream, codec::u31(&first)), (0, Some(opened)), "the client's opening credit");
    // Five streams get 4 MiB each that nobody reads, and are dropped: 20 MiB of the
    // connection's 32 MiB window, which must come back or the connection stalls for good.
    const PER_STREAM: usize = 4 << 20;
    let chunk = vec![7u8; codec::DEFAULT_MAX_FRAME];
    let mut credit = 0;
    for i in 0..5u8 {
        let recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
        let id = peer.next(codec::HEADERS).await.0.stream;
        peer.head(id).await;
        for _ in 0..PER_STREAM / chunk.len() {
            peer.send(codec::DATA, 0, id, &chunk).await;
        }
        // The client has read the data once it acknowledges a PING sent after it.
        credit += connection_credit_until_ping(&mut peer, [i; 8]).await;
        drop(recv);
        credit += connection_credit_until_ping(&mut peer, [i + 10; 8]).await;
    }
    assert!(
        credit >= u64::from(super::state::CONNECTION_WINDOW / 2),
        "{credit} bytes given back of {} abandoned",
        5 * PER_STREAM
    );
}

/// Sends the server's `settings` and waits until the client acknowledged them.
async fn apply_settings(peer: &mut Peer, pairs: &[(u16, u32)]) {
    peer.socket.write_all(&settings(pairs)).await.unwrap();
    loop {
        let (h, _) = peer.next(codec::SETTINGS).await;
        if h.flags & codec::ACK != 0 {
            return;
        }
    }
}

#[tokio::test]
async fn waiters_for_a_stream_slot_get_one_in_the_order_they_came() {
    let (connection, mut peer) = connect().await;
    apply_settings(&mut peer, &[(codec::SETTINGS_MAX_CONCURRENT_STREAMS, 2)]).await;
    let send = |i: u8| connection.send_unary(&head("/p"), Bytes::from(vec![i]), None).unwrap();
    let (mut first, mut second) = (send(100), send(101));
    // Six more requests come one after the other, each in its own task, and wait in line.
    let mut waiters = Vec::new();
    for i in 1..=6u8 {
        let connection = connection.clone();
        waiters.push(tokio::spawn(async move {
            let mut turn = None;
            std::future::poll_fn(|cx| connection.poll_ready(cx, &mut turn)).await?;
            let mut recv = connection.send_unary(&head("/p"), Bytes::from(vec![i]), None)?;
            answer(&mut recv).await
        }));
        tokio::task::yield_now().await;
    }
    // One gives up while waiting: the line goes on without it.
    let gone = waiters.remove(2);
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    // One coming now waits behind them, though it was never in line.
    assert!(now(|cx| connection.poll_ready(cx, &mut None)).is_pending());
    for (id, recv) in [(1, &mut first), (3, &mut second)] {
        peer.head(id).await;
        peer.ok(id).await;
        answer(recv).await.unwrap();
    }
    // The slots the two free go to the first in line, not to one coming after them.
    assert!(
        now(|cx| connection.poll_ready(cx, &mut None)).is_pending(),
        "a slot taken out of turn"
    );
    let mut served = Vec::new();
    while served.len() < 5 {
        let (h, data) = peer.next(codec::DATA).await;
        if h.stream <= 3 {
            continue;
        }
        served.push(data[0]);
        peer.head(h.stream).await;
        peer.ok(h.stream).await;
    }
    assert_eq!(served, [1, 2, 4, 5, 6], "the order the requests waited in");
    for waiter in waiters {
        let answered = tokio::time::timeout(Duration::from_secs(10), waiter).await;
        assert_eq!(answered.expect("every waiter is answered").unwrap().unwrap().0, 200);
    }
}

/// A frame's bytes.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    codec::put_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

/// A SETTINGS frame of `pairs` (id, value).
fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let payload: Vec<u8> = pairs
        .iter()
        .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
        .collect();
    frame(codec::SETTINGS, 0, 0, &payload)
}

/// A WINDOW_UPDATE frame.
fn window(stream: u32, increment: u32) -> Vec<u8> {
    frame(codec::WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// Reads what the client sends until its GOAWAY, then until it closes the connection;
/// the GOAWAY's last stream and code.
async fn go_away_then_close(peer: &mut Peer) -> (u32, u32) {
    let (_, payload) = peer.next(codec::GOAWAY).await;
    let said = (codec::u31(&payload).unwrap(), codec::u32_at(&payload, 4).unwrap());
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), peer.socket.read_to_end(&mut rest));
    let closed = closed.await.expect("the client closes the connection after its GOAWAY");
    assert!(
        closed.is_ok() || closed.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset)
    );
    said
}

/// What a server sends that breaks the connection, and the code the client's GOAWAY says.
struct Breach {
    what: &'static str,
    code: u32,
    /// Stream 1 (the one request open) is answered whole first.
    answered: bool,
    bytes: Vec<u8>,
}

fn breaches() -> Vec<Breach> {
    let breach = |what, code, bytes: Vec<Vec<u8>>| Breach {
        what,
        code,
        answered: false,
        bytes: bytes.concat(),
    };
    let status = block(&[(":status", "200")]);
    let big = vec![0u8; codec::DEFAULT_MAX_FRAME];
    let mut endless = vec![frame(codec::HEADERS, 0, 1, &big)];
    endless.extend((0..64).map(|_| frame(codec::CONTINUATION, 0, 1, &big)));
    let (protocol, size, flow) =
        (codec::PROTOCOL_ERROR, codec::FRAME_SIZE_ERROR, codec::FLOW_CONTROL_ERROR);
    let compression = codec::COMPRESSION_ERROR;
    let headers = |flags, stream, block: &[u8]| frame(codec::HEADERS, flags, stream, block);
    let ended = codec::END_HEADERS;
    let mut all = vec![
        breach("DATA on stream 0", protocol, vec![frame(codec::DATA, 0, 0, b"x")]),
        breach("HEADERS on stream 0", protocol, vec![headers(ended, 0, &status)]),
        breach(
            "DATA padded past its end",
            protocol,
            vec![frame(codec::DATA, codec::PADDED, 1, &[5, 1])],
        ),
        breach(
            "HEADERS padded past its end",
            protocol,
            vec![headers(ended | codec::PADDED, 1, &[9, 0x88])],
        ),
        breach(
            "a header block interrupted",
            protocol,
            vec![headers(0, 1, &status), frame(codec::PING, 0, 0, &[0; 8])],
        ),
        breach(
            "CONTINUATION without HEADERS",
            protocol,
            vec![frame(codec::CONTINUATION, ended, 1, &status)],
        ),
        breach(
            "CONTINUATION on another stream",
            protocol,
            vec![headers(0, 1, &status), frame(codec::CONTINUATION, ended, 3, &[])],
        ),
        breach("SETTINGS on a stream", protocol, vec![frame(codec::SETTINGS, 0, 1, &[])]),
        breach(
            "a max frame size under 16 KiB",
            protocol,
            vec![settings(&[(codec::SETTINGS_MAX_FRAME_SIZE, 100)])],
        ),
        breach("push enabled", protocol, vec![settings(&[(codec::SETTINGS_ENABLE_PUSH, 1)])]),
        breach(
            "PUSH_PROMISE",
            protocol,
            vec![frame(codec::PUSH_PROMISE, ended, 1, &[0, 0, 0, 2, 0x88])],
        ),
        breach("RST_STREAM on stream 0", protocol, vec![frame(codec::RST_STREAM, 0, 0, &[0; 4])]),
        breach("PING on a stream", protocol, vec![frame(codec::PING, 0, 1, &[0; 8])]),
        breach("GOAWAY on a stream", protocol, vec![frame(codec::GOAWAY, 0, 1, &[0; 8])]),
        breach("a connection WINDOW_UPDATE of 0", protocol, vec![window(0, 0)]),
        breach("DATA on a stream never opened", protocol, vec![frame(codec::DATA, 0, 5, b"x")]),
        breach("HEADERS on a server's stream", protocol, vec![headers(ended, 2, &status)]),
        breach(
            "RST_STREAM on a stream never opened",
            protocol,
            vec![frame(codec::RST_STREAM, 0, 7, &[0; 4])],
        ),
        breach("WINDOW_UPDATE on a stream never opened", protocol, vec![window(9, 1)]),
        breach(
            "a frame over 16 KiB",
            size,
            vec![frame(codec::DATA, 0, 1, &vec![0; codec::DEFAULT_MAX_FRAME + 1])],
        ),
        breach("RST_STREAM of 3 bytes", size, vec![frame(codec::RST_STREAM, 0, 1, &[0; 3])]),
        breach("SETTINGS of 5 bytes", size, vec![frame(codec::SETTINGS, 0, 0, &[0; 5])]),
        breach(
            "a SETTINGS acknowledgement with settings",
            size,
            vec![frame(codec::SETTINGS, codec::ACK, 0, &[0; 6])],
        ),
        breach("PING of 7 bytes", size, vec![frame(codec::PING, 0, 0, &[0; 7])]),
        breach("GOAWAY of 7 bytes", size, vec![frame(codec::GOAWAY, 0, 0, &[0; 7])]),
        breach(
            "WINDOW_UPDATE of 5 bytes",
            size,
            vec![frame(codec::WINDOW_UPDATE, 0, 0, &[0, 0, 0, 1, 0])],
        ),
        breach(
            "HEADERS too short for its priority",
            size,
            vec![headers(ended | codec::PRIORITY, 1, &[0; 3])],
        ),
        breach("a connection window over 2^31-1", flow, vec![window(0, i32::MAX as u32)]),
        breach(
            "an initial window over 2^31-1",
            flow,
            vec![settings(&[(codec::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)])],
        ),
        // Stream 1's window is 65,535 less the 1 byte sent: brought to 2^31-1, then one more.
        breach(
            "an initial window taking a stream's window over 2^31-1",
            flow,
            vec![
                window(1, i32::MAX as u32 - 65_534),
                settings(&[(codec::SETTINGS_INITIAL_WINDOW_SIZE, 65_536)]),
            ],
        ),
        // Indexes no table has, whatever the decoder: 0, the first of an empty dynamic
        // table, one far past both; and one cut across a CONTINUATION.
        breach("a header of index 0", compression, vec![headers(ended, 1, &[0x80])]),
        breach("a header past the static table", compression, vec![headers(ended, 1, &[0xbe])]),
        breach(
            "a header far past both tables",
            compression,
            vec![headers(ended, 1, &[0xff, 0xff, 0x03])],
        ),
        breach(
            "a header past both tables across a CONTINUATION",
            compression,
            vec![headers(0, 1, &[0xff]), frame(codec::CONTINUATION, ended, 1, &[0xff, 0x03])],
        ),
        breach("a header block over 1 MiB", codec::ENHANCE_YOUR_CALM, endless),
    ];
    for (what, bytes) in [
        ("DATA after the stream's end", frame(codec::DATA, 0, 1, b"late")),
        ("HEADERS after the stream's end", headers(ended | codec::END_STREAM, 1, &status)),
    ] {
        all.push(Breach { what, code: codec::STREAM_CLOSED, answered: true, bytes });
    }
    all
}

#[tokio::test]
async fn every_connection_error_sends_a_go_away_with_its_code_before_closing() {
    for breach in breaches() {
        let what = breach.what;
        let (connection, mut peer) = connect().await;
        let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
        peer.next(codec::DATA).await;
        if breach.answered {
            peer.head(1).await;
            peer.ok(1).await;
            answer(&mut recv).await.unwrap();
        }
        peer.socket.write_all(&breach.bytes).await.unwrap();
        let (last, code) = go_away_then_close(&mut peer).await;
        assert_eq!(
            (last, codec::reason(code)),
            (0, codec::reason(breach.code)),
            "{what}: the last stream the server opened (none), and the code"
        );
        let failed = |e: &Error| matches!(e, Error::Protocol { code, .. } if *code == breach.code);
        if !breach.answered {
            let e = recv.head().await.unwrap_err();
            assert!(failed(&e), "{what}: the open stream fails with the connection's error: {e:?}");
        }
        let Poll::Ready(Err(e)) = now(|cx| connection.poll_ready(cx, &mut None)) else {
            panic!("{what}: the connection takes no new stream");
        };
        assert!(failed(&e), "{what}: {e:?}");
    }
}

/// Sends `bytes` of DATA on `stream` in frames as large as allowed, until the client
/// closes the connection.
async fn send_data(peer: &mut Peer, stream: u32, mut bytes: usize) {
    let chunk = [5u8; codec::DEFAULT_MAX_FRAME];
    while bytes > 0 {
        let n = bytes.min(chunk.len());
        if peer.socket.write_all(&frame(codec::DATA, 0, stream, &chunk[..n])).await.is_err() {
            return;
        }
        bytes -= n;
    }
}

#[tokio::test]
async fn data_past_the_windows_the_client_gave_fails_the_connection() {
    let stream_window = super::state::STREAM_WINDOW as usize;
    // A stream whose reader reads gets more than its window, as the client gives it back.
    let (connection, mut peer) = connect().await;
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    let reader = tokio::spawn(async move { answer(&mut recv).await.unwrap().1.len() });
    peer.head(1).await;
    send_data(&mut peer, 1, stream_window).await;
    loop {
        let (h, _) = peer.next(codec::WINDOW_UPDATE).await;
        if h.stream == 1 {
            break;
        }
    }
    send_data(&mut peer, 1, stream_window / 2).await;
    peer.ok(1).await;
    assert_eq!(reader.await.unwrap(), stream_window * 3 / 2);
    // One whose reader does not: one byte past its window ends the connection.
    let (connection, mut peer) = connect().await;
    let _held = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    peer.head(1).await;
    send_data(&mut peer, 1, stream_window + 1).await;
    assert_eq!(go_away_then_close(&mut peer).await, (0, codec::FLOW_CONTROL_ERROR));
    let (most, _) = connection.shared.lock().buffered();
    assert!(most <= stream_window, "{most} bytes held for a stream");
    // Nor may all streams together take more than the connection's window.
    let (connection, mut peer) = connect().await;
    let mut held = Vec::new();
    for stream in [1, 3, 5, 7, 9] {
        held.push(connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap());
        peer.head(stream).await;
        send_data(&mut peer, stream, 7 << 20).await;
    }
    assert_eq!(go_away_then_close(&mut peer).await, (0, codec::FLOW_CONTROL_ERROR));
    let (_, all) = connection.shared.lock().buffered();
    assert!(all <= super::state::CONNECTION_WINDOW as usize, "{all} bytes held in all");
}

#[tokio::test]
async fn a_server_that_floods_pings_and_settings_and_reads_nothing_is_read_no_further() {
    for flood in [frame(codec::PING, 0, 0, &[7; 8]), frame(codec::SETTINGS, 0, 0, &[])] {
        let (_connection, mut peer) = connect().await;
        // Each asks for an answer, which cannot go while the server reads nothing: the
        // client stops reading rather than hold them all. What the server gets written is
        // what the sockets' buffers take (a few MiB on loopback).
        let burst = flood.repeat((1 << 20) / flood.len());
        let mut sent = 0;
        while sent < 48 << 20 {
            let wrote = tokio::time::timeout(Duration::from_secs(1), peer.socket.write_all(&burst));
            match wrote.await {
                Ok(wrote) => wrote.unwrap(),
                Err(_) => break,
            }
            sent += burst.len();
        }
        assert!(sent < 32 << 20, "the client read {sent} bytes asking for answers it owed");
    }
}

#[tokio::test]
async fn data_a_reader_has_not_taken_yet_is_held_in_one_buffer_not_in_slices_of_the_reads() {
    let (connection, mut peer) = connect().await;
    let mut recv = connection.send_unary(&head("/p"), Bytes::from_static(b"x"), None).unwrap();
    peer.head(1).await;
    // A byte of DATA after each 16 KiB frame of a type the client ignores: held as slices
    // of what was read, each byte would keep a 16 KiB read buffer alive (16 MiB for 1000
    // bytes, far past what the stream's window bounds).
    let junk = frame(0xfe, 0, 1, &[0; codec::DEFAULT_MAX_FRAME]);
    for _ in 0..1000 {
        peer.socket.write_all(&junk).await.unwrap();
        peer.send(codec::DATA, 0, 1, b"d").await;
    }
    connection_credit_until_ping(&mut peer, [1; 8]).await;
    recv.head().await.unwrap();
    let held = recv.data().await.unwrap().unwrap();
    assert_eq!(held.len(), 1000, "held in one buffer, copied out of the reads");
}

// ===== The reader fuzzed: arbitrary bytes, and hostile frame sequences =====

/// The streams a fuzzed connection has open: three unary calls (1, 3, 5) and a stream
/// whose body has not ended (7). Hostile frames go on these, on stream 0, on streams never
/// opened (9, an even one, the largest) and on any other.
const OPEN: [u32; 4] = [1, 3, 5, 7];
const NOT_OPEN: [u32; 4] = [0, 9, 2, 0x7fff_ffff];

/// Reads a stream's answer to its end, or to the error that ends it.
async fn read_to_end(recv: &mut RecvStream) -> Result<(), Error> {
    recv.head().await?;
    while let Some(chunk) = recv.data().await {
        chunk?;
    }
    recv.trailers().await?;
    Ok(())
}

/// Feeds `bytes` to a connection after its handshake, with streams open, then ends the
/// connection from the server's side. Nothing may panic; what the client holds for its
/// readers stays within the windows it advertised (8 MiB a stream, 32 MiB in all); every
/// stream and the connection end, with their answer or an [`Error`]; all within 30 s.
fn feed(bytes: &[u8]) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let fed = tokio::time::timeout(Duration::from_secs(30), fed(bytes)).await;
        fed.expect("the connection and its streams end within 30 s");
    });
}

async fn fed(bytes: &[u8]) {
    let keepalive = (super::task::KEEPALIVE_INTERVAL, super::task::KEEPALIVE_TIMEOUT);
    let (connection, peer, task) = connect_running(keepalive.0, keepalive.1).await;
    let mut streams: Vec<RecvStream> = (0..3u8)
        .map(|i| connection.send_unary(&head("/p"), Bytes::from(vec![i]), None).unwrap())
        .collect();
    let (send, recv) = connection.open(&head("/watch"), false).unwrap();
    streams.push(recv);
    // The server reads all the client writes, so that nothing backs up on its side.
    let (mut from_client, mut to_client) = peer.socket.into_split();
    let reading = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut tokio::io::sink()).await;
    });
    // The client may have closed the connection before taking it all.
    let _ = to_client.write_all(bytes).await;
    let _ = to_client.shutdown().await;
    let ended = task.await.expect("the connection's task does not panic");
    let (most, all) = connection.shared.lock().buffered();
    assert!(
        most <= super::state::STREAM_WINDOW as usize
            && all <= super::state::CONNECTION_WINDOW as usize,
        "{most} bytes held for one stream, {all} for all"
    );
    for recv in &mut streams {
        // An answer read whole, or an error of the Error enum: either way it ended.
        let _ = read_to_end(recv).await;
    }
    let Poll::Ready(Err(_)) = now(|cx| connection.poll_ready(cx, &mut None)) else {
        panic!("the connection ended ({ended:?}) but takes new streams");
    };
    drop((send, streams, connection));
    reading.await.unwrap();
}

/// A stream id, most often of a stream open.
fn any_stream() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => proptest::sample::select(&OPEN[..]),
        1 => proptest::sample::select(&NOT_OPEN[..]),
        1 => any::<u32>().prop_map(|id| id & 0x7fff_ffff),
    ]
}

/// Flags as servers set them, or any.
fn any_flags() -> impl Strategy<Value = u8> {
    let set = [
        0,
        codec::END_STREAM,
        codec::END_HEADERS,
        codec::END_HEADERS | codec::END_STREAM,
        codec::PADDED,
        codec::PADDED | codec::END_HEADERS,
        codec::PRIORITY | codec::END_HEADERS,
    ];
    prop_oneof![3 => proptest::sample::select(set.to_vec()), 1 => any::<u8>()]
}

/// One thing a server may send that the RFC allows, though in any order and number:
/// heads and trailers, DATA (padded or not), settings in range, window updates, resets,
/// GOAWAYs, PINGs, PRIORITY and frames of unknown types.
fn lawful() -> impl Strategy<Value = Vec<u8>> {
    let open = || proptest::sample::select(&OPEN[..]);
    let status = block(&[(":status", "200")]);
    let trailers = block(&[("grpc-status", "0"), ("grpc-message", "ok")]);
    let meta = prop_oneof![Just(status), Just(trailers), Just(vec![0x88])];
    let ends = prop_oneof![Just(0), Just(codec::END_STREAM)];
    let setting = prop_oneof![
        (Just(codec::SETTINGS_INITIAL_WINDOW_SIZE), 0..=i32::MAX as u32),
        (Just(codec::SETTINGS_MAX_FRAME_SIZE), 16_384u32..=16_777_215),
        (Just(codec::SETTINGS_MAX_CONCURRENT_STREAMS), any::<u32>()),
        (Just(codec::SETTINGS_ENABLE_PUSH), Just(0)),
        (prop_oneof![Just(1u16), Just(6), 7u16..], any::<u32>()),
    ];
    prop_oneof![
        3 => (ends.clone(), open(), meta).prop_map(|(end, stream, b)| {
            frame(codec::HEADERS, codec::END_HEADERS | end, stream, &b)
        }),
        3 => (ends, open(), 0..2_000usize, proptest::option::of(any::<u8>())).prop_map(
            |(end, stream, len, pad)| match pad {
                None => frame(codec::DATA, end, stream, &vec![1; len]),
                Some(pad) => {
                    let payload = [vec![pad], vec![1; len], vec![0; usize::from(pad)]].concat();
                    frame(codec::DATA, end | codec::PADDED, stream, &payload)
                }
            }
        ),
        1 => proptest::collection::vec(setting, 0..4).prop_map(|pairs| settings(&pairs)),
        1 => (prop_oneof![Just(0), open()], 1u32..1 << 20).prop_map(|(s, n)| window(s, n)),
        1 => (open(), 0u32..16).prop_map(|(s, code)| reset(s, code)),
        1 => (0u32..10, 0u32..16).prop_map(|(last, code)| go_away(last, code)),
        1 => (any::<bool>(), any::<u64>()).prop_map(|(ack, p)| {
            frame(codec::PING, if ack { codec::ACK } else { 0 }, 0, &p.to_be_bytes())
        }),
        1 => (open(), any::<[u8; 5]>()).prop_map(|(s, p)| frame(0x2, 0, s, &p)),
        1 => (10u8.., any::<u8>(), any_stream(), proptest::collection::vec(any::<u8>(), 0..48))
            .prop_map(|(kind, flags, s, p)| frame(kind, flags, s, &p)),
    ]
}

/// A RST_STREAM frame.
fn reset(stream: u32, code: u32) -> Vec<u8> {
    frame(codec::RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// A GOAWAY frame.
fn go_away(last: u32, code: u32) -> Vec<u8> {
    frame(codec::GOAWAY, 0, 0, &[last.to_be_bytes(), code.to_be_bytes()].concat())
}

/// One hostile thing a server may send: frames well formed as frames (their length is
/// their payload's), their content anything; floods.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let payload = || proptest::collection::vec(any::<u8>(), 0..48);
    let blocks = prop_oneof![
        Just(block(&[(":status", "200")])),
        Just(vec![0x88]),
        proptest::collection::vec(any::<u8>(), 0..32),
    ];
    let big = vec![0u8; codec::DEFAULT_MAX_FRAME];
    let data = move |(stream, flags, len, count): (u32, u8, usize, usize)| {
        frame(codec::DATA, flags, stream, &big[..len]).repeat(count)
    };
    let setting_value = prop_oneof![any::<u32>(), 0u32..4, Just(1 << 31), Just(16_384)];
    prop_oneof![
        // Any type, flags and payload, on any stream.
        2 => (any::<u8>(), any::<u8>(), any_stream(), payload())
            .prop_map(|(kind, flags, stream, p)| frame(kind, flags, stream, &p)),
        // HEADERS of anything with any flags; a CONTINUATION of anything.
        2 => (any_flags(), any_stream(), blocks)
            .prop_map(|(flags, stream, b)| frame(codec::HEADERS, flags, stream, &b)),
        1 => (any_flags(), any_stream(), payload())
            .prop_map(|(flags, stream, p)| frame(codec::CONTINUATION, flags, stream, &p)),
        // DATA with any flags (a padding length past the payload among them).
        2 => (any_stream(), any_flags(), 0..=codec::DEFAULT_MAX_FRAME, 1..4usize)
            .prop_map(data.clone()),
        // SETTINGS of any ids and values, out of range too.
        1 => proptest::collection::vec((0u16..10, setting_value), 0..4)
            .prop_map(|pairs| settings(&pairs)),
        // WINDOW_UPDATEs of any size; resets and GOAWAYs of any code, on any stream.
        1 => (any_stream(), prop_oneof![any::<u32>(), Just(0), Just(i32::MAX as u32)])
            .prop_map(|(stream, increment)| window(stream, increment)),
        1 => (any_stream(), any::<u32>()).prop_map(|(stream, code)| reset(stream, code)),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(last, code)| go_away(last, code)),
        // Floods: PINGs, SETTINGS, a header block that never ends, DATA past the windows.
        1 => (1..5_000usize).prop_map(|n| frame(codec::PING, 0, 0, &[1; 8]).repeat(n)),
        1 => (1..5_000usize).prop_map(|n| frame(codec::SETTINGS, 0, 0, &[]).repeat(n)),
        1 => (any_stream(), 1..80usize).prop_map(|(stream, n)| {
            let more = frame(codec::CONTINUATION, 0, stream, &[0; codec::DEFAULT_MAX_FRAME]);
            [frame(codec::HEADERS, 0, stream, &[0; 100]), more.repeat(n)].concat()
        }),
        1 => (proptest::sample::select(&OPEN[..]), 1..1_100usize)
            .prop_map(move |(stream, n)| data((stream, 0, codec::DEFAULT_MAX_FRAME, n))),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: 128,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]

    #[test]
    fn the_reader_survives_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        feed(&bytes);
    }

    #[test]
    fn the_reader_survives_hostile_frames(
        answered in proptest::collection::vec(any::<bool>(), 4),
        frames in proptest::collection::vec(prop_oneof![4 => lawful(), 1 => hostile()], 1..24),
    ) {
        // Some streams got their head first, so that what follows reaches their data.
        let status = block(&[(":status", "200")]);
        let mut bytes = Vec::new();
        for (stream, _) in OPEN.iter().zip(answered).filter(|(_, a)| *a) {
            bytes.extend(frame(codec::HEADERS, codec::END_HEADERS, *stream, &status));
        }
        bytes.extend(frames.concat());
        feed(&bytes);
    }
}
