"""Cells: one (model, prompt version, scenario) each, planned in model-major order."""

from __future__ import annotations

from dataclasses import dataclass, field

from tipbench.backends import (
    DEFAULT_STRUCTURED,
    Constraint,
    GenerationRequest,
    ModelSpec,
    StructuredMode,
    constraints_for,
)
from tipbench.collect._parse import AnswerDone, TipWords, bundled_tip_words, tips_schema
from tipbench.suite import PromptVersion, Scenario, content_hash


@dataclass(frozen=True)
class Cell:
    """One cell of the grid and everything that defines its output."""

    model: ModelSpec
    model_identity: str
    prompt: PromptVersion
    scenario: Scenario
    n_tips: int
    temperature: float
    seed: int
    max_tokens: int
    suite: str
    structured: StructuredMode = DEFAULT_STRUCTURED
    #: The words a constrained tip may have: the suite's rubric's (its label pins them).
    words: TipWords = field(default_factory=bundled_tip_words)

    @property
    def name(self) -> str:
        """The run name: `model|prompt_version|scenario_id`."""
        return f"{self.model}|{self.prompt.version}|{self.scenario.id}"

    @property
    def key(self) -> str:
        """A hash of everything that defines the cell: equal keys mean the same cell.

        Cells collected with `structured="schema"` (every request constrained, as before
        the modes existed) keep the keys they always had; any other mode is part of the key.
        """
        fields: dict[str, object] = (
            {} if self.structured == "schema" else {"structured": self.structured}
        )
        return content_hash(
            fields
            | {
                "model": str(self.model),
                "model_identity": self.model_identity,
                "prompt_version": self.prompt.version,
                "prompt_hash": self.prompt.template_hash,
                "scenario_id": self.scenario.id,
                "scenario_hash": self.scenario.content_hash,
                "n_tips": self.n_tips,
                "temperature": self.temperature,
                "seed": self.seed,
                "max_tokens": self.max_tokens,
                "suite": self.suite,
            }
        )

    def request(
        self, attempt: int = 1, constraint: Constraint | None = None, tips: int | None = None
    ) -> GenerationRequest:
        """The cell's request, constrained as asked [default: its mode's first constraint].

        A retry after unusable output moves the seed on by one. A free request stops as
        soon as its answer holds `n_tips` complete tips. A schema request for `tips` tips
        (the rest of a free answer short of them) asks the same messages with that many.
        """
        constraint = constraint or constraints_for(self.structured)[0]
        schema = tips_schema(tips or self.n_tips, self.words) if constraint == "schema" else None
        return GenerationRequest(
            messages=self.prompt.render(self.scenario, self.n_tips),
            temperature=self.temperature,
            seed=self.seed + attempt - 1,
            max_tokens=self.max_tokens,
            json_schema=schema,
            json_object=constraint == "json",
            complete=AnswerDone(self.n_tips) if constraint == "none" else None,
        )


def plan_grid(
    models: list[tuple[ModelSpec, str]],
    prompts: list[PromptVersion],
    scenarios: tuple[Scenario, ...],
    *,
    n_tips: int,
    temperature: float,
    seed: int,
    max_tokens: int,
    suite: str,
    structured: StructuredMode = DEFAULT_STRUCTURED,
    words: TipWords | None = None,
) -> list[Cell]:
    """Every cell, model-major (so each model is loaded once), then prompt, then scenario;
    constrained tips of `words` (the suite's rubric's; by default the bundled one's)."""
    words = words or bundled_tip_words()
    return [
        Cell(
            model,
            identity,
            prompt,
            scenario,
            n_tips,
            temperature,
            seed,
            max_tokens,
            suite,
            structured,
            words,
        )
        for model, identity in models
        for prompt in prompts
        for scenario in scenarios
    ]
