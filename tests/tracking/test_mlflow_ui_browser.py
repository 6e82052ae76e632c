"""MLflow's own GenAI views show tipbench's work, checked in a real browser: Debian's Chromium
driven by Playwright against a real `mlflow server` on loopback, after a small real
benchmark (collect with the embedded model, the automatic judge, a human judge file).

The tests assert what a user sees (text on the page). MLflow 3.17's UI is a React app that
loads its data after the page, so every check waits generously. Screenshots go to
test-artifacts/mlflow-ui/. The one test that changes scores (feedback given in MLflow's
trace view) works on a server, a store and a home of its own (MLflow's prompt registry and
tipbench's response cache are shared across experiments), so the tests pass in any order.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.entities import Feedback, Trace

from support.browser import chromium
from support.servers import MlflowServer
from tipbench.suite import SCORE_NAMES
from tipbench.tracking import CANDIDATES_FILE, CELL_RUNS, candidate_span_id

playwright_sync = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Locator, Page, expect  # noqa: E402
from playwright.sync_api import Error as PlaywrightError  # noqa: E402

pytestmark = pytest.mark.slow

SHOTS = Path(__file__).parents[2] / "test-artifacts" / "mlflow-ui"
TIMEOUT_MS = 60_000  # a loaded 2-core machine renders MLflow's app slowly at times
expect.set_options(timeout=TIMEOUT_MS)
EXPERIMENT = "tip-bench-ui"
FEEDBACK_EXPERIMENT = "tip-bench-ui-feedback"  # on its own server: changed by one test
MODEL = "llamacpp:smollm2-135m"
HUMAN = "alice"
RULES = "rules:tip-v1"
#: The human's scores per candidate id: relevance, actionability, tone.
HUMAN_SCORES = {"c1": (4, 3, 5), "c2": (2, 2, 4)}
#: The trace drawer (MLflow marks it aria-hidden while a hint pops up: found by its id).
DRAWER = '[data-component-id="mlflow.evaluations_review.modal"]'
ADD_FEEDBACK = '[data-component-id="shared.model-trace-explorer.add-feedback"]'
NEW_FEEDBACK = '[data-component-id="shared.model-trace-explorer.assessment-{}"]'
ASSISTANT_CLOSE = '[data-component-id="mlflow.assistant.chat_panel.close"]'
#: MLflow's first-visit guidance on the Traces list ("Detect Issues in Your Traces"): a modal
#: popover a user dismisses with "Got it"; it covers the trace drawer until then.
HINT_DONE = '[data-component-id="mlflow.detect_issues.guidance.got_it"]'
DETECT_ISSUES = 'button[aria-label="Detect issues in traces"]'  # what the guidance points at


@dataclass(frozen=True)
class Cell:
    name: str
    run_id: str
    trace: Trace
    candidates: dict[str, str]  # text by candidate id


@dataclass(frozen=True)
class Bench:
    url: str
    experiment_id: str
    cells: list[Cell]  # in prompt order: v1, v2-mentor
    traces_url: str  # where `collect` says the candidates and scores are
    home: Path  # TIPBENCH_HOME of the commands

    def assessments(self) -> list[Feedback]:
        """Every valid feedback on the experiment's traces."""
        return [
            a
            for cell in self.cells
            for a in cell.trace.info.assessments
            if isinstance(a, Feedback) and a.valid is not False
        ]


