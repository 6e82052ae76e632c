"""The embedded backend on the real SmolLM2-135M GGUF through llama.cpp (llama-cpp-python).

Each generation costs seconds on a small machine, so token budgets stay small and one loaded
model is shared by the tests that only generate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from tipbench import BackendError, GenerationFailed, ModelNotFound, ModelTooLarge
from tipbench.auto_judge import judge_messages, parse_scores, score_schema
from tipbench.auto_judge._judge import JUDGE_N_CTX
from tipbench.auto_judge._prompt import score_form
from tipbench.auto_judge._requests import (
    JUDGE_SEED,
    JUDGE_TEMPERATURE,
    judge_request,
    warm_up_request,
)
from tipbench.backends import (
    AnswerForm,
    Backend,
    BackendOptions,
    GenerationRequest,
    ModelSpec,
    check_size,
    open_backend,
)
from tipbench.backends._gguf import read_gguf_header
from tipbench.backends._threads import (
    THREADS_ENV,
    CpuSample,
    Machine,
    ThreadChoice,
    ThreadClaims,
)
from tipbench.backends._warmed import WARMED
from tipbench.collect import AnswerDone, parse_tips, tips_schema
from tipbench.suite import load_suite

SMOLLM2 = ModelSpec.parse("llamacpp:smollm2-135m")
TASKS = "Tasks:\n- write the quarterly report\n- call the dentist"


def request(
    seed: int = 7,
    max_tokens: int = 32,
    temperature: float = 0.8,
    system: str = "You write short, concrete productivity tips.",
) -> GenerationRequest:
    return GenerationRequest(
        messages=(
            ("system", system),
            ("user", f"{TASKS}\nWrite one tip."),
        ),
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
    )


@pytest.fixture(scope="module")
def loaded() -> Iterator[Backend]:
    """The bundled model, loaded once for the tests that only generate."""
    with open_backend(SMOLLM2) as backend:
        yield backend


def test_gguf_header_gives_parameter_count_and_name(smollm2_path: Path) -> None:
    header = read_gguf_header(smollm2_path)
    assert 134_000_000 < header.parameter_count < 135_000_000  # SmolLM2-135M: 134.5M
    assert "smollm2" in header.name.lower()
    assert header.metadata["general.architecture"] == "llama"


def test_describe_reads_the_size_without_loading(smollm2_path: Path) -> None:
    backend = open_backend(SMOLLM2)
    info = backend.describe()
    assert info.parameter_count == read_gguf_header(smollm2_path).parameter_count
    assert "smollm2" in info.identity.lower()
    assert backend._llm is None  # type: ignore[attr-defined]

    by_path = open_backend(ModelSpec.parse(f"llamacpp:{smollm2_path}")).describe()
    assert by_path == info  # the bundled name and its file are the same model


def test_identity_changes_with_the_weights(smollm2_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "smollm2.gguf"
    shutil.copyfile(smollm2_path, copy)
    with copy.open("ab") as f:
        f.write(b"\0" * 32)  # other weights behind the same header
    original = open_backend(ModelSpec.parse(f"llamacpp:{smollm2_path}")).describe()
    changed = open_backend(ModelSpec.parse(f"llamacpp:{copy}")).describe()
    assert changed.identity != original.identity


def test_size_guard_passes_at_the_default_limit_and_refuses_below() -> None:
    info = open_backend(SMOLLM2).describe()
    assert check_size(SMOLLM2, info, 4.0) == info.parameter_count

    with pytest.raises(ModelTooLarge) as refused:
        check_size(SMOLLM2, info, max_model_b=0.1)
    message = str(refused.value)
    assert "llamacpp:smollm2-135m" in message
    assert "0.13B" in message and "0.1B" in message and "--max-model-b" in message


def test_metadata_wins_over_a_declared_size() -> None:
    declared = ModelSpec.parse("llamacpp:smollm2-135m@8B")
    info = open_backend(declared).describe()
    assert check_size(declared, info, 4.0) == info.parameter_count


@pytest.mark.slow
def test_an_answer_does_not_depend_on_the_requests_before_it(loaded: Backend) -> None:
    """llama.cpp reuses the prompt an earlier request shares with this one; evaluated in other
    batches it rounded otherwise and the same request and seed gave another answer (the same
    request twice, with llama-cpp-python 0.3.36). Reused by whole blocks only, every request
    answers as it does first thing after a load."""
    long_system = "You write short, concrete productivity tips for one person. " * 12
    requests = [request(seed=11), request(seed=11, system=long_system), request(seed=12)]
    first = []
    for each in requests:
        with open_backend(SMOLLM2) as fresh:
            first.append(fresh.generate(each).text)
    for i in (0, 0, 1, 2, 1, 0, 2, 2, 1):
        assert loaded.generate(requests[i]).text == first[i], i


@pytest.mark.slow
def test_same_seed_and_temperature_give_the_same_text(loaded: Backend) -> None:
    first = loaded.generate(request(seed=11))
    again = loaded.generate(request(seed=11))
    assert first.text.strip()
    assert again.text == first.text
    assert first.completion_tokens > 0 and first.prompt_tokens > 0
    assert first.structured is False

    other = loaded.generate(request(seed=12))
    assert other.text.strip() and other.completion_tokens > 0


@pytest.mark.slow
def test_a_free_answer_stops_once_it_is_complete(loaded: Backend) -> None:
    suite = load_suite()
    scenario = suite.select_scenarios(1)[0]
    free = GenerationRequest(
        messages=suite.prompt("v3-few-shot").render(scenario, 3),
        temperature=0.7,
        seed=42,
        max_tokens=240,
    )
    whole = loaded.generate(free)
    streamed = loaded.generate(replace(free, complete=lambda text: False))
    early = loaded.generate(replace(free, complete=AnswerDone(3)))

    # streaming samples the same tokens and counts them as the unstreamed answer does
    assert streamed.text == whole.text
    assert streamed.prompt_tokens == whole.prompt_tokens
    # the complete answer is a prefix that already holds the tips, for fewer tokens
    assert whole.text.startswith(early.text)
    assert early.prompt_tokens == whole.prompt_tokens
    assert parse_tips(early.text, 3).tips == parse_tips(whole.text, 3).tips
    assert len(parse_tips(early.text, 3).tips) == 3
    assert early.completion_tokens < whole.completion_tokens
    assert early.structured is False


@pytest.mark.slow
def test_schema_constrained_request_gives_the_requested_number_of_tips(loaded: Backend) -> None:
    suite = load_suite()
    scenario = suite.select_scenarios(1)[0]
    answer = loaded.generate(
        GenerationRequest(
            messages=suite.prompt("v1").render(scenario, 2),
            temperature=0.7,
            seed=42,
            max_tokens=120,
            json_schema=tips_schema(2),
        )
    )
    assert answer.structured is True
    parsed = parse_tips(answer.text, 2)
    assert len(parsed.tips) == 2
    assert parsed.method in ("json", "partial-json")
    if parsed.method == "json":
        assert len(json.loads(answer.text)["tips"]) == 2


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_while_the_grammar_is_checked_stops_the_answer(
    loaded: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grammar's shortlist is Python that llama.cpp calls back for every constrained token
    # (most of that token's Python time): ctypes drops what a callback raises, so Ctrl-C
    # landing there once let a collect run to its end.
    from tipbench.backends._shortlist import _Shortlisted

    asked = replace(request(max_tokens=60), json_schema=tips_schema(2))
    before = loaded.generate(asked).text
    apply = _Shortlisted.apply

    def interrupted(self: _Shortlisted, cur_p: object) -> None:
        signal.raise_signal(signal.SIGINT)  # as if Ctrl-C landed inside the callback
        apply(self, cur_p)

    monkeypatch.setattr(_Shortlisted, "apply", interrupted)
    with pytest.raises(KeyboardInterrupt):
        loaded.generate(asked)
    monkeypatch.undo()
    assert loaded.generate(asked).text == before  # and the model answers as before


# Constraints the shortlist mostly satisfies (the tips schema, any JSON object), and one the
# model's likeliest tokens never satisfy, so the whole vocabulary is checked at each step;
# then the automatic judge's: its score schema at temperature 0, a greedy pick.
ODD_TIPS = {"type": "array", "items": {"type": "string", "pattern": "^[QXZ]{3,8}$"}}
CONSTRAINTS: list[dict[str, object]] = [
    {"json_schema": tips_schema(3)},
    {"json_object": True},
    {"json_schema": {"type": "object", "properties": {"tips": ODD_TIPS}, "required": ["tips"]}},
    {"json_schema": score_schema(), "temperature": 0.0},
    {"json_schema": {"type": "object", "properties": {"tips": ODD_TIPS}}, "temperature": 0.0},
]


@pytest.mark.slow
def test_a_constrained_answer_is_what_llama_cpp_samples_with_its_own_grammar_check(
    loaded: Backend, smollm2_path: Path
) -> None:
    # The backend checks the grammar on the likeliest tokens first (it halves a small
    # model's speed on the whole vocabulary): the same seed must still give the same text.
    from llama_cpp import Llama

    from tipbench.backends._aligned import BLOCK, align_prefix_reuse
    from tipbench.backends._llamacpp import plain_cpu_buffers

    with plain_cpu_buffers():  # loaded as the backend loads it, the grammar check aside
        stock = Llama(
            model_path=str(smollm2_path),
            n_ctx=BackendOptions().n_ctx,
            n_batch=BLOCK,
            verbose=False,
        )
    align_prefix_reuse(stock)
    try:
        for seed, constraint in enumerate(CONSTRAINTS):
            asked = replace(request(seed=seed, max_tokens=60), **constraint)  # type: ignore[arg-type]
            schema = asked.json_schema
            expected = stock.create_chat_completion(
                messages=asked.chat_messages(),
                temperature=asked.temperature,
                seed=asked.seed,
                max_tokens=asked.max_tokens,
                response_format={"type": "json_object", **({"schema": schema} if schema else {})},
            )
            answer = loaded.generate(asked)
            assert answer.text == expected["choices"][0]["message"]["content"], constraint
            assert answer.text.lstrip().startswith("{")
    finally:
        stock.close()


@pytest.fixture(scope="module")
def judge() -> Iterator[Backend]:
    """The bundled model as the automatic judge loads it, its rubric evaluated."""
    with open_backend(SMOLLM2, BackendOptions(n_ctx=JUDGE_N_CTX)) as backend:
        backend.warm(warm_up_request(load_suite().rubric.text()))
        yield backend


def judge_requests() -> list[GenerationRequest]:
    """The judge's requests for a few tips of two scenarios, one of them nonsense."""
    suite = load_suite()
    tips = [
        "Block 25 minutes for the quarterly report now, then call the dentist.",
        "Drink water.",
        "asdf qwer zxcv",
    ]
    return [
        judge_request(
            judge_messages(suite.rubric.text(), asdict(scenario), {"text": tip}),
            "schema",
            JUDGE_TEMPERATURE,
            JUDGE_SEED,
        )
        for scenario in suite.select_scenarios(2)
        for tip in tips
    ]


