//! Stalls a server can cause (issue 41): credit it uses that never comes back (padding, a
//! dropped reader's stream), header blocks that cost far more to decode than they weigh.

use super::super::state::{CONNECTION_WINDOW, STREAM_WINDOW};
use super::*;

/// The increments of the WINDOW_UPDATEs on `stream` (0: the connection) the client sent
/// until it acknowledged a PING of `payload` (sent now), skipping its other frames.
async fn credit_until_ping(peer: &mut Peer, stream: u32, payload: [u8; 8]) -> u64 {
    peer.send(codec::PING, 0, 0, &payload).await;
    let mut credit = 0;
    loop {
        let (h, frame) = peer.frame().await;
        match h.kind {
            codec::WINDOW_UPDATE if h.stream == stream => {
                credit += u64::from(codec::u31(&frame).unwrap());
            }
            codec::PING if h.flags & codec::ACK != 0 && frame[..] == payload => return credit,
            _ => {}
        }
    }
}

/// Sends `n` DATA frames of 16 KiB on `stream`.
async fn send_frames(peer: &mut Peer, stream: u32, n: usize) {
    let one = frame(codec::DATA, 0, stream, &[7; codec::DEFAULT_MAX_FRAME]);
    peer.socket.write_all(&one.repeat(n)).await.unwrap();
}

/// Sends a header block on `stream` as HEADERS and as many CONTINUATIONs as it takes.
async fn send_block(peer: &mut Peer, stream: u32, end_stream: bool, block: &[u8]) {
    let mut bytes = Vec::new();
    let pieces: Vec<&[u8]> = block.chunks(codec::DEFAULT_MAX_FRAME).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let last = if i + 1 == pieces.len() { codec::END_HEADERS } else { 0 };
        let (kind, end) = match i {
            0 => (codec::HEADERS, if end_stream { codec::END_STREAM } else { 0 }),
            _ => (codec::CONTINUATION, 0),
        };
        bytes.extend(frame(kind, last | end, stream, piece));
    }
    peer.socket.write_all(&bytes).await.unwrap();
}

#[tokio::test]
async fn a_stream_whose_reader_was_dropped_while_its_body_goes_on_gives_all_it_gets_back() {
    let (connection, mut peer) = connect().await;
    // Five streams whose request bodies go on (as etcd-client's pump keeps them) get 7 MiB
    // each, 35 MiB in all, past the connection's 32 MiB window: their readers are dropped
    // halfway, and what they held and what comes after must go back to the connection.
    const FRAMES: usize = (7 << 20) / codec::DEFAULT_MAX_FRAME;
    let mut bodies = Vec::new();
    let mut credit = 0;
    for i in 0..5u8 {
        let (send, recv) = connection.open(&mut None, &head("/watch"), false).unwrap();
        bodies.push(send);
        let id = peer.next(codec::HEADERS).await.0.stream;
        peer.head(id).await;
        send_frames(&mut peer, id, FRAMES / 2).await;
        credit += credit_until_ping(&mut peer, 0, [i; 8]).await;
        drop(recv);
        send_frames(&mut peer, id, FRAMES - FRAMES / 2).await;
        credit += credit_until_ping(&mut peer, 0, [i + 10; 8]).await;
    }
    assert!(
        credit >= u64::from(CONNECTION_WINDOW),
        "{credit} bytes given back of {} sent to dropped readers",
        5 * FRAMES * codec::DEFAULT_MAX_FRAME
    );
    // The connection still serves.
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
    let id = peer.next(codec::HEADERS).await.0.stream;
    peer.head(id).await;
    peer.send(codec::DATA, 0, id, b"still").await;
    peer.ok(id).await;
    assert_eq!(answer(&mut recv).await.unwrap().1, b"still");
    assert_eq!(connection.shared.lock().buffered().1, 0, "nothing held for dropped readers");
}

