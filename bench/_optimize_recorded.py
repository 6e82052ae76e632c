#!/usr/bin/env python
"""`tipbench optimize`, with every embedded-model request it makes recorded for a replay.

    python bench/_optimize_recorded.py BLOCKS.json -- optimize --from v1 …

Runs the `tipbench` command given after `--` in this process, with the embedded backend's
`load`, `generate`, `warm` and `unload` wrapped: each load opens a block (the model, its GGUF
path, its context size), each request is appended to the open block as `_arms.wire` writes it
(a free answer that collect stopped early is recorded with the tokens it got as its
`max_tokens`, unstreamed: the same tokens, cut at the same place), and the seconds spent
inside the four calls are summed. BLOCKS.json gets the blocks and those seconds; the
caller times the process from start to exit (`optimize_cost.py`).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from _arms import wire
from tipbench.backends import Generation, GenerationRequest
from tipbench.backends._llamacpp import LlamaCppBackend


def record(out: str) -> dict[str, Any]:
    """Wrap the embedded backend; return what the wrappers fill in."""
    log: dict[str, Any] = {"blocks": [], "inside_s": 0.0}
    load, generate, unload = LlamaCppBackend.load, LlamaCppBackend.generate, LlamaCppBackend.unload
    warm = LlamaCppBackend.warm

    def timed_load(self: LlamaCppBackend) -> None:
        start = time.perf_counter()
        load(self)
        log["inside_s"] += time.perf_counter() - start
        log["blocks"].append({"model": str(self.spec), "model_path": str(self.path),
                              "n_ctx": self.options.n_ctx, "requests": []})  # fmt: skip

    def timed_generate(self: LlamaCppBackend, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        answer = generate(self, request)
        log["inside_s"] += time.perf_counter() - start
        block = log["blocks"][-1]
        sent = wire(f"{block['model']}#{len(block['requests'])}", request)
        if sent["stream"]:  # stopped where the answer was complete: that many tokens
            sent |= {"stream": False, "max_tokens": max(answer.completion_tokens, 1)}
        sent["tokens"] = answer.completion_tokens  # what the replay should generate too
        block["requests"].append(sent)
        return answer

    def timed_warm(self: LlamaCppBackend, request: GenerationRequest) -> None:
        # the judge's rubric, evaluated (or restored) after a load: the bare loop evaluates
        # it as the start of the block's first judge request
        start = time.perf_counter()
        warm(self, request)
        log["inside_s"] += time.perf_counter() - start

    def timed_unload(self: LlamaCppBackend) -> None:
        start = time.perf_counter()
        unload(self)
        log["inside_s"] += time.perf_counter() - start

    LlamaCppBackend.load = timed_load  # type: ignore[method-assign]
    LlamaCppBackend.generate = timed_generate  # type: ignore[method-assign]
    LlamaCppBackend.unload = timed_unload  # type: ignore[method-assign]
    LlamaCppBackend.warm = timed_warm  # type: ignore[method-assign]
    return log


def main() -> None:
    out, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: _optimize_recorded.py BLOCKS.json -- COMMAND…"
    log = record(out)
    sys.argv = ["tipbench", *command]
    from tipbench.cli import main as tipbench_main

    code = 0
    try:
        tipbench_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(log, f)
    sys.exit(code)


if __name__ == "__main__":
    main()
