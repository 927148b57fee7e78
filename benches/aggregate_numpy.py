"""The aggregate benchmark's Python peer: the same work as
`cfeval_aggregate::compute` + writing the scores, in pyarrow + NumPy.

Reads the run's judgments with pyarrow (projected columns), computes
per-case sums once per series (subject, mode, judge, quantity, intervention)
with pyarrow's hash group-by, then draws one resample-count matrix (B x cases,
cases resampled jointly across families) and multiplies it by the per-case
sums: the fastest NumPy formulation. Percentile and BCa intervals
(leave-one-case-out jackknife) for CSS
overall / per family / per intervention, spurious shift, CMS, integration and
access failure, and agent - single_shot deltas; writes the scores as Parquet.
Prints one JSON line. Usage: aggregate_numpy.py RUN_DIR [RESAMPLES]
"""
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from statistics import NormalDist

_normal = NormalDist()
ndtr = np.vectorize(_normal.cdf, otypes=[float])
ndtri = np.vectorize(lambda p: _normal.inv_cdf(p) if 0 < p < 1 else (-np.inf if p == 0 else np.inf if p == 1 else np.nan),
                     otypes=[float])

start = time.perf_counter()
run_dir = Path(sys.argv[1])
B = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
columns = ["subject", "mode", "judge", "case_id", "intervention", "family", "metric", "score", "label",
           "changed", "decisive_section_read"]
table = pq.read_table(sorted((run_dir / "judgments").glob("part-*.parquet")), columns=columns)
table = table.filter(pc.is_valid(table["score"]))
css_families = ["A", "B", "C", "D", "E"]
fam = table["family"]
metric = table["metric"]
is_css = pc.and_(pc.equal(metric, "css"), pc.is_in(fam, pa.array(css_families)))
is_n = pc.and_(pc.equal(metric, "css"), pc.equal(fam, "N"))
is_cms = pc.equal(metric, "cms")
read = table["decisive_section_read"]
parts = []
keys = ["subject", "mode", "judge", "intervention", "family", "case_id"]
def part(mask, quantity, value):
    t = table.filter(mask)
    v = value(t) if callable(value) else t["score"]
    t = t.select(keys).append_column("value", pc.cast(v, pa.float64())).append_column(
        "quantity", pa.array([quantity] * t.num_rows))
    parts.append(t)
part(is_css, "css", None)
part(is_cms, "cms", None)
part(is_n, "spurious", lambda t: pc.equal(t["label"], "shifted_spuriously"))
has_read = pc.and_(is_css, pc.is_valid(read))
part(has_read, "access", lambda t: pc.invert(t["decisive_section_read"]))
part(has_read, "integration", lambda t: pc.and_(t["decisive_section_read"], pc.equal(t["changed"], False)))
long = pa.concat_tables(parts)
sums = long.group_by(keys + ["quantity"]).aggregate([("value", "sum"), ("value", "count")])
sums = {name: sums[name].to_numpy(zero_copy_only=False) for name in sums.column_names}
series_cols = ["subject", "mode", "judge", "quantity", "intervention", "family"]
series_id = {}
series_list = []
sid = np.empty(len(sums["case_id"]), dtype=np.int64)
for i, key in enumerate(zip(*(sums[c] for c in series_cols))):
    j = series_id.get(key)
    if j is None:
        j = series_id[key] = len(series_list)
        series_list.append(key)
    sid[i] = j
K = len(series_list)
# One stratum of every case (cfeval's joint case bootstrap: a replicate draws
# case ids once for every family and series): case index, num and den
# matrices (cases x series).
strata = {}
for f, mask in [("cases", np.ones(len(sums["family"]), dtype=bool))]:
    cases, case_idx = np.unique(sums["case_id"][mask], return_inverse=True)
    cols = sorted({sid[i] for i in np.nonzero(mask)[0]})
    col_idx = {c: k for k, c in enumerate(cols)}
    num = np.zeros((len(cases), len(cols)))
    den = np.zeros((len(cases), len(cols)))
    local = np.array([col_idx[s] for s in sid[mask]])
    num[case_idx, local] = sums["value_sum"][mask]
    den[case_idx, local] = sums["value_count"][mask]
    strata[f] = (np.array(cols), num, den)
# Statistics: lists of series (plus) and optional minus.
by = {}
for s, (subject, mode, judge, q, intervention, f) in enumerate(series_list):
    by.setdefault((subject, mode, judge, q), []).append((f, intervention, s))
