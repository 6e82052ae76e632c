"""Under `--structured auto`, the path every cell of a model takes: chosen once, by counts.

A free answer is cheap when it parses and wasted when it does not: the cell then pays for a
schema-constrained answer as well, of the tips the free answer lacked (`_answer.py`). So each
model takes one of two paths, for all its cells: `free-first` (ask freely, and with the
schema only for the tips the free answer does not hold) or `schema` (ask with the schema at
once). The choice weighs tokens, never time, so the same evidence gives the same path
however loaded the machine is.

Cost model, in free answer tokens (a constrained token costs `w` of them: the grammar is
checked on every sampled token; `Backend.constrained_token_cost`, 1.25 embedded, 1.65 on
servers). Over the evidence — `n` free answers, `T_f` tokens in all, which held `h` answers'
worth of tips (a usable one counts 1, one that held k of `n_tips` tips k/`n_tips`), and
constrained answers of `s̄` tokens on average, their length taken as proportional to the tips
they are asked for — a cell costs

    schema:      w·s̄
    free-first:  T_f / n  +  (1 − h / n) · w·s̄

so free first is cheaper exactly when `T_f < h · w·s̄`: the free answers cost fewer tokens
than the constrained tips theirs save. The rule asks for a margin of half a constrained
answer, `T_f + s̄/2 < h · w·s̄` (as if one more free answer had failed, at half a constrained
answer's length): a model whose few probed answers happened to parse is not sent freely
first on that alone, since a wrongly chosen free-first path can cost several times the
schema's (free answers that fail run on), while a wrongly chosen schema path costs at most
`w`.

The evidence comes from a probe of a few of the grid's own requests, whose answers its
cells keep (`collect/_probe.py`), remembered in `TIPBENCH_HOME`; an experiment keeps the
path its first collect recorded (`tracking/_paths.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from tipbench.backends import Constraint, constraints_for
from tipbench.tracking import PATH_NAMES, ModelPath

FREE_FIRST: tuple[Constraint, ...] = constraints_for("auto")  # ("none", "schema")
SCHEMA_FIRST: tuple[Constraint, ...] = ("schema",)

#: Where a choice came from: a probe (asked now, or every answer remembered from an earlier
#: probe), tipbench itself (a model file it knows, `_known_paths.py`), the experiment's
#: record of an earlier collect, or its earlier cells.
Source = Literal["probe", "remembered", "shipped", "experiment", "cells"]


@dataclass(frozen=True)
class Evidence:
    """What the probe's answers showed: free answers and constrained ones, counted."""

    free_answers: int = 0
    usable: int = 0  # free answers that held n_tips tips
    free_tokens: int = 0
    schema_answers: int = 0
    schema_tokens: int = 0
    kept: float = 0.0  # the tips the other free answers held, in answers (k / n_tips each)

    def with_free(self, tokens: int, tips: int, n_tips: int) -> Evidence:
        """With a free answer of `tokens` that held `tips` of `n_tips` tips."""
        usable = tips >= n_tips
        return replace(
            self,
            free_answers=self.free_answers + 1,
            usable=self.usable + usable,
            free_tokens=self.free_tokens + tokens,
            kept=self.kept + (0.0 if usable else tips / n_tips),
        )

    def with_schema(self, tokens: int) -> Evidence:
        return replace(
            self,
            schema_answers=self.schema_answers + 1,
            schema_tokens=self.schema_tokens + tokens,
        )

    @property
    def held(self) -> float:
        """The tips the free answers held, in whole answers: what they save of the schema."""
        return self.usable + self.kept

    @property
    def mean_schema(self) -> float | None:
        """The mean constrained answer's tokens (None before any)."""
        return self.schema_tokens / self.schema_answers if self.schema_answers else None

    def decide(self, cost: float) -> ModelPath:
        """The cheaper path by the cost model, a constrained token costing `cost`.

        Raises:
            ValueError: free answers with tips, but no constrained answer to weigh them by.
        """
        if not self.held:
            return "schema"
        schema = self.mean_schema
        if schema is None:
            raise ValueError("free answers' tips are weighed by a constrained answer's tokens")
        return "free-first" if self.free_tokens + schema / 2 < self._saved(cost) else "schema"

    def close(self, cost: float) -> bool:
        """Whether free first is cheaper by the counts but not by the rule's margin: more
        evidence could settle it either way."""
        schema = self.mean_schema
        if not self.held or schema is None:
            return False
        return self.free_tokens < self._saved(cost) <= self.free_tokens + schema / 2

    def _saved(self, cost: float) -> float:
        """The constrained tokens the free answers' tips replace, in free ones."""
        return self.held * cost * (self.mean_schema or 0.0)

    def settled(self, remaining: int, cost: float, max_tokens: int) -> bool:
        """Whether `schema` wins whatever `remaining` more free answers show: even if every
        one were usable and took no token at all. Before any constrained answer, its length
        is bounded by the token budget."""
        best = (self.held + remaining) * cost - 0.5  # the margin, in constrained answers
        schema = self.mean_schema if self.mean_schema is not None else float(max_tokens)
        return self.free_tokens >= best * schema


@dataclass(frozen=True)
class PathChoice:
    """A model's path, with the evidence it rests on."""

    path: ModelPath
    source: Source
    evidence: Evidence = Evidence()
    cost: float = 1.0  # what a constrained token counted for, in free ones
    asked: int = 0  # requests the probe made now (remembered answers are not asked again)
    error: str | None = None  # why the probe could not finish (its path is then `schema`)

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """What every cell of the model tries, in order."""
        return FREE_FIRST if self.path == "free-first" else SCHEMA_FIRST

    def describe(self) -> str:
        """One line: the path and why, e.g. for the collect's report."""
        name = PATH_NAMES[self.path]
        if self.source == "experiment":
            return f"{name} (as recorded by the experiment's first collect of it)"
        if self.source == "cells":
            return f"{name} (as the experiment's earlier cells of it were asked)"
        e = self.evidence
        weighed = (
            f"; constrained answers {e.mean_schema:.0f} tokens, ×{self.cost:g}"
            if e.mean_schema is not None
            else ""
        )
        known = {"remembered": "remembered", "shipped": "shipped with tipbench for this file"}
        where = known.get(self.source, f"{self.asked} requests now")
        if self.error:
            where += f"; {self.error}"
        kept = f", the others {e.kept:.2g} answers' worth of tips" if e.kept else ""
        return (
            f"{name} (probe, {where}: {e.usable} of {e.free_answers} free answers usable"
            f"{kept}, {e.free_tokens} tokens{weighed})"
        )

    def record(self) -> dict[str, Any]:
        """What the parent run's `generation_paths` tag holds for the model."""
        e = self.evidence
        return {
            "path": self.path,
            "source": self.source,
            "constrained_token_cost": self.cost,
            "free_answers": e.free_answers,
            "usable": e.usable,
            "free_tokens": e.free_tokens,
            "schema_answers": e.schema_answers,
            "schema_tokens": e.schema_tokens,
            "kept": round(e.kept, 4),
        }

    @classmethod
    def recorded(cls, record: dict[str, Any]) -> PathChoice:
        """The choice an earlier collect recorded, taken up by this one."""
        counts = ("free_answers", "usable", "free_tokens", "schema_answers", "schema_tokens")
        evidence = Evidence(
            **{k: int(record.get(k, 0)) for k in counts}, kept=float(record.get("kept", 0.0))
        )
        cost = float(record.get("constrained_token_cost", 1.0))
        return cls(record["path"], "experiment", evidence, cost)
