"""A decision log is checked before anything is estimated from it.

Every estimator divides by the logged probabilities and averages the rewards, so a number
out of its range gives a figure that looks like any other (a propensity of 0 gives NaN
marked "estimated"; rewards of 5 give an IPS of 2.33). Each row of the log must hold:

- `decision_id`: a non-empty string, once in the log (`_duplicates`: a decision counted
  twice narrows every interval);
- `candidates`: a non-empty list of distinct tips, each with a `probability` in [0, 1]; the
  probabilities sum to 1 within `PROBABILITY_TOLERANCE`;
- `tip_id`: one of the candidates, with probability > 0 (the propensity of the tip shown:
  in (0, 1]); `propensity`, where the row has it, the same number;
- `reward`: null (not rewarded yet) or a finite number in [0, 1] (JSON `true` and `"1"` are
  not numbers; the standard library's JSON reader turns `NaN` into a float, which is not
  finite);
- `shadows`: each with the decision's candidates (the same tips, in any order) and
  probabilities as above: a shadow scores the request the live policy decided.

`check_row` raises on the first violation with one line naming the decision and the field.
A row is read in one quick pass over its numbers (`_valid`: a log may hold millions); only a
row that fails it is gone through field by field (`_explain`) to say what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, NoReturn, TypeGuard

from tipbench._errors import ConfigError

PROBABILITY_TOLERANCE = 1e-6  # |Σ probabilities − 1| allowed; the service's are exact to 1e-15
_NUMBERS = frozenset((int, float))  # by type, not isinstance: `True` is an int to isinstance
_STRINGS = frozenset((str,))


class LogRowError(ConfigError):
    """A decision-log row breaks a rule of the log (the message names the decision and the
    field)."""


def _is_number(value: object) -> TypeGuard[float]:
    return type(value) in _NUMBERS


def _shown(value: object) -> str:
    """A value as the log holds it, for a message (`'1'` for a string, `true`, `nan`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:20])
    if value is None:
        return "null"
    return repr(value) if not isinstance(value, float) else f"{value:g}"


def decision_label(row: Mapping[str, Any], number: int, unit: str = "row") -> str:
    """How a message names a row: its decision id and its place in the log (`unit` 1-based:
    a row of a state's log, a line of a file)."""
    decision = row.get("decision_id")
    if isinstance(decision, str) and decision:
        return f"decision {decision[:40]!r} ({unit} {number:,})"
    return f"decision at {unit} {number:,}"


def _probabilities(candidates: object, field: str, where: str) -> tuple[list[str], list[float]]:
    """The tips and probabilities of a candidate list, checked."""
    if not isinstance(candidates, list) or not candidates:
        raise LogRowError(f"{where}: {field}: not a non-empty list of candidates")
    tips, probabilities = [], []
    for i, candidate in enumerate(candidates):
        here = f"{where}: {field}[{i}]"
        if not isinstance(candidate, dict) or not isinstance(candidate.get("tip_id"), str):
            raise LogRowError(f"{here}: not a candidate with a tip_id")
        p = candidate.get("probability")
        if not _is_number(p):
            raise LogRowError(f"{here}.probability: {_shown(p)} is not a number")
        if not 0.0 <= p <= 1.0:
            raise LogRowError(f"{here}.probability: {_shown(p)} is not a probability in [0, 1]")
        tips.append(candidate["tip_id"])
        probabilities.append(float(p))
    if len(set(tips)) != len(tips):
        raise LogRowError(f"{where}: {field}: a tip is listed twice")
    total = math.fsum(probabilities)
    if abs(total - 1.0) > PROBABILITY_TOLERANCE:
        raise LogRowError(
            f"{where}: {field}: the probabilities sum to {total:.6g}, not 1 "
            f"(±{PROBABILITY_TOLERANCE:g})"
        )
    return tips, probabilities


def _check_shown(
    row: Mapping[str, Any], tips: Sequence[str], p: Sequence[float], where: str
) -> None:
    shown = row.get("tip_id")
    if shown not in tips:
        raise LogRowError(f"{where}: tip_id: {_shown(shown)} is not among the candidates")
    propensity = p[tips.index(shown)]
    if propensity <= 0.0:
        raise LogRowError(
            f"{where}: candidates: the shown tip {shown!r} has probability 0: it could not "
            "have been shown"
        )
    if "propensity" not in row:
        return
    logged = row["propensity"]
    if not _is_number(logged):
        raise LogRowError(f"{where}: propensity: {_shown(logged)} is not a number")
    if not 0.0 < logged <= 1.0:
        raise LogRowError(f"{where}: propensity: {_shown(logged)} is not in (0, 1]")
    if abs(logged - propensity) > PROBABILITY_TOLERANCE:
        raise LogRowError(
            f"{where}: propensity: {_shown(logged)} is not the shown tip's probability "
            f"{propensity:g}"
        )


def _check_reward(reward: object, where: str) -> None:
    if reward is None:
        return
    if not _is_number(reward):
        raise LogRowError(f"{where}: reward: {_shown(reward)} is not a number")
    if not math.isfinite(reward):
        raise LogRowError(f"{where}: reward: {_shown(reward)} is not finite")
    if not 0.0 <= reward <= 1.0:
        raise LogRowError(f"{where}: reward: {_shown(reward)} is not in [0, 1]")


