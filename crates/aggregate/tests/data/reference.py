"""Makes reference.json: reference values for cfeval-aggregate's statistics,
computed independently with SciPy and scikit-learn.

    .venv/bin/python -m pip install scipy==1.17.1 scikit-learn==1.9.1
    .venv/bin/python crates/aggregate/tests/data/reference.py

- spearman: rho from scipy.stats.spearmanr; the exact two-sided p from
  scipy.stats.permutation_test(permutation_type="pairings",
  n_resamples=np.inf), which enumerates all n! pairings (n <= 8; for n = 9
  and 10 SciPy takes hours, so the same enumeration is done with NumPy over
  itertools.permutations, checked against SciPy on the n <= 8 cases).
- kappa: sklearn.metrics.cohen_kappa_score with labels [0, 1, 2] and
  weights None / "linear" / "quadratic".
- bca: two strata of unit values; the statistic is the mean over all units.
  theta_hat_b are stratified bootstrap replicates drawn here with NumPy; the
  BCa levels come from scipy.stats._resampling._bca_interval (SciPy's own
  jackknife acceleration and bias correction), the intervals from
  np.percentile (linear interpolation) at those levels and at 2.5/97.5.
"""
import itertools
import json
from pathlib import Path

import numpy as np
import scipy
import sklearn
from scipy import stats
from scipy.stats import _resampling
from sklearn.metrics import cohen_kappa_score

rng = np.random.default_rng(20261130)


def numpy_exact_p(x, y):
    """All n! pairings; SciPy's two-sided rule 2 * min(P(>=), P(<=)), capped at 1."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    perms = np.array(list(itertools.permutations(range(len(x)))), dtype=np.int8)
    ranks = ry[perms]
    rxc = rx - rx.mean()
    rhos = ((ranks - ranks.mean(axis=1, keepdims=True)) @ rxc) / (
        np.sqrt(((ranks - ranks.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)) * np.sqrt((rxc**2).sum()))
    rho = stats.spearmanr(x, y).statistic
    eps = 1e-14 * max(1.0, abs(rho)) * 100
    return min(1.0, 2 * min(np.mean(rhos >= rho - eps), np.mean(rhos <= rho + eps)))


def spearman_case(x, y):
    rho = stats.spearmanr(x, y).statistic
    if len(x) <= 8:
        test = stats.permutation_test(
            (x,), lambda xs: stats.spearmanr(xs, y).statistic,
            permutation_type="pairings", n_resamples=np.inf, alternative="two-sided",
        )
        p = float(test.pvalue)
        assert abs(p - numpy_exact_p(x, y)) < 1e-12, (p, numpy_exact_p(x, y))
        how = "scipy.stats.permutation_test"
    else:
        p = float(numpy_exact_p(x, y))
        how = "numpy enumeration of all n! pairings"
    return {"x": list(map(float, x)), "y": list(map(float, y)), "rho": float(rho), "p_exact": p, "p_from": how}


spearman = [
    spearman_case([0.61, 0.55, 0.52, 0.47, 0.44, 0.40], [0.12, 0.30, 0.08, 0.25, 0.33, 0.21]),
    spearman_case([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]),
    spearman_case([0.5, 0.5, 0.7, 0.1, 0.9, 0.3, 0.3], [0.2, 0.4, 0.4, 0.1, 0.8, 0.6, 0.5]),
    spearman_case(list(rng.normal(size=8)), list(rng.normal(size=8))),
    spearman_case([3, 1, 4, 1, 5, 9, 2, 6, 5], [2, 7, 1, 8, 2, 8, 1, 8, 2]),
    spearman_case(list(rng.normal(size=10)), list(rng.normal(size=10))),
    spearman_case([1, 2, 3, 4], [1, 3, 2, 4]),
]

kappa = []
for size, agree in [(40, 0.5), (200, 0.8), (25, 0.2)]:
    a = rng.integers(0, 3, size=size)
    b = np.where(rng.random(size) < agree, a, rng.integers(0, 3, size=size))
    entry = {"a": a.tolist(), "b": b.tolist()}
    for name, weights in [("none", None), ("linear", "linear"), ("quadratic", "quadratic")]:
        entry[name] = float(cohen_kappa_score(a, b, labels=[0, 1, 2], weights=weights))
    kappa.append(entry)

strata = [rng.gamma(2.0, 0.1, size=30), rng.beta(0.5, 2.0, size=45)]


def overall_mean(*samples, axis=-1):
    total = sum(np.sum(sample, axis=axis) for sample in samples)
    return total / sum(sample.shape[axis] for sample in samples)


resamples = 2000
theta_hat_b = np.empty(resamples)
for b in range(resamples):
    drawn = [sample[rng.integers(0, len(sample), size=len(sample))] for sample in strata]
    theta_hat_b[b] = overall_mean(*drawn)
theta_hat = overall_mean(*strata)
alpha_1, alpha_2, a_hat = _resampling._bca_interval(
    tuple(strata), overall_mean, axis=-1, alpha=0.025, theta_hat_b=theta_hat_b, batch=None, xp=np,
)
bca = {
    "strata": [sample.tolist() for sample in strata],
    "theta_hat": float(theta_hat),
    "theta_hat_b": theta_hat_b.tolist(),
    "level": 0.95,
    "alpha_1": float(alpha_1),
    "alpha_2": float(alpha_2),
    "acceleration": float(a_hat),
    "bca": [float(np.percentile(theta_hat_b, 100 * alpha_1)), float(np.percentile(theta_hat_b, 100 * alpha_2))],
    "percentile": [float(np.percentile(theta_hat_b, 2.5)), float(np.percentile(theta_hat_b, 97.5))],
}

out = {
    "made_with": {"scipy": scipy.__version__, "scikit-learn": sklearn.__version__, "numpy": np.__version__},
    "spearman": spearman,
    "kappa": kappa,
    "bca": bca,
}
Path(__file__).with_name("reference.json").write_text(json.dumps(out, indent=1) + "\n")