#[tokio::test]
async fn padding_is_given_back_to_the_streams_window_at_once() {
    let (connection, mut peer) = connect().await;
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.head(1).await;
    // DATA of padding alone, 256 bytes of the window each (its length byte and 255 of
    // padding), until the stream's window is used up: the reader never has anything to
    // take, so padding given back only with what it takes never comes back.
    let padded = frame(codec::DATA, codec::PADDED, 1, &[&[255][..], &[0; 255]].concat());
    peer.socket.write_all(&padded.repeat(STREAM_WINDOW as usize / 256)).await.unwrap();
    let credit = credit_until_ping(&mut peer, 1, [1; 8]).await;
    assert!(credit >= u64::from(STREAM_WINDOW / 2), "{credit} bytes of the stream's window back");
    peer.send(codec::DATA, 0, 1, b"after").await;
    peer.ok(1).await;
    assert_eq!(answer(&mut recv).await.unwrap().1, b"after");
}

#[tokio::test]
async fn the_client_advertises_its_limit_on_a_header_list() {
    let (_connection, peer) = connect().await;
    let limit = super::super::task::MAX_HEADER_LIST as u32;
    assert!(
        peer.settings.contains(&(codec::SETTINGS_MAX_HEADER_LIST_SIZE, limit)),
        "{:?}",
        peer.settings
    );
}

#[tokio::test]
async fn a_header_list_past_the_limit_fails_its_stream_at_the_cost_of_its_block() {
    let (connection, mut peer) = connect().await;
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.head(1).await;
    // A 4000-byte grpc-message added to the table, then a reference to it for every byte
    // left of a 1 MiB block: a list of 4 GB, for a stream that keeps only gRPC's status.
    let mut block = vec![0x40];
    codec::put_int(&mut block, 0, 7, b"grpc-message".len());
    block.extend_from_slice(b"grpc-message");
    codec::put_int(&mut block, 0, 7, 4000);
    block.extend_from_slice(&[b'x'; 4000]);
    block.resize(1 << 20, 0xbe);
    let started = std::time::Instant::now();
    send_block(&mut peer, 1, true, &block).await;
    let mut ended = None;
    while let Some(chunk) = recv.data().await {
        if let Err(e) = chunk {
            ended = Some(e);
            break;
        }
    }
    let ended = match ended {
        Some(e) => e,
        None => recv.trailers().await.expect_err("the stream fails"),
    };
    assert!(matches!(ended, Error::Malformed(_)), "{ended:?}");
    let (r, code) = peer.next(codec::RST_STREAM).await;
    assert_eq!((r.stream, &code[..]), (1, &codec::PROTOCOL_ERROR.to_be_bytes()[..]));
    assert!(started.elapsed() < Duration::from_secs(3), "decoded in {:?}", started.elapsed());
    // The connection goes on, its HPACK table as the server's.
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"y"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.head(3).await;
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, 3, &[0xbe]).await;
    let e = answer(&mut recv).await;
    assert_eq!(e.unwrap().2, None, "trailers of the table's grpc-message alone");
}

#[tokio::test]
async fn a_slot_said_ready_is_kept_for_the_stream_opened_in_it() {
    let (connection, mut peer) = connect().await;
    apply_settings(&mut peer, &[(codec::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]).await;
    // Two callers (on two threads, say) ask for the one slot before either opens a stream.
    let (mut first, mut second) = (None, None);
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut first)), Poll::Ready(Ok(()))));
    assert!(
        now(|cx| connection.poll_ready(cx, &mut second)).is_pending(),
        "the one slot said ready to both: the server would refuse one stream"
    );
    let mut recv =
        connection.send_unary(&mut first, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    assert!(now(|cx| connection.poll_ready(cx, &mut second)).is_pending(), "the stream holds it");
    peer.next(codec::DATA).await;
    peer.head(1).await;
    peer.ok(1).await;
    answer(&mut recv).await.unwrap();
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut second)), Poll::Ready(Ok(()))));
    // A slot let go without a stream goes to the next caller.
    let mut third = None;
    assert!(now(|cx| connection.poll_ready(cx, &mut third)).is_pending());
    drop(second);
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut third)), Poll::Ready(Ok(()))));
}

