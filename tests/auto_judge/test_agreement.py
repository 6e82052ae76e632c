"""Agreement between the judge tiers, checked against scikit-learn, `krippendorff` and by hand."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from tipbench.auto_judge import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)

SCALE = (1, 2, 3, 4, 5)
FLAG = (0, 1)

# (human, auto, labels): hand-made pairs covering skew, unused labels and flags.
DATASETS = [
    ([1, 2, 3, 4, 5, 3, 2], [1, 2, 3, 4, 4, 3, 3], SCALE),
    ([5, 5, 4, 4, 3, 5, 4, 2], [4, 5, 4, 3, 3, 5, 5, 2], SCALE),
    ([1, 1, 2, 2, 3], [2, 1, 3, 2, 2], SCALE),  # labels 4 and 5 unused
    ([1, 5, 1, 5, 3], [5, 1, 5, 1, 3], SCALE),  # worse than chance
    ([1, 0, 1, 1, 0, 1, 0, 0], [1, 0, 0, 1, 0, 1, 1, 0], FLAG),
    ([1, 1, 1, 1, 0], [1, 1, 1, 0, 0], FLAG),
]


Dataset = tuple[list[int], list[int], tuple[int, ...]]


def _random_datasets() -> list[Dataset]:
    """Independent random pairs (agreement near chance) and noisy copies (strong agreement)."""
    rng = np.random.default_rng(20240607)
    out: list[Dataset] = []
    for n in (2, 5, 30, 200):
        for labels in (SCALE, FLAG):
            human = rng.choice(labels, size=n)
            noise = rng.integers(-1, 2, size=n) * (rng.random(n) < 0.5)
            copy = np.clip(human + noise, labels[0], labels[-1])
            independent = rng.choice(labels, size=n)
            for auto in (copy, independent):
                out.append(([int(v) for v in human], [int(v) for v in auto], labels))
    return out


ALL_DATASETS = DATASETS + _random_datasets()


def _reference_alpha(a: list[int], b: list[int], labels: tuple[int, ...]) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=[a, b], level_of_measurement="ordinal", value_domain=list(labels)
        )
    )


@pytest.mark.parametrize(("a", "b", "labels"), ALL_DATASETS)
def test_kappa_matches_scikit_learn(a: list[int], b: list[int], labels: tuple[int, ...]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(a, b, weights="quadratic", labels=list(labels))
    if math.isnan(expected):
        pytest.skip("scikit-learn leaves this case undefined")
    assert quadratic_weighted_kappa(a, b, labels) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("a", "b", "labels"), ALL_DATASETS)
def test_alpha_matches_krippendorff_package(
    a: list[int], b: list[int], labels: tuple[int, ...]
) -> None:
    assert krippendorff_alpha_ordinal(a, b, labels) == pytest.approx(
        _reference_alpha(a, b, labels), abs=1e-12
    )


def test_kappa_depends_on_the_whole_label_set() -> None:
    a, b = [1, 2, 3, 2], [2, 2, 3, 3]
    narrow = quadratic_weighted_kappa(a, b, (1, 2, 3))
    wide = quadratic_weighted_kappa(a, b, (1, 2, 3, 4, 5))
    # Quadratic weights are positional, so unused extreme labels do not change kappa.
    assert narrow == pytest.approx(wide)
    assert narrow == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))


def test_perfect_agreement() -> None:
    scores = [1, 3, 5, 2, 4, 4]
    result = agreement(scores, scores, SCALE)
    assert result == Agreement(n=6, kappa=1.0, alpha=1.0, exact=1.0, within_1=1.0)


def test_total_disagreement_on_a_flag() -> None:
    result = agreement([0, 1, 0, 1], [1, 0, 1, 0], FLAG)
    # Observed disagreement 1 against expected 1/2: kappa = 1 - 1 / (1/2) = -1.
    assert result.kappa == pytest.approx(-1.0)
    # Coincidences o_01 = o_10 = 4, n = 8, n_0 = n_1 = 4: alpha = 1 - 7 * 8 / 32 = -0.75.
    assert result.alpha == pytest.approx(-0.75)
    assert result.exact == 0.0
    assert result.within_1 == 1.0  # 0/1 flags are always within 1 of each other


def test_exact_and_within_1_counts() -> None:
    human = [1, 2, 3, 4, 5, 5, 1, 3]
    auto = [1, 3, 3, 2, 5, 4, 4, 3]
    # diffs: 0, 1, 0, 2, 0, 1, 3, 0 -> 4 exact, 6 within 1, out of 8.
    result = agreement(human, auto, SCALE)
    assert result.n == 8
    assert result.exact == pytest.approx(4 / 8)
    assert result.within_1 == pytest.approx(6 / 8)


def test_hand_computed_kappa() -> None:
    # Two items, (1, 2) and (2, 1) on labels (1, 2): observed weighted disagreement 2 * 1,
    # expected from the margins (1, 1) x (1, 1) over n = 2: 2 * (1 * 1) / 2 = 1; kappa = 1 - 2.
    assert quadratic_weighted_kappa([1, 2], [2, 1], (1, 2)) == pytest.approx(-1.0)


def test_everyone_gives_the_same_label_counts_as_perfect() -> None:
    result = agreement([3, 3, 3], [3, 3, 3], SCALE)
    assert result.kappa == 1.0
    assert result.alpha == 1.0


def test_empty_input_gives_nan_figures() -> None:
    result = agreement([], [], SCALE)
    assert result.n == 0
    for value in (result.kappa, result.alpha, result.exact, result.within_1):
        assert math.isnan(value)
    assert math.isnan(quadratic_weighted_kappa([], [], SCALE))
    assert math.isnan(krippendorff_alpha_ordinal([], [], SCALE))


@pytest.mark.parametrize(
    ("a", "b", "labels", "message"),
    [
        ([1, 2], [1], SCALE, "length"),
        ([1, 6], [1, 2], SCALE, "not among the labels"),
        ([1, 2], [1, 2], (1, 2, 2), "distinct"),
    ],
)
def test_invalid_input_is_rejected(
    a: list[int], b: list[int], labels: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        agreement(a, b, labels)


def test_agreement_is_frozen() -> None:
    result = agreement([1, 2], [1, 2], SCALE)
    with pytest.raises(AttributeError):
        result.n = 3  # type: ignore[misc]
