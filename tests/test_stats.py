import math

import pytest

from corobench.stats import compare, median_ci, summarize


def test_summary_of_known_values():
    s = summarize([5, 1, 4, 2, 3])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3, 3, 1, 5)
    assert s.stdev == pytest.approx(math.sqrt(2.5))
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3)
    # t(0.975, 4) = 2.776: half-width 2.776 * 1.5811 / sqrt(5)
    assert s.mean_ci[0] == pytest.approx(3 - 1.9632, abs=1e-3)
    assert s.mean_ci[1] == pytest.approx(3 + 1.9632, abs=1e-3)


def test_median_ci_small_n_is_min_max_with_its_true_coverage():
    (lo, hi), level = median_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (lo, hi) == (1.0, 5.0)
    assert level == pytest.approx(1 - 2 / 32)


def test_median_ci_narrows_with_more_values():
    xs = [float(x) for x in range(1, 21)]
    (lo, hi), level = median_ci(xs)
    assert level >= 0.95
    assert 1.0 < lo < 10.5 < hi < 20.0  # inner order statistics, not the extremes


def test_single_value():
    s = summarize([7])
    assert s.median == 7 and s.stdev == 0 and s.mean_ci == (7, 7)


def test_robust_spread_ignores_one_odd_run():
    from corobench.stats import robust_spread
    assert robust_spread([100, 101, 99, 100, 100]) < 0.02
    assert robust_spread([100, 101, 99, 100, 300]) < 0.02  # the odd run is an outlier, not spread
    assert robust_spread([60, 80, 100, 120, 140]) > 0.2
    assert robust_spread([1, 2]) is None and robust_spread([0, 0, 0]) is None


def test_compare_says_not_significant_for_overlapping_samples():
    c = compare([10, 11, 12, 13, 14], [10.5, 11.5, 12.5, 13.5, 14.5])
    assert not c.significant and "~" in c.describe()


def test_compare_finds_a_clear_difference():
    c = compare([20, 21, 22, 23, 24], [10, 11, 12, 13, 14])
    assert c.significant and c.ratio == pytest.approx(22 / 12)
    assert c.describe() == "×1.83"


def test_compare_needs_three_runs_each():
    assert not compare([1, 2], [5, 6]).significant


@pytest.mark.parametrize("value,text", [(8.03e6, "8.03M"), (70.5e6, "70.5M"), (9940, "9.94k"), (10500, "10.5k"),
                                        (0.0142, "0.0142"), (1.2e9, "1.20G"), (523456, "523k")])
def test_number_format(value, text):
    from corobench.export.format import number

    assert number(value) == text


def test_outliers_by_modified_z_score():
    from corobench.stats import outliers

    assert outliers([10.0, 10.2, 9.9, 10.1, 10.0, 25.0]) == [25.0]
    assert outliers([10.0, 10.2, 9.9, 10.1, 10.0]) == []
    assert outliers([5.0, 5.0, 5.0, 9.0]) == []  # MAD 0: no verdict


@pytest.mark.parametrize("value,text", [(2.91e-4, "291 µs"), (0.0123, "12.3 ms"), (4.5678, "4.57 s"), (3e-9, "3 ns"), (2.5e-3, "2.50 ms"),
                                        (0, "0 ns")])
def test_seconds_read_like_people_write_them(value, text):
    from corobench.export.format import seconds

    assert seconds(value) == text


def test_the_mean_ci_of_a_positive_quantity_stays_positive():
    s = summarize([0.001, 0.001, 0.5])
    assert s.mean_ci[0] >= 0


def test_outliers_need_five_runs_and_intervals_say_what_they_are():
    from corobench.stats import interval_name, outliers

    assert outliers([1.0, 1.0, 9.0]) == []  # one run of three is a third of the data, not an outlier
    assert outliers([1.0, 1.01, 0.99, 1.0, 9.0]) == [9.0]
    assert interval_name([3, 5]) == "min–max" and interval_name([6, 10]) == "95% CI"


def test_describe_marks_each_case():
    from corobench.stats import compare

    assert compare([1, 2, 3], [10, 11, 12]).describe().endswith("(too few runs to test)")
    assert compare([1.0, 1.1, 0.9, 1.0, 1.05], [1.0, 1.02, 0.95, 1.01, 1.1]).describe().endswith("~")
