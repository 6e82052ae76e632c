"""tipbench's GEPA adapter: how GEPA evaluates a prompt and reads why it scored as it did.

GEPA (`gepa.core.adapter.GEPAAdapter`) asks an adapter for three things, each answered here
with tipbench's own parts:

- `evaluate`: a candidate (a prompt version's system and user templates) on a batch of
  training scenarios = collect + the automatic judge (`Evaluator`), one cell run each;
- `make_reflective_dataset`: the judge's per-criterion scores, the rules' flags and any
  human scores and comments of those cells (`optimize._feedback`);
- `propose_new_texts` (`Proposer`): the reflection model rewrites one part through
  tipbench's backends (`Reflector`); an answer that passes `optimize._checks` becomes a
  prompt version (`Lineage.propose`), any other is a skipped proposal with its reason (GEPA
  then proposes nothing this iteration).

`get_adapter_state`/`set_adapter_state` keep the skipped proposals in GEPA's saved state, so
a resumed optimization counts them once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gepa.core.adapter import EvaluationBatch, ProposalFn

from tipbench.optimize._evaluation import Evaluator
from tipbench.optimize._feedback import ScenarioFeedback, reflective_records
from tipbench.optimize._lineage import Candidate, Lineage, Skipped
from tipbench.optimize._reflect import Reflection, Reflector
from tipbench.suite import COMPONENTS, Component, PromptVersion, Scenario


@dataclass
class Proposer:
    """GEPA's `ProposalFn`: one new template per part asked for, none for a part whose
    reflection answer is unusable (counted as a skipped proposal)."""

    reflector: Reflector
    lineage: Lineage
    on_proposal: Callable[[PromptVersion], None] = lambda prompt: None
    on_skip: Callable[[Skipped], None] = lambda skipped: None

    def __call__(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:
        proposed: dict[str, str] = {}
        for name in components_to_update:
            component = _component(name)
            reflection = self.reflector.reflect(
                component,
                candidate[component],
                reflective_dataset.get(component, []),
                self.lineage.iteration,
            )
            if self._accept(candidate, reflection):
                proposed[component] = reflection.text
        return proposed

    def _accept(self, parent: Candidate, reflection: Reflection) -> bool:
        if reflection.problem is not None:
            self.on_skip(self.lineage.skip(parent, reflection.component, reflection.problem))
            return False
        prompt = self.lineage.propose(
            parent, reflection.component, reflection.text, reflection.reasons
        )
        self.on_proposal(prompt)
        return True


@dataclass
class TipbenchAdapter:
    """A `GEPAAdapter[Scenario, ScenarioFeedback, str]`: outputs are `version|scenario`."""

    evaluator: Evaluator
    lineage: Lineage
    propose_new_texts: ProposalFn | None

    def evaluate(
        self, batch: list[Scenario], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[ScenarioFeedback, str]:
        prompt = self.lineage.version_of(candidate)
        results = self.evaluator.evaluate(prompt, [s.id for s in batch], capture_traces)
        self.lineage.scored(prompt, results)
        return EvaluationBatch(
            outputs=[f"{prompt.version}|{r.scenario_id}" for r in results],
            scores=[r.score for r in results],
            trajectories=results if capture_traces else None,
        )

    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: EvaluationBatch[ScenarioFeedback, str],
        components_to_update: list[str],
    ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        records = reflective_records(eval_batch.trajectories or [])
        return {component: records for component in components_to_update}

    def get_adapter_state(self) -> dict[str, Any]:
        return self.lineage.state()

    def set_adapter_state(self, state: dict[str, Any]) -> None:
        self.lineage.restore(state)


def _component(name: str) -> Component:
    for component in COMPONENTS:
        if component == name:
            return component
    raise ValueError(f"not a part of a prompt version: {name!r}")
