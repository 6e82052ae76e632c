"""Model specs: which backend serves a model, its name there, and a declared size."""

from __future__ import annotations

import pytest

from tipbench import ConfigError
from tipbench.backends import ModelSpec, parse_model_list, parse_size


@pytest.mark.parametrize(
    ("text", "backend", "name"),
    [
        ("llamacpp:smollm2-135m", "llamacpp", "smollm2-135m"),
        (
            "llamacpp:/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
            "llamacpp",
            "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
        ),
        ("ollama:qwen2.5:1.5b", "ollama", "qwen2.5:1.5b"),
        ("ollama:gemma3", "ollama", "gemma3"),
        ("openai:smollm2", "openai", "smollm2"),
        ("openai:meta-llama/Llama-3.2-3B-Instruct", "openai", "meta-llama/Llama-3.2-3B-Instruct"),
        # a bare tag means Ollama, including its own colon
        ("qwen2.5:1.5b", "ollama", "qwen2.5:1.5b"),
        ("gemma3", "ollama", "gemma3"),
        (
            "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
            "ollama",
            "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
        ),
        ("  ollama:llama3.2:3b  ", "ollama", "llama3.2:3b"),
    ],
)
def test_parse_picks_backend_and_name(text: str, backend: str, name: str) -> None:
    spec = ModelSpec.parse(text)
    assert (spec.backend, spec.name, spec.declared_parameters) == (backend, name, None)
    assert str(spec) == f"{backend}:{name}"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("openai:smollm2@135M", ModelSpec("openai", "smollm2", 135_000_000)),
        ("qwen2.5:1.5b@1.5B", ModelSpec("ollama", "qwen2.5:1.5b", 1_500_000_000)),
        ("openai:gpt-4o-mini@8b", ModelSpec("openai", "gpt-4o-mini", 8_000_000_000)),
    ],
)
def test_size_suffix_declares_the_size_and_is_not_part_of_the_name(
    text: str, spec: ModelSpec
) -> None:
    parsed = ModelSpec.parse(text)
    assert parsed == spec
    assert "@" not in str(parsed)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "ollama:",
        "openai:",
        "llamacpp:",
        "openai:@1.5B",
        "ollama:qwen 2.5",
        "openai:m@0B",
    ],
)
def test_bad_specs_raise_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="bad model spec"):
        ModelSpec.parse(text)


@pytest.mark.parametrize(
    ("label", "count"),
    [
        ("135M", 135_000_000),
        ("134.52M", 134_520_000),
        ("1.5B", 1_500_000_000),
        ("4b", 4_000_000_000),
        ("8.0B", 8_000_000_000),
        (" 7 B ", 7_000_000_000),
        ("500k", 500_000),
        ("1T", 1_000_000_000_000),
    ],
)
def test_parse_size_reads_size_labels(label: str, count: int) -> None:
    assert parse_size(label) == count


@pytest.mark.parametrize("label", ["", "1.5", "B", "1.5 GB", "1,5B", "-1B", "big"])
def test_parse_size_refuses_what_is_not_a_size(label: str) -> None:
    with pytest.raises(ValueError, match="not a model size"):
        parse_size(label)


def test_parse_model_list_keeps_order_and_skips_blank_entries() -> None:
    specs = parse_model_list("llamacpp:smollm2-135m, qwen2.5:0.5b,,openai:smollm2@135M ,")
    assert [str(s) for s in specs] == [
        "llamacpp:smollm2-135m",
        "ollama:qwen2.5:0.5b",
        "openai:smollm2",
    ]
    assert specs[2].declared_parameters == 135_000_000


@pytest.mark.parametrize(
    "text",
    [
        "qwen2.5:0.5b,qwen2.5:0.5b",
        "qwen2.5:0.5b,ollama:qwen2.5:0.5b",  # a bare tag and its explicit form are one model
        "openai:smollm2@135M,openai:smollm2@1B",  # a declared size does not make a new model
    ],
)
def test_parse_model_list_refuses_duplicates(text: str) -> None:
    with pytest.raises(ConfigError, match="listed twice"):
        parse_model_list(text)


@pytest.mark.parametrize("text", ["", " ", ",", " , ,"])
def test_parse_model_list_refuses_an_empty_list(text: str) -> None:
    with pytest.raises(ConfigError, match="no models given"):
        parse_model_list(text)


def test_parse_model_list_names_the_bad_entry() -> None:
    with pytest.raises(ConfigError, match="'ollama:'"):
        parse_model_list("qwen2.5:0.5b,ollama:")


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("lamacpp:smollm2-135m", "did you mean llamacpp:? "),
        ("lamacpp:/models/x.gguf", "did you mean llamacpp:? "),
        ("opanai:gpt", "did you mean openai:? "),
        ("foo:bar", ""),
    ],
)
def test_unknown_backend_prefix_names_the_known_backends(text: str, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ModelSpec.parse(text)
    message = str(caught.value)
    assert message.startswith(f"unknown backend {text.split(':')[0]!r} in model spec {text!r}")
    assert f"{hint}the backends are llamacpp, ollama, openai" in message
    assert f"ollama:{text}" in message  # how to say it is an Ollama tag after all


@pytest.mark.parametrize("text", ["mistral:latest", "phi:2.7b", "foo:3b-instruct-q4_K_M"])
def test_bare_ollama_tags_still_mean_ollama(text: str) -> None:
    assert ModelSpec.parse(text) == ModelSpec("ollama", text)
