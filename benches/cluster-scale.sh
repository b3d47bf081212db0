#!/usr/bin/env bash
# Scale of the `cluster` example: throughput with 1, 2 and 4 worker processes on one PostgreSQL
# server, with the CPU time per event of the workers, the start process and the server.
#
#   benches/cluster-scale.sh [WORKFLOWS] [PROCESSES...]     # default: 6000 workflows; 1 2 4
#
# PGSS=1 loads pg_stat_statements and prints, after each row, the statements that took the
# server's time (calls per workflow, mean time).
# IN_FLIGHT=N keeps at most N workflows running (`cluster start --in-flight N`); unset, every
# workflow is queued at once.
# The server is a throwaway cluster of its own (initdb in a temporary directory, a free port,
# default settings: fsync and synchronous_commit on), so that its CPU time is this bench's alone
# (the sum over its processes, from /proc). Each row gets a fresh schema; the workers start, then
# `cluster start --workflows N` runs, then the workers are stopped (SIGTERM). Events are the
# deliveries the workers handled (their dispatchers' counts) plus the completions the start
# received. One JSON line per row goes to stdout and to $OUT (benches/results/cluster-scale.jsonl
# unless set); CLUSTER_BENCH_TAG tags the lines. Needs initdb/pg_ctl (the postgresql package)
# and, as root, the `postgres` user.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKFLOWS=${1:-6000}
[[ $# -gt 0 ]] && shift
PROCESSES=("$@")
[[ ${#PROCESSES[@]} -eq 0 ]] && PROCESSES=(1 2 4)
OUT=${OUT:-benches/results/cluster-scale.jsonl}
TAG=${CLUSTER_BENCH_TAG:-}
TARGET=${CARGO_TARGET_DIR:-target}
HZ=$(getconf CLK_TCK)

cargo build -q --release -p orchestrator-examples --example cluster
BIN=$TARGET/release/examples/cluster
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $PGBIN/initdb ]] || { echo "cluster-scale: no initdb in /usr/lib/postgresql/*/bin" >&2; exit 2; }

DIR=$(mktemp -d /tmp/cluster-scale.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[[ $(id -u) == 0 ]] && chown postgres: "$DIR"
cleanup() {
  as_pg "$PGBIN/pg_ctl" stop -D "$DIR/data" -m immediate -w >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT
(cd "$DIR" && as_pg "$PGBIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-instructions >/dev/null)
(cd "$DIR" && as_pg "$PGBIN/pg_ctl" start -D "$DIR/data" -l "$DIR/server.log" -w \
  -o "-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR -c max_connections=200 ${PGSS:+-c shared_preload_libraries=pg_stat_statements}" >/dev/null)
URL="postgres://postgres@127.0.0.1:$PORT/postgres"
[[ -n ${PGSS:-} ]] && "$PGBIN/psql" -qc "CREATE EXTENSION pg_stat_statements" "$URL"
POSTMASTER=$(head -1 "$DIR/data/postmaster.pid")
SERVER_VERSION=$("$PGBIN/psql" -Atc "SHOW server_version" "$URL")

# CPU ticks (user + system) of one process, 0 if it is gone.
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# CPU ticks of the server: the postmaster and its children, living and (cutime/cstime) reaped.
server_ticks() {
  local total
  total=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$POSTMASTER/stat")
  for pid in $(pgrep -P "$POSTMASTER"); do total=$((total + $(ticks "$pid"))); done
  echo "$total"
}
commits() { "$PGBIN/psql" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'" "$URL"; }
secs() { awk -v t="$1" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }'; }

for n in "${PROCESSES[@]}"; do
  schema="scale_${n}_$$"
  pids=()
  for i in $(seq 1 "$n"); do
    "$BIN" worker --database-url "$URL" --schema "$schema" --name "w$i" --status-every 0 >"$DIR/w$i.log" 2>&1 &
    pids+=("$!")
    # The first creates the schema; the others open it once it is there.
    [[ $i == 1 ]] && until grep -q "pid" "$DIR/w1.log"; do sleep 0.1; done
  done
  for i in $(seq 1 "$n"); do until grep -q "pid" "$DIR/w$i.log"; do sleep 0.1; done; done
  sleep 1
  workers_before=0
  for pid in "${pids[@]}"; do workers_before=$((workers_before + $(ticks "$pid"))); done
  server_before=$(server_ticks)
  commits_before=$(commits)
  [[ -n ${PGSS:-} ]] && "$PGBIN/psql" -qAtc "SELECT pg_stat_statements_reset()" "$URL" >/dev/null
  start_out=$(/usr/bin/time -f "START_CPU %U %S" "$BIN" start --database-url "$URL" --schema "$schema" \
    --workflows "$WORKFLOWS" --timeout 600 --no-progress ${IN_FLIGHT:+--in-flight "$IN_FLIGHT"} 2>&1)
  server_after=$(server_ticks)
  workers_after=0
  for pid in "${pids[@]}"; do workers_after=$((workers_after + $(ticks "$pid"))); done
  sleep 1.5 # the backends publish their counters
  commits_after=$(commits)
  if [[ -n ${PGSS:-} ]]; then
    # The statements that took the server's time, per event (to stderr).
    "$PGBIN/psql" -P pager=off -c "SELECT calls, round(calls::numeric / $WORKFLOWS, 2) AS per_workflow,
        round(total_exec_time::numeric, 0) AS total_ms, round(mean_exec_time::numeric, 3) AS mean_ms,
        left(regexp_replace(query, '\s+', ' ', 'g'), 70) AS query
      FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12" "$URL" >&2
  fi
  kill -TERM "${pids[@]}"
  wait "${pids[@]}" || true
  summary=$(grep -o '[0-9]* workflows in [0-9.]*m\?s: .*' <<<"$start_out" | tail -1)
  wall=$(sed -n 's/.* workflows in \([0-9.]*\)\(m\?s\):.*/\1 \2/p' <<<"$summary" | awk '{ print ($2 == "ms") ? $1 / 1000 : $1 }')
  completed=$(sed -n 's/.*: \([0-9]*\) completed.*/\1/p' <<<"$summary")
  missing=$(sed -n 's/.*, \([0-9]*\) missing.*/\1/p' <<<"$summary")
  start_cpu=$(awk '/^START_CPU/ { print $2 + $3 }' <<<"$start_out")
  handled=0
  for i in $(seq 1 "$n"); do
    h=$(sed -n 's/.*stopped after.*handled *\([0-9]*\).*/\1/p' "$DIR/w$i.log" | tail -1)
    handled=$((handled + ${h:-0}))
  done
  events=$((handled + completed))
  line=$(python3 - "$n" "$WORKFLOWS" "$completed" "$missing" "$events" "$wall" \
    "$(secs $((workers_after - workers_before)))" "$start_cpu" "$(secs $((server_after - server_before)))" \
    "$((commits_after - commits_before))" "$SERVER_VERSION" "$TAG" "${IN_FLIGHT:-all}" <<'PY'
import json, sys
n, wf, done, missing, events = (int(x) for x in sys.argv[1:6])
wall, workers, start, server = (float(x) for x in sys.argv[6:10])
commits, version, tag, in_flight = int(sys.argv[10]), sys.argv[11], sys.argv[12], sys.argv[13]
us = lambda s: round(s * 1e6 / max(events, 1), 1)
print(json.dumps({
    "name": f"cluster_{n}proc", "worker_processes": n, "workflows": wf, "completed": done,
    "missing": missing, "events": events, "wall_s": wall,
    "events_per_s": round(events / wall, 1), "workflows_per_s": round(done / wall, 1),
    "workers_cpu_s": workers, "start_cpu_s": start, "server_cpu_s": server,
    "cpu_us_per_event": {"workers": us(workers), "start": us(start), "server": us(server),
                         "all": us(workers + start + server)},
    "commits": commits, "commits_per_event": round(commits / max(events, 1), 2),
    "params": {"in_flight": in_flight, "pools": "orders 32, inventory 8, payment 8, shipping 8 per worker",
               "connections_per_worker": 8, "committers": 1, "server": f"PostgreSQL {version}, throwaway, defaults",
               "events_note": "deliveries the workers handled plus the completions the start received",
               "cpu_note": "from /proc: workers and the server (postmaster and its children) over the start's run"},
    "tag": tag,
}))
PY
  )
  echo "$line"
  echo "$line" >>"$OUT"
done
