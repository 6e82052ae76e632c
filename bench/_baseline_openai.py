#!/usr/bin/env python
"""The bare arms of `structured_server.py`: the official `openai` client making a list of requests.

    python bench/_baseline_openai.py REQUESTS.json BASE_URL OUT.json

REQUESTS.json (written by `structured_server.py`) holds the served `model` and its requests
(`name`, chat `messages`, `temperature`, `seed`, `max_tokens`, `repeat_penalty`,
`response_format` or null, `stream`), sent one after the other to the OpenAI-compatible
server at BASE_URL; a `stream` request is streamed, as collect streams its free requests.
OUT.json gets each answer's text and completion tokens by name, a streamed answer's chunks
(one per token) under `pieces`, and the seconds spent inside the requests.
It imports no tipbench: this is what the same requests cost without it.
"""

from __future__ import annotations

import json
import sys
import time

import openai


def main(requests_path: str, base_url: str, out_path: str) -> None:
    with open(requests_path, encoding="utf-8") as f:
        spec = json.load(f)
    client = openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=600)
    texts, tokens, pieces, inside = {}, {}, {}, 0.0
    for r in spec["requests"]:
        extra = {"response_format": r["response_format"]} if r["response_format"] else {}
        started = time.perf_counter()
        response = client.chat.completions.create(
            model=spec["model"],
            messages=r["messages"],
            temperature=r["temperature"],
            seed=r["seed"],
            max_tokens=r["max_tokens"],
            extra_body={"repeat_penalty": r["repeat_penalty"]},
            stream=r.get("stream", False),
            **extra,
        )
        if r.get("stream"):
            chunks = [c.choices[0].delta.content for c in response if c.choices]
            inside += time.perf_counter() - started
            pieces[r["name"]] = [c for c in chunks if c]
            texts[r["name"]] = "".join(pieces[r["name"]])
            tokens[r["name"]] = len(pieces[r["name"]])
            continue
        inside += time.perf_counter() - started
        texts[r["name"]] = response.choices[0].message.content or ""
        tokens[r["name"]] = response.usage.completion_tokens if response.usage else 0
    with open(out_path, "w") as f:
        json.dump({"texts": texts, "tokens": tokens, "pieces": pieces, "inside": inside}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
