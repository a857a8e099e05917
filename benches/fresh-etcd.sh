# Sourced by the bench scripts: a fresh single-member etcd per run (new data dir, new
# ports) under $out, checked ready with $etcdlat; cleaned up at exit.
# Needs: out (a temp dir), etcdlat, etcd (the binary). Sets: pid, endpoint.
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$out"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_etcd() {
  local client peer
  client=$(free_port)
  peer=$(free_port)
  rm -rf "$out/data"
  "$etcd" --data-dir "$out/data" --listen-client-urls "http://127.0.0.1:$client" \
    --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "default=http://127.0.0.1:$peer" >"$out/etcd.log" 2>&1 &
  pid=$!
  endpoint=127.0.0.1:$client
  for _ in $(seq 100); do
    "$etcdlat" --endpoints "$endpoint" --quiet put --total 1 >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "etcd did not start: $(tail -3 "$out/etcd.log")" >&2
  exit 1
}

stop_etcd() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
