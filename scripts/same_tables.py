"""Compares two cfeval runs' tables row for row (sorted), ignoring what a
resumed run may legitimately differ in: latency, HTTP attempts, cache hits.

    python3 scripts/same_tables.py CFEVAL_BINARY RUN_DIR OTHER_RUN_DIR

Exits 1 and prints the first differing row of each table that differs."""
import json, subprocess, sys

VOLATILE = {"latency_ms", "attempts", "cached"}

def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value

def rows(binary, run, table):
    out = subprocess.run([binary, "show", table, "--run", run], capture_output=True, text=True, check=True).stdout
    return sorted(json.dumps(strip(json.loads(line)), sort_keys=True) for line in out.splitlines() if line.strip())

binary, left, right = sys.argv[1:4]
ok = True
for table in ["cases", "variants", "responses", "judgments", "scores"]:
    a, b = rows(binary, left, table), rows(binary, right, table)
    same = a == b
    ok &= same
    print(f"{table}: {len(a)} vs {len(b)} rows, {'identical' if same else 'DIFFER'}")
    if not same:
        for x, y in zip(a, b):
            if x != y:
                print("  first difference:\n   ", x[:400], "\n   ", y[:400])
                break
sys.exit(0 if ok else 1)
