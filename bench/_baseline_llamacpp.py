#!/usr/bin/env python
"""The baseline of `collect_overhead.py`: plain llama-cpp-python making a list of requests.

    python bench/_baseline_llamacpp.py REQUESTS.json OUT.json

REQUESTS.json (written by `collect_overhead.py`) holds `n_ctx`, `shortlist_grammar` (check
grammars on a shortlist first, as the embedded backend does) and, per model, its GGUF path
and requests (`name`, chat `messages`, `temperature`, `seed`, `max_tokens`, `repeat_penalty`,
`response_format`, `stream`, `form`). Each model is loaded as tipbench's embedded backend loads it
(`n_ctx`, plain CPU buffers, the threads it would choose, prompts in blocks), then asked with
`create_chat_completion`, one request after the other; a `stream` request is streamed, as
collect streams its free requests. OUT.json gets each answer's text and completion tokens by
name, and a streamed answer's chunks (one per token) under `pieces`.

It imports no tipbench: this is what the same generations cost without it. It loads
tipbench's `_aligned.py`, `_forms.py`, `_threads.py` (and with `shortlist_grammar` its
`_shortlist.py`)
on their own, modules that need only llama-cpp-python, numpy and the standard library, so
that the model runs on the threads collect's would, prompts are evaluated and constrained
requests sampled as collect does.
It writes marks to stderr (`loading M`, `loaded M`, `[i/n] name`, `unloading M`) from which
the caller times the phases and the requests.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any


# A copy of tipbench.backends._llamacpp.plain_cpu_buffers, not an import, so that the
# baseline pays for no tipbench import yet loads the model exactly as the backend does;
# collect_overhead.py refuses to run when the two differ (`check_baseline_copy`).
@contextlib.contextmanager
def plain_cpu_buffers() -> Iterator[None]:
    """Load models without llama.cpp's "extra" CPU buffer types (AMX, weight repacking)."""
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        lib.llama_model_default_params = default


def backend_module(name: str) -> Any:
    """A module of `tipbench.backends` (`_shortlist`, `_aligned`: they need only
    llama-cpp-python, numpy and the standard library), loaded from its file alone."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).parents[1] / "src" / "tipbench" / "backends" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def load_as_the_backend(model_path: str, n_ctx: int, shortlist: bool) -> tuple[Any, Any]:
    """A `Llama` loaded as the embedded backend loads it: plain CPU buffers, the threads it
    would choose (`_threads`: one per core free, or `TIPBENCH_LLAMA_THREADS`), prompts in
    blocks and whole blocks reused (`_aligned`), greedy answers read in a request's form
    (`_forms`), and with `shortlist` grammars checked on a shortlist first (`_shortlist`);
    and the slot that takes a request's form."""
    threads = backend_module("_threads")
    sample = threads.CpuSample.start()  # measured over the import, as the backend does
    from llama_cpp import Llama

    aligned = backend_module("_aligned")
    choice = threads.choose_threads(sample, threads.ThreadClaims())
    mark(f"threads {choice.threads}")
    with plain_cpu_buffers():
        llm = Llama(
            model_path=model_path,
            n_ctx=n_ctx,
            n_batch=aligned.BLOCK,
            verbose=False,
            n_threads=choice.threads,
            n_threads_batch=choice.threads,
        )
    if shortlist:
        backend_module("_shortlist").shortlist_grammar(llm)
    reuse = aligned.align_prefix_reuse(llm)
    forms = backend_module("_forms").fill_forms(llm, lambda prompt: reuse.rewind(llm, prompt))
    return llm, forms


def ask(llm: Any, forms: Any, r: dict[str, Any]) -> Any:
    """`llm`'s answer to request `r`, read in its form if it names one."""
    form = r.get("form")  # in JSON, lists: a form's choices are tuples
    forms.form = tuple(tuple(p) if isinstance(p, list) else p for p in form) if form else None
    return llm.create_chat_completion(
        messages=r["messages"],
        temperature=r["temperature"],
        seed=r["seed"],
        max_tokens=r["max_tokens"],
        repeat_penalty=r["repeat_penalty"],
        response_format=r["response_format"],
        stream=r.get("stream", False),
    )


def mark(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(requests_path: str, out_path: str) -> None:
    with open(requests_path, encoding="utf-8") as f:
        spec = json.load(f)
    texts, tokens, pieces = {}, {}, {}
    for block in spec["blocks"]:
        mark("loading " + block["model"])
        llm, forms = load_as_the_backend(
            block["model_path"], spec["n_ctx"], bool(spec.get("shortlist_grammar"))
        )
        mark("loaded " + block["model"])
        for i, r in enumerate(block["requests"], start=1):
            response = ask(llm, forms, r)
            if r.get("stream"):
                chunks = [c["choices"][0]["delta"].get("content") for c in response]
                pieces[r["name"]] = [c for c in chunks if c]
                texts[r["name"]] = "".join(pieces[r["name"]])
                tokens[r["name"]] = len(pieces[r["name"]])
            else:
                texts[r["name"]] = response["choices"][0]["message"].get("content") or ""
                tokens[r["name"]] = (response.get("usage") or {}).get("completion_tokens", 0)
            mark(f"[{i}/{len(block['requests'])}] {r['name']}")
        mark("unloading " + block["model"])
        llm.close()
        del llm
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "tokens": tokens, "pieces": pieces}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
