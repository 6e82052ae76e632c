"""What the reflection model reads about one evaluation: the tips, the judge's per-criterion
answers, the rules' flags and, where a person judged the same cell, their scores and comments.

GEPA calls this a trajectory (what the adapter captured while evaluating) and turns the
trajectories into a "reflective dataset" (`records`): one record per training scenario of the
minibatch, lowest-scoring first, each tip with every score it got. Only the scenario's
context and the candidates' own texts are shown: the reflection model never sees a held-out
scenario, as the optimizer never evaluates one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tipbench.suite import COMPOSITE_RANGE
from tipbench.tracking import RecordedCandidate, Scores

#: Tips shown per scenario (the lowest-scoring first), to keep the reflection prompt short.
MAX_TIPS_SHOWN = 4


@dataclass(frozen=True)
class TipFeedback:
    """One candidate tip and every score it got."""

    id: str
    text: str
    format_ok: int  # the rules' flags (collect computed them; only a human overrides them)
    overlong: int
    judge: Scores | None  # the automatic judge's scores (with the rules' flags)
    human: Scores | None = None
    comment: str = ""  # what a person wrote about it in MLflow

    @property
    def composite(self) -> float:
        scores = self.human or self.judge
        return scores.composite if scores is not None else float(COMPOSITE_RANGE[0])

    def line(self) -> str:
        """`"Block 25 minutes…" — judge: relevance 4, …; rules: format_ok 1, overlong 0`."""
        parts = [f'"{self.text}"']
        if self.judge is not None:
            judge = self.judge
            parts.append(
                f"judge: relevance {judge.relevance}, actionability {judge.actionability}, "
                f"tone {judge.tone}"
            )
        parts.append(f"rules: format_ok {self.format_ok}, overlong {self.overlong}")
        if self.human is not None:
            human = self.human
            parts.append(
                f"a person: relevance {human.relevance}, actionability {human.actionability}, "
                f"tone {human.tone}"
            )
        if self.comment:
            parts.append(f"a person's comment: {self.comment}")
        return " — ".join(parts)


@dataclass(frozen=True)
class ScenarioFeedback:
    """One evaluation (a prompt version on one training scenario): its score and why."""

    scenario_id: str
    score: float  # the judge's mean composite over the cell's tips (every version alike)
    context: str  # who the tips were for, when, and their tasks
    tips: tuple[TipFeedback, ...] = ()
    error: str | None = None  # why the cell has no usable tips or no scores

    def record(self) -> dict[str, Any]:
        """The record the reflection model reads (GEPA renders it as Markdown)."""
        low, high = COMPOSITE_RANGE
        if self.error is not None:
            feedback = f"Failed: {self.error}. Score {low} of {high}."
        else:
            feedback = f"Mean score {self.score:.1f} of {high} (composite of the scores)."
        shown = sorted(self.tips, key=lambda tip: tip.composite)[:MAX_TIPS_SHOWN]
        record: dict[str, Any] = {"Person and time": self.context}
        if shown:
            record["Tips and their scores"] = [tip.line() for tip in shown]
        record["Feedback"] = feedback
        return record


def scenario_context(scenario: Mapping[str, Any]) -> str:
    """`Maya (Second-year biology …), Tuesday morning 07:30; tasks: a; b` from a candidates
    file's scenario."""
    tasks = "; ".join(str(task) for task in scenario.get("tasks", []))
    return (
        f"{scenario.get('persona_name', '')} ({scenario.get('persona_description', '')}), "
        f"{scenario.get('time_slot_label', '')} {scenario.get('local_time', '')}; "
        f"tasks: {tasks}"
    )


def tips_feedback(
    candidates: Sequence[RecordedCandidate],
    judge: Mapping[str, Scores],
    human: Mapping[str, Scores],
    comments: Mapping[str, str],
) -> tuple[TipFeedback, ...]:
    """Each candidate with the judge's scores, the rules' flags and a person's, if any."""
    return tuple(
        TipFeedback(
            c.id,
            c.text,
            c.format_ok,
            c.overlong,
            judge.get(c.id),
            human.get(c.id),
            comments.get(c.id, ""),
        )
        for c in candidates
    )


def reflective_records(feedback: Sequence[ScenarioFeedback]) -> list[dict[str, Any]]:
    """The reflective dataset of a minibatch: its scenarios' records, lowest score first."""
    return [item.record() for item in sorted(feedback, key=lambda item: item.score)]
