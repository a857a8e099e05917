#!/usr/bin/env bash
# One client's CPU per put, split into user and system time, for etcdlat beside the four
# measuring sticks of benches/floor.rs (a blocking socket, one tokio task, two tokio tasks,
# h2 on a plain socket): each run against a fresh single-member etcd (new data dir, new
# ports), ROUNDS times in turn, and the medians (whole process, from /usr/bin/time).
# Usage: benches/floors.sh [ROUNDS] [PUTS]
#   after cargo build --release -p etcdlat-cli && cargo build --release --bench floor.
#   ETCD_BIN picks the etcd (default: etcd).
set -euo pipefail
rounds=${1:-3}
puts=${2:-10000}
etcdlat=${ETCDLAT:-target/release/etcdlat}
floor=$(ls -t target/release/deps/floor-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
[ -x "$floor" ] || { echo "build the floor first: cargo build --release --bench floor" >&2; exit 2; }
etcd=${ETCD_BIN:-etcd}
out=$(mktemp -d)
# shellcheck source=benches/fresh-etcd.sh
. "$(dirname "$0")/fresh-etcd.sh"

clients=(std tokio tasks h2 etcdlat)
for round in $(seq 1 "$rounds"); do
  for client in "${clients[@]}"; do
    start_etcd
    if [ "$client" = etcdlat ]; then
      command=("$etcdlat" --endpoints "$endpoint" --conns 1 --clients 1 put --total "$puts")
    else
      command=("$floor" "$endpoint" "$puts" "$client")
    fi
    /usr/bin/time -f "%U %S" -o "$out/$client-$round.time" "${command[@]}" >"$out/$client-$round.out" 2>&1
    stop_etcd
  done
done

python3 - "$out" "$rounds" "$puts" "${clients[@]}" <<'PY'
import statistics, sys
out, rounds, puts, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
print(f"CPU per put, microseconds, median of {rounds} (each run: [user, system])")
print(f"{'client':<8} {'user':>6} {'system':>7} {'total':>7}  runs")
for c in clients:
    runs = []
    for r in range(1, rounds + 1):
        user, system = map(float, open(f"{out}/{c}-{r}.time").read().split()[-2:])
        runs.append((user / puts * 1e6, system / puts * 1e6))
    med = lambda xs: statistics.median(xs)
    u, s = med([r[0] for r in runs]), med([r[1] for r in runs])
    t = med([r[0] + r[1] for r in runs])
    print(f"{c:<8} {u:6.1f} {s:7.1f} {t:7.1f}  " + " ".join(f"[{a:.0f}, {b:.0f}]" for a, b in runs))
PY
