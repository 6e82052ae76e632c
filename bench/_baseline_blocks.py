#!/usr/bin/env python
"""The baseline of `optimize_cost.py`: plain llama-cpp-python replaying recorded blocks.

    python bench/_baseline_blocks.py BLOCKS.json

BLOCKS.json (written by `_optimize_recorded.py`) lists blocks in the order the optimizer
made them: a model (GGUF path, context size) loaded, its requests, unloaded. The same
blocks are replayed here, each model loaded as tipbench's embedded backend loads it (plain
CPU buffers, the shortlist grammar, `TIPBENCH_LLAMA_THREADS`): what the same generations,
judgments and reflections cost without the optimizer, with the same loads as its
one-model-resident rule makes. It imports no tipbench (the model settings come from
`_baseline_llamacpp.py`, itself checked against the backend by `collect_overhead.py`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from _baseline_llamacpp import plain_cpu_buffers, shortlist_grammar


def main(blocks_path: str) -> None:
    with open(blocks_path, encoding="utf-8") as f:
        blocks = json.load(f)["blocks"]
    threads = os.environ.get("TIPBENCH_LLAMA_THREADS")
    extra: dict[str, Any] = {"n_threads": int(threads)} if threads else {}
    shortlisted = shortlist_grammar()
    from llama_cpp import Llama

    for block in blocks:
        with plain_cpu_buffers():
            llm = Llama(
                model_path=block["model_path"], n_ctx=block["n_ctx"], verbose=False, **extra
            )
        shortlisted(llm)
        for r in block["requests"]:
            llm.create_chat_completion(
                messages=r["messages"], temperature=r["temperature"], seed=r["seed"],
                max_tokens=r["max_tokens"], repeat_penalty=r["repeat_penalty"],
                response_format=r["response_format"],
            )  # fmt: skip
        llm.close()
        del llm


if __name__ == "__main__":
    main(sys.argv[1])
