"""The automatic judge tier on real MLflow stores: the embedded SmolLM2 judge, and Ollama.

Real Ollama cannot be installed here, so the Ollama judge runs against
`support.ollama_server.FakeOllama`, a protocol server that follows Ollama's documented native
API and is itself checked with the official `ollama` client (`tests/support`). For a judge's
score schema it answers deterministic in-range integers; it records every load, unload and
chat request, and injects faults (HTTP errors, unparsable answers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.entities import Run

from support.cli import assert_one_line_error, tipbench
from support.judged_runs import AUTO_JUDGE, JudgedCell, uniform, write_cells
from support.ollama_server import GARBAGE, FakeOllama, ModelEntry
from tipbench import ConfigError, ModelTooLarge
from tipbench.auto_judge import (
    AutoJudgeConfig,
    AutoJudgeResult,
    auto_judge,
    parse_scores,
    score_schema,
)
from tipbench.auto_judge._flags import constant_score_warnings
from tipbench.auto_judge._prompt import JudgeAnswer
from tipbench.backends import GenerationRequest, RetryPolicy
from tipbench.backends._llamacpp import LlamaCppBackend
from tipbench.backends._threads import THREADS_ENV
from tipbench.cli import cli
from tipbench.collect import CollectConfig, collect
from tipbench.suite import load_suite
from tipbench.tracking import AUTO_ANSWERS_FILE, CELL_RUNS, Scores, TrackingStore, record_scores

WRITER, JUDGE, BIG = "qwen2.5:0.5b", "gemma3:1b", "llama3.1:8b"
MODELS = {
    WRITER: ModelEntry(parameter_count=494_032_768, parameter_size="494.03M", family="qwen2"),
    JUDGE: ModelEntry(parameter_count=999_885_952, parameter_size="999.89M", family="gemma3"),
    BIG: ModelEntry(parameter_count=8_030_261_248, parameter_size="8.0B"),
}
FAST_RETRY = RetryPolicy(attempts=3, backoff_s=0.01)
AUTO_METRICS = {
    f"auto_{name}"
    for name in ("relevance", "actionability", "tone", "format_ok", "overlong", "composite")
}
HUMAN_METRICS = {"relevance", "actionability", "tone", "format_ok", "overlong", "composite"}


def cell_runs(uri: str, experiment: str) -> dict[str, Run]:
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs = client.search_runs([found.experiment_id], CELL_RUNS)
    return {run.info.run_name: run for run in runs}


def candidate_ids(uri: str, run: Run) -> list[str]:
    with_path = MlflowClient(uri).download_artifacts(run.info.run_id, "candidates.json")
    return [c["id"] for c in json.loads(Path(with_path).read_text())["candidates"]]


def assert_auto_judged(uri: str, run: Run, judged_by: str) -> dict[str, Scores]:
    """The scores contract of the auto tier, consistent across metrics, tag and artifact."""
    tags, metrics = run.data.tags, run.data.metrics
    assert tags["auto_judged_by"] == judged_by
    assert tags["auto_judged_at"]
    assert tags["auto_judge_temperature"] == "0.0"
    assert "auto_judge_error" not in tags
    scores = {cid: Scores(*values) for cid, values in json.loads(tags["auto_scores"]).items()}
    assert sorted(scores) == sorted(candidate_ids(uri, run))
    assert set(metrics) >= AUTO_METRICS
    composites = [s.composite for s in scores.values()]
    assert metrics["auto_composite"] == pytest.approx(sum(composites) / len(composites))
    assert 2 <= metrics["auto_composite"] <= 17
    for name in ("relevance", "actionability", "tone"):
        assert 1 <= metrics[f"auto_{name}"] <= 5
    return scores


# -- the real embedded judge (SmolLM2-135M through llama.cpp) -----------------------------


@pytest.mark.slow
def test_embedded_judge_scores_a_real_grid_and_resumes(
    sqlite_uri: str, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = CollectConfig(
        models=["llamacpp:smollm2-135m"], prompts=["v1"], n_scenarios=1, n_tips=2,
        max_tokens=96, experiment=experiment,
    )  # fmt: skip
    assert collect(grid, tracking_uri=sqlite_uri).exit_code == 0
    requests: list[GenerationRequest] = []
    loads: list[str] = []
    generate, load = LlamaCppBackend.generate, LlamaCppBackend.load

    def spy_generate(self: LlamaCppBackend, request: GenerationRequest) -> Any:
        requests.append(request)
        return generate(self, request)

    def spy_load(self: LlamaCppBackend) -> None:
        loads.append(str(self.spec))
        load(self)

    monkeypatch.setattr(LlamaCppBackend, "generate", spy_generate)
    monkeypatch.setattr(LlamaCppBackend, "load", spy_load)
    monkeypatch.setenv(THREADS_ENV, "1")

    result = auto_judge(TrackingStore(sqlite_uri), AutoJudgeConfig(experiment=experiment))

    assert (result.exit_code, result.judged, result.skipped, result.failed) == (0, 1, 0, [])
    assert loads == ["llamacpp:smollm2-135m"] and result.model_loads == 1
    ((name, run),) = cell_runs(sqlite_uri, experiment).items()
    scores = assert_auto_judged(sqlite_uri, run, "llamacpp:smollm2-135m")
    assert len(requests) >= len(scores) == result.candidates
    first = requests[0]
    assert (first.temperature, first.seed, first.json_schema) == (0.0, 42, score_schema())
    assert first.messages[0][1].startswith(load_suite().rubric.text().strip())
    assert first.messages[1][1].count("# Candidate tip") == 1
    # the rules own the flags: the recorded ones are collect's; under the score schema the
    # judge's answer ends after the criteria, so it gives no flags of its own
    path = MlflowClient(sqlite_uri).download_artifacts(run.info.run_id, "candidates.json")
    rules = {c["id"]: c for c in json.loads(Path(path).read_text())["candidates"]}
    answers = raw_answers(sqlite_uri, run)["candidates"]
    assert "auto_judge_flags" not in run.data.tags
    assert run.data.tags["auto_judge_llama_threads"] == "1"  # what the judge ran on
    for cid, recorded in scores.items():
        assert (recorded.format_ok, recorded.overlong) == (
            rules[cid]["format_ok"], rules[cid]["overlong"],
        )  # fmt: skip
        answered = parse_scores(answers[cid][-1]["text"])
        assert answered is not None and answered.own_flags is None
        assert set(json.loads(answers[cid][-1]["text"])) == {"relevance", "actionability", "tone"}
        assert recorded.relevance == answered.relevance and recorded.tone == answered.tone
    # the human tier is untouched: still pending, no human metrics
    assert run.data.tags["judge_pending"] == "true"
    assert not HUMAN_METRICS & set(run.data.metrics)
    assert not {"judged_by", "judged_at", "human_scores"} & set(run.data.tags)

    again = auto_judge(TrackingStore(sqlite_uri), AutoJudgeConfig(experiment=experiment))
    assert (again.exit_code, again.judged, again.skipped, again.model_loads) == (0, 0, 1, 0)
    assert len(loads) == 1 and len(requests) == result.candidates + len(result.failed)
    assert cell_runs(sqlite_uri, experiment)[name].data.tags["auto_scores_version"] == "1"


# -- an Ollama judge (FakeOllama) ---------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(MODELS) as fake:
        yield fake


@pytest.fixture
def grid(server: FakeOllama, sqlite_uri: str, experiment: str) -> dict[str, Run]:
    """Three cells of two candidates each, collected on Ollama."""
    config = CollectConfig(
        models=[f"ollama:{WRITER}"], prompts=["v1"], n_scenarios=3, n_tips=2,
        ollama_url=server.url, experiment=experiment,
    )  # fmt: skip
    assert collect(config, tracking_uri=sqlite_uri).exit_code == 0
    return cell_runs(sqlite_uri, experiment)


def judge(server: FakeOllama, uri: str, experiment: str, **options: Any) -> AutoJudgeResult:
    values = {"judge_model": f"ollama:{JUDGE}", "ollama_url": server.url} | options
    config = AutoJudgeConfig(experiment=experiment, **values)
    return auto_judge(TrackingStore(uri), config, retry=FAST_RETRY)


def judge_chats(server: FakeOllama) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == JUDGE and r.get("messages")]


def test_ollama_judge_loads_once_scores_everything_and_unloads(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    human_run = next(iter(grid.values()))
    human = {cid: Scores(4, 3, 5, 1, 0) for cid in candidate_ids(sqlite_uri, human_run)}
    record_scores(MlflowClient(sqlite_uri), human_run.info.run_id, "human", human, "alice", 0)
    before = cell_runs(sqlite_uri, experiment)[human_run.info.run_name].data
    collected = len(server.events)

    result = judge(server, sqlite_uri, experiment)

    assert (result.exit_code, result.judged, result.candidates) == (0, 3, 6)
    events = server.events[collected:]
    assert events == [("load", JUDGE)] + [("chat", JUDGE)] * 6 + [("unload", JUDGE)]
    assert server.max_resident == 1 and server.resident == set()
    chats = judge_chats(server)
    assert all(c["options"]["temperature"] == 0 and c["options"]["seed"] == 42 for c in chats)
    assert all(c["format"] == score_schema() for c in chats)
    assert len({c["messages"][0]["content"] for c in chats}) == 1  # one shared rubric prefix
    assert len({c["messages"][1]["content"] for c in chats}) == 6
    runs = cell_runs(sqlite_uri, experiment)
    for run in runs.values():
        assert_auto_judged(sqlite_uri, run, f"ollama:{JUDGE}")
    after = runs[human_run.info.run_name].data
    for name in ("human_scores", "judged_by", "judged_at", "judge_pending", "judge_kind"):
        assert after.tags[name] == before.tags[name]
    assert {k: after.metrics[k] for k in HUMAN_METRICS} == {
        k: before.metrics[k] for k in HUMAN_METRICS
    }


def test_auto_mode_judges_with_the_score_schema_and_says_so(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    result = judge(server, sqlite_uri, experiment)  # structured="auto", the default

    assert result.exit_code == 0
    assert all(c["format"] == score_schema() for c in judge_chats(server))
    runs = cell_runs(sqlite_uri, experiment).values()
    assert {run.data.tags["auto_judge_structured"] for run in runs} == {"schema"}


def test_off_mode_sends_no_format_and_reads_free_answers(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    """Unconstrained, the fake answers a numbered list (no scores): every candidate is
    retried, then its run is recorded as failed, and the mode is visible in the requests."""
    result = judge(server, sqlite_uri, experiment, structured="off")

    chats = judge_chats(server)
    assert chats and all(c.get("format") is None for c in chats)
    assert (result.judged, len(result.failed)) == (0, 3)
    assert all("unparsable judge output" in error for _, error in result.failed)


def test_server_errors_are_retried(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    server.fail_next(500)
    server.fail_next(503)
    result = judge(server, sqlite_uri, experiment)
    assert (result.exit_code, result.judged, result.failed) == (0, 3, [])
    assert len(judge_chats(server)) == 6 + 2


def test_unparsable_answers_are_retried_then_recorded_and_resumed(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    server.garbage_next(3)
    result = judge(server, sqlite_uri, experiment)

    assert (result.exit_code, result.judged, len(result.failed)) == (1, 2, 1)
    failed_name, error = result.failed[0]
    assert "unparsable judge output" in error
    retries = judge_chats(server)[:3]
    assert [(r["options"]["temperature"], r["options"]["seed"]) for r in retries] == [
        (0, 42), (0.3, 43), (0.3, 44),
    ]  # fmt: skip
    runs = cell_runs(sqlite_uri, experiment)
    failed = runs.pop(failed_name)
    assert "unparsable judge output" in failed.data.tags["auto_judge_error"]
    raw = raw_answers(sqlite_uri, failed)  # why it failed: the answers as the model gave them
    assert raw["judge_model"] == f"ollama:{JUDGE}"
    assert [(a["text"], a["temperature"]) for a in raw["candidates"]["c1"]] == [
        (GARBAGE, 0), (GARBAGE, 0.3), (GARBAGE, 0.3),
    ]  # fmt: skip
    assert "auto_scores" not in failed.data.tags and not AUTO_METRICS & set(failed.data.metrics)
    for run in runs.values():
        assert_auto_judged(sqlite_uri, run, f"ollama:{JUDGE}")

    server.garbage_next(1)  # the re-run resamples once, and says so
    again = judge(server, sqlite_uri, experiment)
    assert (again.exit_code, again.judged, again.skipped, again.failed) == (0, 1, 2, [])
    rerun = cell_runs(sqlite_uri, experiment)[failed_name]
    assert_auto_judged(sqlite_uri, rerun, f"ollama:{JUDGE}")
    assert json.loads(rerun.data.tags["auto_judge_resampled"]) == {"c1": [0.3, 43]}
    raw = raw_answers(sqlite_uri, rerun)
    assert raw["candidates"]["c1"][0]["text"] == GARBAGE
    assert parse_scores(raw["candidates"]["c1"][1]["text"]) is not None
    assert len(raw["candidates"]["c2"]) == 1


def raw_answers(uri: str, run: Run) -> dict[str, Any]:
    client = MlflowClient(uri)
    path = client.download_artifacts(run.info.run_id, AUTO_ANSWERS_FILE)
    data: dict[str, Any] = json.loads(Path(path).read_text())
    return data


def test_a_judge_whose_scores_never_change_is_warned_about(
    sqlite_uri: str, experiment: str
) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    varied = {"c1": Scores(4, 1, 5, 1, 0), "c2": Scores(2, 1, 1, 1, 0)}
    cells = [
        JudgedCell("ollama:qwen2.5:1.5b", "v1", s.id, auto=uniform(5, n=3))
        for s in load_suite().scenarios[:2]
    ]
    write_cells(store.client, experiment_id, cells)
    runs = store.cell_runs(experiment_id, judgeable=True)

    assert constant_score_warnings(runs) == [
        f"judge {AUTO_JUDGE} gave all 6 candidates relevance 1, actionability 1, tone 1: "
        "its scores cannot tell them apart"
    ]
    write_cells(
        store.client,
        experiment_id,
        [JudgedCell("ollama:qwen2.5:1.5b", "v2-mentor", "student-morning", auto=varied)],
    )
    assert constant_score_warnings(store.cell_runs(experiment_id, judgeable=True)) == [
        f"judge {AUTO_JUDGE} gave all 8 candidates actionability 1: "
        "its scores cannot tell them apart"
    ]


def test_the_constant_scores_warning_covers_the_judges_own_flags(
    sqlite_uri: str, experiment: str
) -> None:
    """The issue's SmolLM2 answered format_ok 0 for every candidate: its flags are not
    recorded (the rules' are), but a judge that cannot see them is still worth a warning."""
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    varied = {"c1": Scores(4, 1, 5, 1, 0), "c2": Scores(2, 3, 1, 1, 1), "c3": Scores(3, 2, 4, 0, 0)}
    cells = [
        JudgedCell("ollama:qwen2.5:1.5b", "v1", s.id, auto=varied)
        for s in load_suite().scenarios[:2]
    ]
    write_cells(store.client, experiment_id, cells)
    own = json.dumps({"c1": [0, 0], "c2": [0, 1], "c3": [0, 0]})  # format_ok 0 every time
    for run in store.cell_runs(experiment_id, judgeable=True):
        store.client.set_tag(run.run_id, "auto_judge_flags", own)

    assert constant_score_warnings(store.cell_runs(experiment_id, judgeable=True)) == [
        f"judge {AUTO_JUDGE} answered format_ok 0 for all 6 candidates, where the rules give 1 "
        "for 4: it cannot tell them apart (the rules' flags are kept)"
    ]  # overlong varies with the rules: no warning for it


def test_rejudge_writes_a_new_version(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    assert judge(server, sqlite_uri, experiment).judged == 3
    assert judge(server, sqlite_uri, experiment).judged == 0
    assert judge(server, sqlite_uri, experiment, rejudge=True).judged == 3
    for run in cell_runs(sqlite_uri, experiment).values():
        assert run.data.tags["auto_scores_version"] == "2"


def test_judge_over_the_size_limit_is_refused_before_any_chat(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    with pytest.raises(ModelTooLarge, match=r"8\.03B parameters"):
        judge(server, sqlite_uri, experiment, judge_model=f"ollama:{BIG}")
    assert not [event for event in server.events if event[1] == BIG]
    assert not any("auto_scores" in run.data.tags for run in grid.values())


def test_runs_of_another_rubric_are_refused_before_loading(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    run = next(iter(grid.values()))
    MlflowClient(sqlite_uri).set_tag(run.info.run_id, "rubric", "tip-v9")
    with pytest.raises(ConfigError, match="collected under rubric 'tip-v9'"):
        judge(server, sqlite_uri, experiment)
    assert not [event for event in server.events if event[1] == JUDGE]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"relevance": 4, "actionability": 3, "tone": 5, "format_ok": 1, "overlong": 0}',
         JudgeAnswer(4, 3, 5, 1, 0)),
        ('```json\n{"relevance": "2", "actionability": 1.0, "tone": 3, "format_ok": 0,'
         ' "overlong": 1, "why": "vague"}\n```', JudgeAnswer(2, 1, 3, 0, 1)),
        ('Scores: {"relevance": 6, "actionability": 3, "tone": 5, "format_ok": 1, "overlong": 0}',
         None),
        ('{"relevance": 4, "actionability": 3, "tone": 5, "format_ok": true, "overlong": 0}',
         None),
        ('{"relevance": 4, "actionability": 3, "tone": 5}', JudgeAnswer(4, 3, 5)),
        ('{"relevance": 4, "actionability": 3, "tone": 5, "format_ok": 1}', JudgeAnswer(4, 3, 5)),
        ('{"relevance": 4, "actionability": 3}', None),
        ('{"relevance": 4, "actionability": 3, "tone": 5, "format_', None),
        ("I would rate this tip highly.", None),
    ],
)  # fmt: skip
def test_parse_scores_accepts_only_complete_in_range_answers(
    text: str, expected: JudgeAnswer | None
) -> None:
    """Every criterion in range, and the flags too where the judge gives them (both, or
    they do not count as given: the rules' are recorded anyway)."""
    assert parse_scores(text) == expected


