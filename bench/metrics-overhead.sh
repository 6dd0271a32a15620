#!/usr/bin/env bash
# What metrics cost `kista bench`: two data nodes, two replicas, the same load on an earlier
# build without metrics (BASE), on this build, and on this build with every data node's
# endpoint scraped once a second (as Prometheus would, a hundred times more often than
# its usual 15 s scrape would cost). Each round runs the three in turn, RUNS rounds.
#
# Usage: bench/metrics-overhead.sh BASE [RUNS] [KEYS]   (defaults 3, 100000)
set -euo pipefail
base=$(realpath "$1")
runs=${2:-3}
keys=${3:-100000}
cd "$(dirname "$0")/.."
bench_name=metrics-overhead
source bench/cluster-lib.sh
new=$(realpath "$kista")

# scrape PORT...: fetches each /metrics once a second until killed.
scrape() {
  while true; do
    for port in "$@"; do curl -s "http://127.0.0.1:$port/metrics" > /dev/null || true; done
    sleep 1
  done
}

one() { # name binary scraped(yes/no)
  kista=$2
  local metrics_ports=() scraper=""
  if [ "$3" = yes ]; then
    DATAD_ARGS="--metrics-port 0" start_cluster 2 2 1500
    for id in 1 2; do
      metrics_ports+=("$(grep -o 'metrics at http://[0-9.:]*' "$dir/n$id.log" | sed 's/.*://')")
    done
    scrape "${metrics_ports[@]}" & scraper=$!
  else
    start_cluster 2 2 1500
  fi
  local out
  out=$($kista bench --mgm "$mgm" --keys "$keys" --threads 2 --parallel 32 --verify 2>&1)
  [ -n "$scraper" ] && kill "$scraper"
  echo "$out" | awk -v name="$1" -v round="$round" '$1 ~ /^(insert|read|update|delete)$/ { printf "| %s | %s | %s | %s |\n", round, name, $1, $2 }'
  stop_cluster
}

echo "| round | build | phase | ops/s |"
echo "|---|---|---|---:|"
for round in $(seq 1 "$runs"); do
  one base "$base" no
  one metrics "$new" no
  one "metrics, scraped each second" "$new" yes
done
