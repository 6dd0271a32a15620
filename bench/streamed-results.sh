#!/usr/bin/env bash
# Long results and string joins through the front ends of two builds on one cluster (the
# newer build's `kista up`, ports 13306-13308 and 11186): a 1,000,000-row table read whole,
# with LIMIT 10 and with a filter, and a 10,000 x 10,000 join on a VARCHAR column; the
# time each takes through `mysql --quick` and each front end's peak RSS. Two rounds.
#   bench/streamed-results.sh OLD_KISTA NEW_KISTA
set -euo pipefail
(($# == 2)) || { sed -n 2,6p "$0" >&2; exit 2; }
OLD=$1 NEW=$2
rm -rf /tmp/sb; mkdir -p /tmp/sb
$NEW up --dir /tmp/sb/up --sql-port 13306 --mgm-port 11186 --data-port 0 --data-memory 2G --redo-log 1G > /tmp/sb/up.log 2>&1 &
UP=$!
export KISTA_KEY_FILE=/tmp/sb/up/cluster.key
trap 'kill $UP 2>/dev/null; kill $(jobs -p) 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do mysql -h127.0.0.1 -P13306 -uroot -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.3; done
mysql -h127.0.0.1 -P13306 -uroot -e "CREATE DATABASE b; CREATE TABLE b.d (n INT PRIMARY KEY); INSERT INTO b.d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
CREATE TABLE b.t (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60));
INSERT INTO b.t SELECT a.n + 10*b.n + 100*c.n + 1000*e.n + 10000*f.n + 100000*g.n, a.n, REPEAT('c', 120), REPEAT('p', 60) FROM b.d a, b.d b, b.d c, b.d e, b.d f, b.d g;"
mysql -h127.0.0.1 -P13306 -uroot -e "SELECT COUNT(*) FROM b.t;
CREATE TABLE b.sa (id INT PRIMARY KEY, s VARCHAR(20)); CREATE TABLE b.sb (id INT PRIMARY KEY, s VARCHAR(20));
INSERT INTO b.sa SELECT id, CONCAT('key-', id % 1000) FROM b.t WHERE id < 10000;
INSERT INTO b.sb SELECT id, CONCAT('KEY-', id % 1000) FROM b.t WHERE id < 10000;"
run() { # BINARY LABEL
  local port=$2
  $1 sql --mgm 127.0.0.1:11186 --port $port > /tmp/sb/sql-$port.log 2>&1 & local pid=$!
  for _ in $(seq 1 100); do mysql -h127.0.0.1 -P$port -uroot -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
  for q in "SELECT * FROM b.t" "SELECT * FROM b.t LIMIT 10" "SELECT id, k FROM b.t WHERE k = 3" "SELECT COUNT(*) FROM b.sa a JOIN b.sb b ON b.s = a.s"; do
    local start=$(date +%s.%N)
    local lines=$(mysql --quick -h127.0.0.1 -P$port -uroot -e "$q" 2>&1 | wc -l)
    local end=$(date +%s.%N)
    printf '%-10s %-40s %8d lines %7.2f s\n' "$1" "$q" "$lines" "$(echo "$end - $start" | bc)"
  done
  grep VmHWM /proc/$pid/status
  kill $pid; wait $pid 2>/dev/null || true
}
for round in 1 2; do
  run $OLD 13307
  run $NEW 13308
done
