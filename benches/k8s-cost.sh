#!/usr/bin/env bash
# What simulating the apiserver costs the client (issue 28: within 2x of a plain put's client
# CPU per request): `k8s-update` (Txn(If mod_revision == r, Then Put, Else Get), r from the
# worker's watch cache, which also receives every update as a watch event) against a plain
# `put` of the same value size over the same keys, clients and connections. Each round
# starts a fresh single-member etcd (new data dir, new ports), creates the 1,000 objects
# with `k8s-create`, then runs the update and the put in turn on it; ROUNDS rounds. Prints
# each round's client CPU per request (user + system of the whole process, from the JSON
# report) and the medians and their ratio.
# Usage: benches/k8s-cost.sh [ROUNDS] [REQUESTS]   (after cargo build --release -p etcdlat-cli)
#   ETCD_BIN picks the etcd (default: etcd).
set -euo pipefail
rounds=${1:-5}
requests=${2:-20000}
etcdlat=${ETCDLAT:-target/release/etcdlat}
etcd=${ETCD_BIN:-etcd}
out=$(mktemp -d)
# shellcheck source=benches/fresh-etcd.sh
. "$(dirname "$0")/fresh-etcd.sh"

scenario() { # op, total
  cat <<TOML
name = "$1"
[load]
conns = 10
clients = 100
total = $2
[op.$1]
objects = 1000
object-size = "256B"
TOML
}
scenario k8s-create 1000 >"$out/create.toml"
scenario k8s-update "$requests" >"$out/update.toml"

for i in $(seq 1 "$rounds"); do
  start_etcd
  "$etcdlat" --endpoints "$endpoint" --quiet run "$out/create.toml"
  "$etcdlat" --endpoints "$endpoint" --quiet --json "$out/update-$i.json" run "$out/update.toml"
  "$etcdlat" --endpoints "$endpoint" --quiet --json "$out/put-$i.json" --conns 10 \
    --clients 100 put --total "$requests" --val-size 256 --key-space-size 1000
  stop_etcd
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def cpu_us(name, i, kind):
    with open(f"{out}/{name}-{i}.json") as f:
        r = json.load(f)["runs"][0]
    op = r["ops"][kind]
    if op["errors_total"] or op.get("conflicts", 0):
        sys.exit(f"{name} round {i}: {op['errors_total']} errors, {op.get('conflicts')} conflicts")
    c = r["client"]
    return (c["user_cpu_s"] + c["system_cpu_s"]) * 1e6 / op["ok"]
print("| round | k8s-update | put | ratio |")
print("|---|---|---|---|")
updates, puts = [], []
for i in range(1, rounds + 1):
    u, p = cpu_us("update", i, "k8s-update"), cpu_us("put", i, "put")
    updates.append(u)
    puts.append(p)
    print(f"| {i} | {u:.1f} µs | {p:.1f} µs | {u / p:.2f}x |")
mu, mp = statistics.median(updates), statistics.median(puts)
print(f"| median | {mu:.1f} µs | {mp:.1f} µs | {mu / mp:.2f}x |")
PY
