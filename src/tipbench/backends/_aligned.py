"""Prefix reuse that does not change the answer: the embedded backend's determinism.

llama-cpp-python keeps the tokens it evaluated and, for the next request, evaluates only
what follows the longest prefix the two share. The prompt is then evaluated in other
batches than from a fresh start (one token instead of a batch of hundreds, say), and
llama.cpp's kernels for other batch shapes round differently: the same request and seed
gave another answer when it followed a request that shared its prompt (llama-cpp-python
0.3.36). So a cell's candidates depended on which cell came before it, and a resumed
collect differed from an uninterrupted one.

`align_prefix_reuse` keeps the reuse but on a fixed grid: prompts are evaluated in batches
of `BLOCK` tokens that start at multiples of `BLOCK`, and a later request reuses only whole
blocks of the earlier prompt. Every prompt token is then computed in the same batch as from
a fresh start, whatever ran before, so the same request gives the same answer; a request
re-evaluates at most `BLOCK - 1` shared tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

#: The batch the prompt is evaluated in, and the grain of the prefix reused.
BLOCK = 64


@dataclass
class AlignedReuse:
    """What `align_prefix_reuse` keeps between requests of one `llm`."""

    last_prompt: int = 0  # the tokens of the last prompt: the ones evaluated in blocks

    def rewind(self, llm: Any, prompt: list[int]) -> None:
        """Set `llm` back to the whole blocks `prompt` shares with the last prompt: where
        evaluating `prompt` starts (0: afresh)."""
        evaluated = llm.input_ids[: min(llm.n_tokens, self.last_prompt)]
        shared = _shared_prefix(evaluated, prompt[:-1])
        llm.n_tokens = shared - shared % BLOCK
        self.last_prompt = len(prompt)


def align_prefix_reuse(llm: Any) -> AlignedReuse:
    """Make `llm` (a `llama_cpp.Llama` created with `n_batch=BLOCK`) reuse whole blocks only.

    `Llama.generate` reuses the longest prefix of its evaluated tokens; cutting those down to
    the whole blocks of the last prompt first (answer tokens are never reused) leaves it
    nothing else to reuse. The state returned is what a restored llama.cpp state must bring
    back with it (`_warmed.py`).
    """
    if llm.n_batch != BLOCK:
        raise ValueError(f"align_prefix_reuse needs n_batch={BLOCK}, not {llm.n_batch}")
    generate: Callable[..., Iterator[int]] = llm.generate
    reuse = AlignedReuse()

    def aligned_generate(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
        tokens = list(tokens)
        reuse.rewind(llm, tokens)  # n_tokens 0 makes generate start afresh
        return generate(tokens, *args, **kwargs)

    llm.generate = aligned_generate
    return reuse


def _shared_prefix(evaluated: Sequence[int], tokens: Sequence[int]) -> int:
    shared = 0
    for a, b in zip(evaluated, tokens, strict=False):
        if a != b:
            break
        shared += 1
    return shared
