#!/usr/bin/env python
"""The baseline of `optimize_cost.py`: plain llama-cpp-python replaying recorded blocks.

    python bench/_baseline_blocks.py BLOCKS.json OUT.json

BLOCKS.json (written by `_optimize_recorded.py`) lists blocks in the order the optimizer
made them: a model (GGUF path, context size) loaded, its requests, unloaded. The same
blocks are replayed here, each model loaded as tipbench's embedded backend loads it (plain
CPU buffers, prompts in blocks, the shortlist grammar, `TIPBENCH_LLAMA_THREADS`): what the
same generations, judgments and reflections cost without the optimizer, with the same loads as its
one-model-resident rule makes. It imports no tipbench (the model settings come from
`_baseline_llamacpp.py`, itself checked against the backend by `collect_overhead.py`).
OUT.json gets the completion tokens it generated and the recorded ones, to check that the
replay made the same generations.
"""

from __future__ import annotations

import json
import sys

from _baseline_llamacpp import ask, load_as_the_backend


def main(blocks_path: str, out_path: str) -> None:
    with open(blocks_path, encoding="utf-8") as f:
        blocks = json.load(f)["blocks"]
    made = expected = 0
    for block in blocks:
        llm, forms = load_as_the_backend(block["model_path"], block["n_ctx"], shortlist=True)
        for r in block["requests"]:
            response = ask(llm, forms, r)
            made += (response.get("usage") or {}).get("completion_tokens", 0)
            expected += r["tokens"]
        llm.close()
        del llm
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"tokens": made, "recorded_tokens": expected}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
