"""The probe: a few of the grid's own requests, to choose a model's path.

Before a model's cells, under `--structured auto`, the probe asks it a few of the grid's
questions: item `j` of a prompt version is that prompt on the suite's `j`-th scenario with
the collect's seed, i.e. that cell's first request. Items take the grid's prompt versions in
turn, at least `PROBE_ANSWERS` items and one per prompt version (the README's grid: one per
prompt, each on the first scenario). The items do not depend on `--n-scenarios`: a 9-cell and
a 24-cell grid of the same prompts ask the same probe.

Each item is asked freely, as a cell's free request is (streamed, stopped once it holds
`n_tips` tips). One constrained answer weighs what the free answers' tips save
(`Evidence.decide`): that of the first item whose free answer failed, which its cell is
asked on either path (or takes instead of the rest of its tips), or, when every free answer
parsed, that of the first. The probe stops as soon as `schema` wins
whatever the remaining items could show (`Evidence.settled`): a model whose first free
answers fail or run on costs one or two free requests. When its items leave free first
cheaper by the counts but not by the rule's margin (`Evidence.close`), it asks the grid's
next items, at most `PROBE_MORE` times as many, until one path wins by the margin.

The answers asked now are handed to the cells that ask the same requests (`Probe.answers`),
so that the probe costs only what the chosen path would not have asked: on the schema path
its free answers, on the free-first path nothing, or the weighing constrained answer when
every free answer parsed.

Every answer is remembered in `TIPBENCH_HOME` (`_path_memory.py`): a later collect of the
model with the same settings and prompt versions chooses from memory, asking nothing. What it
asks is a function of the answers alone, and the answers of the seeds, so the choice is the
same on an idle or a loaded machine, the first time or from memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tipbench._errors import BackendError
from tipbench.backends import Backend, Constraint, RequestRecord, RetryPolicy, call_with_retries
from tipbench.backends import generate_structured as ask_backend
from tipbench.collect._answer import cut_off
from tipbench.collect._cache import request_key
from tipbench.collect._grid import Cell
from tipbench.collect._parse import parse_tips
from tipbench.collect._path_choice import Evidence, PathChoice, Source
from tipbench.collect._path_memory import PathMemory, ProbeAnswer
from tipbench.suite import Scenario

#: Free answers the probe asks for at least (and one per prompt version).
PROBE_ANSWERS = 3
#: How many times as many it asks at most, while the paths lie within the rule's margin.
PROBE_MORE = 2


def probe_cells(cells: Sequence[Cell], scenarios: Sequence[Scenario], times: int = 1) -> list[Cell]:
    """The probe's items for a model's grid `cells` (all of them, done or not), in order,
    on the suite's `scenarios`: each the first request of a cell, of the grid or not; `times`
    as many as it asks at least."""
    prompts = list({cell.prompt.version: cell.prompt for cell in cells}.values())
    items = []
    for number in range(times * max(PROBE_ANSWERS, len(prompts))):
        turn = number // len(prompts)
        items.append(
            replace(
                cells[0],
                prompt=prompts[number % len(prompts)],
                scenario=scenarios[turn % len(scenarios)],
            )
        )
    return items


class _Unknown(Exception):
    """An answer the probe needs is not remembered, and it may not ask."""


@dataclass
class Probe:
    """Chooses a model's path from its probe's answers, remembered or asked now."""

    memory: PathMemory
    retry: RetryPolicy
    backend: Backend
    ask: bool = True  # False: from memory only (the model need not be loaded)
    asked: int = 0
    #: The answers asked now, by request key: the cells asking the same requests take them.
    answers: dict[str, RequestRecord] = field(default_factory=dict)

    def choose(self, cells: Sequence[Cell], scenarios: Sequence[Scenario]) -> PathChoice | None:
        """The path for the model of `cells` (probed on the suite's `scenarios`); None when an
        answer it needs is not remembered and the probe may not ask."""
        items = probe_cells(cells, scenarios, PROBE_MORE)
        least = len(items) // PROBE_MORE
        cost = self.backend.constrained_token_cost
        evidence = Evidence()
        usable: Cell | None = None  # the first item whose free answer was usable
        try:
            for number, item in enumerate(items):
                if number < least and evidence.settled(least - number, cost, item.max_tokens):
                    break
                if number >= least:  # more only while the paths lie within the margin
                    if usable is not None and not evidence.schema_answers:
                        evidence = self._weighed(usable, evidence)
                    if not evidence.close(cost):
                        break
                answer = self._answer(item, need_schema=False)
                if answer is None:
                    return None
                tips = answer.found(item.n_tips)
                evidence = evidence.with_free(answer.free_tokens, tips, item.n_tips)
                if answer.usable:
                    usable = usable or item
                elif not evidence.schema_answers:  # its cell is asked so on either path
                    evidence = self._weighed(item, evidence)
            if usable is not None and not evidence.schema_answers:  # every free answer parsed
                evidence = self._weighed(usable, evidence)
        except _Unknown:
            return None
        except BackendError as exc:  # the cells will meet it too: take the path that needs no retry
            return PathChoice("schema", "probe", evidence, cost, self.asked, f"probe failed: {exc}")
        source: Source = "probe" if self.asked else "remembered"
        return PathChoice(evidence.decide(cost), source, evidence, cost, self.asked)

    def _weighed(self, item: Cell, evidence: Evidence) -> Evidence:
        """`evidence` with `item`'s constrained answer, that weighs what usable free answers
        save. Raises `_Unknown` when it is not remembered and the probe may not ask."""
        answer = self._answer(item, need_schema=True)
        if answer is None or answer.schema_tokens is None:
            raise _Unknown
        return evidence.with_schema(answer.schema_tokens)

    def _answer(self, item: Cell, *, need_schema: bool) -> ProbeAnswer | None:
        key = request_key(item.model_identity, item.request(constraint="none"))
        known = self.memory.get(key)
        if known is not None and (known.schema_tokens is not None or not need_schema):
            return known
        if not self.ask:
            return None
        if known is None:
            tokens, tips = self._ask(item, "none")
            known = ProbeAnswer(tokens, tips >= item.n_tips, tips=tips)
        else:
            known = replace(known, schema_tokens=self._ask(item, "schema")[0])
        self.memory.put(key, known)
        return known

    def _ask(self, item: Cell, constraint: Constraint) -> tuple[int, int]:
        """Ask one probe request (retrying transient failures): its tokens, and the tips
        it held. The answer is kept in `answers` for the cell that asks the same request."""
        backend = self.backend

        def attempt(_: int) -> tuple[int, int]:
            self.asked += 1
            records: list[RequestRecord] = []
            answer = ask_backend(
                backend,
                "auto",
                lambda c: item.request(constraint=c),
                lambda text: len(parse_tips(text, item.n_tips).tips),
                lambda found: found >= item.n_tips,
                (constraint,),
                records,
            )
            self.answers[request_key(item.model_identity, records[0].request)] = records[0]
            generation = answer.generation
            whole = parse_tips(generation.text, item.n_tips, cut_off(generation, item))
            return generation.completion_tokens, len(whole.tips)

        return call_with_retries(attempt, self.retry)[0]