def _check_shadows(shadows: object, tips: Sequence[str], where: str) -> None:
    if shadows is None:
        return
    if not isinstance(shadows, list):
        raise LogRowError(f"{where}: shadows: not a list")
    logged = set(tips)
    for i, shadow in enumerate(shadows):
        name = shadow.get("policy") if isinstance(shadow, dict) else None
        field = f"shadows[{i}]" + (f" ({name})" if isinstance(name, str) else "")
        if not isinstance(name, str):
            raise LogRowError(f"{where}: {field}: not a shadow's decision with its policy")
        scored, _ = _probabilities(shadow.get("candidates"), f"{field}.candidates", where)
        extra, missing = set(scored) - logged, logged - set(scored)
        if extra or missing:
            what = (
                f"tips {sorted(extra)} are not among the decision's candidates"
                if extra
                else f"the decision's candidates {sorted(missing)} are missing"
            )
            raise LogRowError(f"{where}: {field}.candidates: {what}")


class CheckedRow(NamedTuple):
    """What checking a row read: the decision's candidates and each policy's probabilities
    of them (a shadow's put in the decision's order of the candidates)."""

    tips: list[str]
    probabilities: list[float]  # the deciding policy's
    shadows: list[tuple[str, list[float]]]  # (policy, its probabilities)


def _valid_probabilities(probabilities: list[Any]) -> bool:
    for p in probabilities:
        if type(p) not in _NUMBERS or not 0.0 <= p <= 1.0:  # NaN fails the range too
            return False
    return abs(math.fsum(probabilities) - 1.0) <= PROBABILITY_TOLERANCE


def _valid_candidates(candidates: object) -> tuple[list[str], list[float]] | None:
    """The tips and probabilities of a valid candidate list, else None (one quick pass)."""
    if type(candidates) is not list or not candidates:
        return None
    try:
        tips = [c["tip_id"] for c in candidates]
        probabilities = [c["probability"] for c in candidates]
    except (TypeError, KeyError):
        return None
    if not set(map(type, tips)) <= _STRINGS or len(set(tips)) != len(tips):
        return None
    return (tips, probabilities) if _valid_probabilities(probabilities) else None


def _valid_shadows(shadows: object, tips: list[str]) -> list[tuple[str, list[float]]] | None:
    if shadows is None:
        return []
    if type(shadows) is not list:
        return None
    found = []
    for shadow in shadows:
        if type(shadow) is not dict or type(shadow.get("policy")) is not str:
            return None
        candidates: Any = shadow.get("candidates")
        try:  # the usual shadow: the decision's candidates in the decision's order
            same = [c["tip_id"] for c in candidates] == tips
        except (TypeError, KeyError):
            return None
        if same:
            probabilities = [c["probability"] for c in candidates]
            if not _valid_probabilities(probabilities):
                return None
        else:  # in another order, or other candidates
            scored = _valid_candidates(candidates)
            if scored is None or set(scored[0]) != set(tips):
                return None
            by_tip = dict(zip(*scored, strict=True))
            probabilities = [by_tip[t] for t in tips]
        found.append((shadow["policy"], probabilities))
    return found


def _valid(row: Mapping[str, Any]) -> CheckedRow | None:
    """What the row holds if it keeps every rule of the module, else None (`_explain` says
    which rule it breaks)."""
    decision = row.get("decision_id")
    if type(decision) is not str or not decision:
        return None
    found = _valid_candidates(row.get("candidates"))
    if found is None:
        return None
    tips, probabilities = found
    shown = row.get("tip_id")
    if shown not in tips or not probabilities[tips.index(shown)] > 0.0:
        return None
    if "propensity" in row:
        logged = row["propensity"]
        if type(logged) not in _NUMBERS or not 0.0 < logged <= 1.0:
            return None
        if not abs(logged - probabilities[tips.index(shown)]) <= PROBABILITY_TOLERANCE:
            return None
    reward = row.get("reward")
    if reward is not None and (type(reward) not in _NUMBERS or not 0.0 <= reward <= 1.0):
        return None
    shadows = _valid_shadows(row.get("shadows"), tips)
    return None if shadows is None else CheckedRow(tips, probabilities, shadows)


def _explain(row: Mapping[str, Any], number: int, unit: str) -> NoReturn:
    """Raise the first rule the row breaks, naming the decision and the field."""
    where = decision_label(row, number, unit)
    decision = row.get("decision_id")
    if not isinstance(decision, str) or not decision:
        raise LogRowError(
            f"{where}: decision_id: {_shown(decision)} is not a decision id (without one a "
            "decision counted twice cannot be told)"
        )
    tips, probabilities = _probabilities(row.get("candidates"), "candidates", where)
    _check_shown(row, tips, probabilities, where)
    _check_reward(row.get("reward"), where)
    _check_shadows(row.get("shadows"), tips, where)
    raise LogRowError(f"{where}: not a valid decision-log row")  # pragma: no cover


def check_row(row: Mapping[str, Any], number: int, unit: str = "row") -> CheckedRow:
    """Check one row of a decision log (see the module's rules); returns what it read.

    Raises:
        LogRowError: the first rule the row breaks, naming the decision and the field.
    """
    checked = _valid(row)
    if checked is None:
        _explain(row, number, unit)
    return checked
