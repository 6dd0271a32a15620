#!/usr/bin/env bash
# What the REDO log costs writes: kista bench insert and update phases on two data nodes
# (two replicas) with no REDO log and with the default one, alternating RUNS times so the
# machine's drift falls on both alike. Prints ops/s and p99 per phase and run, then the
# ratios (with / without) of each pair of runs.
#
# With a small LOG (e.g. 32M), local checkpoints run during the phases.
#
# Usage: bench/redo-cost.sh [RUNS] [KEYS] [LOG]   (defaults 3, 200000, 256M)
set -euo pipefail
runs=${1:-3}
keys=${2:-200000}
log=${3:-256M}
cd "$(dirname "$0")/.."
bench_name=redo-cost
source bench/cluster-lib.sh

results="$dir/results"
: > "$results"
for run in $(seq 1 "$runs"); do
  for redo in 0 "$log"; do
    REDO_LOG=$redo start_cluster 2 2 1500
    $kista bench --mgm "$mgm" --keys "$keys" --threads 2 --parallel 32 \
        --phases insert,update --json > "$dir/run.json"
    python3 - "$dir/run.json" "$redo" "$run" >> "$results" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for name, phase in report["phases"].items():
    print(sys.argv[3], sys.argv[2], name, round(phase["ops_per_sec"]["avg"]),
          phase["latency_us"]["p99"], phase["errors"])
PY
    stop_cluster
  done
done
echo "run redo phase ops/s p99_us errors"
cat "$results"
python3 - "$results" "$log" <<'PY'
import sys, collections
log = sys.argv[2]
rows = [line.split() for line in open(sys.argv[1])]
by = collections.defaultdict(dict)
for run, redo, phase, ops, p99, _errors in rows:
    by[(run, phase)][redo] = (float(ops), float(p99))
for phase in ("insert", "update"):
    ratios = [(v[log][0] / v["0"][0], v[log][1] / v["0"][1])
              for (run, p), v in sorted(by.items()) if p == phase]
    ops = ", ".join(f"{r[0]:.2f}" for r in ratios)
    p99 = ", ".join(f"{r[1]:.2f}" for r in ratios)
    print(f"{phase}: ops/s with REDO / without: {ops}; p99 with / without: {p99}")
PY