@pytest.fixture
def fills(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each answer asked in a form was read in it (False: decoded token by token)."""
    from tipbench.backends import _forms

    seen: list[bool] = []
    fill = _forms._Filler.fill

    def counted(self: _forms._Filler, prompt: list[int], form: AnswerForm) -> list[int] | None:
        answer = fill(self, prompt, form)
        seen.append(answer is not None)
        return answer

    monkeypatch.setattr(_forms._Filler, "fill", counted)
    return seen


@pytest.mark.slow
def test_the_judge_reads_its_answers_in_their_form_and_they_are_the_decoded_ones(
    judge: Backend, fills: list[bool]
) -> None:
    # One model call per score instead of one per token: the same text and token count as
    # decoding token by token under the schema, whatever was asked before.
    requests = judge_requests()
    decoded = [judge.generate(replace(each, form=None)) for each in requests]
    order = [*range(len(requests)), *reversed(range(len(requests)))]
    for i in order:
        answer, expected = judge.generate(requests[i]), decoded[i]
        assert answer.text == expected.text, i
        assert answer.completion_tokens == expected.completion_tokens
        assert parse_scores(answer.text) is not None
    assert fills == [True] * len(order)


@pytest.mark.slow
def test_a_form_the_model_does_not_write_is_decoded_token_by_token(
    judge: Backend, fills: list[bool]
) -> None:
    asked = judge_requests()[0]
    expected = judge.generate(replace(asked, form=None)).text
    form = score_form()
    unwritten = [
        ('{"relevance": ', *form[1:]),  # the model writes '{ "'
        (form[0], ("9",), *form[2:]),  # a value the schema does not allow
    ]
    for each in unwritten:
        assert judge.generate(replace(asked, form=each)).text == expected
    assert fills == [False, False]


@pytest.mark.slow
def test_unload_frees_the_model_and_a_second_load_works() -> None:
    backend = open_backend(SMOLLM2)
    with backend:
        assert backend._llm is not None  # type: ignore[attr-defined]
        before = backend.generate(request(max_tokens=16)).text
    assert backend._llm is None  # type: ignore[attr-defined]
    backend.unload()  # unloading twice is harmless

    backend.load()
    try:
        assert backend.generate(request(max_tokens=16)).text == before
    finally:
        backend.unload()
    assert backend._llm is None  # type: ignore[attr-defined]


def warm_then_ask_in(
    options: BackendOptions, warming: GenerationRequest, asked: GenerationRequest
) -> tuple[int, str]:
    """Tokens a fresh load's warm evaluated, and the answer to `asked` after it."""
    with open_backend(SMOLLM2, options) as backend:
        llm = backend._llm  # type: ignore[attr-defined]
        evaluated: list[int] = []
        evaluate = llm.eval
        llm.eval = lambda tokens: (evaluated.append(len(tokens)), evaluate(tokens))[1]
        backend.warm(warming)
        return sum(evaluated), backend.generate(asked).text


@pytest.mark.slow
def test_a_warm_is_restored_by_the_next_load_and_answers_stay_the_same() -> None:
    """The judge warms every load with its rubric. A later load warmed with the same request
    restores the earlier warm's state instead of evaluating the prompt again, and answers
    exactly as a load that evaluated it; another prompt is evaluated as before."""
    rubric = "Score tips for relevance, actionability and tone, each from 1 to 5. " * 40
    warm = GenerationRequest((("system", rubric), ("user", "")), 0.0, 1, 1)
    asked = replace(request(max_tokens=24), messages=(("system", rubric), request().messages[1]))

    def warm_then_ask(warming: GenerationRequest) -> tuple[int, str]:
        return warm_then_ask_in(BackendOptions(), warming, asked)

    WARMED.clear()
    evaluated, first = warm_then_ask(warm)
    assert evaluated > 600 and first  # the rubric, evaluated
    restored, again = warm_then_ask(warm)
    assert (restored, again) == (0, first)
    WARMED.clear()  # a process that never warmed with it
    assert warm_then_ask(warm) == (evaluated, first)
    other = replace(warm, messages=(("system", rubric + " Be strict."), ("user", "")))
    assert warm_then_ask(other)[0] > 600  # another prompt: evaluated, not restored


@pytest.mark.slow
def test_a_warm_kept_on_disk_is_restored_by_the_next_process(tmp_path: Path) -> None:
    """Given a folder, the last warm's state is written there too: a process that never
    warmed restores it and answers as one that evaluated the prompt; a damaged file is
    evaluated again; the folder keeps one state."""
    rubric = "Score tips for relevance, actionability and tone, each from 1 to 5. " * 40
    warm = GenerationRequest((("system", rubric), ("user", "")), 0.0, 1, 1)
    asked = replace(request(max_tokens=24), messages=(("system", rubric), request().messages[1]))
    on_disk = BackendOptions(warm_dir=tmp_path / "warmed")

    WARMED.clear()
    evaluated, first = warm_then_ask_in(on_disk, warm, asked)
    assert evaluated > 600 and first
    [kept] = (tmp_path / "warmed").iterdir()
    WARMED.clear()  # the next process
    assert warm_then_ask_in(on_disk, warm, asked) == (0, first)

    kept.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])
    WARMED.clear()
    assert warm_then_ask_in(on_disk, warm, asked) == (evaluated, first)
    other = replace(warm, messages=(("system", rubric + " Be strict."), ("user", "")))
    WARMED.clear()
    assert warm_then_ask_in(on_disk, other, asked)[0] > 600
    assert len(list((tmp_path / "warmed").iterdir())) == 1  # the last warm's only


