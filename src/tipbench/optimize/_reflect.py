"""Reflection: a model reads the tips, the judge's scores and the human's, and rewrites one
part of the prompt (GEPA's reflective mutation; Agrawal et al. 2025, "GEPA: Reflective Prompt
Evolution Can Outperform Reinforcement Learning", §3.2).

The reflection model is any backend spec tipbench supports, called through tipbench's own
backends (size guard, one model resident, retries), never another client library. The
prompt is GEPA's instruction-proposal prompt (`gepa.strategies.instruction_proposal`)
adapted to a template with placeholders: it names the placeholders to keep and asks for the
reasons first, then the new template in ``` fences, read back and checked by
`optimize._checks` (a fenced template for this part, its placeholders kept, no training
scenario's text copied into it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gepa.strategies.instruction_proposal import InstructionProposalSignature

from tipbench.backends import Backend, GenerationRequest, RetryPolicy, call_with_retries, resident
from tipbench.optimize._checks import Problem, check_template
from tipbench.suite import Component, Scenario, template_placeholders

#: Sampling of the reflection model: some variety between proposals, seeded per iteration.
REFLECTION_TEMPERATURE = 0.7
REFLECTION_MAX_TOKENS = 512  # a template is 100–300 tokens, its reasons a few lines
#: The longest reasons kept with a proposal (its file, the registry, the panel).
MAX_REASONS_CHARS = 1000

REFLECTION_PROMPT = """I gave a small language model the following <part> template. Filled \
in for one person at one time of day, it asks the model for short, personal productivity tips:
```
<curr_param>
```

Here are some of those people, the tips the model wrote for them, and how a judge scored \
each tip against a rubric (relevance, actionability and tone from 1 to 5; format_ok and \
overlong are rule checks), with a person's scores and comments where there are any:
```
<side_info>
```

Write a new <part> template that makes the tips score higher on every criterion. Read the \
low-scoring tips and the scores closely and say what the template should ask for instead.
Rules:
- Keep every placeholder of the current template, written exactly as it is: <placeholders>.
- Add no other $ placeholder (write $$ for a literal dollar sign).
- Keep the answer format the current template asks for.

First give your reasons in at most three short lines, starting with "Reasons:". Then give \
the new template, and nothing else, inside ``` fences."""


@dataclass(frozen=True)
class Reflection:
    """What the reflection model proposed for one part: the new template and its reasons,
    or the problem that makes the answer unusable (a skipped proposal)."""

    component: Component
    text: str
    reasons: str
    problem: Problem | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None


def reflection_prompt(
    component: Component, current: str, records: Sequence[Mapping[str, Any]]
) -> str:
    """The reflection model's prompt for rewriting `current`, given the feedback `records`."""
    names = sorted(template_placeholders(current))
    kept = ", ".join(f"${name}" for name in names) or "(none)"
    template = REFLECTION_PROMPT.replace("<part>", component).replace("<placeholders>", kept)
    rendered = InstructionProposalSignature.prompt_renderer(
        {
            "current_instruction_doc": current,
            "dataset_with_feedback": list(records),
            "prompt_template": template,
        }
    )
    assert isinstance(rendered, str)  # no images: a plain prompt
    return rendered


def read_reflection(
    component: Component, current: str, answer: str, training: Sequence[Scenario] = ()
) -> Reflection:
    """The proposal in a reflection model's answer, checked (`optimize._checks`) against
    its parent's template `current` and the training scenarios the model read."""
    fence = answer.find("```")
    reasons = (answer[:fence] if fence >= 0 else answer).strip()
    reasons = reasons.removeprefix("Reasons:").strip()[:MAX_REASONS_CHARS]
    found = check_template(component, current, answer, training)
    if isinstance(found, Problem):
        return Reflection(component, "", reasons, found)
    return Reflection(component, found, reasons)


@dataclass
class Reflector:
    """Asks the reflection model for a new template, one model resident at a time."""

    backend: Backend
    retry: RetryPolicy
    seed: int
    note: Callable[[str], None] = lambda _: None
    training: Sequence[Scenario] = ()  # what the model reads of them must not come back

    def reflect(
        self,
        component: Component,
        current: str,
        records: Sequence[Mapping[str, Any]],
        iteration: int,
    ) -> Reflection:
        """Propose a new `component` template; the answer is read and checked, not trusted.

        Raises:
            BackendError: the reflection model could not answer, after retries.
        """
        prompt = reflection_prompt(component, current, records)

        def ask(attempt: int) -> str:
            request = GenerationRequest(
                messages=(("user", prompt),),
                temperature=REFLECTION_TEMPERATURE,
                seed=self.seed + 1000 * iteration + attempt - 1,
                max_tokens=REFLECTION_MAX_TOKENS,
            )
            return self.backend.generate(request).text

        with resident(self.backend, self.retry, self.note):
            answer, _ = call_with_retries(ask, self.retry)
        return read_reflection(component, current, answer, self.training)
