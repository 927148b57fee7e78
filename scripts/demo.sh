#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and run the
# demo evaluation end to end on the embedded model and the control subjects.
#
#   bash scripts/demo.sh [RUN_DIR]      (default: runs/demo)
#
# Until the pipeline driver (`cfeval run pipelines/demo.toml`) lands, this
# script runs the stages one by one; every stage resumes where it stopped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run=${1:-runs/demo}
cases=${CFEVAL_DEMO_CASES:-12}

bash scripts/install.sh
# CFEVAL_BIN: use an already built cfeval instead of building one.
if [[ -n "${CFEVAL_BIN:-}" ]]; then
  cfeval=$CFEVAL_BIN
else
  cargo build --release --locked -q -p cfeval-cli
  cfeval="${CARGO_TARGET_DIR:-target}/release/cfeval"
fi

step() { printf '\n== %s\n' "$*" >&2; }

step "cohort: $cases synthetic tumor-board cases (seed 1)"
"$cfeval" cohort --cases "$cases" --seed 1 --out "$run/cohort"
step "synthesize (E-Synthesis): charts with span-checked facts"
"$cfeval" synthesize --input "$run/cohort/cohort.jsonl" --out "$run"
step "perturb: the pre-registered catalog data/catalog/oncology-v1.yaml"
"$cfeval" perturb --run "$run" --catalog data/catalog/oncology-v1.yaml >/dev/null
for subject in control/reference control/constant control/blind-surgery control/erratic; do
  step "infer: $subject"
  "$cfeval" infer --run "$run" --subject "$subject"
done
step "infer: embedded/smollm2-135m (single-shot, family D — the paper's blind spot — and N, in process)"
"$cfeval" infer --run "$run" --subject embedded/smollm2-135m --family D --family N --max-tokens 128
step "judge: the rule judge (offline, deterministic)"
"$cfeval" judge --run "$run" --judge rule
step "aggregate: CSS and CMS with stratified paired bootstrap CIs"
"$cfeval" aggregate --run "$run" >/dev/null

step "status"
"$cfeval" status "$run"
step "CSS and CMS per subject (95% percentile CIs)"
"$cfeval" show scores --run "$run" --format table --limit 100000 \
  --columns subject,is_control,metric,level,group,value,ci_low,ci_high,ci_method \
  | awk 'NR<=3 || (/ overall / && / percentile / && (/ css / || / cms /)) || /^\+/'
echo
echo "Done. The tables are Parquet under $run/ (cases, variants, responses, judgments, scores):"
echo "  $cfeval show judgments --run $run --limit 5"
echo "  python: polars.read_parquet('$run/scores/part-*.parquet')"
