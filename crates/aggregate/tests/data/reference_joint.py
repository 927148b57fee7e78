"""Makes reference_joint.json: the exact joint case bootstrap of a small run,
and κ on the CSS scale with a wrong-direction category, with NumPy alone.

    .venv/bin/python crates/aggregate/tests/data/reference_joint.py

- joint_bootstrap: six cases, three families (A: 2 tuples per case, B: 1,
  C: 1, in four cases only). Every one of the 6^6 = 46,656 equally likely
  resamples of the case ids is enumerated; each gives overall CSS (sum of
  scores / tuples over every family: the same draw for every family) and the
  family-balanced CSS (mean of the three family means; undefined when a
  resample draws no case with family C, and then left out, as cfeval leaves
  out a replicate without a value). Recorded: the exact mean and standard
  deviation of each bootstrap distribution, its CDF at a few points, and its
  2.5 and 97.5 percentiles (np.percentile, linear interpolation).
- css_kappa: weighted κ = 1 - sum(w * observed) / sum(w * chance) with an
  explicit 4 x 4 weight matrix: categories 0, 1/2, 1 ordered (none: 1 off
  the diagonal; linear: |i - j| / 2; quadratic: (|i - j| / 2)^2), category 3
  (updated in the wrong direction) weighing 1 against every other.
"""
import itertools
import json
from pathlib import Path

import numpy as np

# Per case: (sum, tuples) of families A, B, C (None: the case lacks C).
cases = [
    ((2.0, 2), (1.0, 1), (1.0, 1)),
    ((1.5, 2), (0.0, 1), (0.5, 1)),
    ((0.0, 2), (0.0, 1), None),
    ((1.0, 2), (1.0, 1), (0.0, 1)),
    ((0.5, 2), (0.5, 1), None),
    ((2.0, 2), (0.0, 1), (1.0, 1)),
]
n = len(cases)
num = np.array([[c[f][0] if c[f] else 0.0 for f in range(3)] for c in cases])
den = np.array([[c[f][1] if c[f] else 0.0 for f in range(3)] for c in cases])

draws = np.array(list(itertools.product(range(n), repeat=n)))
counts = np.stack([np.bincount(row, minlength=n) for row in draws]).astype(float)
family_num = counts @ num
family_den = counts @ den
overall = family_num.sum(axis=1) / family_den.sum(axis=1)
with np.errstate(invalid="ignore", divide="ignore"):
    balanced = (family_num / family_den).mean(axis=1)
balanced = balanced[np.isfinite(balanced)]


def summary(values, estimate, points):
    return {
        "estimate": float(estimate),
        "resamples": int(len(values)),
        "mean": float(values.mean()),
        "sd": float(values.std()),
        "cdf": [[float(x), float(np.mean(values <= x))] for x in points],
        "percentile": [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))],
    }


full_num = num.sum(axis=0)
full_den = den.sum(axis=0)
joint = {
    "cases": [[list(family) if family else None for family in case] for case in cases],
    "enumerated": int(len(draws)),
    "css": summary(overall, full_num.sum() / full_den.sum(), [0.35, 0.45, 0.5, 0.55, 0.65]),
    "css_balanced": summary(balanced, (full_num / full_den).mean(), [0.35, 0.45, 0.5, 0.55, 0.65]),
}


def weights(scheme):
    w = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            if i == j:
                continue
            if i == 3 or j == 3:
                w[i, j] = 1.0
            elif scheme == "none":
                w[i, j] = 1.0
            elif scheme == "linear":
                w[i, j] = abs(i - j) / 2
            else:
                w[i, j] = (abs(i - j) / 2) ** 2
    return w


def kappa(a, b, scheme):
    observed = np.zeros((4, 4))
    for x, y in zip(a, b):
        observed[x, y] += 1
    observed /= len(a)
    chance = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    w = weights(scheme)
    return float(1 - (w * observed).sum() / (w * chance).sum())


rng = np.random.default_rng(20261201)
kappas = []
for size, agree in [(60, 0.7), (200, 0.85), (30, 0.4)]:
    a = rng.choice(4, size=size, p=[0.35, 0.2, 0.35, 0.1])
    b = np.where(rng.random(size) < agree, a, rng.choice(4, size=size, p=[0.3, 0.25, 0.3, 0.15]))
    kappas.append({"a": a.tolist(), "b": b.tolist(),
                   **{scheme: kappa(a, b, scheme) for scheme in ["none", "linear", "quadratic"]}})

out = {"made_with": {"numpy": np.__version__}, "joint_bootstrap": joint, "css_kappa": kappas}
Path(__file__).with_name("reference_joint.json").write_text(json.dumps(out, indent=1) + "\n")