#[tokio::test]
async fn streams_and_waiters_fail_when_the_connections_task_is_dropped() {
    let keepalive = (super::super::task::KEEPALIVE_INTERVAL, super::super::task::KEEPALIVE_TIMEOUT);
    let (connection, mut peer, task) = connect_running(keepalive.0, keepalive.1).await;
    apply_settings(&mut peer, &[(codec::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]).await;
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    let waiter = tokio::spawn({
        let connection = connection.clone();
        async move {
            let mut turn = None;
            std::future::poll_fn(|cx| connection.poll_ready(cx, &mut turn)).await
        }
    });
    tokio::task::yield_now().await;
    // The task is dropped, as when its runtime shuts down.
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let failed = tokio::time::timeout(Duration::from_secs(5), recv.head()).await;
    let e = failed.expect("the stream fails rather than waits for ever").unwrap_err();
    assert!(matches!(e, Error::Closed(m) if m.contains("task")), "{e:?}");
    let waited = tokio::time::timeout(Duration::from_secs(5), waiter).await;
    assert!(waited.expect("the waiter is told").unwrap().is_err());
    assert!(matches!(now(|cx| connection.poll_ready(cx, &mut None)), Poll::Ready(Err(_))));
}

#[tokio::test]
async fn those_waiting_for_a_slot_are_told_at_once_when_the_stream_ids_run_out() {
    let (connection, mut peer) = connect().await;
    apply_settings(&mut peer, &[(codec::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]).await;
    let last = i32::MAX as u32;
    connection.shared.lock().skip_ids(last - 2);
    let mut open =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    // Three wait in line for the one slot, each to open a stream in it.
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let connection = connection.clone();
            tokio::spawn(async move {
                let mut turn = None;
                std::future::poll_fn(|cx| connection.poll_ready(cx, &mut turn)).await?;
                connection.send_unary(&mut turn, &head("/p"), Bytes::from_static(b"2"), None)
            })
        })
        .collect();
    tokio::task::yield_now().await;
    peer.next(codec::DATA).await;
    peer.head(last - 2).await;
    peer.ok(last - 2).await;
    answer(&mut open).await.unwrap();
    // The first takes the slot and the last id; that stream stays open. The others will
    // never get a slot here, and are told so (to dial again) without waiting for it.
    assert_eq!(peer.next(codec::HEADERS).await.0.stream, last);
    let mut told = Vec::new();
    for waiter in waiters {
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        told.push(waited.expect("told within 5 s").unwrap());
    }
    assert!(told[0].is_ok(), "the first opened the last stream");
    for e in &told[1..] {
        assert!(matches!(e, Err(Error::Closed(m)) if m.contains("ids")), "{:?}", e.as_ref().err());
    }
}

/// A request body of `left` parts of 64 KiB, counting those taken.
struct Parts {
    left: usize,
    taken: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl http_body::Body for Parts {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        self.taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![3u8; 64 << 10])))))
    }
}

#[tokio::test]
async fn a_body_pumped_to_a_server_that_gives_no_window_waits_for_it() {
    let (connection, mut peer) = connect().await;
    apply_settings(&mut peer, &[(codec::SETTINGS_INITIAL_WINDOW_SIZE, 0)]).await;
    let (send, _recv) = connection.open(&mut None, &head("/p"), false).unwrap();
    let taken = std::sync::Arc::default();
    let body = Parts { left: 256, taken: std::sync::Arc::clone(&taken) };
    let pump = tokio::spawn(crate::transport::service::pump(tonic::body::Body::new(body), send));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let parts = taken.load(std::sync::atomic::Ordering::Relaxed);
    let bound = super::super::state::SEND_BUFFER / (64 << 10) + 1;
    assert!(parts <= bound, "{parts} parts of 64 KiB taken, and no window to send them in");
    // The window opens: all 16 MiB go, and the body's end.
    peer.socket.write_all(&[window(0, 16 << 20), window(1, 16 << 20)].concat()).await.unwrap();
    let mut sent = 0;
    loop {
        let (d, data) = peer.next(codec::DATA).await;
        sent += data.len();
        if d.flags & codec::END_STREAM != 0 {
            break;
        }
    }
    assert_eq!(sent, 16 << 20);
    pump.await.unwrap();
}