# -- the command line ---------------------------------------------------------------------


@pytest.mark.slow
def test_cli_judges_an_experiment_with_the_embedded_model(
    server: FakeOllama, sqlite_uri: str, experiment: str
) -> None:
    config = CollectConfig(
        models=[f"ollama:{WRITER}"], prompts=["v1"], n_scenarios=1, n_tips=2,
        ollama_url=server.url, experiment=experiment,
    )  # fmt: skip
    assert collect(config, tracking_uri=sqlite_uri).exit_code == 0

    result = tipbench("judge", "auto", "--experiment", experiment, "--tracking-uri", sqlite_uri)

    assert result.returncode == 0, result.stderr
    assert "1 run: 0 already auto-judged, 1 judged (2 candidates), 0 failed" in result.stdout
    assert "judge model: llamacpp:smollm2-135m (loaded 1×)" in result.stdout
    (run,) = cell_runs(sqlite_uri, experiment).values()
    assert_auto_judged(sqlite_uri, run, "llamacpp:smollm2-135m")


def test_cli_bad_input_is_one_line_and_writes_nothing(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    store = ("--tracking-uri", sqlite_uri)
    missing = tipbench("judge", "auto", "--experiment", "nope", *store)
    assert_one_line_error(missing, "no experiment 'nope'")
    unknown = tipbench(
        "judge", "auto", "--experiment", experiment, "--judge-model", "llamacpp:nope", *store
    )
    assert_one_line_error(unknown, "llamacpp:nope", "not a bundled model")
    too_big = tipbench(
        "judge", "auto", "--experiment", experiment, "--judge-model", f"ollama:{BIG}",
        "--ollama-url", server.url, *store,
    )  # fmt: skip
    assert_one_line_error(too_big, "8.03B parameters", "limit of 4B")
    negative = tipbench("judge", "auto", "--experiment", experiment, "--max-model-b", "-1", *store)
    assert_one_line_error(negative, "--max-model-b: Input should be greater than 0")
    assert not any(
        "auto" in tag for run in cell_runs(sqlite_uri, experiment).values() for tag in run.data.tags
    )


def test_the_rules_own_the_flags(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    """The tier records the rules' flags and the judge's criteria. Under the score schema
    the judge answers the criteria alone (its answer ends before the flags the prompt
    names), so it keeps no flags of its own (`auto_judge_flags`)."""
    result = judge(server, sqlite_uri, experiment)
    assert result.exit_code == 0
    for run in cell_runs(sqlite_uri, experiment).values():
        recorded = assert_auto_judged(sqlite_uri, run, f"ollama:{JUDGE}")
        path = MlflowClient(sqlite_uri).download_artifacts(run.info.run_id, "candidates.json")
        rules = {c["id"]: c for c in json.loads(Path(path).read_text())["candidates"]}
        answers = raw_answers(sqlite_uri, run)["candidates"]
        assert "auto_judge_flags" not in run.data.tags
        for cid, scores in recorded.items():
            answered = parse_scores(answers[cid][-1]["text"])
            assert answered is not None and answered.own_flags is None
            assert (scores.format_ok, scores.overlong) == (
                rules[cid]["format_ok"], rules[cid]["overlong"],
            )  # fmt: skip
            assert (scores.relevance, scores.actionability, scores.tone) == (
                answered.relevance, answered.actionability, answered.tone,
            )  # the criteria are the judge's  # fmt: skip
    found = MlflowClient(sqlite_uri).get_experiment_by_name(experiment)
    assert found is not None and int(found.tags["tipbench.updated_at"]) > 0  # "Last update"


def test_cli_judge_auto_refreshes_the_logged_leaderboard(
    server: FakeOllama, grid: dict[str, Run], sqlite_uri: str, experiment: str
) -> None:
    """A run the first pass could not judge is judged by `tipbench judge auto` later: the
    leaderboard logged in between is rewritten with it."""
    server.garbage_next(3)  # the first run's first candidate: every attempt unparsable
    assert judge(server, sqlite_uri, experiment).judged == 2
    store = ("--experiment", experiment, "--tracking-uri", sqlite_uri)
    logged = CliRunner().invoke(cli, ["compare", *store, "--log"])
    assert logged.exit_code == 0, logged.output
    (before,) = leaderboard_runs(sqlite_uri, experiment)
    assert before.data.metrics["auto_judged_runs"] == 2

    judge_options = ("--judge-model", f"ollama:{JUDGE}", "--ollama-url", server.url)
    result = CliRunner().invoke(cli, ["judge", "auto", *store, *judge_options])

    assert result.exit_code == 0, result.output
    assert f"refreshed the logged leaderboard (run {before.info.run_id})" in result.output
    (after,) = leaderboard_runs(sqlite_uri, experiment)
    assert after.data.metrics["auto_judged_runs"] == 3
    assert after.data.tags["leaderboard_version"] == "2"


def leaderboard_runs(uri: str, experiment: str) -> list[Run]:
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return client.search_runs([found.experiment_id], "tags.`tipbench.kind` = 'leaderboard'")