@pytest.mark.slow
def test_a_prompt_longer_than_the_context_fails_the_generation() -> None:
    with open_backend(SMOLLM2, BackendOptions(n_ctx=128)) as backend:
        long = GenerationRequest((("user", "plan my week " * 200),), 0.0, 1, 16)
        with pytest.raises(GenerationFailed, match="context window"):
            backend.generate(long)


def test_unknown_bundled_name_is_not_found() -> None:
    with pytest.raises(ModelNotFound, match=r"llamacpp:nope: not a bundled model \(smollm2-135m"):
        open_backend(ModelSpec.parse("llamacpp:nope"))


def test_missing_gguf_file_is_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    with pytest.raises(ModelNotFound, match="no such file") as refused:
        open_backend(ModelSpec.parse(f"llamacpp:{missing}"))
    assert str(missing) in str(refused.value)


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "notes.gguf"
    fake.write_text("these are not weights")
    with pytest.raises(ModelNotFound, match="not a GGUF model file"):
        open_backend(ModelSpec.parse(f"llamacpp:{fake}")).describe()


@pytest.mark.slow
def test_a_truncated_model_file_fails_to_load_with_a_backend_error(
    smollm2_path: Path, tmp_path: Path
) -> None:
    """The header is intact (describe works) but the weights are cut off."""
    truncated = tmp_path / "truncated.gguf"
    with smollm2_path.open("rb") as src:
        truncated.write_bytes(src.read(5_000_000))
    backend = open_backend(ModelSpec.parse(f"llamacpp:{truncated}"))
    assert backend.describe().parameter_count == read_gguf_header(smollm2_path).parameter_count
    with pytest.raises(BackendError, match="cannot load"):
        backend.load()
    assert backend._llm is None  # type: ignore[attr-defined]


