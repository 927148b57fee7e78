# %% [markdown]
# # cfeval scores in a notebook
#
# Loads a run's `scores` and `judgments` tables with polars and duckdb and
# redraws the CMS → CSS rank comparison (as text, and as an SVG file when
# matplotlib is installed). Runs as a script:
#
#     .venv/bin/python notebooks/aggregate_scores.py runs/<run>
#
# Each `# %%` block is a notebook cell (Jupytext percent format).

# %%
import sys
from pathlib import Path

import duckdb
import polars as pl

run = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/demo")
scores = pl.read_parquet(run / "scores" / "part-*.parquet")
judgments = pl.read_parquet(run / "judgments" / "part-*.parquet")
print(f"{scores.height} score rows, {judgments.height} judgments")

# %% CSS overall per subject and mode, BCa intervals (one table holds every estimate).
css = (
    scores.filter((pl.col("metric") == "css") & (pl.col("level") == "overall") & (pl.col("ci_method") == "bca"))
    .select("subject", "is_control", "mode", "judge", "value", "ci_low", "ci_high", "n_tuples")
    .sort("mode", "value", descending=[False, True])
)
print(css)

# %% The same number straight from the judgments with duckdb: CSS is the mean
# score over the decided tuples of families A–E (family N is reported apart;
# pairs the judge was uncertain about and those of truncated or refused
# answers are left out, and counted in the `uncertain`, `truncated` and
# `refused` rows).
direct = duckdb.sql(
    f"""
    select subject, mode, judge, avg(score) as css, count(*) as n_tuples
    from read_parquet('{run}/judgments/part-*.parquet')
    where metric = 'css' and family in ('A', 'B', 'C', 'D', 'E') and score is not null
      and status not in ('truncated', 'refused') and coalesce(label, '') <> 'uncertain'
    group by all order by mode, css desc
    """
).pl()
joined = css.join(direct, on=["subject", "mode", "judge"])
assert (joined["value"] - joined["css"]).abs().max() < 1e-9, "scores disagree with the judgments"
assert (joined["n_tuples"] == joined["n_tuples_right"]).all()
print("scores agree with a direct duckdb computation from the judgments")

# %% Family-balanced CSS (the mean of the family means) beside the tuple-weighted one.
balanced = scores.filter(
    (pl.col("metric") == "css_balanced") & (pl.col("ci_method") == "percentile")
).select("subject", "mode", "judge", pl.col("value").alias("css_balanced"), "ci_low", "ci_high")
print(balanced.sort("mode", "css_balanced", descending=[False, True]))

# %% Redraw the rank slope chart CMS → CSS.
ranks = (
    scores.filter(pl.col("metric").is_in(["rank_cms", "rank_css"]))
    .pivot(on="metric", index=["subject", "mode", "judge"], values="value")
    .sort("mode", "judge", "rank_cms")
)
for row in ranks.iter_rows(named=True):
    print(f"{row['mode']:<12} {row['judge']:<16} {row['subject']:<28} CMS #{row['rank_cms']:.0f} -> CSS #{row['rank_css']:.0f}")
try:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    first = ranks.filter((pl.col("mode") == ranks["mode"][0]) & (pl.col("judge") == ranks["judge"][0]))
    figure, axis = plt.subplots(figsize=(5, 4))
    for row in first.iter_rows(named=True):
        axis.plot([0, 1], [row["rank_cms"], row["rank_css"]], marker="o")
        axis.annotate(row["subject"], (1.02, row["rank_css"]), fontsize=7)
    axis.set_xticks([0, 1], ["CMS rank", "CSS rank"])
    axis.invert_yaxis()
    figure.savefig(run / "rank_slope_notebook.svg", bbox_inches="tight")
    print(f"wrote {run / 'rank_slope_notebook.svg'}")
except ImportError:
    print("matplotlib not installed: the slope chart is printed above as text")
