"""The judging page says when to stop (issue 23, item 4), in a real browser: Debian's
Chromium through Playwright, against `tipbench serve` on loopback with a real MLflow store.
Screenshots go to test-artifacts/pages/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.servers import TipbenchServer
from support.stop_experiment import human_scores, write_stop_experiment
from tipbench.human_tier import judging_state, next_run
from tipbench.tracking import TrackingStore, record_scores

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect

from support.browser import chromium, fresh_page

pytestmark = pytest.mark.slow
TOKEN = "judging-order-token-0123456789"
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
TIMEOUT_MS = 20_000
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TipbenchServer]:
    workdir = tmp_path_factory.mktemp("judging-order")
    tracking = f"sqlite:///{workdir / 'mlflow.db'}"
    MlflowClient(tracking).search_experiments()  # the store's tables, before two processes race
    admin = TipbenchServer(
        workdir,
        {
            "TIPBENCH_ADMIN_TOKEN": TOKEN,
            "TIPBENCH_HOME": str(workdir / "home"),
            "MLFLOW_TRACKING_URI": tracking,
        },
    )
    admin.url = f"http://localhost:{admin.port}"  # a secure context: the cookie keeps Secure
    admin.tracking_uri = tracking  # type: ignore[attr-defined]
    with admin as started:
        yield started  # type: ignore[misc]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser, server: TipbenchServer) -> Iterator[Page]:
    with fresh_page(browser, server.url, TIMEOUT_MS) as opened:
        yield opened


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"{name}.png", full_page=True)


def score_the_run(page: Page, store: TrackingStore, experiment: str) -> None:
    """The run shown, scored from the keyboard as the human would (its candidates' texts
    say which they are; the run is the one the judging order serves)."""
    run = next_run(judging_state(store, experiment, start=False))
    assert run is not None
    wanted = human_scores(run.prompt_version, int(run.scenario_id[1:]))
    shown = page.locator("#run-info").inner_text()  # "Item 3 of 12"
    for _ in range(2):
        text = page.locator("#candidate-text").inner_text()
        number = re.search(r"Tip (\d+)", text)
        assert number is not None, text
        candidate = f"c{number.group(1)}"
        scores = wanted[candidate]
        for key in (scores.relevance, scores.actionability, scores.tone):
            page.keyboard.press(str(key))
        page.keyboard.press("Enter")
    expect(page.locator("#run-info")).not_to_have_text(shown)  # saved, and the next one shown


def test_the_page_says_the_leader_is_decided_and_the_judge_can_stop(
    page: Page, server: TipbenchServer, experiment: str
) -> None:
    store = TrackingStore(server.tracking_uri)  # type: ignore[attr-defined]
    write_stop_experiment(store.client, store.experiment_id(experiment, create=True))
    page.goto(f"/judge/{experiment}")
    expect(page).to_have_url(re.compile(r"/login"))
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(f"/judge/{experiment}$"))
    status = page.locator("#judging-status")
    expect(status).to_have_text(
        "Every cell needs a human score before the leader can be decided: at least 2 more "
        "judgments expected."
    )
    expect(page.locator("#candidate-position")).to_have_text("1 of 2")
    # Said before anyone judges (issue 43): what the gate can find on these scenarios.
    expect(page.locator("#judging-detectable")).to_contain_text(
        re.compile(r"^\d+ scenarios: the gate can detect a gap of about \d+\.\d composite points")
    )
    shot(page, "judge-order-start")

    score_the_run(page, store, experiment)
    expect(status).to_have_text(
        "Every cell needs a human score before the leader can be decided: at least 1 more "
        "judgment expected."
    )
    score_the_run(page, store, experiment)
    expect(status).to_have_text("The leader is decided: you can stop.")
    expect(status).to_have_class(re.compile(r"\bdecided\b"))
    expect(page.locator("#remaining")).to_have_text("4 candidates left in 2 runs")
    expect(page.locator("#candidate-position")).to_have_text("1 of 2")  # the judge may go on
    shot(page, "judge-order-decided")


def test_the_bench_panel_shows_the_combined_tier(
    page: Page, server: TipbenchServer, experiment: str
) -> None:
    """Issue 23, item 1: beside the two tiers, the combined one with what the human scores
    were worth and how the judging stands."""
    store = TrackingStore(server.tracking_uri)  # type: ignore[attr-defined]
    write_stop_experiment(store.client, store.experiment_id(experiment, create=True))
    for _ in range(2):  # one judgement in each cell, in the judging order
        run = next_run(judging_state(store, experiment))
        assert run is not None
        record_scores(
            store.client, run.run_id, "human",
            human_scores(run.prompt_version, int(run.scenario_id[1:])), "ann", 0,
        )  # fmt: skip
    page.goto("/login")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("row", name=experiment).get_by_role("button", name="Leaderboard").click()
    combined = page.get_by_role("region", name="Combined (human + automatic) leaderboard")
    expect(combined.locator("tbody tr")).to_have_count(2)
    expect(combined.locator("thead")).to_contain_text("human (worth)")
    first = combined.locator("tbody tr").nth(0)
    expect(first.locator("td").nth(2)).to_have_text("v1")
    expect(first).to_have_attribute("data-standing", "leader")
    expect(combined.locator("tbody tr").nth(1)).to_have_attribute("data-standing", "behind")
    expect(combined).to_contain_text("the leader is decided: you can stop")
    expect(page.get_by_role("region", name="Human judge leaderboard")).to_be_visible()
    shot(page, "panel-combined")
