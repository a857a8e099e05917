//! The floor of one client's CPU per put against etcd, for issue 17's one-client target: the
//! cheapest clients that do what etcdlat does with one connection and one client, to tell
//! the kernel's share, the async runtime's and the HTTP/2 library's apart. Each sends puts
//! of 256 bytes one after another on one connection, and acknowledges etcd's pings as
//! etcdlat acknowledges them (with the next request once 2 ms old). Nothing is checked but
//! that each answer ends its stream: they are measuring sticks, not clients.
//! - `std`: one thread, a blocking socket, HTTP/2 and gRPC frames written by hand (HPACK
//!   literals, no table);
//! - `tokio`: the same frames from one task on a current-thread tokio runtime, as etcdlat's
//!   workers run;
//! - `tasks`: the same frames, the connection in a task of its own and the client on a
//!   `LocalSet`, as etcdlat splits them: two tasks and two wake-ups per put;
//! - `h2`: the same puts through `h2` (crates.io's, which tonic uses) straight on the
//!   socket, its connection in a second task; it acknowledges pings at once.
//!
//! `cargo bench --bench floor -- HOST:PORT [PUTS] [std|tokio|tasks|h2]` (against a fresh etcd,
//! beside `etcdlat --endpoints HOST:PORT --conns 1 --clients 1 put --total PUTS`); without
//! an endpoint it says so and does nothing, so `cargo bench` stays runnable.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Appends one HTTP/2 frame to `out`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8], out: &mut Vec<u8>) {
    let len = payload.len();
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// An HPACK string literal, not Huffman-coded.
fn lit(out: &mut Vec<u8>, s: &[u8]) {
    assert!(s.len() < 127);
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// The bytes every mode sends: the connection's preface, a put's HEADERS block and its
/// gRPC-framed message.
struct Put {
    preface: Vec<u8>,
    headers: Vec<u8>,
    data: Vec<u8>,
}

impl Put {
    fn new(addr: &str) -> Self {
        let mut preface = Vec::new();
        preface.extend_from_slice(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        frame(4, 0, 0, &[], &mut preface);
        frame(8, 0, 0, &(0x7fff_0000u32).to_be_bytes(), &mut preface);
        let mut headers = vec![0x83, 0x86, 0x04];
        lit(&mut headers, b"/etcdserverpb.KV/Put");
        headers.push(0x01);
        lit(&mut headers, addr.as_bytes());
        headers.extend_from_slice(&[0x0f, 0x10]);
        lit(&mut headers, b"application/grpc");
        headers.push(0x00);
        lit(&mut headers, b"te");
        lit(&mut headers, b"trailers");
        let mut msg = vec![0x0a, 8];
        msg.extend_from_slice(b"floorkey");
        msg.extend_from_slice(&[0x12, 0x80, 0x02]);
        msg.extend_from_slice(&[7u8; 256]);
        let mut data = vec![0];
        data.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        data.extend_from_slice(&msg);
        Self { preface, headers, data }
    }

    /// Stream `stream`'s request into `out`, after a held PING acknowledgement once it is
    /// 2 ms old.
    fn request(&self, stream: u32, pong: &mut Option<(Instant, [u8; 8])>, out: &mut Vec<u8>) {
        out.clear();
        if let Some((since, payload)) = *pong
            && since.elapsed() >= Duration::from_millis(2)
        {
            frame(6, 1, 0, &payload, out);
            *pong = None;
        }
        frame(1, 4, stream, &self.headers, out);
        frame(0, 1, stream, &self.data, out);
    }
}

/// Frames read from the server, `buf[..have]`.
struct Incoming {
    buf: Vec<u8>,
    have: usize,
    pong: Option<(Instant, [u8; 8])>,
    /// The server's SETTINGS wait for their acknowledgement.
    settings_ack: bool,
}

impl Incoming {
    fn new() -> Self {
        Self { buf: vec![0u8; 1 << 16], have: 0, pong: None, settings_ack: false }
    }

    /// Consumes whole frames until `stream` ends, and says whether it did; holds a PING's
    /// acknowledgement and notes SETTINGS to acknowledge.
    fn consume(&mut self, stream: u32) -> bool {
        while self.have >= 9 {
            let buf = &self.buf;
            let len = (buf[0] as usize) << 16 | (buf[1] as usize) << 8 | buf[2] as usize;
            if self.have < 9 + len {
                break;
            }
            let (kind, flags) = (buf[3], buf[4]);
            let sid = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let mut done = false;
            match kind {
                4 if flags & 1 == 0 => self.settings_ack = true,
                6 if flags & 1 == 0 => {
                    let mut p = [0; 8];
                    p.copy_from_slice(&buf[9..17]);
                    self.pong.get_or_insert((Instant::now(), p));
                }
                1 | 0 if sid == stream && flags & 1 == 1 => done = true,
                7 => panic!("GOAWAY"),
                3 => panic!("RST_STREAM"),
                _ => {}
            }
            self.buf.copy_within(9 + len..self.have, 0);
            self.have -= 9 + len;
            if done {
                return true;
            }
        }
        false
    }
}

fn settings_ack() -> Vec<u8> {
    let mut ack = Vec::new();
    frame(4, 1, 0, &[], &mut ack);
    ack
}

/// `n` puts on a blocking socket.
fn blocking(addr: &str, n: u32) {
    let put = Put::new(addr);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&put.preface).unwrap();
    let mut incoming = Incoming::new();
    let mut out = Vec::new();
    for i in 0..n {
        let stream = 1 + 2 * i;
        put.request(stream, &mut incoming.pong, &mut out);
        s.write_all(&out).unwrap();
        loop {
            let ended = incoming.consume(stream);
            if std::mem::take(&mut incoming.settings_ack) {
                s.write_all(&settings_ack()).unwrap();
            }
            if ended {
                break;
            }
            let r = s.read(&mut incoming.buf[incoming.have..]).unwrap();
            assert!(r > 0, "closed");
            incoming.have += r;
        }
    }
}

/// A tokio socket with a put's frames, and what it read.
struct Tokio {
    s: tokio::net::TcpStream,
    incoming: Incoming,
    out: Vec<u8>,
}

impl Tokio {
    async fn connect(addr: &str, put: &Put) -> Self {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(&put.preface).await.unwrap();
        Self { s, incoming: Incoming::new(), out: Vec::new() }
    }

    /// Sends put `i` and reads until its stream ends.
    async fn put(&mut self, put: &Put, i: u32) {
        let stream = 1 + 2 * i;
        put.request(stream, &mut self.incoming.pong, &mut self.out);
        self.s.write_all(&self.out).await.unwrap();
        loop {
            let ended = self.incoming.consume(stream);
            if std::mem::take(&mut self.incoming.settings_ack) {
                self.s.write_all(&settings_ack()).await.unwrap();
            }
            if ended {
                return;
            }
            let have = self.incoming.have;
            let r = self.s.read(&mut self.incoming.buf[have..]).await.unwrap();
            assert!(r > 0, "closed");
            self.incoming.have += r;
        }
    }
}

/// `n` puts from one task on a current-thread tokio runtime.
async fn one_task(addr: &str, n: u32) {
    let put = Put::new(addr);
    let mut conn = Tokio::connect(addr, &put).await;
    for i in 0..n {
        conn.put(&put, i).await;
    }
}

/// `n` puts from a client on a `LocalSet`, each asked of the connection's own task.
async fn two_tasks(addr: &str, n: u32) {
    let put = Put::new(addr);
    let mut conn = Tokio::connect(addr, &put).await;
    let (ask, mut asked) = tokio::sync::mpsc::channel::<(u32, tokio::sync::oneshot::Sender<()>)>(1);
    tokio::spawn(async move {
        while let Some((i, answered)) = asked.recv().await {
            conn.put(&put, i).await;
            let _ = answered.send(());
        }
    });
    for i in 0..n {
        let (answered, answer) = tokio::sync::oneshot::channel();
        ask.send((i, answered)).await.unwrap();
        answer.await.unwrap();
    }
}

/// `n` puts through h2, its connection in a task of its own.
async fn through_h2(addr: &str, n: u32) {
    let put = Put::new(addr);
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let (send, conn) = h2::client::handshake(s).await.unwrap();
    tokio::spawn(async move { conn.await.unwrap() });
    let mut send = send.ready().await.unwrap();
    let body = bytes::Bytes::from(put.data);
    let uri: http::Uri = format!("http://{addr}/etcdserverpb.KV/Put").parse().unwrap();
    for _ in 0..n {
        let request = http::Request::post(uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let (response, mut stream) = send.send_request(request, false).unwrap();
        stream.send_data(body.clone(), true).unwrap();
        let mut answer = response.await.unwrap().into_body();
        while let Some(data) = answer.data().await {
            let _ = answer.flow_control().release_capacity(data.unwrap().len());
        }
        answer.trailers().await.unwrap();
        send = send.ready().await.unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let Some(addr) = args.first() else {
        println!(
            "floor: no endpoint given (cargo bench --bench floor -- HOST:PORT [PUTS] [std|tokio|tasks|h2])"
        );
        return;
    };
    let n: u32 = args.get(1).map_or(10_000, |n| n.parse().expect("PUTS is a number"));
    let mode = args.get(2).map_or("std", String::as_str);
    let runtime = || tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let start = Instant::now();
    match mode {
        "std" => blocking(addr, n),
        "tokio" => runtime().block_on(one_task(addr, n)),
        "tasks" => tokio::task::LocalSet::new().block_on(&runtime(), two_tasks(addr, n)),
        "h2" => runtime().block_on(through_h2(addr, n)),
        other => panic!("mode {other}: std, tokio, tasks or h2"),
    }
    let wall = start.elapsed();
    // The process's user and system time, in clock ticks (100 a second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    let ticks = 100.0;
    let utime: f64 = fields[11].parse::<f64>().unwrap() / ticks;
    let stime: f64 = fields[12].parse::<f64>().unwrap() / ticks;
    let per = |s: f64| s / f64::from(n) * 1e6;
    println!(
        "{mode}: {n} puts in {:.2} s: CPU user {utime:.2} s, system {stime:.2} s; per put {:.1} us ({:.1} user, {:.1} system)",
        wall.as_secs_f64(),
        per(utime + stime),
        per(utime),
        per(stime)
    );
}
