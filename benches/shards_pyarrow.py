"""pyarrow peer of crates/schema/benches/shards.rs: the same N judgments rows.

write = Python rows in memory -> Arrow table -> ZSTD(3) Parquet, 64Ki-row groups, fsync;
read = Parquet -> Arrow table; decode = Arrow table -> Python row dicts.
"""

import json
import os
import resource
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

SUBJECTS = ["openai/gpt-5", "anthropic/claude-opus-4-7", "xai/grok-4", "embedded/smollm2-135m",
            "control/reference", "control/constant"]
INTERVENTIONS = [("A1", "A"), ("B1", "B"), ("C1", "C"), ("D1", "D"), ("E1", "E")]
LABELS = ["ignored", "acknowledged_unchanged", "updated_correct"]


def rows(n):
    """Column lists equal to cfeval_schema::sample::judgment(i) for i < n."""
    cols = {k: [] for k in ["run", "judge", "subject", "is_control", "mode", "case_id", "variant_id",
                            "intervention", "family", "catalog_hash", "metric", "score", "label",
                            "rationale", "status", "error", "prompt_hash", "changed",
                            "decisive_section_read"]}
    for i in range(n):
        subject = SUBJECTS[i % 6]
        intervention, family = INTERVENTIONS[i % 5]
        cols["run"].append("sample"); cols["judge"].append("rule"); cols["subject"].append(subject)
        cols["is_control"].append(subject.startswith("control/")); cols["mode"].append("single_shot")
        cols["case_id"].append(f"case-{i % 224}"); cols["variant_id"].append(f"variant-{i}")
        cols["intervention"].append(intervention); cols["family"].append(family)
        cols["catalog_hash"].append("catalog"); cols["metric"].append("css")
        cols["score"].append((i % 3) / 2.0); cols["label"].append(LABELS[i % 3])
        cols["rationale"].append(f"the plan moved as expected ({i})"); cols["status"].append("ok")
        cols["error"].append(None); cols["prompt_hash"].append("prompt"); cols["changed"].append(i % 3 == 2)
        cols["decisive_section_read"].append(None)
    return cols


def main():
    n = int(os.environ.get("CFEVAL_BENCH_ROWS", "1000000"))
    schema = pa.schema([
        ("run", pa.string(), False), ("judge", pa.string(), False), ("subject", pa.string(), False),
        ("is_control", pa.bool_(), False), ("mode", pa.string(), False), ("case_id", pa.string(), False),
        ("variant_id", pa.string(), False), ("intervention", pa.string(), False),
        ("family", pa.string(), False), ("catalog_hash", pa.string(), False), ("metric", pa.string(), False),
        ("score", pa.float64()), ("label", pa.string()), ("rationale", pa.string()),
        ("status", pa.string(), False), ("error", pa.string()), ("prompt_hash", pa.string(), False),
        ("changed", pa.bool_()), ("decisive_section_read", pa.bool_()),
    ])
    data = rows(n)
    with tempfile.TemporaryDirectory(dir=os.environ.get("CFEVAL_BENCH_DIR")) as tmp:
        path = os.path.join(tmp, "part-00000.parquet")
        start = time.perf_counter()
        table = pa.table(data, schema=schema)
        pq.write_table(table, path, compression="zstd", compression_level=3, row_group_size=64 * 1024)
        fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
        write = time.perf_counter() - start
        del table, data
        start = time.perf_counter()
        table = pq.read_table(path)
        read = time.perf_counter() - start
        start = time.perf_counter()
        decoded = len(table.to_pylist())
        decode = time.perf_counter() - start
        assert decoded == n
        size = os.path.getsize(path)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"impl": "pyarrow", "rows": n, "bytes": size, "write_s": round(write, 4),
                      "read_s": round(read, 4), "decode_s": round(decode, 4),
                      "write_rows_per_s": round(n / write), "read_rows_per_s": round(n / read),
                      "peak_rss_mib": round(rss, 1), "pyarrow": pa.__version__}))


if __name__ == "__main__":
    sys.exit(main())
