"""Statistics of repeated measurements: centre, spread, confidence intervals, comparisons.

The median is the headline (robust to the odd slow run on a shared machine); its 95 %
confidence interval comes from order statistics (distribution-free, as benchstat does), the
mean's from Student's t. Two programs are called different only when a Mann-Whitney U test
says so at the 5 % level; otherwise the comparison says "~" (not significant).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    stdev: float
    cv: float  # stdev / mean
    median_ci: tuple[float, float]
    median_ci_level: float  # the coverage actually achieved (small n cannot reach 95 %)
    mean_ci: tuple[float, float]


def binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2): exact, with integers (no scipy needed)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def t_quantile_975(df: int) -> float:
    """The 97.5 % quantile of Student's t (scipy is imported only here, where it is needed)."""
    from scipy import stats as sps

    return float(sps.t.ppf(0.975, df))


def median_ci(sorted_values: list[float], level: float = 0.95) -> tuple[tuple[float, float], float]:
    """Distribution-free CI of the median: the widest order-statistic pair covering `level`.

    Returns the interval and its exact coverage; with n < 6 even (min, max) covers < 95 %.
    """
    n = len(sorted_values)
    if n == 1:
        return (sorted_values[0], sorted_values[0]), 0.0
    best = (0, n - 1)
    coverage = 1 - 2 * binom_cdf(0, n)
    for k in range(1, n // 2):
        cov = 1 - 2 * binom_cdf(k, n)
        if cov < level:
            break
        best, coverage = (k, n - 1 - k), cov
    return (sorted_values[best[0]], sorted_values[best[1]]), float(coverage)


def summarize(values: list[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    xs = sorted(float(v) for v in values)
    n = len(xs)
    mean = statistics.fmean(xs)
    stdev = statistics.stdev(xs) if n > 1 else 0.0
    if n > 1:
        half = t_quantile_975(n - 1) * stdev / math.sqrt(n)
        # a quantity that cannot be negative (a time, a size) gets no negative bound
        mean_ci = (max(0.0, mean - half) if xs[0] >= 0 else mean - half, mean + half)
    else:
        mean_ci = (mean, mean)
    mci, level = median_ci(xs)
    return Summary(
        n=n, median=statistics.median(xs), mean=mean, min=xs[0], max=xs[-1], stdev=stdev,
        cv=stdev / mean if mean else 0.0, median_ci=mci, median_ci_level=level, mean_ci=mean_ci,
    )


# hyperfine's cut-off for the modified z-score: Iglewicz and Hoaglin's 3.5 flags about half of all
# 3-run cells of a noisy machine, which makes the warning noise
OUTLIER_Z = 14.0


OUTLIER_MIN_OFF = 0.10  # and at least this far from the median: a 2 % blip among very tight runs is no news


def outliers(values: list[float]) -> list[float]:
    """Values whose modified z-score (0.6745 * |x - median| / MAD) exceeds OUTLIER_Z.

    The median absolute deviation is robust to the outliers themselves, unlike the stdev; with
    a MAD of 0 (most values identical) nothing is called an outlier.
    """
    if len(values) < 3:
        return []
    med, mad = median_and_mad(values)
    if mad == 0:
        return []
    return [v for v in values if 0.6745 * abs(v - med) / mad > OUTLIER_Z
            and abs(v - med) > OUTLIER_MIN_OFF * abs(med)]


def median_and_mad(values: list[float]) -> tuple[float, float]:
    """The median and the median absolute deviation from it."""
    med = statistics.median(values)
    return med, statistics.median(abs(v - med) for v in values)


def robust_spread(values: list[float]) -> float | None:
    """1.4826 × MAD / median: the coefficient of variation of the middle runs, which one odd run
    (flagged separately as an outlier) does not inflate; None with fewer than 3 runs."""
    if len(values) < 3:
        return None
    med, mad = median_and_mad(values)
    return 1.4826 * mad / abs(med) if med else None


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median(a) / median(b)
    p_value: float | None
    significant: bool

    def describe(self) -> str:
        """×ratio, with "~" when the difference is not significant (benchstat's mark)."""
        return f"×{self.ratio:.2f}" if self.significant else f"×{self.ratio:.2f} ~"


def compare(a: list[float], b: list[float], alpha: float = 0.05) -> Comparison:
    """Is a different from b? Mann-Whitney U, two-sided; needs at least 3 values each side."""
    ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else math.inf
    if len(a) < 3 or len(b) < 3:
        return Comparison(ratio, None, False)
    if len(set(a) | set(b)) == 1:
        return Comparison(ratio, 1.0, False)
    from scipy import stats as sps  # a test statistic: the one place that needs scipy

    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return Comparison(ratio, p, p < alpha)
