//! What a server's HPACK encoder may send (issue 26): grpc-go's encoder, etcd's,
//! Huffman-codes a string when that is shorter and adds every field to its dynamic table,
//! so that later responses on the connection name it by index.

use super::*;

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
        let coded =
            if huffman { super::super::hpack::tests::huffman(s.as_bytes()) } else { s.into() };
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
async fn full_answer(
    recv: &mut RecvStream,
) -> (super::super::Meta, Vec<u8>, Option<super::super::Meta>) {
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
    let mut first =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
) -> (super::super::Meta, Vec<u8>, Option<super::super::Meta>) {
    let (_send, mut recv) = connection.open(&mut None, &head("/p"), true).unwrap();
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
    let mut third =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"3"), None).unwrap();
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
        let mut recv =
            connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
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
    let (_send, mut recv) = connection.open(&mut None, &head("/p"), true).unwrap();
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
    let mut recv =
        connection.send_unary(&mut None, &head("/p"), Bytes::from_static(b"1"), None).unwrap();
    peer.next(codec::DATA).await;
    peer.send(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, 1, &error.0).await;
    let answered = recv.head().await.unwrap();
    let status = crate::transport::unary::answer_body(&answered).unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), "etcdserver: requested lease not found");
    assert!(recv.data().await.is_none(), "no DATA");
    // etcd-client's path, every field kept: the same status from the head's fields (the
    // second time by index, as the server's table now has them).
    let (_send, mut recv) = connection.open(&mut None, &head("/p"), true).unwrap();
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
