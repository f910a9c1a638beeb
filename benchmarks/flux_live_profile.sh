#!/bin/bash
# The Flux topology topologies/flux/words-cpu.yaml profiled from its workers' records alone: TestWordSpout emits at
# its own pace (a word per 100 ms per instance), so the input rate is stepped by running the file with 1, 2, 3 spout
# instances in turn under the same name (hetsched submit --flux --force), STEP_S seconds each, then aggregating every
# run's records from the planning service's store.
#   benchmarks/flux_live_profile.sh RECORDS_DIR OUT_PREFIX     (a local cluster with the plugin and a planner running)
set -euo pipefail
RECORDS=$1; OUT=$2; STEP_S=${STEP_S:-120}
HS=".venv/bin/python -m hetsched.cli"
JAR=topologies/java/target/hetsched-java-topologies.jar
WORK=$(mktemp -d)
for n in 1 2 3; do
  # Only the spout's parallelism changes (the first "parallelism:" after id "words").
  sed "/id: \"words\"/,/parallelism/ s/parallelism: [0-9]*/parallelism: $n/" topologies/flux/words-cpu.yaml > "$WORK/words-cpu-$n.yaml"
  echo "== words spout parallelism $n: $(date -u +%T)" | tee -a "$OUT-submit.txt"
  $HS submit --flux "$WORK/words-cpu-$n.yaml" --jar $JAR --force 2>&1 | tee -a "$OUT-submit.txt"
  sleep "$STEP_S"
done
$HS kill words-cpu --wait || true
sleep 5
$HS aggregate --store "$RECORDS" --topology words-cpu --name words-cpu-live --out "$OUT-profile.json" 2>&1 | tee "$OUT-profile.txt"
rm -rf "$WORK"
