//! Which member opened a peer connection: the process that owns the connecting socket.
//!
//! Every member dials a peer at the one peer URL that peer advertises, so the proxy in front
//! of it cannot tell the senders apart by where they connected. etcd's raft messages name
//! their sender in an `X-Server-From` header, but not every peer request does (version
//! checks and forwarded lease renewals do not), and a connection can start with one of
//! those. The kernel knows for certain: the connecting socket's inode is in
//! `/proc/net/tcp` under its loopback address and port, and in `/proc/PID/fd` of the process
//! that holds it. A peer connection is opened seldom and kept, so the look-up is cheap.

use std::net::SocketAddr;
use std::path::Path;

/// The index in `pids` of the process holding the socket connected from `from` to
/// `to_port` on loopback; `None` when none of them does (a process gone since).
pub(crate) fn connecting_process(
    from: SocketAddr,
    to_port: u16,
    pids: &[Option<u32>],
) -> Option<usize> {
    let inode = socket_inode(Path::new("/proc/net"), from, to_port)?;
    let wanted = format!("socket:[{inode}]");
    pids.iter().position(|pid| {
        let Some(pid) = pid else { return false };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str()))
    })
}

/// The inode of the socket whose local end is `from` and remote port `to_port`, from the
/// kernel's TCP tables (`tcp` for IPv4, `tcp6` for IPv6) under `proc_net`.
fn socket_inode(proc_net: &Path, from: SocketAddr, to_port: u16) -> Option<u64> {
    let table = if from.is_ipv4() { "tcp" } else { "tcp6" };
    let text = std::fs::read_to_string(proc_net.join(table)).ok()?;
    let local_port = format!(":{:04X}", from.port());
    let remote_port = format!(":{to_port:04X}");
    // Lines: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...`,
    // addresses as hex `ADDR:PORT`. On loopback the ports alone tell the socket apart: the
    // kernel gives no two connecting sockets the same ephemeral port to one destination.
    text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, inode) = (fields.get(1)?, fields.get(2)?, fields.get(9)?);
        (local.ends_with(&local_port) && remote.ends_with(&remote_port))
            .then(|| inode.parse().ok())
            .flatten()
            .filter(|inode| *inode != 0)
    })
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    use super::*;

    #[test]
    fn finds_this_process_as_the_owner_of_a_connection_it_opened() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_accepted, from) = listener.accept().unwrap();
        let me = Some(std::process::id());
        assert_eq!(connecting_process(from, port, &[None, Some(1), me]), Some(2));
        assert_eq!(connecting_process(from, port, &[Some(1)]), None, "init holds no such socket");
    }

    #[test]
    fn reads_the_inode_from_a_tcp_table() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::write(
            dir.join("tcp"),
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: 0100007F:A1B2 0100007F:0929 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 20 4 30 10 -1\n\
             1: 0100007F:C350 0100007F:0929 01 00000000:00000000 00:00000000 00000000     0        0 98765 1 0000000000000000 20 4 30 10 -1\n",
        )
        .unwrap();
        let from: SocketAddr = "127.0.0.1:50000".parse().unwrap();
        assert_eq!(socket_inode(dir, from, 2345), Some(98765));
        let other: SocketAddr = "127.0.0.1:41394".parse().unwrap();
        assert_eq!(socket_inode(dir, other, 2345), None, "a socket in TIME_WAIT has inode 0");
    }
}
