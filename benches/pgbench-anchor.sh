#!/usr/bin/env bash
# The physical anchor of the PostgreSQL rows of arvo-bench: `pgbench -N` (simple-update TPC-B,
# one small fsyncing transaction each) on the same server, in a database of its own.
#
#   benches/pgbench-anchor.sh [SECS]                      # pgbench -N alone: 16 clients, then 1
#   benches/pgbench-anchor.sh [SECS] -- CMD ARGS...       # also: CMD (e.g. arvo-bench) alone, then
#                                                         # CMD while pgbench -N -c 16 runs
#
# Environment: PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres), PGBENCH_DB (bench_pgbench),
# PGBENCH_SCALE (10), PGBENCH_CLIENTS (16). The pgbench tables are made once (`pgbench -i`).
# While CMD runs next to pgbench, pgbench reports its rate every second (`-P 1`); the script
# prints the mean of the reports that fell inside CMD's run, then stops pgbench (by its pid).
set -euo pipefail

SECS=${1:-10}
[[ $# -gt 0 ]] && shift
if [[ ${1:-} == -- ]]; then shift; fi
CMD=("$@")

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
DB=${PGBENCH_DB:-bench_pgbench}
SCALE=${PGBENCH_SCALE:-10}
CLIENTS=${PGBENCH_CLIENTS:-16}
PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)

if [[ $DB == test ]]; then
  echo "pgbench-anchor: refusing to put pgbench tables in database 'test'" >&2
  exit 2
fi
psql -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1 || createdb "$DB"
psql -d "$DB" -Atc "SELECT to_regclass('pgbench_branches') IS NOT NULL" | grep -q t ||
  pgbench -i -q -s "$SCALE" "$DB" >/dev/null 2>&1

tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1; }

echo "# pgbench -N -c $CLIENTS -j 2 -T $SECS (alone)"
echo "pgbench_N_c${CLIENTS}_tps=$(pgbench -n -N -c "$CLIENTS" -j 2 -T "$SECS" "$DB" 2>/dev/null | tps)"
echo "# pgbench -N -c 1 -T $SECS (alone)"
echo "pgbench_N_c1_tps=$(pgbench -n -N -c 1 -j 1 -T "$SECS" "$DB" 2>/dev/null | tps)"

# The same transaction with a pg_notify in it, as every enqueue of the PostgreSQL queue does:
# a notifying commit holds a database-wide lock until it has flushed, so such commits do not
# share WAL flushes (no group commit between them).
notify=$(mktemp)
cat >"$notify" <<'SQL'
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
SELECT pg_notify('pgbench_anchor', 'x');
END;
SQL
echo "# pgbench -N plus pg_notify, -c $CLIENTS -j 2 -T $SECS (alone)"
echo "pgbench_N_notify_c${CLIENTS}_tps=$(pgbench -n -s "$SCALE" -f "$notify" -c "$CLIENTS" -j 2 -T "$SECS" "$DB" 2>/dev/null | tps)"
rm -f "$notify"

[[ ${#CMD[@]} -eq 0 ]] && exit 0

echo "# alone: ${CMD[*]}"
ARVO_BENCH_TAG=alone "${CMD[@]}"

log=$(mktemp)
echo "# next to pgbench -N -c $CLIENTS -j 2: ${CMD[*]}"
pgbench -n -N -c "$CLIENTS" -j 2 -T 3600 -P 1 "$DB" >/dev/null 2>"$log" &
pgbench_pid=$!
sleep 2
from=$(grep -c '^progress:' "$log" || true)
ARVO_BENCH_TAG="next to pgbench -N -c $CLIENTS -j 2" "${CMD[@]}"
to=$(grep -c '^progress:' "$log" || true)
kill "$pgbench_pid" 2>/dev/null || true
wait "$pgbench_pid" 2>/dev/null || true
# The reports of whole seconds inside the command's run.
mean=$(grep '^progress:' "$log" | sed -n "$((from + 2)),${to}p" |
  awk '{ s += $4; n++ } END { if (n) printf "%.1f", s / n; else print "n/a" }')
echo "pgbench_N_c${CLIENTS}_concurrent_tps=$mean  # mean of $((to - from - 1)) one-second reports"
rm -f "$log"
