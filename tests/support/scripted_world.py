"""A world whose scores are known in advance, for `tipbench optimize` on the fake Ollama.

Real Ollama cannot be installed here: the models are `support.ollama_server.FakeOllama`
(checked with the official `ollama` client in `test_ollama_server.py`), three of them:

- the task model (`qwen2.5:0.5b`) writes the fake's usual tips; a prompt that says
  "Say when in the morning." ("… evening.") makes it end each tip of a morning (evening)
  scenario with "this morning" ("this evening");
- the judge (`gemma3:1b`) gives relevance 5 to a tip that says "this morning" or "this
  evening", 3 to any other, and actionability 3, tone 3: a version's score on a scenario
  is then its start's plus exactly 2 when, and only when, it says when there;
- the reflection model (`qwen2.5:3b`, 3.1 B parameters: under the size guard) answers its
  script, one answer per reflection, so every proposal is known.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from support.ollama_server import TWO_MODELS, FakeOllama, ModelEntry, answer
from tipbench.optimize import Cost, IterationSummary, OptimizeConfig, Skipped
from tipbench.suite import PromptVersion, content_hash

TASK, JUDGE, REFLECTION, TOO_LARGE = "qwen2.5:0.5b", "gemma3:1b", "qwen2.5:3b", "llama3.1:8b"
MODELS = {
    **TWO_MODELS,
    REFLECTION: ModelEntry(parameter_count=3_085_938_688, parameter_size="3.1B", family="qwen2"),
    TOO_LARGE: ModelEntry(parameter_count=8_030_261_248, parameter_size="8.0B"),
}
MORNING, EVENING = "Say when in the morning.", "Say when in the evening."
_TIP_TEXT = re.compile(r"# Candidate tip\n\n(.*?)\n\n# Flags", re.DOTALL)


def task_model(messages: list[dict[str, Any]], fmt: Any) -> str:
    """The fake's tips, each told when if the prompt asks for it on this scenario."""
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    user = str(messages[-1].get("content") or "")
    when = next(
        (f" this {slot}" for slot, ask in (("morning", MORNING), ("evening", EVENING))
         if ask in prompt and f" {slot}" in user),
        "",
    )  # fmt: skip
    return _edit_tips(answer(messages, fmt), lambda tip: tip.removesuffix(".") + when + ".")


def judge_model(messages: list[dict[str, Any]], fmt: Any) -> str:
    """Relevance 5 for a tip that says when, else 3; actionability and tone 3."""
    found = _TIP_TEXT.search(str(messages[-1].get("content") or ""))
    tip = found.group(1) if found else ""
    relevance = 5 if ("this morning" in tip or "this evening" in tip) else 3
    scores = {"relevance": relevance, "actionability": 3, "tone": 3, "format_ok": 1}
    return json.dumps(scores | {"overlong": 0})


def _edit_tips(text: str, edit: Callable[[str], str]) -> str:
    if text.startswith("{"):
        document = json.loads(text)
        return json.dumps({"tips": [edit(tip) for tip in document["tips"]]})
    lines = [re.match(r"(\d+\. )(.*)", line) for line in text.splitlines()]
    return "\n".join(f"{m.group(1)}{edit(m.group(2))}" for m in lines if m)


_ASKED = re.compile(r"the following (system|user) template.*?```\n(.*?)\n```", re.DOTALL)


def rule_reflection(messages: list[dict[str, Any]], fmt: Any) -> str:
    """A reflection model that answers from its request alone, as a real model does at a
    fixed seed: asked for a system template without "Say when in the morning." it adds that
    sentence, asked for a user template without "Say when in the evening." it adds that one,
    and otherwise it answers a template with an unknown placeholder, `$count` (a skipped
    proposal)."""
    found = _ASKED.search(str(messages[-1]["content"]))
    assert found is not None, "not a reflection prompt"
    part, current = found.groups()
    sentence = MORNING if part == "system" else EVENING
    new = "Write $count tips." if sentence in current else f"{current} {sentence}"
    return f"Reasons: say when.\n```\n{new}\n```"


def proposal(system: str, user: str) -> str:
    """The documented name of a proposal from v1: `v1-gepa-` and its template's hash."""
    return f"v1-gepa-{content_hash([system, user])[:8]}"


def reflection(template: str, reasons: str = "Tips never say when.") -> str:
    """A reflection model's answer proposing `template`."""
    return f"Reasons: {reasons}\n```\n{template}\n```"


def said(prompt: PromptVersion, part: str, sentence: str) -> str:
    """`prompt`'s `part` template with `sentence` added at its end."""
    return f"{getattr(prompt, part)} {sentence}"


#: Training on the student's two scenarios: the other six are held out (the gate needs six).
TRAINING = ("student-morning", "student-evening")


def scripted_world() -> FakeOllama:
    """The fake server with the world's task model and judge answering (not started)."""
    fake = FakeOllama(MODELS)
    fake.respond(TASK, task_model)
    fake.respond(JUDGE, judge_model)
    return fake


def settings(world: FakeOllama, **overrides: Any) -> OptimizeConfig:
    values: dict[str, Any] = {
        "from_version": "v1",
        "model": f"ollama:{TASK}",
        "judge_model": f"ollama:{JUDGE}",
        "reflection_model": f"ollama:{REFLECTION}",
        "budget": 20,
        "train_scenarios": ",".join(TRAINING),
        "minibatch": 2,
        "n_tips": 3,
        "ollama_url": world.url,
    }
    return OptimizeConfig(**(values | overrides))


@dataclass
class Heard:
    """What an optimization reported as it went (an `OptimizeProgress`)."""

    iterations: list[IterationSummary] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # proposed, in order
    skips: list[Skipped] = field(default_factory=list)
    spent: int = 0
    begun: list[tuple[int, int]] = field(default_factory=list)
    costs: list[Cost] = field(default_factory=list)

    def begin(self, total: int, done: int) -> None:
        self.begun.append((total, done))

    def advance(self, label: str, error: str | None = None, count: int = 1) -> None:
        self.spent += count

    def note(self, message: str) -> None: ...

    def iteration(self, summary: IterationSummary) -> None:
        self.iterations.append(summary)

    def proposed(self, prompt: PromptVersion) -> None:
        self.versions.append(prompt.version)

    def skipped(self, skipped: Skipped) -> None:
        self.skips.append(skipped)

    def planned(self, cost: Cost) -> None:
        self.costs.append(cost)


def optimize_args(world: FakeOllama, uri: str, *extra: str) -> list[str]:
    """A small optimization of v1 on the student's two scenarios (extra options last win)."""
    return [
        "optimize", "--from", "v1", "--model", f"ollama:{TASK}",
        "--judge-model", f"ollama:{JUDGE}", "--reflection-model", f"ollama:{REFLECTION}",
        "--budget", "10", "--train-scenarios", ",".join(TRAINING), "--minibatch", "2",
        "--n-tips", "3", "--ollama-url", world.url, "--tracking-uri", uri, *extra,
    ]  # fmt: skip
