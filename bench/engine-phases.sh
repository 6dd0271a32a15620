#!/usr/bin/env bash
# kista bench phases (insert, update, read, delete) against a standalone data node in the
# two thread layouts of seed 000 and with the adaptive read router; prints a markdown table
# of ops/s (avg over loops) and read latency per layout and batch size.
#
# Usage: bench/engine-phases.sh [KEYS] [LOOPS]        (defaults 200000 3)
# The seed's layouts bind threads to CPUs 0-36; this machine may have fewer, so the layouts
# run with the same threads and no binding.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-200000}
LOOPS=${2:-3}
cargo build --release -q -p kista
KISTA=target/release/kista

LDM_SETUP='ldm={count=1},query={count=1},recv={count=2},io={count=1}'
RECEIVE_SETUP='ldm={count=0},query={count=0},recv={count=4},io={count=1}'

run_layout() {     # name thread-config read-policy batch
  local out port pid
  out=$(mktemp)
  $KISTA datad --standalone --port 0 --data-memory 2G --partitions 4 \
      --thread-config "$2" --read-policy "$3" >"$out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q ready "$out" && break; sleep 0.1; done
  port=$(grep -o 'listening on [0-9.:]*' "$out" | sed 's/.*://')
  $KISTA bench --connect "127.0.0.1:$port" --threads 2 --parallel 64 --batch "$4" \
      --keys "$KEYS" --loops "$LOOPS" --record-size 100 --json 2>/dev/null |
    python3 -c '
import json, sys
r = json.load(sys.stdin)["phases"]
name, batch = sys.argv[1], sys.argv[2]
cells = ["%.0f" % r[p]["ops_per_sec"]["avg"] for p in ("insert", "update", "read", "delete")]
read = r["read"]["latency_us"]
errors = sum(r[p]["errors"] for p in r)
print("| %s | %s | %s | %s/%s/%s | %d |" % (name, batch, " | ".join(cells), read["p50"], read["p95"], read["p99"], errors))
' "$1" "$4"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$out"
}

echo "| layout | batch | insert ops/s | update ops/s | read ops/s | delete ops/s | read p50/p95/p99 µs | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for batch in 1 16; do
  run_layout "LDM setup (reads on ldm)" "$LDM_SETUP" ldm "$batch"
  run_layout "LDM setup (reads on query)" "$LDM_SETUP" query "$batch"
  run_layout "Receive setup" "$RECEIVE_SETUP" receiver "$batch"
  run_layout "LDM setup, adaptive router" "$LDM_SETUP" adaptive "$batch"
done
