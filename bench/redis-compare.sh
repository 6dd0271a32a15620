#!/usr/bin/env bash
# Debian's redis-server on this machine, for comparison with `kista bench`: GET and SET from
# redis-benchmark (50 clients, 1M requests, 3-byte values), with pipelining 16 and without.
# Installs redis-server when missing.
#
# Usage: bench/redis-compare.sh [REQUESTS]       (default 1000000)
set -euo pipefail
REQUESTS=${1:-1000000}
command -v redis-server >/dev/null || apt-get install -y redis-server >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "| redis-benchmark | pipelining | requests/s | p50 ms |"
echo "|---|---:|---:|---:|"
for pipeline in 16 1; do
  redis-benchmark -p "$PORT" -t get,set -P "$pipeline" -n "$REQUESTS" -q 2>/dev/null |
    tr '\r' '\n' | grep 'requests per second' |
    sed -E "s/^ *([A-Z]+): ([0-9.]+) requests per second, p50=([0-9.]+) msec.*/| \1 | $pipeline | \2 | \3 |/"
done
