"""The lineage as people read it: every version of an optimization as a tree, from the start.

One row per version, parents before children: its mean training score and on how many
training scenarios it was scored, and where it stands. A proposal scored on a minibatch only
and not better there than its parent was `rejected`; one that did better joined GEPA's
`pool` (scored on every training scenario), and `front` names the training scenarios it is
best on. Each proposal carries its `diff`: the part it rewrote, as a unified diff from its
parent's. The CLI prints the rows, the admin panel draws them, `lineage.json` keeps them
(with the skipped proposals, counted per reason).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any, Literal

from tipbench.optimize._lineage import Skipped, skipped_by_reason
from tipbench.optimize._summary import IterationSummary
from tipbench.suite import Component, PromptVersion

Standing = Literal["start", "pool", "rejected"]


@dataclass(frozen=True)
class LineageRow:
    """One version of an optimization, where it stands in the tree and on the scores."""

    version: str
    parent: str | None
    depth: int  # 0: the start
    iteration: int  # the iteration that proposed it (0: the start)
    rewritten: str  # the part the reflection rewrote ("" for the start)
    mean: float | None  # mean training score over the scenarios it was scored on
    scored: int  # training scenarios it was scored on
    standing: Standing
    front: tuple[str, ...]  # the training scenarios it is best on
    shortlisted: bool
    reasons: str
    diff: str = ""  # the rewritten part, as a unified diff from the parent's ("": the start)

    def describe(self) -> str:
        """`v1-gepa-1a2b3c4d  12.40 on 2  pool, best on a, b  [shortlist]`."""
        mean = "–" if self.mean is None else f"{self.mean:.2f}"
        where = f", best on {', '.join(self.front)}" if self.front else ""
        mark = "  [shortlist]" if self.shortlisted else ""
        indent = "  " * self.depth
        return f"{indent}{self.version}  {mean} on {self.scored}  {self.standing}{where}{mark}"


def proposal_diff(parent: PromptVersion, prompt: PromptVersion, component: Component) -> str:
    """The `component` template of `prompt` as a unified diff from `parent`'s."""
    lines = difflib.unified_diff(
        parent.template(component).splitlines(),
        prompt.template(component).splitlines(),
        f"{parent.version} ({component})",
        f"{prompt.version} ({component})",
        lineterm="",
    )
    return "\n".join(lines)


def lineage_rows(
    start: PromptVersion,
    proposals: Sequence[PromptVersion],
    summary: IterationSummary,
    shortlist: Sequence[str],
) -> list[LineageRow]:
    """The versions as a tree (depth-first from the start, children in proposal order)."""
    known: Mapping[str, PromptVersion] = {start.version: start} | {
        prompt.version: prompt for prompt in proposals
    }
    pool = {program.version: program for program in summary.programs}
    front: dict[str, list[str]] = {}
    for scenario, versions in summary.front.items():
        for version in versions:
            front.setdefault(version, []).append(scenario)
    children: dict[str, list[PromptVersion]] = {}
    for prompt in proposals:
        if prompt.proposal is not None:
            children.setdefault(prompt.proposal.parent, []).append(prompt)
    rows: list[LineageRow] = []

    def visit(version: str, parent: str | None, depth: int, prompt: PromptVersion | None) -> None:
        proposal = prompt.proposal if prompt is not None else None
        scores = (
            pool[version].scores
            if version in pool
            else (proposal.training_scores if proposal else {})
        )
        rows.append(
            LineageRow(
                version,
                parent,
                depth,
                proposal.iteration if proposal else 0,
                proposal.component if proposal else "",
                fmean(scores.values()) if scores else None,
                len(scores),
                "start" if parent is None else "pool" if version in pool else "rejected",
                tuple(front.get(version, [])),
                version in shortlist,
                proposal.reasons if proposal else "",
                _diff_from_parent(prompt, known),
            )
        )
        for child in children.get(version, []):
            if child.version not in {row.version for row in rows}:
                visit(child.version, version, depth + 1, child)

    visit(start.version, None, 0, None)
    return rows


def _diff_from_parent(prompt: PromptVersion | None, known: Mapping[str, PromptVersion]) -> str:
    proposal = prompt.proposal if prompt is not None else None
    if prompt is None or proposal is None or proposal.parent not in known:
        return ""
    return proposal_diff(known[proposal.parent], prompt, proposal.component)


def lineage_document(
    start: PromptVersion,
    proposals: Sequence[PromptVersion],
    skipped: Sequence[Skipped],
    summary: IterationSummary,
    shortlist: Sequence[str],
) -> str:
    """`lineage.json`: the rows, the skipped proposals, and how far the optimization is."""
    document: dict[str, Any] = {
        "start": start.version,
        "iteration": summary.iteration,
        "evaluations": summary.evaluations,
        "best": {"version": summary.best.version, "mean": summary.best.mean},
        "rows": [asdict(row) for row in lineage_rows(start, proposals, summary, shortlist)],
        "skipped": [asdict(item) for item in skipped],
        "skipped_by_reason": skipped_by_reason(skipped),
    }
    return json.dumps(document, indent=2, ensure_ascii=False)