def llama_threads_of(backend: Backend) -> tuple[int, int]:
    """The (generation, prompt) threads llama.cpp runs the loaded model on now."""
    import llama_cpp

    ctx = backend._llm._ctx.ctx  # type: ignore[attr-defined]
    return llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx)


@pytest.mark.slow
def test_the_thread_count_is_used_for_generating_and_for_prompts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two models on two cores, one thread each: neither waits on a thread without a core."""
    monkeypatch.setenv(THREADS_ENV, "1")
    with open_backend(SMOLLM2) as backend:
        assert llama_threads_of(backend) == (1, 1)
        assert backend.threads == ThreadChoice(1, "variable", chosen=1)
    assert backend.threads is None  # unloaded


@pytest.mark.slow
def test_answers_do_not_depend_on_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count follows the machine, so it must not change what the model writes:
    llama.cpp computes each value on one thread, whichever thread that is."""
    asked = [request(seed=5, max_tokens=24), replace(request(seed=6, max_tokens=48),
             json_schema=tips_schema(2))]  # fmt: skip
    answers = []
    for threads in ("1", "2"):
        monkeypatch.setenv(THREADS_ENV, threads)
        with open_backend(SMOLLM2) as backend:
            answers.append([backend.generate(each).text for each in asked])
    assert answers[0] == answers[1]


