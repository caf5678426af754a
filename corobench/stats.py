"""Statistics of repeated measurements, and every rule about what they can say, in one place.

The median is the headline (robust to the odd slow run on a shared machine); its 95 %
confidence interval comes from order statistics (distribution-free, as benchstat does), the
mean's from Student's t. The rules (README, "Reading the results"):

- the interval shown is called what it is: a 95 % CI from MIN_RUNS_CI95 runs up, min–max below;
- two sets of runs are compared by a two-sided Mann-Whitney U test at ALPHA; with too few runs
  for the test to ever reach ALPHA (3 + 3: the smallest p is 0.10) the difference is "too few runs
  to test", never "~", which a reader takes for "no difference";
- a difference is better or worse only when it is significant AND at least MIN_CHANGE (2 % by
  default, settable): a consistent +0.1 % is "≈", real but below anything a reader cares about;
- outliers are flagged only from MIN_RUNS_OUTLIERS runs up (one run of three is no outlier);
- checks on a cell's duration use the median of its runs.
"""

from __future__ import annotations

import functools
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


@functools.cache
def t_quantile_975(df: int) -> float:
    """The 97.5 % quantile of Student's t (scipy is imported only here, where it is needed; cached:
    a report or site of 100,000 runs asks for the same few degrees of freedom again and again)."""
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
    # in floats: statistics.stdev is exact (fractions) and ten times slower, for no figure we show
    stdev = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
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
    if len(values) < MIN_RUNS_OUTLIERS:
        return []  # one run of three is no outlier: it is a third of what there is
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


ALPHA = 0.05
MIN_CHANGE = 0.02  # the default smallest change called better or worse (compare/report --min-change)
MIN_RUNS_CI95 = 6  # below this the widest order-statistic pair, min–max, covers less than 95 %
MIN_RUNS_OUTLIERS = 5
TOO_FEW = "too few runs to test"
BELOW_MIN = "≈"  # significant, but smaller than the minimum change


def interval_name(ns) -> str:
    """What a table's bracket is, for cells of these run counts."""
    ns = list(ns)
    return "95% CI" if ns and min(ns) >= MIN_RUNS_CI95 else "min–max"


def significance_possible(n_a: int, n_b: int, alpha: float = ALPHA) -> bool:
    """Can the test reach alpha at all? The smallest exact two-sided p is 2 / C(n_a + n_b, n_a)
    (all of one side below all of the other): 0.10 for 3 + 3 runs, 0.029 for 4 + 4."""
    if n_a < 3 or n_b < 3:  # compare() does not test below 3 values a side
        return False
    return 2 / math.comb(n_a + n_b, n_a) < alpha


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median(a) / median(b)
    p_value: float | None
    significant: bool  # the test found a difference at alpha
    testable: bool = True  # enough runs that the test could find one at all
    min_change: float = MIN_CHANGE

    @property
    def meaningful(self) -> bool:
        """Significant, and at least the minimum change: what may be called better or worse."""
        return self.significant and math.isfinite(self.ratio) and abs(self.ratio - 1) >= self.min_change

    @property
    def mark(self) -> str:
        """"" (a real difference), "~" (not significant), "≈" (under the minimum), or too few runs."""
        if not self.testable:
            return TOO_FEW
        if not self.significant:
            return "~"
        return "" if self.meaningful else BELOW_MIN

    def describe(self) -> str:
        """×ratio and its mark: ×2.00, ×1.01 ~, ×1.001 ≈, ×12.36 (too few runs to test)."""
        digits = 3 if abs(self.ratio - 1) < 0.01 else 2
        mark = self.mark
        if mark == TOO_FEW:
            return f"×{self.ratio:.{digits}f} ({TOO_FEW})"
        return f"×{self.ratio:.{digits}f}" + (f" {mark}" if mark else "")


def compare(a: list[float], b: list[float], alpha: float = ALPHA, min_change: float = MIN_CHANGE) -> Comparison:
    """Is a different from b? Mann-Whitney U, two-sided; needs at least 3 values each side."""
    ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else math.inf
    testable = significance_possible(len(a), len(b), alpha)
    if len(a) < 3 or len(b) < 3:
        return Comparison(ratio, None, False, testable, min_change)
    if len(set(a) | set(b)) == 1:
        return Comparison(ratio, 1.0, False, testable, min_change)
    from scipy import stats as sps  # a test statistic: the one place that needs scipy

    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return Comparison(ratio, p, p < alpha, testable, min_change)
