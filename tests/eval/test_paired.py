"""One bootstrap: a split's interval, the paired difference and the optimizer's selection resample alike.

`edgewise.eval.intervals.bootstrap` is the only resampling routine; these tests pin that the paired
difference draws the very resamples a single program's interval draws, and that every caller's
default count is the one constant.
"""

from __future__ import annotations

import inspect
import random
from types import SimpleNamespace

import pytest

from edgewise.eval import bench_records
from edgewise.eval.intervals import DEFAULT_RESAMPLES, bootstrap, bootstrap_ci
from edgewise.eval.paired import paired_difference, paired_on_shared


def scores(count: int, seed: int, *, perfect: bool = False) -> list[SimpleNamespace]:
    """Per-episode counts of `count` episodes (what `stat_columns` reads), ids e0, e1, ..."""
    draw = random.Random(seed)
    made = []
    for i in range(count):
        tp = draw.randint(1, 5)
        fp, fn = (0, 0) if perfect else (draw.randint(0, 3), draw.randint(0, 3))
        made.append(SimpleNamespace(id=f"e{i}", tp=tp, fp=fp, fn=fn, valid_at_right=draw.randint(0, tp)))
    return made


def test_the_paired_difference_resamples_exactly_as_a_single_interval_does() -> None:
    candidate = scores(25, seed=1)
    perfect = scores(25, seed=2, perfect=True)  # edge-F1 1.0 on every resample
    for seed in (0, 7):
        low, high = bootstrap_ci(candidate, seed=seed)
        paired = paired_difference(perfect, candidate, seed=seed)
        assert (paired.low, paired.high) == pytest.approx((low - 1.0, high - 1.0), abs=1e-12)


def test_every_caller_defaults_to_the_one_resample_count() -> None:
    for function in (bootstrap, bootstrap_ci, paired_difference):
        assert inspect.signature(function).parameters["n_resamples"].default == DEFAULT_RESAMPLES
    assert bench_records.BenchReport.model_fields["bootstrap_resamples"].default == DEFAULT_RESAMPLES


def test_a_statistic_never_defined_is_reported_not_averaged_away() -> None:
    undated = [SimpleNamespace(id="e0", tp=0, fp=1, fn=1, valid_at_right=0)]
    assert bootstrap([[(0.0, 0.0)]], lambda sums: float("nan"), n_resamples=5) is None
    with pytest.raises(ValueError, match="paired_difference: valid_at_accuracy is undefined"):
        paired_difference(undated, undated, stat="valid_at_accuracy")


def test_paired_on_shared_pairs_only_the_episodes_both_finished() -> None:
    baseline, candidate = scores(10, seed=3), scores(10, seed=4)
    shared = paired_on_shared(baseline, candidate[2:], n_resamples=200)
    assert shared == paired_difference(baseline[2:], candidate[2:], n_resamples=200)
    assert paired_on_shared(baseline[:2], candidate[2:]) is None
