#!/bin/bash
# `hetsched tune` on Linear first placed by Storm's DefaultScheduler, its plan applied by the drained re-placement:
# a planning service keeping the workers' records, a local cluster with the plugin, Linear submitted without a
# profile set (so the plugin leaves it to Storm's even scheduling) with spare tasks (a rebalance can give a
# component at most as many executors as it has tasks), tune, then the placement and every executor's uptime (a
# worker restarted after the activation would show a shorter one).
#   flock /tmp/hetsched-live.lock benchmarks/tune_live.sh OUT_PREFIX      (WORK, BASE, WINDOW_S, WARMUP_S to change;
#   TUNE_ARGS for more of tune's options, e.g. TUNE_ARGS='--explore --explore-seconds 60')
set -euo pipefail
OUT=$1; WORK=${WORK:-/tmp/hetsched-tune-live}; BASE=${BASE:-22000}; PORT=$((BASE + 190))
WINDOW_S=${WINDOW_S:-60}; WARMUP_S=${WARMUP_S:-90}; read -r -a TUNE_EXTRA <<< "${TUNE_ARGS:-}"
HS=".venv/bin/python -m hetsched.cli"; URL=http://127.0.0.1:$PORT
rm -rf "$WORK"; mkdir -p "$WORK"
export HETSCHED_CLUSTER_HOME=$WORK/cluster
$HS serve --port "$PORT" --db "$WORK/h.db" --records-dir "$WORK/records" > "$WORK/serve.log" 2>&1 &
SERVE=$!
trap '$HS cluster down --home "$WORK/cluster" || true; kill $SERVE' EXIT
$HS cluster up --home "$WORK/cluster" --port-base "$BASE" --scheduler plugin --conf hetsched.planner.url=$URL
$HS profiles put default-cluster profiles/default-cluster.json --url $URL
echo "== submit $(date -u +%T)" | tee "$OUT-submit.txt"
$HS submit linear --name linear -p high=4 --spare-tasks 2 -c topology.disable.loadaware.messaging=true 2>&1 | tee -a "$OUT-submit.txt"
sleep 60
$HS placement linear --planner $URL 2>&1 | tee -a "$OUT-submit.txt"
echo "== tune $(date -u +%T)" | tee "$OUT.txt"
$HS tune linear --store "$WORK/records" --fallback default-cluster --window "$WINDOW_S" --warmup "$WARMUP_S" \
  --planner $URL "${TUNE_EXTRA[@]}" 2>&1 | tee -a "$OUT.txt"
echo "== after $(date -u +%T)" | tee "$OUT-placement.txt"
$HS placement linear --planner $URL 2>&1 | tee -a "$OUT-placement.txt"
.venv/bin/python - <<'PY' 2>&1 | tee -a "$OUT-placement.txt"
from observe.nimbus import connect
from topologies.locate import nimbus_address
from observe.replacement import SpoutTally
with connect(nimbus_address()) as nimbus:
    t = nimbus.find("linear")
    counts = nimbus.counts(t.id)
    print("conf hetsched.profiles:", nimbus.topology_conf(t.id).get("hetsched.profiles"))
    print("spouts (new workers):", SpoutTally.of(counts))
    print("executor uptimes, s:", sorted({e.component + ":" + str(e.uptime_s) for e in counts.executors.values()}))
PY
cp "$WORK/linear-live.json" "$OUT-live-profile.json" 2>/dev/null || true
cp -r "$WORK/records" "$OUT-records"
grep -hE "kill-blob-update|Launching worker with assignment" "$WORK"/cluster/logs/*/*.log | cut -c1-200 > "$OUT-supervisors.txt" || true
