#!/usr/bin/env bash
# Where a data node's instructions go during writes, with durability on and off: one data
# node (one replica) runs under callgrind while `kista bench --phases insert,update`
# (outside valgrind) writes KEYS keys. Counters are zeroed once the node is started and
# dumped when the bench ends; instructions per operation are the node's total over
# 2 x KEYS. With a REDO log of LOG, local checkpoints run during the phases (each starts
# once a quarter of the log is in use). The profiles stay in OUT for callgrind_annotate.
#
# Usage: bench/callgrind-writes.sh [KEYS] [LOG] [OUT]   (defaults 100000, 32M, /tmp/callgrind-writes)
set -euo pipefail
keys=${1:-100000}
log=${2:-32M}
out=${3:-/tmp/callgrind-writes}
cd "$(dirname "$0")/.."
bench_name=callgrind-writes
source bench/cluster-lib.sh
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
mkdir -p "$out"

profile() { # redo-log name
  start_node_under_callgrind 512M "$1" "$out/$2"
  callgrind_control -z $node > /dev/null 2>&1
  $kista bench --mgm "$mgm" --keys "$keys" --threads 2 --parallel 32 \
      --phases insert,update > "$out/$2.bench" 2>&1
  local total
  total=$(callgrind_node_total "$out/$2")
  echo "$2 (redo_log $1): $total instructions, $(( total / (2 * keys) )) per operation"
  grep -a "checkpoint" "$dir/n1.log" | tail -3 || true
  stop_cluster
}

profile 0 off
profile "$log" on
