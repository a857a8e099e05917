//! Corner cases: abandoned data, waiting for a stream slot, connection errors and the
//! GOAWAY each sends, data past the windows, floods.

use super::*;

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
    let opened = super::super::state::CONNECTION_WINDOW - 65_535;
    assert_eq!((h.stream, codec::u31(&first)), (0, Some(opened)), "the client's opening credit");
    // Five streams get 4 MiB each that nobody reads, and are dropped: 20 MiB of the
    // connection's 32 MiB window, which must come back or the connection stalls for good.
    const PER_STREAM: usize = 4 << 20;
    let chunk = vec![7u8; codec::DEFAULT_MAX_FRAME];
    let mut credit = 0;
    for i in 0..5u8 {
        let recv =
            connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
        credit >= u64::from(super::super::state::CONNECTION_WINDOW / 2),
        "{credit} bytes given back of {} abandoned",
        5 * PER_STREAM
    );
}

#[tokio::test]
async fn waiters_for_a_stream_slot_get_one_in_the_order_they_came() {
    let (connection, mut peer) = connect().await;
    apply_settings(&mut peer, &[(codec::SETTINGS_MAX_CONCURRENT_STREAMS, 2)]).await;
    let send =
        |i: u8| connection.send_unary(&mut None, &head("/p"), Bytes::from(vec![i]), None).unwrap();
    let (mut first, mut second) = (send(100), send(101));
    // Six more requests come one after the other, each in its own task, and wait in line.
    let mut waiters = Vec::new();
    for i in 1..=6u8 {
        let connection = connection.clone();
        waiters.push(tokio::spawn(async move {
            let mut turn = None;
            std::future::poll_fn(|cx| connection.poll_ready(cx, &mut turn)).await?;
            let mut recv =
                connection.send_unary(&mut turn, &head("/p"), Bytes::from(vec![i]), None)?;
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
        let mut recv =
            connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
    let stream_window = super::super::state::STREAM_WINDOW as usize;
    // A stream whose reader reads gets more than its window, as the client gives it back.
    let (connection, mut peer) = connect().await;
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
    let _held =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
    peer.head(1).await;
    send_data(&mut peer, 1, stream_window + 1).await;
    assert_eq!(go_away_then_close(&mut peer).await, (0, codec::FLOW_CONTROL_ERROR));
    let (most, _) = connection.shared.lock().buffered();
    assert!(most <= stream_window, "{most} bytes held for a stream");
    // Nor may all streams together take more than the connection's window.
    let (connection, mut peer) = connect().await;
    let mut held = Vec::new();
    for stream in [1, 3, 5, 7, 9] {
        held.push(
            connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap(),
        );
        peer.head(stream).await;
        send_data(&mut peer, stream, 7 << 20).await;
    }
    assert_eq!(go_away_then_close(&mut peer).await, (0, codec::FLOW_CONTROL_ERROR));
    let (_, all) = connection.shared.lock().buffered();
    assert!(all <= super::super::state::CONNECTION_WINDOW as usize, "{all} bytes held in all");
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"x"), None).unwrap();
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
