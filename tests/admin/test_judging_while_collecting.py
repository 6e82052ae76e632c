"""Issue 47, items 1 and 5: judging while a collect writes into the same experiment.

The judging page answered HTTP 500 ("Failed to download artifacts from path
'candidates.json'") while `tipbench collect` wrote into its experiment: collect creates a
cell's run with its tags (a successful cell, pending for the human judge) and stores its
candidates after them, and the page offered the run in between. Here a real collect (the
embedded model, its real writer) writes one cell into an experiment that `tipbench serve`
serves; the collect's writer is held right between the two writes, so the run exists
without its candidates for as long as the test needs: the API and the page (Chromium) judge
through that moment, never offered the run until its candidates are stored. Meanwhile each
page counts scenarios from one read of the experiment: the panel's combined note said
"cannot be decided on 3 scenarios" beside a table of cells on 6 and 8.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mlflow import MlflowClient

import tipbench.tracking._writer as writer
from support.cells import record_cells
from support.judged_runs import AUTO_JUDGE, uniform
from support.servers import TipbenchServer
from tipbench.collect import CollectConfig, CollectResult, collect
from tipbench.tracking import CANDIDATES_FILE, record_scores

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, expect

from support.browser import chromium, fresh_page

pytestmark = pytest.mark.slow
TOKEN = "judging-while-collecting-0123456789"
TIMEOUT_MS = 20_000
HOLD_S = 600.0  # the embedded model's cell on a busy 2-core machine, and its load
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TipbenchServer]:
    workdir = tmp_path_factory.mktemp("judging-while-collecting")
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


class HeldWriter:
    """Holds collect's writer after a cell's run is created and before its candidates are
    stored (`write_run` logs its params and metrics, then its files, then ends the run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.created = threading.Event()
        self.release = threading.Event()
        real = writer.log_texts

        def held(client: Any, run_id: str, files: dict[str, str], *rest: Any) -> None:
            if CANDIDATES_FILE in files:
                self.run_id = run_id
                self.created.set()
                self.release.wait(HOLD_S)
            real(client, run_id, files, *rest)

        monkeypatch.setattr(writer, "log_texts", held)


def test_the_page_and_its_api_judge_while_a_collect_writes(
    server: TipbenchServer,
    browser: Browser,
    experiment: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uri: str = server.tracking_uri  # type: ignore[attr-defined]
    finished = set(record_cells(uri, experiment, prompts=("v1",), n_scenarios=2))
    for run_id in finished:  # scored by the automatic judge: the combined tier has a table
        record_scores(MlflowClient(uri), run_id, "auto", uniform(12), AUTO_JUDGE, 0)
    held = HeldWriter(monkeypatch)
    outcome: dict[str, CollectResult | BaseException] = {}

    def run_collect() -> None:
        config = CollectConfig(
            models=["llamacpp:smollm2-135m"],
            prompts=["v2-mentor"],
            n_scenarios=1,
            n_tips=2,
            experiment=experiment,
            structured="schema",
        )
        try:
            outcome["result"] = collect(config, tracking_uri=uri)
        except BaseException as exc:  # reported by the test, not lost in the thread
            outcome["error"] = exc

    collecting = threading.Thread(target=run_collect, name="collect")
    collecting.start()
    try:
        assert held.created.wait(HOLD_S), outcome
        client = MlflowClient(uri)
        run = client.get_run(held.run_id)
        # the run as the page saw it: a successful cell pending for the human judge, no file
        assert run.info.status == "RUNNING"
        assert run.data.tags["cell_status"] == "ok" and run.data.tags["judge_pending"] == "true"
        assert CANDIDATES_FILE not in [a.path for a in client.list_artifacts(held.run_id)]

        api = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        offered = judge_by_api(api, experiment, finished)
        board = api.get(f"/api/bench/leaderboard/{experiment}/view", params={"tier": "both"})
        assert board.status_code == 200, board.text
        assert scenario_counts(board.json()["combined"]) == ("2", ["2"])
        assert api.get(f"/api/bench/runs/{experiment}").status_code == 200

        with fresh_page(browser, server.url, TIMEOUT_MS) as page:
            page.goto(f"/login?next=/judge/{experiment}")
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_role("button", name="Log in").click()
            expect(page.locator("#remaining")).to_have_text("2 candidates left in 1 run")
            expect(page.locator("#run-info")).to_have_text(re.compile(r"^Item [12] of 2$"))
            expect(page.locator("#judging-status")).to_contain_text(
                "Cannot be decided on 2 scenarios"  # the cell of the two finished runs
            )
            for key in ("4", "3", "5", "Enter", "2", "2", "1", "Enter"):
                page.keyboard.press(key)
            expect(page.get_by_role("heading", name="Nothing left to judge")).to_be_visible()
            expect(page.locator("#load-error")).to_be_hidden()
        judged = {r.info.run_id for r in scored_runs(client, experiment)}
        assert judged == finished and offered in finished  # the held run was never offered
    finally:
        held.release.set()
        collecting.join(HOLD_S)
    result = outcome.get("result")
    assert isinstance(result, CollectResult), outcome
    # Its candidates stored, the collected run is offered, with them.
    after = api.get(f"/api/bench/judging/{experiment}/next")
    assert after.status_code == 200, after.text
    item = after.json()
    assert item["remaining_runs"] == 1 and item["total"] == 3
    assert item["item"]["run_id"] == held.run_id
    assert len(item["item"]["candidates"]) == 2
    board = api.get(f"/api/bench/leaderboard/{experiment}/view", params={"tier": "both"})
    # The note counts the experiment's scenarios (the cell with most); a cell on fewer waits
    # to be compared, it does not hold the others back (issue 43, item 4).
    assert scenario_counts(board.json()["combined"]) == ("2", ["2", "1"])


def scenario_counts(view: dict[str, Any]) -> tuple[str, list[str]]:
    """The scenarios the combined tier's note says the leader cannot be decided on, and each
    row's scenarios in its table: one response, one read of the experiment."""
    column = [c["heading"] for c in view["columns"]].index("scen.")
    (said,) = re.findall(r"cannot be decided on (\d+) scenarios?", " ".join(view["notes"]))
    return said, [row["cells"][column] for row in view["rows"]]


def judge_by_api(api: httpx.Client, experiment: str, finished: set[str]) -> str:
    """Every read of the judging API answers, offers a finished run and counts only finished
    runs; one run is scored through it. Returns the run scored."""
    for params in ({}, {"reveal": "true"}):
        answer = api.get(f"/api/bench/judging/{experiment}/next", params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["remaining_runs"] == 2 and body["total"] == 2
        assert body["item"]["run_id"] in finished
    item = body["item"]
    for candidate in item["candidates"]:
        candidate["scores"].update(relevance=4, actionability=4, tone=4)
    saved = api.post(f"/api/bench/judging/{experiment}/scores", json=item)
    assert saved.status_code == 200, saved.text
    assert saved.json()["remaining_runs"] == 1
    return str(item["run_id"])


def scored_runs(client: MlflowClient, experiment: str) -> list[Any]:
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return list(
        client.search_runs([found.experiment_id], "tags.judge_pending = 'false'", max_results=50)
    )
