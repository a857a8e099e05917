//! The floor of one client's CPU per put against etcd, for issue 17's one-client target: the
//! cheapest client that does what etcdlat does with one connection and one client. One
//! thread, a blocking socket, HTTP/2 and gRPC frames written by hand (HPACK literals, no
//! table), puts of 256 bytes one after another, etcd's pings acknowledged as etcdlat
//! acknowledges them (with the next request once 2 ms old). Nothing is checked but that
//! each answer ends its stream: it is a measuring stick, not a client.
//!
//! `cargo bench --bench floor -- HOST:PORT [PUTS]` (against a fresh etcd, beside
//! `etcdlat --endpoints HOST:PORT --conns 1 --clients 1 put --total PUTS`); without an
//! endpoint it says so and does nothing, so `cargo bench` stays runnable.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let Some(addr) = args.first() else {
        println!("floor: no endpoint given (cargo bench --bench floor -- HOST:PORT [PUTS])");
        return;
    };
    let n: u32 = args.get(1).map_or(10_000, |n| n.parse().expect("PUTS is a number"));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    frame(4, 0, 0, &[], &mut out);
    frame(8, 0, 0, &(0x7fff_0000u32).to_be_bytes(), &mut out);
    s.write_all(&out).unwrap();

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

    let mut buf = vec![0u8; 1 << 16];
    let mut have = 0usize;
    let mut pong: Option<(Instant, [u8; 8])> = None;
    let mut stream = 1u32;
    let start = Instant::now();
    for _ in 0..n {
        out.clear();
        if let Some((since, payload)) = pong {
            if since.elapsed() >= Duration::from_millis(2) {
                frame(6, 1, 0, &payload, &mut out);
                pong = None;
            }
        }
        frame(1, 4, stream, &headers, &mut out);
        frame(0, 1, stream, &data, &mut out);
        s.write_all(&out).unwrap();
        // Read frames until this stream's END_STREAM.
        'resp: loop {
            while have >= 9 {
                let len = (buf[0] as usize) << 16 | (buf[1] as usize) << 8 | buf[2] as usize;
                if have < 9 + len {
                    break;
                }
                let (kind, flags) = (buf[3], buf[4]);
                let sid = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
                let mut done = false;
                match kind {
                    4 if flags & 1 == 0 => {
                        let mut ack = Vec::new();
                        frame(4, 1, 0, &[], &mut ack);
                        s.write_all(&ack).unwrap();
                    }
                    6 if flags & 1 == 0 => {
                        let mut p = [0; 8];
                        p.copy_from_slice(&buf[9..17]);
                        pong.get_or_insert((Instant::now(), p));
                    }
                    1 | 0 if sid == stream && flags & 1 == 1 => done = true,
                    7 => panic!("GOAWAY"),
                    3 => panic!("RST_STREAM"),
                    _ => {}
                }
                buf.copy_within(9 + len..have, 0);
                have -= 9 + len;
                if done {
                    break 'resp;
                }
            }
            let r = s.read(&mut buf[have..]).unwrap();
            assert!(r > 0, "closed");
            have += r;
        }
        stream += 2;
    }
    let wall = start.elapsed();
    // The process's user and system time, in clock ticks (100 a second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    let ticks = 100.0;
    let utime: f64 = fields[11].parse::<f64>().unwrap() / ticks;
    let stime: f64 = fields[12].parse::<f64>().unwrap() / ticks;
    println!(
        "{n} puts in {:.2} s: CPU user {utime:.2} s, system {stime:.2} s, {:.1} us per put",
        wall.as_secs_f64(),
        (utime + stime) / f64::from(n) * 1e6
    );
}
