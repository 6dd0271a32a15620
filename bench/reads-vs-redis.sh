#!/usr/bin/env bash
# Batched key reads and updates from `kista bench` against redis's pipelined GET and SET,
# run back to back on
# this machine so that both see the same machine speed (a VM's speed drifts by tens of
# percent between hours). Each round runs:
#   - a standalone data node in the Receive setup (reads in the receiving thread, 4 recv
#     threads) and `kista bench --phases update,read` with 2 threads x 64 transactions of 16
#     operations over 100,000 keys of 100-byte records, 10 loops (1M of each, as many as
#     redis gets);
#   - redis-benchmark GET and SET with pipelining 16 (50 clients, 1M requests each, 3-byte
#     values).
# Installs redis-server when missing.
#
# Usage: bench/reads-vs-redis.sh [ROUNDS]     (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
command -v redis-server >/dev/null || apt-get install -y redis-server >/dev/null
cargo build --release -q -p kista
KISTA=$PWD/target/release/kista
WORK=$(mktemp -d)
trap 'kill $(cat "$WORK"/pids 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

kista_updates_and_reads() {
  "$KISTA" datad --standalone --port 0 --data-memory 2G --partitions 4 \
    --thread-config 'ldm={count=0},query={count=0},recv={count=4},io={count=1}' \
    --read-policy receiver >"$WORK/datad.out" 2>&1 &
  local pid=$! port
  echo $pid >>"$WORK/pids"
  for _ in $(seq 100); do grep -q ready "$WORK/datad.out" && break; sleep 0.1; done
  port=$(grep -o 'listening on [0-9.:]*' "$WORK/datad.out" | sed 's/.*://')
  "$KISTA" bench --connect "127.0.0.1:$port" --threads 2 --parallel 64 --batch 16 \
    --keys 100000 --phases update,read --loops 10 --record-size 100 2>/dev/null |
    awk '$1 == "update" { update = $3 } $1 == "read" { read = $3 } END { print read " | " update }'
  kill $pid; wait $pid 2>/dev/null || true
}

redis_gets_and_sets() {
  local port pid
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
  pid=$!
  echo $pid >>"$WORK/pids"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p "$port" -t get,set -P 16 -n 1000000 -q 2>/dev/null | tr '\r' '\n' |
    grep 'requests per second' | sed -E 's/^ *([A-Z]+): ([0-9]+).*/\1 \2/' |
    awk '$1 == "GET" { get = $2 } $1 == "SET" { set = $2 } END { print get " | " set }'
  kill $pid; wait $pid 2>/dev/null || true
}

echo "| round | kista reads/s (batch 16) | kista updates/s (batch 16) | redis GET -P 16 /s | redis SET -P 16 /s |"
echo "|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  echo "| $round | $(kista_updates_and_reads) | $(redis_gets_and_sets) |"
done
