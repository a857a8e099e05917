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
    /// The settings the client's first SETTINGS frame said.
    settings: Vec<(u16, u32)>,
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
    // As the dialer sets it: without, a small write behind another waits for its ACK.
    socket.set_nodelay(true).unwrap();
    let (connection, task) = Connection::with_keepalive(Io::Plain(socket), interval, timeout);
    let task = tokio::spawn(task);
    let (socket, _) = listener.accept().await.unwrap();
    socket.set_nodelay(true).unwrap();
    let mut peer = Peer { socket, buf: BytesMut::new(), settings: Vec::new() };
    while peer.buf.len() < codec::PREFACE.len() {
        peer.socket.read_buf(&mut peer.buf).await.unwrap();
    }
    assert_eq!(&peer.buf[..codec::PREFACE.len()], codec::PREFACE);
    peer.buf.advance(codec::PREFACE.len());
    let (settings, payload) = peer.frame().await;
    assert_eq!(settings.kind, codec::SETTINGS);
    let read: Vec<_> = codec::settings(&payload).unwrap().collect();
    assert!(read.contains(&(codec::SETTINGS_ENABLE_PUSH, 0)), "{read:?}");
    peer.settings = read;
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
        .send_unary(&mut None, &head("/etcdserverpb.KV/Put"), Bytes::from_static(b"hello"), None)
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
    let _recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
    let (mut send, _recv) = connection.open(&mut None, &head("/p"), false).unwrap();
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
    let mut first =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    let mut second =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"2"), None).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::RST_STREAM, 0, 1, &codec::REFUSED_STREAM.to_be_bytes()).await;
    let e = recv.head().await.unwrap_err();
    assert!(matches!(e, Error::Reset(codec::REFUSED_STREAM)), "{e:?}");
    assert_eq!(crate::transport::status::http2_status(e).code(), tonic::Code::Unavailable);
    // DATA before a head is the server's mistake on that stream alone: it is reset.
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"2"), None).unwrap();
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
    let (mut send, mut recv) = connection.open(&mut None, &head("/p"), false).unwrap();
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
    let mut next =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
    let recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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

/// Reads what the client sends until its GOAWAY, then until it closes the connection;
/// the GOAWAY's last stream and code.
mod corner;
mod fuzz;
mod hpack;
mod liveness;
mod stall;
mod strict;