specs = []
for (subject, mode, judge, q), items in by.items():
    def add(metric_name, level, group, plus):
        if plus:
            specs.append(((subject, mode, judge, metric_name, level, group), plus, []))
    if q == "css":
        add("css", "overall", "all", [s for _, _, s in items])
        for f in css_families:
            add("css", "family", f, [s for ff, _, s in items if ff == f])
        for _, i, s in items:
            add("css", "intervention", i, [s])
    elif q == "spurious":
        add("spurious_shift", "family", "N", [s for _, _, s in items])
        for _, i, s in items:
            add("spurious_shift", "intervention", i, [s])
    elif q == "cms":
        add("cms", "overall", "all", [s for _, _, s in items])
    else:
        name = "integration_failure" if q == "integration" else "access_failure"
        add(name, "overall", "all", [s for _, _, s in items])
        for f in sorted({ff for ff, _, _ in items}):
            add(name, "family", f, [s for ff, _, s in items if ff == f])
index = {spec[0]: k for k, spec in enumerate(specs)}
for (subject, mode, judge, m, level, group), plus, _ in list(specs):
    if mode == "agent" and m in ("css", "cms", "spurious_shift") and level != "intervention":
        other = index.get((subject, "single_shot", judge, m, level, group))
        if other is not None:
            specs.append(((subject, "agent-single_shot", judge, "delta_" + m, level, group), plus, specs[other][1]))
E = len(specs)
Wp = np.zeros((K, E))
Wm = np.zeros((K, E))
for e, (_, plus, minus) in enumerate(specs):
    Wp[plus, e] = 1
    Wm[minus, e] = 1
has_minus = Wm.sum(axis=0) > 0
def estimate(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (num @ Wp) / (den @ Wp)
        minus = (num @ Wm) / (den @ Wm)
    return np.where(has_minus, value - np.nan_to_num(minus), value)
total_num = np.zeros(K)
total_den = np.zeros(K)
for f, (cols, num, den) in strata.items():
    total_num[cols] += num.sum(axis=0)
    total_den[cols] += den.sum(axis=0)
theta = estimate(total_num[None, :], total_den[None, :])[0]
rng = np.random.default_rng(0)
rep_num = np.zeros((B, K))
rep_den = np.zeros((B, K))
for f, (cols, num, den) in strata.items():
    n = num.shape[0]
    draws = rng.integers(0, n, size=(B, n)) + (np.arange(B) * n)[:, None]
    counts = np.bincount(draws.ravel(), minlength=B * n).reshape(B, n).astype(np.float64)
    rep_num[:, cols] += counts @ num
    rep_den[:, cols] += counts @ den
reps = estimate(rep_num, rep_den)
alpha = 0.025
low, high = np.nanpercentile(reps, [2.5, 97.5], axis=0)
# BCa: bias from the share below, acceleration from the stratified jackknife.
share = (np.sum(reps < theta, axis=0) + np.sum(reps <= theta, axis=0)) / (2 * B)
z0 = ndtri(share)
num_a = np.zeros(E)
den_a = np.zeros(E)
for f, (cols, num, den) in strata.items():
    n = num.shape[0]
    loo_num = np.tile(total_num, (n, 1))
    loo_den = np.tile(total_den, (n, 1))
    loo_num[:, cols] -= num
    loo_den[:, cols] -= den
    jack = estimate(loo_num, loo_den)
    touches = ((np.abs(Wp[cols]).sum(axis=0) + np.abs(Wm[cols]).sum(axis=0)) > 0)
    u = (n - 1) * (np.nanmean(jack, axis=0) - jack)
    num_a += np.where(touches, np.nansum(u**3, axis=0) / n**3, 0)
    den_a += np.where(touches, np.nansum(u**2, axis=0) / n**2, 0)
with np.errstate(invalid="ignore", divide="ignore"):
    a = num_a / (6 * den_a**1.5)
a = np.nan_to_num(a)
za = ndtri(alpha)
a1 = ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
a2 = ndtr(z0 + (z0 - za) / (1 - a * (z0 - za)))
bca_low = np.array([np.nanpercentile(reps[:, e], 100 * a1[e]) if np.isfinite(a1[e]) else np.nan for e in range(E)])
bca_high = np.array([np.nanpercentile(reps[:, e], 100 * a2[e]) if np.isfinite(a2[e]) else np.nan for e in range(E)])
rows = {c: [] for c in ["subject", "mode", "judge", "metric", "level", "group", "value", "ci_low", "ci_high", "ci_method"]}
for e, ((subject, mode, judge, m, level, group), _, _) in enumerate(specs):
    for method, lo, hi in [("percentile", low[e], high[e]), ("bca", bca_low[e], bca_high[e])]:
        for c, v in zip(rows, [subject, mode, judge, m, level, group, theta[e], lo, hi, method]):
            rows[c].append(v)
out = run_dir / "scores_numpy"
out.mkdir(exist_ok=True)
pq.write_table(pa.table(rows), out / "part-00000.parquet", compression="zstd")
total = time.perf_counter() - start
print(json.dumps({"rows": table.num_rows, "estimates": E, "resamples": B, "total_s": round(total, 3),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
