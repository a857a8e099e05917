#!/usr/bin/env bash
# What the emulated network costs: runs the same put load on a fresh local etcd without
# emulation ("plain"), with `--client-latency 1us` (the proxy in the path, next to no delay:
# "proxied") and with `--client-latency 1ms` ("emulated"), in turn, ROUNDS times each, and
# prints the medians. Every request crosses two links (to the member and back), so
#   added per hop = (p50 emulated - p50 plain - 2 x 1 ms) / 2,
# of which (p50 proxied - p50 plain) / 2 is the extra loopback hop through the proxy. The
# proxy runs in the etcdlat process on threads of its own, whose CPU the report keeps apart
# from the client's (target.network.emulator): both are printed per request.
#
# With one client a 1 ms link leaves etcd and the client idle for milliseconds between
# requests, and waking an idle process (on a virtual machine, an idle virtual CPU) costs
# time that any network with that latency would cost too. So each emulated one-client run
# is followed by a plain run paced at its throughput ("paced": the same idle gaps, no
# emulator), and
#   added per hop beyond idle = (p50 emulated - p50 paced - 2 x 1 ms) / 2
# is what the emulator itself adds.
# With CPUS_ETCD and CPUS_NETWORK set (e.g. 0 and 1), etcd and the client run on CPUS_ETCD
# and the emulator on CPUS_NETWORK (--etcd-cpus, --pin-cpus, --network-cpus): what the
# proxy costs when it does not share etcd's cores.
# Usage: benches/network.sh [ROUNDS] [MEMBERS]   (after cargo build --release -p etcdlat-cli)
set -euo pipefail
rounds=${1:-3}
members=${2:-1}
bin=${ETCDLAT:-target/release/etcdlat}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cpus=()
network_cpus=()
if [ -n "${CPUS_ETCD:-}" ]; then
  cpus=(--etcd-cpus "$CPUS_ETCD" --pin-cpus "$CPUS_ETCD")
  network_cpus=(--network-cpus "${CPUS_NETWORK:?set with CPUS_ETCD}")
fi
run() { # name, then etcdlat arguments
  local name=$1
  shift
  local placed=("${cpus[@]}")
  case "$name" in proxied-* | emulated-*) placed+=("${network_cpus[@]}") ;; esac
  "$bin" --local --members "$members" --quiet --json "$out/$name-$i.json" "${placed[@]}" "$@"
}
for i in $(seq 1 "$rounds"); do
  for clients in 1 1000; do
    conns=$((clients == 1 ? 1 : 100))
    total=$((clients == 1 ? 3000 : 50000))
    load=(--conns "$conns" --clients "$clients" put --total "$total" --val-size 256 --key-space-size 10000)
    run "plain-$clients" "${load[@]}"
    run "proxied-$clients" --client-latency 1us "${load[@]}"
    run "emulated-$clients" --client-latency 1ms "${load[@]}"
    if [ "$clients" = 1 ]; then
      rate=$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["runs"][0]["ops"]["put"]["throughput"]))' "$out/emulated-1-$i.json")
      run "paced-$clients" "${load[@]}" --rate "$rate"
    fi
  done
done

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(name):
    for i in range(1, rounds + 1):
        with open(f"{out}/{name}-{i}.json") as f:
            yield json.load(f)["runs"][0]
def med(name, f):
    return statistics.median(f(r) for r in runs(name))
def lat(q):
    return lambda r: r["ops"]["put"]["latency_us"][q]
def cpu_us(r):
    c = r["client"]
    n = r["ops"]["put"]["ok"] + r["ops"]["put"]["errors_total"]
    return (c["user_cpu_s"] + c["system_cpu_s"]) * 1e6 / n
def emulator_us(r):
    e = (r["target"].get("network") or {}).get("emulator")
    if e is None:
        return 0.0
    n = r["ops"]["put"]["ok"] + r["ops"]["put"]["errors_total"]
    return (e["user_cpu_s"] + e["system_cpu_s"]) * 1e6 / n
def realtime(name):
    return all(((r["target"].get("network") or {}).get("emulator") or {}).get("realtime", False)
               for r in runs(name))
def qps(r):
    return r["ops"]["put"]["throughput"]
print(f"medians of {rounds} runs of each, in turn")
print("| clients | variant | p50 | p99 | added per hop p50 / p99 | throughput | client CPU per request | emulator CPU per request |")
print("|---|---|---|---|---|---|---|---|")
for c in (1, 1000):
    base50, base99 = med(f"plain-{c}", lat("p50")), med(f"plain-{c}", lat("p99"))
    for variant, configured_us in (("plain", 0), ("proxied", 1), ("emulated", 1000)):
        n = f"{variant}-{c}"
        p50, p99 = med(n, lat("p50")), med(n, lat("p99"))
        added = "" if variant == "plain" else \
            f"{(p50 - base50 - 2 * configured_us) / 2:.0f} / {(p99 - base99 - 2 * configured_us) / 2:.0f} µs"
        emulator = "" if variant == "plain" else f"{med(n, emulator_us):.1f} µs"
        print(f"| {c} | {variant} | {p50} µs | {p99} µs | {added} | {med(n, qps):.0f}/s | {med(n, cpu_us):.1f} µs | {emulator} |")
print()
print("How late the emulated links delivered, beyond their 1 ms (the report's late_p50_us / late_p99_us, medians):")
print("| clients | client -> m0 p50 / p99 | m0 -> client p50 / p99 |")
print("|---|---|---|")
for c in (1, 1000):
    def link(frm, to, q):
        return lambda r: next(l for l in r["target"]["network"]["links"] if l["from"] == frm and l["to"] == to)[q]
    cells = [f"{med(f'emulated-{c}', link(a, b, 'late_p50_us'))} / {med(f'emulated-{c}', link(a, b, 'late_p99_us'))} µs"
             for a, b in (("client", "m0"), ("m0", "client"))]
    print(f"| {c} | {cells[0]} | {cells[1]} |")
print()
print()
paced50, emulated50 = med("paced-1", lat("p50")), med("emulated-1", lat("p50"))
print(f"One client, plain paced at the emulated throughput ({med('paced-1', qps):.0f}/s): p50 {paced50} µs; "
      f"added per hop beyond idle: {(emulated50 - paced50 - 2000) / 2:.0f} µs")
print()
for c in (1, 1000):
    print(f"Emulator threads real-time (SCHED_FIFO) at the end of every emulated run of {c} clients:",
          realtime(f"emulated-{c}"))
EOF