def tipbench(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    result = subprocess.run(
        [sys.executable, "-m", "tipbench.cli", *args],
        capture_output=True, text=True, timeout=1800, env=env | {"TIPBENCH_HOME": str(home)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@dataclass(frozen=True)
class Served:
    """The `mlflow server` of the module, and the folders its benchmarks use."""

    url: str
    work: Path
    home: Path  # TIPBENCH_HOME of the commands


def judged_bench(served: Served, experiment: str, prompts: str) -> Bench:
    """One cell per prompt (one scenario, two tips each) collected with the embedded model
    into `experiment`, judged by it, then by a human through a judge file."""
    home, work = served.home, served.work / experiment
    work.mkdir()
    where = ("--experiment", experiment, "--tracking-uri", served.url)
    collected = tipbench(
        home, "collect", *where, "--models", MODEL, "--prompts", prompts,
        "--n-scenarios", "1", "--n-tips", "2",
    )  # fmt: skip
    tipbench(home, "judge", "auto", *where, "--judge-model", MODEL)
    judge_file = work / "judge.json"
    tipbench(home, "judge", "export", *where, "--out", str(judge_file))
    document = json.loads(judge_file.read_text(encoding="utf-8"))
    for item in document["items"]:
        for candidate in item["candidates"]:
            scores = HUMAN_SCORES[candidate["id"]]
            candidate["scores"].update(
                zip(("relevance", "actionability", "tone"), scores, strict=True)
            )
    judge_file.write_text(json.dumps(document), encoding="utf-8")
    tipbench(home, "judge", "apply", str(judge_file), *where, "--judge", HUMAN)

    client = MlflowClient(served.url)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    cells = []
    runs = client.search_runs([found.experiment_id], CELL_RUNS)
    for run in sorted(runs, key=lambda r: r.data.params["prompt_version"]):
        path = client.download_artifacts(run.info.run_id, CANDIDATES_FILE, str(work))
        candidates = json.loads(Path(path).read_text(encoding="utf-8"))["candidates"]
        cells.append(
            Cell(
                run.info.run_name,
                run.info.run_id,
                client.get_trace(run.data.tags["trace_id"]),
                {c["id"]: c["text"] for c in candidates},
            )
        )
    assert len(cells) == len(prompts.split(","))
    (traces_url,) = re.findall(r"^its candidates and scores: (\S+)$", collected, re.M)
    return Bench(served.url, found.experiment_id, cells, traces_url, home)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("mlflow-ui")
    with MlflowServer(work / "server") as server:
        yield Served(server.url, work, work / "home")


@pytest.fixture(scope="module")
def bench(served: Served) -> Bench:
    """Two cells (prompts v1 and v2-mentor) that the tests read and none changes."""
    return judged_bench(served, EXPERIMENT, "v1,v2-mentor")


@pytest.fixture(scope="module")
def feedback_bench(served: Served) -> Bench:
    """One cell (prompt v1) in an experiment of its own, for the test that gives it
    feedback; made when that test, the module's last, starts (the prompts page test has
    seen the registry by then). Its generation comes from the response cache."""
    return judged_bench(served, FEEDBACK_EXPERIMENT, "v1")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@contextlib.contextmanager
def opened(browser: Browser, url: str) -> Iterator[Page]:
    # MLflow's own scripts log errors of their optional services (the assistant, the
    # gateway) to the console: the tests judge the page by what it shows.
    context = browser.new_context(base_url=url, viewport={"width": 1920, "height": 1200})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        # whenever the guidance shows in the way of what the test does, dismiss it as a
        # user does (the trace tests dismiss it first of all: see open_trace)
        page.add_locator_handler(page.locator(HINT_DONE), lambda hint: hint.click())
        yield page
    finally:
        context.close()


@pytest.fixture
def page(browser: Browser, served: Served) -> Iterator[Page]:
    with opened(browser, served.url) as new:
        yield new


def shot(page: Page, name: str) -> None:
    """A screenshot of what the test saw, without MLflow's assistant panel and hint over it."""
    for control in (HINT_DONE, ASSISTANT_CLOSE):  # the hint first: it blocks the page
        found = page.locator(control)
        if found.count() and found.first.is_visible():
            # (under the trace drawer the hint cannot be clicked: the shot shows it all the same)
            with contextlib.suppress(PlaywrightError):
                found.first.click(timeout=3_000)
    page.wait_for_timeout(500)  # the layout settles
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_trace(page: Page, bench: Bench, trace_id: str) -> Locator:
    """The trace's drawer, opened as a user comes to it: from the Traces list, where MLflow
    first shows its guidance (dismissed with "Got it": it renders with the button it points
    at, and over the drawer it could no longer be clicked). The click is dispatched, not an
    action: an action on the hint would first run the page's handler, which dismisses the
    hint, and then wait for the hint it just dismissed."""
    page.goto(f"/#/experiments/{bench.experiment_id}/traces")
    expect(page.locator(DETECT_ISSUES)).to_be_visible()
    hint = page.locator(HINT_DONE)
    if hint.is_visible():
        with contextlib.suppress(PlaywrightError):  # (the handler may have won the race)
            hint.dispatch_event("click", timeout=3_000)
    expect(hint).to_be_hidden()
    page.goto(f"/#/experiments/{bench.experiment_id}/traces?selectedEvaluationId={trace_id}")
    return page.locator(DRAWER)


def preview(text: str) -> str:
    """How a candidate's text starts in the Traces list's JSON preview of the outputs."""
    return json.dumps(text, ensure_ascii=False)[1:31]


def test_the_experiment_opens_on_its_genai_overview(page: Page, bench: Bench) -> None:
    page.goto(f"/#/experiments/{bench.experiment_id}")
    body = page.locator("body")
    # the GenAI overview, not the runs table of "Model training": its usage charts count
    # the cells' traces
    for tab in ("Usage", "Quality", "Tool calls"):
        expect(page.get_by_text(tab, exact=True).first).to_be_visible()
    shows(page, rf"\nTraces\n{len(bench.cells)}\n")
    expect(body).to_contain_text("Latency")
    # what a runs-only experiment shows there (the issue's empty overview)
    expect(body).not_to_contain_text("No data available for the selected time range")
    shot(page, "overview-usage")


def test_the_overviews_quality_charts_show_every_score(page: Page, bench: Bench) -> None:
    page.goto(f"/#/experiments/{bench.experiment_id}/overview/quality")
    body = page.locator("body")
    expect(body).to_contain_text("Quality Summary")
    counts: dict[str, int] = {}
    for assessment in bench.assessments():
        counts[assessment.name] = counts.get(assessment.name, 0) + 1
    assert set(counts) == {*SCORE_NAMES, "composite"}
    for name, count in counts.items():  # the summary's row: scorer, total count, average
        shows(page, rf"\n{name}\s+{count}\s+\d+\.\d\d\n")
    for name in counts:  # a chart per score
        shows(page, rf"\n{name}\n\d+\.\d\d avg score\n")
    expect(body).not_to_contain_text("No data")
    shot(page, "overview-quality")


def test_the_traces_view_lists_the_cells_with_their_assessments(page: Page, bench: Bench) -> None:
    assert bench.traces_url == f"{bench.url}/#/experiments/{bench.experiment_id}/traces"
    page.goto(bench.traces_url)  # the address collect printed
    body = page.locator("body")
    for name in (*SCORE_NAMES, "composite"):  # a column per assessment
        expect(page.get_by_text(name, exact=True).first).to_be_visible()
    for cell in bench.cells:  # a row per cell, its candidates as the output
        expect(body).to_contain_text(preview(cell.candidates["c1"]))
    expect(body).to_contain_text(f"model: {MODEL}")
    expect(body).to_contain_text(f"{len(bench.cells)} of {len(bench.cells)}")
    shot(page, "traces")


def test_a_trace_shows_the_candidates_and_their_scores_by_source(page: Page, bench: Bench) -> None:
    cell = bench.cells[0]
    trace_id = cell.trace.info.trace_id
    drawer = open_trace(page, bench, trace_id)
    # the request span is named by its generation path ("request 1: schema" or "…: free"),
    # which the model's probe chooses on each machine: the stored trace names it
    (request,) = [s.name for s in cell.trace.data.spans if s.name.startswith("request 1: ")]
    for span in (cell.name, request, "c1", "c2"):
        expect(drawer.get_by_text(span, exact=True).first).to_be_visible()

    drawer.get_by_text("c1", exact=True).first.click()
    expect(drawer).to_contain_text(cell.candidates["c1"])
    drawer.locator(
        '[data-component-id="shared.model-trace-explorer.assessments-pane-toggle"]'
    ).click()
    on_c1 = [a for a in bench.assessments() if a.span_id == candidate_span_id(trace_id, "c1")]
    expect(drawer).to_contain_text(f"Feedback ({len(on_c1)})")
    expand_every_assessment(drawer)
    # each score with its value and who gave it: the human, the judge model, the rules
    relevance, actionability, tone = HUMAN_SCORES["c1"]
    for value in (relevance, actionability, tone):
        shows(drawer, rf"\n{value}\n{HUMAN}\n")
    for a in on_c1:
        source = a.source.source_id
        assert source in (HUMAN, MODEL, RULES), source
        shows(drawer, rf"\n{_shown(a.value)}\n{re.escape(source)}\n")
    sources = {a.source.source_type for a in on_c1}
    assert sources == {"HUMAN", "LLM_JUDGE", "CODE"}
    expect(drawer).to_contain_text("Rationale")  # the judge's raw answer
    shot(page, "trace-c1-assessments")


def test_the_prompts_page_shows_which_runs_used_which_version(page: Page, bench: Bench) -> None:
    page.goto(f"/#/experiments/{bench.experiment_id}/prompts")
    page.get_by_text("tipbench-tips", exact=True).first.click()
    body = page.locator("body")
    v1, v2 = bench.cells
    expect(body).to_contain_text("collect: v2-mentor")  # the latest version first
    shows(page, rf"MLflow runs:\n{re.escape(v2.name)}\n")
    shot(page, "prompt-version-2")
    page.get_by_text("Version 1", exact=True).first.click()
    expect(body).to_contain_text("collect: v1")
    shows(page, rf"MLflow runs:\n{re.escape(v1.name)}\n")
    shot(page, "prompt-version-1")


def test_a_score_given_in_mlflows_trace_view_reaches_the_human_tier(
    browser: Browser, feedback_bench: Bench
) -> None:
    """A person adds feedback named `relevance` on a candidate in the trace view, as MLflow's
    UI offers; `judge apply --from-mlflow` makes it the candidate's human score. (In an
    experiment of its own: the scores the other tests read stay as the judge file gave them.)"""
    with opened(browser, feedback_bench.url) as page:
        give_feedback_and_apply(page, feedback_bench)


def give_feedback_and_apply(page: Page, bench: Bench) -> None:
    cell = bench.cells[0]
    trace_id = cell.trace.info.trace_id
    drawer = open_trace(page, bench, trace_id)
    drawer.get_by_text("c2", exact=True).first.click()
    drawer.locator(
        '[data-component-id="shared.model-trace-explorer.assessments-pane-toggle"]'
    ).click()
    drawer.locator(f"{ADD_FEEDBACK}[aria-haspopup=menu]").click()
    page.get_by_text("Human feedback", exact=True).click()
    drawer.get_by_placeholder("Enter a feedback name").fill("relevance")
    page.keyboard.press("Enter")
    drawer.get_by_text("Boolean", exact=True).click()  # the data type: a number
    page.locator("[role=option]", has_text="Number").first.click()
    drawer.locator(NEW_FEEDBACK.format("value-number-input")).fill("1")
    drawer.locator(NEW_FEEDBACK.format("create-button"), has_text="Create").click()
    shot(page, "trace-c2-feedback-given")

    client = MlflowClient(bench.url)
    given = wait_for_feedback(client, trace_id, candidate_span_id(trace_id, "c2"), "relevance", 1)
    assert given.source.source_type == "HUMAN"
    applied = tipbench(  # the UI's source (`User` without login) named as a human judge
        bench.home, "judge", "apply", "--from-mlflow", "--human", given.source.source_id,
        "--experiment", FEEDBACK_EXPERIMENT, "--tracking-uri", bench.url,
    )  # fmt: skip
    assert "applied 1 run" in applied
    run = client.get_run(cell.run_id)
    scores = json.loads(run.data.tags["human_scores"])
    assert scores["c2"][0] == 1  # relevance, as given in MLflow
    assert scores["c1"][:3] == list(HUMAN_SCORES["c1"])  # the rest as the judge file had it
    assert given.source.source_id in run.data.tags["judged_by"].split("+")


def wait_for_feedback(
    client: MlflowClient, trace_id: str, span: str, name: str, value: int
) -> Feedback:
    """The feedback the page created, once the server has it."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        for a in client.get_trace(trace_id).info.assessments:
            if (
                isinstance(a, Feedback)
                and (a.span_id, a.name, a.value) == (span, name, value)
                and not (a.metadata or {}).get("tipbench.tier")  # the page's, not tipbench's
            ):
                return a
        assert time.monotonic() < deadline, f"no {name} = {value} on span {span}"
        time.sleep(0.5)


def shows(where: Page | Locator, pattern: str) -> None:
    """Wait until the text a user sees (the rendered text, one line per element) matches
    `pattern`."""
    element = where.locator("body") if isinstance(where, Page) else where
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        text = element.inner_text()
        if re.search(pattern, text):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{pattern!r} not shown in:\n{text[-4000:]}")
        time.sleep(0.5)


def expand_every_assessment(drawer: Locator) -> None:
    """Open each assessment of the pane, which shows its source and rationale."""
    toggles = drawer.locator(
        '[data-component-id="shared.model-trace-explorer.toggle-assessment-expanded"]'
    )
    expect(toggles.first).to_be_visible()
    for index in range(toggles.count()):
        toggles.nth(index).click()


def _shown(value: object) -> str:
    """A numeric feedback value as the pane shows it (5, not 5.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
