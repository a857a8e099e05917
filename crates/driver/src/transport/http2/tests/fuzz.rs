//! The reader fuzzed: arbitrary bytes, and hostile frame sequences.

use proptest::prelude::{Just, Strategy, any, prop_oneof};

use super::*;

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
    let keepalive = (super::super::task::KEEPALIVE_INTERVAL, super::super::task::KEEPALIVE_TIMEOUT);
    let (connection, peer, task) = connect_running(keepalive.0, keepalive.1).await;
    let mut streams: Vec<RecvStream> = (0..3u8)
        .map(|i| connection.send_unary(&mut None, &head("/p"), Bytes::from(vec![i]), None).unwrap())
        .collect();
    let (send, recv) = connection.open(&mut None, &head("/watch"), false).unwrap();
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
        most <= super::super::state::STREAM_WINDOW as usize
            && all <= super::super::state::CONNECTION_WINDOW as usize,
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
