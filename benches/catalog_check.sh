#!/usr/bin/env bash
# `cfeval catalog check` on a catalog of N interventions whose ids are all
# wrong (issue #14: it was quadratic in reporting them): writes the catalog,
# then times the check, which must report every entry and exit non-zero.
#   bash benches/catalog_check.sh [N] [BINARY]
# N defaults to 100000; BINARY to the release build (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
target=${CARGO_TARGET_DIR:-target}
binary=${2:-$target/release/cfeval}
if [[ ! -x $binary ]]; then
    cargo build --release -p cfeval-cli --bin cfeval
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$n" "$work/catalog.yaml" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
entry = """  - id: Z{i}
    family: A
    title: HER2 status flipped
    applies_when:
      fact: {{kind: biomarker, name: HER2, value: [positive, negative]}}
    edits:
      - flip_biomarker: {{name: HER2}}
    expected:
      - direction: changed
        text: HER2 flipped.
        add: [her2_targeted]
"""
with open(path, "w") as out:
    out.write("catalog: big\nversion: 1\ndescription: every id wrong\ninterventions:\n")
    for i in range(n):
        out.write(entry.format(i=i))
PY
start=$(date +%s.%N)
set +e
"$binary" catalog check "$work/catalog.yaml" > "$work/out.txt" 2>&1
status=$?
set -e
end=$(date +%s.%N)
lines=$(grep -c "catalog.yaml:" "$work/out.txt" || true)
printf 'catalog check, %d interventions with wrong ids: %.2f s, exit %d, %d diagnostics with a line\n' \
    "$n" "$(echo "$end - $start" | bc)" "$status" "$lines"
head -3 "$work/out.txt"
