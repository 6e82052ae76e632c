"""Greedy answers of a known form in a few model calls: the embedded judge's fast path.

A temperature-0 answer under a JSON schema whose answers all look alike (the judge's
`{ "relevance": 3, "actionability": 4, "tone": 5}`) is mostly fixed text, yet llama.cpp
decodes it one token at a time: one model call per token, 21 for the judge. `fill_forms`
reads such an answer in one call per choice instead. It evaluates each stretch of the
form's fixed text in one batch, keeping the scores at every position, and checks, with the
request's grammar on the likeliest tokens (as `_shortlist.py` does), that the token greedy
decoding takes at each position is the form's next token; at a choice it takes greedy's
token when it is one of the choice's values. So the answer is the one greedy decoding under
the grammar writes. At the first position where it would write anything else (other
whitespace, another tokenization, a value outside the choice), the request is decoded as
before, from its prompt.

The stretches are evaluated in batches, not token by token, and llama.cpp's kernels round
other batch shapes differently: in a near tie between two values the pick may differ from
the token-by-token one (none did on the README's grid: bench/README.md). The same
request still gives the same answer, whatever ran before (`_aligned.py`).

Like `_shortlist.py` and `_aligned.py`, this wraps llama-cpp-python's `Llama.generate`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import llama_cpp
import numpy as np

if TYPE_CHECKING:  # a type only: `bench/_baseline_llamacpp.py` loads this file on its own
    from tipbench.backends._base import AnswerForm

#: The likeliest tokens the grammar is checked on at each position (as the greedy
#: shortlist of `_shortlist.py`): where it allows none of them, the request is decoded.
_SHORTLIST = 64
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


@dataclass
class FormSlot:
    """The form the next request's answer takes (set by the backend around one request)."""

    form: AnswerForm | None = None


def fill_forms(llm: Any, rewind: Callable[[list[int]], None]) -> FormSlot:
    """Make `llm` answer a greedy request under a grammar in the form `slot.form` names
    (if set) in one model call per choice; `rewind(prompt)` sets `llm` back to where
    evaluating `prompt` starts (a whole block of the last prompt, `_aligned.py`)."""
    generate: Callable[..., Iterator[int]] = llm.generate
    slot = FormSlot()

    def filled_generate(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
        form, grammar, prompt = slot.form, kwargs.get("grammar"), list(tokens)
        if form is None or grammar is None or kwargs.get("temp") != 0:
            return generate(prompt, *args, **kwargs)
        rewind(prompt)
        with _Grammar(llm, grammar) as rules:
            answer = _Filler(llm, rules).fill(prompt, form)
        if answer is None:  # the model would write something else: decode as before
            return generate(prompt, *args, **kwargs)
        return iter([*answer, llm.token_eos()])

    llm.generate = filled_generate
    return slot


class _Grammar:
    """A request's grammar, token by token: the likeliest token it allows after some."""

    def __init__(self, llm: Any, grammar: Any) -> None:
        self.sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode(), grammar._root.encode()
        )
        self.shortlist = (llama_cpp.llama_token_data * _SHORTLIST)()
        self.view = np.frombuffer(memoryview(self.shortlist).cast("B"), dtype=_TOKEN_DATA)

    def __enter__(self) -> _Grammar:
        return self

    def __exit__(self, *exc: object) -> None:
        llama_cpp.llama_sampler_free(self.sampler)

    def pick(self, scores: np.ndarray[Any, Any]) -> int | None:
        """The likeliest allowed token (what greedy sampling under the grammar takes), if
        it is among the `_SHORTLIST` likeliest of all."""
        likeliest = np.argpartition(scores, -_SHORTLIST)[-_SHORTLIST:]
        self.view["id"], self.view["logit"], self.view["p"] = likeliest, scores[likeliest], 0
        candidates = llama_cpp.llama_token_data_array(
            data=self.shortlist, size=_SHORTLIST, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(candidates))
        logits = self.view["logit"]
        if not np.isfinite(logits).any():
            return None
        return int(self.view["id"][np.argmax(logits)])

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self.sampler, token)


class _Filler:
    """One answer read in a form: the tokens so far, and the model's pick after them."""

    def __init__(self, llm: Any, grammar: _Grammar) -> None:
        self.llm = llm
        self.grammar = grammar
        self.answer: list[int] = []
        self.text = ""
        self.unseen: list[int] = []  # the answer's last token, when not evaluated yet
        self.pick: int | None = None  # greedy's next token after the evaluated ones

    def fill(self, prompt: list[int], form: AnswerForm) -> list[int] | None:
        """The answer's tokens, or None at the first token greedy decoding would not write."""
        llm = self.llm
        llm.eval(prompt[llm.n_tokens :])
        self.pick = self.grammar.pick(_row(llm, -1))
        for part in form:
            done = self._choose(part) if isinstance(part, tuple) else self._write(part)
            if not done:
                return None
        if self.unseen:
            self.pick = self.grammar.pick(_decode(llm, self.unseen)[-1])
        return self.answer if self.pick == llm.token_eos() else None

    def _choose(self, values: tuple[str, ...]) -> bool:
        """Take greedy's pick if it is one of `values` (each one token)."""
        if self.unseen:  # two choices in a row: a form this does not read
            return False
        tokens: dict[int, str] = {}
        for value in values:
            token = self.llm.tokenize(value.encode(), add_bos=False, special=False)
            if len(token) != 1:
                return False
            tokens[token[0]] = value
        pick = self.pick
        if pick is None or pick not in tokens:
            return False
        self.grammar.accept(pick)
        self.answer.append(pick)
        self.text += tokens[pick]
        self.unseen = [pick]
        return True

    def _write(self, fixed: str) -> bool:
        """Evaluate `fixed` text in one batch, checking that greedy writes it token for token."""
        whole = self.llm.tokenize((self.text + fixed).encode(), add_bos=False, special=False)
        if whole[: len(self.answer)] != self.answer or len(whole) == len(self.answer):
            return False  # the fixed text changes how the answer so far is cut into tokens
        tokens = whole[len(self.answer) :]
        expected = tokens
        if not self.unseen:  # the first token is checked against the pick already made
            if self.pick != tokens[0]:
                return False
            self.grammar.accept(tokens[0])
            expected = tokens[1:]
        rows = _decode(self.llm, [*self.unseen, *tokens])
        for scores, token in zip(rows, expected, strict=False):
            if self.grammar.pick(scores) != token:
                return False
            self.grammar.accept(token)
        self.answer += tokens
        self.text += fixed
        self.unseen, self.pick = [], self.grammar.pick(rows[-1])
        return True


def _row(llm: Any, i: int) -> np.ndarray[Any, Any]:
    """The scores of the next token after the last batch's `i`-th output."""
    return np.ctypeslib.as_array(llm._ctx.get_logits_ith(i), shape=(llm.n_vocab(),))


def _decode(llm: Any, batch: list[int]) -> list[np.ndarray[Any, Any]]:
    """Evaluate `batch` after what `llm` holds: the scores after each of its tokens."""
    n_past = llm.n_tokens
    llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
    llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
    llm._ctx.decode(llm._batch)
    llm.input_ids[n_past : n_past + len(batch)] = batch
    llm.n_tokens += len(batch)
    return [_row(llm, i) for i in range(len(batch))]
