#!/usr/bin/env bash
# Client cost beside etcd's own Go benchmark tool: the same command line run by both, in
# turn, each against a fresh single-member etcd (new data dir, new ports), ROUNDS times, and
# the medians of whole-process CPU per request (user + system, from /usr/bin/time) and peak
# RSS. With STRACE=1 each run is also counted by `strace -f -c` (slower: the CPU figures of
# those runs are not comparable; the system calls per request are the point).
# Usage: benches/versus-go.sh GO_BENCHMARK [ROUNDS]
#   GO_BENCHMARK: the path ../shared/tools/build-etcd-benchmark prints (never committed);
#   after cargo build --release -p etcdlat-cli. ETCD_BIN picks the etcd (default: etcd).
set -euo pipefail
go_tool=${1:?usage: benches/versus-go.sh GO_BENCHMARK [ROUNDS]}
rounds=${2:-3}
etcdlat=${ETCDLAT:-target/release/etcdlat}
etcd=${ETCD_BIN:-etcd}
out=$(mktemp -d)
# shellcheck source=benches/fresh-etcd.sh
. "$(dirname "$0")/fresh-etcd.sh"

# name|requests|the benchmark command line after --endpoints
cases=(
  "put-100x1000|100000|--conns=100 --clients=1000 put --key-size=8 --val-size=256 --total=100000 --key-space-size=100000"
  "range-s-100x1000|100000|--conns=100 --clients=1000 range foo --consistency=s --total=100000"
  "put-1x1|10000|--conns=1 --clients=1 put --key-size=8 --val-size=256 --total=10000"
)

measure() { # tool, case name, round, command...
  local tool=$1 name=$2 round=$3
  shift 3
  local prefix=(/usr/bin/time -f "%U %S %M" -o "$out/$tool-$name-$round.time")
  if [ "${STRACE:-0}" = 1 ]; then
    prefix+=(strace -f -c -o "$out/$tool-$name-$round.strace")
  fi
  "${prefix[@]}" "$@" >"$out/$tool-$name-$round.out" 2>&1
}

for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name _ args <<<"$c"
    read -r -a args <<<"$args"
    start_etcd
    measure go "$name" "$round" "$go_tool" --endpoints="$endpoint" "${args[@]}"
    stop_etcd
    start_etcd
    measure etcdlat "$name" "$round" "$etcdlat" --endpoints="$endpoint" "${args[@]}"
    stop_etcd
  done
done

python3 - "$out" "$rounds" "${cases[@]}" <<'PY'
import os, statistics, sys
out, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def times(tool, name):
    for r in range(1, rounds + 1):
        u, s, m = open(f"{out}/{tool}-{name}-{r}.time").read().split()[-3:]
        yield float(u) + float(s), int(m) * 1024
def calls(tool, name, names):
    per = []
    for r in range(1, rounds + 1):
        p = f"{out}/{tool}-{name}-{r}.strace"
        if not os.path.exists(p):
            return None
        per.append(sum(int(f[3]) for f in map(str.split, open(p))
                       if len(f) >= 5 and f[-1] in names and f[3].isdigit()))
    return statistics.median(per)
WRITES = {"writev", "sendto", "write", "sendmsg"}
READS = {"recvfrom", "read", "recvmsg"}
print(f"medians of {rounds} rounds, each tool against a fresh etcd, in turn")
print("| run | Go tool CPU/request | etcdlat CPU/request | ratio | max RSS Go / etcdlat |")
print("|---|---|---|---|---|")
for c in cases:
    name, total, _ = c.split("|")
    total = int(total)
    go, el = list(times("go", name)), list(times("etcdlat", name))
    g = statistics.median(t for t, _ in go) / total * 1e6
    e = statistics.median(t for t, _ in el) / total * 1e6
    gm = statistics.median(m for _, m in go) / 1e6
    em = statistics.median(m for _, m in el) / 1e6
    print(f"| {name} | {g:.1f} µs | {e:.1f} µs | {e / g:.2f} | {gm:.0f} / {em:.0f} MB |")
    if calls("etcdlat", name, WRITES) is not None:
        per = lambda tool, names: calls(tool, name, names) / total
        print(f"| {name} system calls per request | writes {per('go', WRITES):.2f}, reads "
              f"{per('go', READS):.2f} | writes {per('etcdlat', WRITES):.2f}, reads "
              f"{per('etcdlat', READS):.2f} | | |")
PY
