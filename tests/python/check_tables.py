"""Reads every table of a cfeval run with pyarrow, polars and duckdb.

Usage: check_tables.py RUN_DIR EXPECTED_JSON

EXPECTED_JSON maps each table to its columns as [name, kind, rows] where kind is
one of string, uint32, uint64, float64, bool, list, struct. The check fails
(exit 1, one line per problem) unless each reader sees exactly those columns
with those kinds, the committed row count, and the same numbers.
"""

import json
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

PA_KIND = {
    "string": pa.types.is_string,
    "uint32": pa.types.is_uint32,
    "uint64": pa.types.is_uint64,
    "float64": pa.types.is_float64,
    "bool": pa.types.is_boolean,
    "list": pa.types.is_list,
    "struct": pa.types.is_struct,
}
PL_KIND = {
    "string": lambda t: t == pl.String,
    "uint32": lambda t: t == pl.UInt32,
    "uint64": lambda t: t == pl.UInt64,
    "float64": lambda t: t == pl.Float64,
    "bool": lambda t: t == pl.Boolean,
    "list": lambda t: isinstance(t, pl.List),
    "struct": lambda t: isinstance(t, pl.Struct),
}
DUCK_KIND = {
    "string": lambda t: t == "VARCHAR",
    "uint32": lambda t: t == "UINTEGER",
    "uint64": lambda t: t == "UBIGINT",
    "float64": lambda t: t == "DOUBLE",
    "bool": lambda t: t == "BOOLEAN",
    "list": lambda t: t.endswith("[]"),
    "struct": lambda t: t.startswith("STRUCT("),
}


def committed_files(table_dir: Path) -> list[str]:
    """The shards the manifest names, in order (never temp files or orphans)."""
    entries = sorted((table_dir / "_manifest").glob("part-*.json"))
    return [str(table_dir / json.loads(p.read_text())["file"]) for p in entries]


def main() -> int:
    run = Path(sys.argv[1])
    expected = json.loads(Path(sys.argv[2]).read_text())
    problems = []
    for table, spec in expected.items():
        files = committed_files(run / table)
        columns = spec["columns"]
        names = [c[0] for c in columns]
        if not files:
            problems.append(f"{table}: no committed shards")
            continue

        arrow = pq.ParquetDataset(files).read()
        if arrow.column_names != names:
            problems.append(f"{table}: pyarrow columns {arrow.column_names} != {names}")
        for name, kind in columns:
            if name in arrow.column_names and not PA_KIND[kind](arrow.schema.field(name).type):
                problems.append(f"{table}.{name}: pyarrow type {arrow.schema.field(name).type}, expected {kind}")
        if arrow.num_rows != spec["rows"]:
            problems.append(f"{table}: pyarrow read {arrow.num_rows} rows, expected {spec['rows']}")
        metadata = pq.read_metadata(files[0]).metadata or {}
        if metadata.get(b"cfeval.table", b"").decode() != table:
            problems.append(f"{table}: footer metadata cfeval.table = {metadata.get(b'cfeval.table')}")
        if b"cfeval.schema_version" not in metadata:
            problems.append(f"{table}: footer lacks cfeval.schema_version")

        frame = pl.read_parquet(files)
        if frame.columns != names:
            problems.append(f"{table}: polars columns {frame.columns} != {names}")
        for name, kind in columns:
            if name in frame.columns and not PL_KIND[kind](frame.schema[name]):
                problems.append(f"{table}.{name}: polars type {frame.schema[name]}, expected {kind}")
        if frame.height != spec["rows"]:
            problems.append(f"{table}: polars read {frame.height} rows")

        relation = duckdb.read_parquet(files)
        if relation.columns != names:
            problems.append(f"{table}: duckdb columns {relation.columns} != {names}")
        for name, dtype in zip(relation.columns, relation.dtypes):
            kind = dict(columns).get(name)
            if kind and not DUCK_KIND[kind](str(dtype)):
                problems.append(f"{table}.{name}: duckdb type {dtype}, expected {kind}")
        count = duckdb.sql(f"select count(*) from read_parquet({files!r})").fetchall()[0][0]
        if count != spec["rows"]:
            problems.append(f"{table}: duckdb counted {count} rows")

        # The three readers agree on the numbers.
        numeric = next((n for n, k in columns if k == "float64"), None)
        if numeric:
            a = pa.compute.sum(arrow[numeric]).as_py()
            b = frame[numeric].sum()
            c = duckdb.sql(f"select sum({numeric}) from read_parquet({files!r})").fetchall()[0][0]
            if not (abs(a - b) < 1e-9 and abs(a - c) < 1e-9):
                problems.append(f"{table}.{numeric}: sums differ: pyarrow {a}, polars {b}, duckdb {c}")
        nested = next((n for n, k in columns if k == "list"), None)
        if nested:
            lengths_arrow = pa.compute.sum(pa.compute.list_value_length(arrow[nested])).as_py() or 0
            lengths_polars = frame[nested].list.len().sum()
            lengths_duck = duckdb.sql(
                f"select coalesce(sum(len({nested})), 0) from read_parquet({files!r})"
            ).fetchall()[0][0]
            if not (lengths_arrow == lengths_polars == lengths_duck):
                problems.append(
                    f"{table}.{nested}: nested lengths differ: {lengths_arrow}, {lengths_polars}, {lengths_duck}"
                )
        print(f"{table}: {arrow.num_rows} rows, {len(names)} columns: pyarrow, polars, duckdb agree")

    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