@pytest.mark.slow
def test_a_loaded_model_gives_way_to_one_loaded_after_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Chosen on an idle 2-core machine, the model runs on both cores; a model that another
    process loads beside it claims one, and from its next request this one runs on the
    other only, until that model unloads."""
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(Machine, "usable_cores", lambda self, cpus: 2)
    monkeypatch.setattr(CpuSample, "others", lambda self, at_least_s=0.0: 0.0)
    backend = open_backend(SMOLLM2)
    backend._claims = ThreadClaims(tmp_path)  # type: ignore[attr-defined]
    beside = ThreadClaims(tmp_path, pid=os.getppid())  # alive: the process that started this
    with backend:
        assert llama_threads_of(backend) == (2, 2)
        assert (tmp_path / str(os.getpid())).read_text().split()[0] == "2"
        beside.claim(1)
        first = backend.generate(request(max_tokens=8)).text
        assert llama_threads_of(backend) == (1, 1)
        assert backend.threads is not None and backend.threads.threads == 1
        assert (tmp_path / str(os.getpid())).read_text().split()[0] == "1"
        beside.release()
        assert backend.generate(request(max_tokens=8)).text == first
        assert llama_threads_of(backend) == (2, 2)
    assert not (tmp_path / str(os.getpid())).exists()  # the claim ends with the load


@pytest.mark.parametrize("value", ["two", "0", "-1"])
def test_a_thread_count_that_is_not_a_count_fails_the_load_in_one_line(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(THREADS_ENV, value)
    backend = open_backend(SMOLLM2)
    with pytest.raises(BackendError) as refused:
        backend.load()
    assert str(refused.value) == (
        f"llamacpp:smollm2-135m: {THREADS_ENV} must be a number of threads (1 or more), "
        f"not {value!r}"
    )
    assert backend._llm is None  # type: ignore[attr-defined]
