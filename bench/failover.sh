#!/usr/bin/env bash
# Failover gap: a two-node cluster (two replicas) under `kista bench --mgm --duration
# --verify` (each client connected to both nodes) while node 2 fails, TRIALS times for each
# way of failing:
#   kill    - kill -9 of node 2 (its connections close: suspected at once)
#   sigstop - SIGSTOP of node 2 (found by missed heartbeats: interval x misses, by the
#             cluster and by the clients alike)
# Prints each trial's longest gap between successful transactions and the p50/max per way.
# Every trial must verify with nothing lost, or the script stops.
#
# Usage: bench/failover.sh [TRIALS] [HEARTBEAT_INTERVAL_MS]   (defaults 20, 200)
set -euo pipefail
trials=${1:-20}
heartbeat_ms=${2:-200}
cd "$(dirname "$0")/.."
bench_name=failover
source bench/cluster-lib.sh

trial() { # way -> prints the gap in ms
  local way=$1
  start_cluster 2 2 "$heartbeat_ms"
  $kista bench --mgm "$mgm" --keys 20000 --duration 6 \
      --phases update,read --verify --json > "$dir/bench.json" 2> "$dir/bench.err" & local bench=$!
  sleep 4
  case $way in
    kill) kill -9 "${node_pids[2]}" ;;
    sigstop) kill -STOP "${node_pids[2]}" ;;
  esac
  wait "$bench" || { echo "bench failed in a $way trial" >&2; cat "$dir/bench.err" >&2; exit 1; }
  python3 - "$dir/bench.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
verify = report["verify"]
assert verify["missing"] == 0 and verify["wrong"] == 0, verify
phase = next(iter(report["phases"].values()))
print(f'{phase["longest_gap_us"] / 1000:.1f}')
PY
  stop_cluster
}

for way in kill sigstop; do
  gaps=()
  for i in $(seq 1 "$trials"); do
    gap=$(trial "$way")
    gaps+=("$gap")
    echo "$way trial $i: longest gap $gap ms"
  done
  printf '%s\n' "${gaps[@]}" | sort -n | awk -v way="$way" '
    { v[NR] = $1 } END { printf "%s: %d trials, gap p50 %.1f ms, max %.1f ms\n", way, NR, v[int((NR + 1) / 2)], v[NR] }'
done
