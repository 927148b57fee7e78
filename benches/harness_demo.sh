#!/usr/bin/env bash
# `pipelines/harness-demo.toml` (10 OSCE cases, the controls and the embedded
# SmolLM2-135M as the Diagnostician) end to end, twice: once uninterrupted,
# once killed with SIGKILL after KILL_AFTER seconds (in the embedded
# model's harness unit) and resumed. Prints both wall times and compares the
# two runs' tables row by row with duckdb, leaving out only the columns that
# say how a row was obtained (`attempts`, `cached`, `latency_ms`).
#   bash benches/harness_demo.sh [KILL_AFTER] [BINARY]
# KILL_AFTER defaults to 150; BINARY to the release build (built if
# missing). Needs the embedded model and .venv (scripts/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
kill_after=${1:-150}
target=${CARGO_TARGET_DIR:-target}
binary=${2:-$target/release/cfeval}
if [[ ! -x $binary ]]; then
    cargo build --release -p cfeval-cli --bin cfeval
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$(pwd)
for name in clean killed; do
    sed -e "s#^dir = .*#dir = \"$work/$name\"#" \
        -e "s#^pack = \"\.\./#pack = \"$root/#" \
        -e "s#\"\.\./\.\./shared/#\"$root/../shared/#" \
        pipelines/harness-demo.toml > "$work/$name.toml"
done
SECONDS=0
"$binary" run "$work/clean.toml" > "$work/clean.log" 2>&1
echo "uninterrupted: ${SECONDS} s"
"$binary" run "$work/killed.toml" > "$work/killed.log" 2>&1 &
pid=$!
sleep "$kill_after"
if kill -9 "$pid" 2>/dev/null; then
    echo "killed with SIGKILL after ${kill_after} s"
else
    echo "the run ended before ${kill_after} s: nothing was killed" >&2
fi
wait "$pid" 2>/dev/null || true
SECONDS=0
"$binary" run "$work/killed.toml" > "$work/resumed.log" 2>&1
echo "resumed: ${SECONDS} s"
.venv/bin/python - "$work/clean" "$work/killed" <<'PY'
import glob, sys
import duckdb
clean, killed = sys.argv[1], sys.argv[2]
provenance = {"attempts", "cached", "latency_ms"}
con = duckdb.connect()
same = True
for table in ["cases", "variants", "responses", "judgments", "scores"]:
    source = lambda run: f"read_parquet('{run}/{table}/*.parquet')"
    columns = [row[0] for row in con.sql(f"describe select * from {source(clean)}").fetchall()]
    kept = ", ".join(f'"{c}"' for c in columns if c not in provenance)
    a = con.sql(f"select {kept} from {source(clean)} order by all").fetchall()
    b = con.sql(f"select {kept} from {source(killed)} order by all").fetchall()
    same &= a == b
    print(f"{table}: {len(a)} and {len(b)} rows: {'identical' if a == b else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
