"""The lineage of one optimization: the version it started from and every proposal since.

Each usable proposal becomes a real prompt version at once, before it is evaluated: a file
of the suite folder (`prompts/ROOT-gepa-HASH.yaml`, with its parent, the optimization and
iteration, the rewritten part and the reflection's reasons) and a version of the Prompt
Registry's prompt with the same lineage as tags. Its training scores are added to both as
its evaluations come in. A reflection answer that is no usable template (`optimize._checks`:
no fenced template, no change, a placeholder dropped, a training scenario's text copied) is
a skipped proposal: counted by its reason, kept with its problem, never written.

The suite folder is the lineage's memory: a resumed optimization reads its proposals back
from the files that name it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tipbench.optimize._checks import Problem, SkipReason
from tipbench.optimize._feedback import ScenarioFeedback
from tipbench.optimize._naming import proposal_name
from tipbench.suite import (
    COMPONENTS,
    Component,
    PromptVersion,
    Proposal,
    load_suite,
    write_prompt_version,
)

#: A GEPA candidate: the text of each part of a prompt version.
Candidate = dict[str, str]


@dataclass(frozen=True)
class Skipped:
    """A proposal the reflection model made unusable: when, from what, and why."""

    iteration: int
    parent: str
    component: Component
    problem: str
    reason: SkipReason | None = None  # None: skipped before reasons were kept

    def describe(self) -> str:
        return (
            f"iteration {self.iteration}: skipped a new {self.component} template for "
            f"{self.parent}: {self.problem}"
        )


def candidate_of(prompt: PromptVersion) -> Candidate:
    """A prompt version as GEPA's candidate: `{"system": ..., "user": ...}`."""
    return {part: prompt.template(part) for part in COMPONENTS}


def _key(candidate: Candidate) -> tuple[str, ...]:
    return tuple(candidate[part] for part in COMPONENTS)


class Lineage:
    """The versions of one optimization, by template; writes each proposal where it belongs.

    `register` (the Prompt Registry's write, given the proposal and its parent) and
    `tag_scores` (its training scores) are called for every proposal written.
    """

    def __init__(
        self,
        folder: Path,
        optimization: str,
        start: PromptVersion,
        register: Callable[[PromptVersion, PromptVersion], None] = lambda p, q: None,
        tag_scores: Callable[[PromptVersion], None] = lambda p: None,
    ) -> None:
        self.folder = folder
        self.optimization = optimization
        self.start = start
        self.register = register
        self.tag_scores = tag_scores
        self.iteration = 0  # the iteration proposing now (GEPA's, from 1)
        self.skipped: list[Skipped] = []
        self._versions: dict[tuple[str, ...], PromptVersion] = {_key(candidate_of(start)): start}
        for prompt in load_suite(folder).prompts.values():
            if prompt.proposal is not None and prompt.proposal.optimization == optimization:
                self._versions.setdefault(_key(candidate_of(prompt)), prompt)

    @property
    def proposals(self) -> list[PromptVersion]:
        """The proposals written so far, in the order they were proposed."""
        found = [p for p in self._versions.values() if p.proposal is not None]
        return sorted(found, key=lambda p: p.proposal.iteration if p.proposal else 0)

    def version_of(self, candidate: Candidate) -> PromptVersion:
        """The version whose templates `candidate` holds.

        Raises:
            KeyError: no version of this optimization has them.
        """
        return self._versions[_key(candidate)]

    def propose(
        self, parent: Candidate, component: Component, text: str, reasons: str
    ) -> PromptVersion:
        """Write (once) the version that rewrites `component` of `parent` as `text`."""
        before = self.version_of(parent)
        candidate = {**parent, component: text}
        if (known := self._versions.get(_key(candidate))) is not None:
            return known
        name = proposal_name(self.start.version, candidate["system"], candidate["user"])
        proposal = Proposal(before.version, self.optimization, self.iteration, component, reasons)
        prompt = PromptVersion(
            name,
            f"Proposed by tipbench optimize from {before.version} (iteration "
            f"{self.iteration}: a new {component} template).",
            candidate["system"],
            candidate["user"],
            proposal,
        )
        write_prompt_version(self.folder, prompt, _HEADER)
        self.register(prompt, before)
        self._versions[_key(candidate)] = prompt
        return prompt

    def skip(self, parent: Candidate, component: Component, problem: Problem) -> Skipped:
        version = self.version_of(parent).version
        skipped = Skipped(self.iteration, version, component, problem.detail, problem.reason)
        self.skipped.append(skipped)
        return skipped

    def scored(self, prompt: PromptVersion, results: Sequence[ScenarioFeedback]) -> None:
        """Add a proposal's training scores on these scenarios to its file and registry."""
        proposal = prompt.proposal
        if proposal is None:
            return  # the version the optimization started from is the user's: left alone
        scores = {**proposal.training_scores, **{r.scenario_id: r.score for r in results}}
        if scores == proposal.training_scores:
            return
        updated = replace(prompt, proposal=replace(proposal, training_scores=scores))
        write_prompt_version(self.folder, updated, _HEADER)
        self.tag_scores(updated)
        self._versions[_key(candidate_of(updated))] = updated

    def state(self) -> dict[str, Any]:
        """What GEPA keeps of the lineage across a resume (the files keep the rest)."""
        return {"skipped": [asdict(s) for s in self.skipped]}

    def restore(self, state: dict[str, Any]) -> None:
        self.skipped = [_skipped(item) for item in state.get("skipped", [])]


def skipped_by_reason(skipped: Sequence[Skipped]) -> dict[str, int]:
    """How many proposals were skipped for each reason, most frequent first."""
    counts: dict[str, int] = {}
    for item in skipped:
        reason = str(item.reason or "earlier check")
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda pair: -pair[1]))


def _skipped(item: dict[str, Any]) -> Skipped:
    reason = item.get("reason")
    return Skipped(**(item | {"reason": SkipReason(reason) if reason else None}))


_HEADER = """Proposed by `tipbench optimize` (GEPA reflective prompt evolution).
Scored on training scenarios only: judge it on held-out scenarios before promoting it."""
