"""Grammar-constrained sampling for llama-cpp-python at nearly the speed of free sampling.

llama-cpp-python applies a grammar to the whole vocabulary before `top_k` keeps the `k`
likeliest tokens: for a small model that check costs as much as the model itself and
halves its speed. `shortlist_grammar` wraps a `Llama`'s sampler set-up so that the grammar
first checks only the likeliest tokens. When at least `k` of them are allowed, those are
exactly the `k` tokens `top_k` would have kept after the whole check, so every token is
sampled as before (same seed, same text); otherwise the whole vocabulary is checked. At
temperature 0 (the automatic judge's) the greedy sampler takes the likeliest allowed token:
one allowed token among the likeliest is that token, so the same holds with `k` = 1.

The shortlist runs as Python that llama.cpp calls back while it samples. An exception raised
in such a callback is printed and dropped by ctypes, so a signal whose handler raises (Ctrl-C,
a stop's SIGTERM, a task's time limit) would be lost there, and that token sampled without its
grammar: `sample` holds those signals while llama.cpp samples and handles them after it.

It needs only llama-cpp-python and numpy: `bench/_baseline_llamacpp.py` loads this file on
its own, so that its bare loop samples as the embedded backend does without importing
tipbench.
"""

from __future__ import annotations

import ctypes
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import llama_cpp
import numpy as np

# Tokens checked first, as a multiple of `top_k`: room for the few the grammar rejects.
_CHECKED_PER_KEPT = 2
# Tokens checked first before a greedy pick (which keeps one).
_CHECKED_GREEDY = 64
# Signals whose Python handlers raise where the program is (KeyboardInterrupt, a time limit).
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class _Shortlisted:
    """A llama.cpp sampler that applies `grammar` (which it owns) to a shortlist first."""

    def __init__(self, grammar: Any, keep: int, checked: int) -> None:
        self.grammar = grammar
        self.keep = keep
        self.checked = checked
        self.shortlist = (llama_cpp.llama_token_data * self.checked)()
        self.view = _records(self.shortlist)
        # the callbacks must outlive the sampler: keep them on this object
        self.iface = llama_cpp.llama_sampler_i()
        self.iface.apply = llama_cpp.llama_sampler_i_apply(lambda _, cur_p: self.apply(cur_p))
        self.iface.accept = llama_cpp.llama_sampler_i_accept(
            lambda _, token: llama_cpp.llama_sampler_accept(self.grammar, token)
        )
        self.iface.reset = llama_cpp.llama_sampler_i_reset(
            lambda _: llama_cpp.llama_sampler_reset(self.grammar)
        )
        self.sampler = llama_cpp.llama_sampler(iface=ctypes.pointer(self.iface), ctx=None)

    def apply(self, cur_p: Any) -> None:
        candidates = cur_p.contents
        size = int(candidates.size)
        if size <= self.checked:
            llama_cpp.llama_sampler_apply(self.grammar, cur_p)
            return
        data = _records(
            (llama_cpp.llama_token_data * size).from_address(
                ctypes.addressof(candidates.data.contents)
            )
        )
        logits = data["logit"]
        likeliest = np.argpartition(logits, size - self.checked)[size - self.checked :]
        self.view[:] = data[likeliest]
        shortlist = llama_cpp.llama_token_data_array(
            data=self.shortlist, size=self.checked, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(shortlist))
        allowed = np.isfinite(self.view["logit"])
        if np.count_nonzero(allowed) < self.keep:  # the shortlist is not enough: check all
            llama_cpp.llama_sampler_apply(self.grammar, cur_p)
            return
        kept = likeliest[allowed]
        saved = logits[kept]
        logits[:] = -np.inf
        logits[kept] = saved


def _records(tokens: ctypes.Array[Any]) -> np.ndarray[Any, np.dtype[np.void]]:
    """A writable numpy view of a C array of `llama_token_data` (id, logit, p)."""
    return np.frombuffer(memoryview(tokens).cast("B"), dtype=_TOKEN_DATA)


def shortlist_grammar(llm: Any) -> None:
    """Make `llm` (a `llama_cpp.Llama`) check its grammar on a shortlist first.

    Only the plain sampling chain (temperature > 0, `top_k` > 0, no mirostat) and the greedy
    one (temperature 0) are changed: there the result is the same as checking every token.
    """
    init: Callable[..., Any] = llm._init_sampler

    def init_sampler(**options: Any) -> Any:
        sampler = init(**options)
        if options.get("grammar") is None:
            return sampler
        keep = int(options.get("top_k", 40))
        temperature = options.get("temp", 0.8)
        if temperature == 0:
            _shortlist_in(sampler, 1, _CHECKED_GREEDY, b"greedy")
        elif temperature > 0 and keep > 0 and not options.get("mirostat_mode", 0):
            _shortlist_in(sampler, keep, keep * _CHECKED_PER_KEPT, b"top-k")
        return sampler

    llm._init_sampler = init_sampler


def _shortlist_in(sampler: Any, keep: int, checked: int, follower: bytes) -> None:
    """Swap the grammar in llama-cpp-python's `LlamaSampler` chain for a `_Shortlisted` one
    in the same place, where `follower` (`top-k`, or `greedy`) comes right after it (a chain
    only appends: the samplers after it are taken out and put back)."""
    chain = sampler.sampler
    names = [
        llama_cpp.llama_sampler_name(llama_cpp.llama_sampler_chain_get(chain, i))
        for i in range(llama_cpp.llama_sampler_chain_n(chain))
    ]
    at = names.index(b"grammar") if names.count(b"grammar") == 1 else -1
    if at < 0 or names[at + 1 : at + 2] != [follower]:
        return  # not the chain this knows
    grammar, *after = [llama_cpp.llama_sampler_chain_remove(chain, at) for _ in names[at:]]
    shortlisted = _Shortlisted(grammar, keep, checked)
    llama_cpp.llama_sampler_chain_add(chain, ctypes.pointer(shortlisted.sampler))
    # llama-cpp-python takes its custom samplers out of the chain before freeing it
    sampler.custom_samplers.append((at, shortlisted))
    sampler._exit_stack.callback(llama_cpp.llama_sampler_free, grammar)
    for moved in after:
        llama_cpp.llama_sampler_chain_add(chain, moved)
    sample = sampler.sample

    def sample_holding_signals(ctx: Any, idx: int = -1) -> int:
        with _signals_held():
            return int(sample(ctx, idx))

    sampler.sample = sample_holding_signals


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold the signals Python handles in `_HELD_SIGNALS` (only the main thread handles any)
    and handle them, as their own handlers would have, once the block is left."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = {
        signum: handler for signum in _HELD_SIGNALS if callable(handler := signal.getsignal(signum))
    }
    for signum in held:
        signal.signal(signum, lambda number, _: caught.append(number))
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        for number in caught:
            signal.raise_signal(number)
