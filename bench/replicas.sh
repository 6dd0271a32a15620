#!/usr/bin/env bash
# kista bench throughput with one replica (one data node) next to two replicas (two data
# nodes in one node group), the same load through the management server, RUNS times each.
#
# Usage: bench/replicas.sh [RUNS] [KEYS]   (defaults 3, 100000)
set -euo pipefail
runs=${1:-3}
keys=${2:-100000}
cd "$(dirname "$0")/.."
bench_name=replicas
source bench/cluster-lib.sh

for replicas in 1 2; do
  for run in $(seq 1 "$runs"); do
    start_cluster "$replicas" "$replicas" 1500
    echo "== $replicas replica(s), run $run"
    $kista bench --mgm "$mgm" --keys "$keys" --threads 2 \
        --parallel 32 --verify
    stop_cluster
  done
done
