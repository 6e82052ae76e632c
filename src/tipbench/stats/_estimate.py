"""What a statistic is reported as, in both loops: its level, an estimate with its interval,
and the numbers JSON can carry.

`ALPHA` and `CONFIDENCE` are the one home of the levels every interval, test, confidence
sequence and promotion gate uses. `Estimate` is a point estimate with its interval and how
the interval was made: a leaderboard cell's mean (exact sign-flip, bootstrap, or the
combined tier's t interval), a paired difference and its confidence sequence, and, with a
standard error, a normal interval such as an off-policy estimate's (`Estimate.normal`). It
is the one interval of every result and JSON document in both loops: its `to_dict` keys
(`value`, `low`, `high`, `method`, `se`, `n`, `confidence`) are the same everywhere.
`json_number` writes a figure that may be NaN or
infinite as JSON can hold it: None.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

__all__ = ["ALPHA", "CONFIDENCE", "Estimate", "IntervalMethod", "Z", "json_number", "json_numbers"]

ALPHA = 0.05
"""The significance level of every test, comparison, confidence sequence and gate."""
CONFIDENCE = 1.0 - ALPHA
"""The confidence level of every interval (0.95)."""
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2.0)
"""The normal quantile of a two-sided `CONFIDENCE` interval (1.96): ``value ± Z · se``."""

IntervalMethod = Literal["sign-flip", "bootstrap", "none", "ppi", "normal", "sequence"]
"""How an interval was made: exact (inverting the sign-flip test, `mean_interval` on few
values), percentile bootstrap (on more), none (too few values for any interval), the t
interval of a prediction-powered estimate (the combined tier, `stats._ppi`),
``value ± z · se`` (`Estimate.normal`), or an anytime-valid confidence sequence (valid
however often one looks, `stats._confseq`; infinite ends while there is none yet)."""


def json_number(value: float | None) -> float | None:
    """A figure as JSON can hold it: NaN and ±infinity become None (JSON has neither; a
    strict parser refuses ``NaN`` and ``Infinity``), a numpy float a Python one; integers
    and None pass unchanged."""
    if value is None or isinstance(value, int):
        return value
    number = float(value)
    return number if math.isfinite(number) else None


def json_numbers(document: Any) -> Any:
    """`json_number` on every float of a document of dicts, lists and tuples (tuples become
    lists); everything else passes unchanged."""
    if isinstance(document, float):
        return json_number(document)
    if isinstance(document, Mapping):
        return {key: json_numbers(value) for key, value in document.items()}
    if isinstance(document, list | tuple):
        return [json_numbers(value) for value in document]
    return document


@dataclass(frozen=True)
class Estimate:
    """A point estimate, its confidence interval and how the interval was made.

    Attributes:
        value: The estimate (a mean, a difference of means, a policy's value).
        low: Lower end of the interval (NaN: there is none).
        high: Upper end.
        method: How the interval was made (see `IntervalMethod`).
        se: The estimate's standard error, where the method has one (NaN for the exact and
            bootstrap intervals, which do not rest on one).
        n: How many values the estimate rests on (0: not counted).
        confidence: The interval's level.
    """

    value: float
    low: float
    high: float
    method: IntervalMethod
    se: float = math.nan
    n: int = 0
    confidence: float = CONFIDENCE

    @classmethod
    def normal(
        cls, value: float, se: float, *, n: int = 0, confidence: float = CONFIDENCE
    ) -> Estimate:
        """``value ± z · se``, z the normal quantile at ``confidence`` (1.96 at 0.95); no
        interval (NaN ends) where ``se`` is not a finite number.

        Raises:
            ValueError: If ``confidence`` is outside (0, 1).
        """
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
        z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
        half = z * se if math.isfinite(se) else math.nan
        return cls(value, value - half, value + half, "normal", se, n, confidence)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Estimate:
        """Read back `to_dict`'s values (None as NaN). The point estimate is `value`, or
        `mean` in a simulation report written before issue 33 (its estimates had `mean`,
        `low`, `high` and `n`, their intervals the bootstrap's)."""

        def number(key: str) -> float:
            found = data.get(key)
            return math.nan if found is None else float(found)

        value = number("value") if "value" in data else number("mean")
        method: IntervalMethod = data.get("method") or "bootstrap"
        confidence = data.get("confidence")
        return cls(
            value,
            number("low"),
            number("high"),
            method,
            number("se"),
            int(data.get("n") or 0),
            CONFIDENCE if confidence is None else float(confidence),
        )

    def text(self, digits: int = 4, *, signed: bool = False) -> str:
        """`0.4120 [0.4011, 0.4229]` (with `signed`, `+0.0114 [+0.0052, +0.0176]`): the one
        way both loops print an estimate with its interval."""
        spec = f"{'+' if signed else ''}.{digits}f"
        return f"{self.value:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"

    @property
    def has_interval(self) -> bool:
        """Both ends of the interval are numbers."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    def to_dict(self) -> dict[str, float | int | str | None]:
        """JSON-ready values (NaN and infinities as None)."""
        return {
            "value": json_number(self.value),
            "low": json_number(self.low),
            "high": json_number(self.high),
            "method": self.method,
            "se": json_number(self.se),
            "n": self.n,
            "confidence": self.confidence,
        }
