#!/usr/bin/env bash
# Node restart time: a two-node cluster (two replicas) holding ROWS rows under
# `kista bench --mgm --duration --verify`; node 2 is killed (kill -9), started again, and
# timed from its process start until `kista mgm -e show` reports it started (joined, every
# partition copied from node 1 while the load runs, primaries back). Then node 1 is killed:
# the load goes on against node 2 alone, and the bench's verification reads every row back
# from it.
#
# Usage: bench/restart.sh [ROWS] [THREADS] [PARALLEL]   (defaults 1000000, 2, 32)
# THREADS/PARALLEL shape the load running during the restart (bench --threads/--parallel).
set -euo pipefail
rows=${1:-1000000}
threads=${2:-2}
parallel=${3:-32}
cd "$(dirname "$0")/.."
bench_name=restart
source bench/cluster-lib.sh

start_cluster 2 2 200
$kista bench --mgm "$mgm" --keys "$rows" --threads "$threads" --parallel "$parallel" \
    --duration 120 --phases update,read --verify --json > "$dir/bench.json" 2> "$dir/bench.err" &
bench=$!
# The load phase inserts every row first; the restart happens in the mixed load after it.
until grep -q "update+read" "$dir/bench.err"; do
  kill -0 "$bench" 2>/dev/null || { cat "$dir/bench.err" >&2; exit 1; }
  sleep 0.2
done
echo "$rows rows loaded; killing node 2"
kill -9 "${node_pids[2]}"
wait_state 2 "not connected" 30
started_ms=$(now_ms)
$kista datad --mgm "$mgm" --node-id 2 > "$dir/n2-again.log" 2>&1 &
node_pids[2]=$!; pids+=("${node_pids[2]}")
wait_state 2 "started" 600
restart_ms=$(( $(now_ms) - started_ms ))
echo "node 2 restarted with $rows rows in $restart_ms ms (process start to started)"
sleep 2
echo "killing node 1; the load goes on against node 2"
kill -9 "${node_pids[1]}"
wait "$bench" || { echo "bench failed" >&2; cat "$dir/bench.err" >&2; exit 1; }
python3 - "$dir/bench.json" "$restart_ms" "$rows" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
verify = report["verify"]
assert verify["missing"] == 0 and verify["wrong"] == 0, verify
phase = next(iter(report["phases"].values()))
print(f'restart of {sys.argv[3]} rows: {int(sys.argv[2]) / 1000:.1f} s; verify: {verify}; '
      f'load during the run {phase["ops_per_sec"]["avg"]:.0f} ops/s, errors {phase["errors"]}')
PY
