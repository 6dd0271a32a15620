#!/usr/bin/env bash
# Instructions the data node executes per primary-key read, all threads together (receive,
# coordinator, executor, send), counted by callgrind: exact and repeatable.
#
# A `kista datad --standalone` runs under callgrind; `kista bench --phases read` (outside
# valgrind) runs with 1 loop and with 3 loops over KEYS keys, with the node's counters zeroed
# before and dumped after each run. Everything but the reads (connecting, creating the table,
# loading the keys, dropping it) is the same in both, so
#   (instructions with 3 loops - instructions with 1 loop) / (2 x KEYS)
# is the cost of one read. Idle time costs ~0.2 M instructions/s (the load monitor), under
# 0.5% here.
#
# Usage: bench/callgrind-pk-read.sh [KEYS]     (default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-20000}
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
# KISTA=path measures that binary (an earlier build to compare with) instead of building.
if [ -z "${KISTA:-}" ]; then
  cargo build --release -q -p kista
  KISTA=$PWD/target/release/kista
fi
WORK=$(mktemp -d)
trap 'kill $(cat "$WORK/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT

measure() {    # layout-name thread-config read-policy
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
    "$KISTA" datad --standalone --port 0 --partitions 4 --thread-config "$2" \
    --read-policy "$3" >"$WORK/datad.out" 2>&1 &
  local pid=$! port
  echo $pid >"$WORK/pid"
  for _ in $(seq 600); do grep -q ready "$WORK/datad.out" && break; sleep 0.1; done
  port=$(grep -o 'listening on [0-9.:]*' "$WORK/datad.out" | sed 's/.*://')
  for batch in 1 16; do
    local counts=()
    for loops in 1 3; do
      callgrind_control -z $pid >/dev/null 2>&1
      "$KISTA" bench --connect "127.0.0.1:$port" --threads 1 --parallel 16 --batch $batch \
        --keys "$KEYS" --phases read --loops $loops >/dev/null 2>&1
      rm -f "$WORK"/cg.out.*
      callgrind_control -d $pid >/dev/null 2>&1
      for _ in $(seq 100); do ls "$WORK"/cg.out.* >/dev/null 2>&1 && break; sleep 0.1; done
      sleep 0.5
      counts+=("$(grep -h '^summary:' "$WORK"/cg.out.* | awk '{print $2}')")
    done
    echo "| $1 | $batch | $(( (counts[1] - counts[0]) / (2 * KEYS) )) |"
  done
  kill $pid; wait $pid 2>/dev/null || true
}

echo "| layout | reads per transaction | instructions per read |"
echo "|---|---:|---:|"
measure "Receive setup, reads in the receiving thread" 'ldm={count=0},query={count=0},recv={count=1},io={count=1}' receiver
measure "LDM setup, reads on the ldm" 'ldm={count=1},query={count=1},recv={count=1},io={count=1}' ldm
