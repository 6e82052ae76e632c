"""The online tier in the admin server (issue 49, items 2, 3 and 5): `/api/bench/online/...`
over a real MLflow store and a serving state whose decisions carry provenance, and the bench
panel's "Online tier" section in a real browser (Debian's Chromium through Playwright)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mlflow import MlflowClient

from support.calibrations import log_fake_calibration
from support.judged_runs import AUTO_JUDGE, JudgedCell, uniform, write_cells
from support.online_worlds import OnlineWorld, serve_online_world
from support.servers import TipbenchServer
from tipbench.admin import create_app
from tipbench.promote import promote_prompt
from tipbench.suite import load_suite
from tipbench.tracking import TrackingStore

TOKEN = "online-panel-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MODEL = "ollama:qwen2.5:1.5b"
EXPERIMENT = "tip-bench-online-panel"
RUBRIC = {"v2-mentor": 13, "v3-few-shot": 11, "v1": 9}  # as users rank them


def judged(uri: str) -> dict[str, str]:
    """Every scenario of each prompt judged by both tiers; v1 in production."""
    log_fake_calibration(uri, AUTO_JUDGE, "echo")
    store = TrackingStore(uri)
    experiment_id = store.experiment_id(EXPERIMENT, create=True)
    suite = load_suite()
    cells = [
        JudgedCell(MODEL, prompt, scenario.id, human=uniform(value), auto=uniform(value))
        for prompt, value in RUBRIC.items()
        for scenario in suite.scenarios
    ]
    run_ids = write_cells(store.client, experiment_id, cells)
    for cell, run_id in zip(cells, run_ids, strict=True):
        store.client.set_tag(run_id, "prompt_hash", suite.prompt(cell.prompt_version).template_hash)
    promote_prompt(MlflowClient(uri), "tipbench-tips", suite.prompt("v1"), {})
    return {cell.prompt_version: run_id for cell, run_id in zip(cells, run_ids, strict=True)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Path]:
    workdir = tmp_path_factory.mktemp("online-panel")
    tracking = f"sqlite:///{workdir / 'mlflow.db'}"
    runs = judged(tracking)
    state = f"sqlite:///{workdir / 'state.sqlite'}"
    world = OnlineWorld(model=MODEL, experiment=EXPERIMENT, runs=runs)
    serve_online_world(state, world, seed=5, n=1500)
    return tracking, state, workdir


def test_the_api_shows_the_tier_its_agreement_and_the_online_condition(
    stores: tuple[str, str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tracking, state, _ = stores
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking)
    monkeypatch.setenv("TIPBENCH_POLICY_STATE_URL", state)
    found = TestClient(create_app()).get(f"/api/bench/online/{EXPERIMENT}", headers=AUTH)
    assert found.status_code == 200, found.text
    body = found.json()
    rows = body["online"]["rows"]
    assert rows[0]["prompt_version"] == "v2-mentor"
    assert rows[0]["standing"] == "leader" and rows[0]["decisions"] == 1500
    agreements = body["online"]["agreement"]
    verdicts = {
        a["tier"]: {c["criterion"]: c["verdict"] for c in a["criteria"]} for a in agreements
    }
    assert verdicts["human"]["composite"] == "agrees"
    promotion = body["promotion"]
    assert (promotion["prompt_version"], promotion["production"]) == ("v2-mentor", "v1")
    assert promotion["online"]["name"] == "not worse online" and promotion["online"]["passed"]

    client = TestClient(create_app())  # the log is read again only once it has grown
    first = client.get(f"/api/bench/online/{EXPERIMENT}", headers=AUTH).json()
    assert client.get(f"/api/bench/online/{EXPERIMENT}", headers=AUTH).json() == first
    serve_online_world(state, OnlineWorld(model=MODEL, experiment=EXPERIMENT), seed=6, n=10)
    grown = client.get(f"/api/bench/online/{EXPERIMENT}", headers=AUTH).json()
    assert sum(r["served"] for r in grown["online"]["rows"]) == 1510

    monkeypatch.setenv("TIPBENCH_POLICY_STATE_URL", f"sqlite:///{tmp_path / 'none.sqlite'}")
    empty = TestClient(create_app()).get(f"/api/bench/online/{EXPERIMENT}", headers=AUTH)
    assert empty.status_code == 200 and empty.json()["online"] is None
    assert "Nothing served yet" in empty.json()["note"]
    assert TestClient(create_app()).get(f"/api/bench/online/{EXPERIMENT}").status_code == 401


@pytest.mark.slow
def test_the_bench_panel_shows_the_online_tier(stores: tuple[str, str, Path]) -> None:
    pytest.importorskip("playwright.sync_api")
    from playwright.sync_api import expect

    from support.browser import chromium, fresh_page

    tracking, state, workdir = stores
    environment = {
        "TIPBENCH_ADMIN_TOKEN": TOKEN,
        "TIPBENCH_HOME": str(workdir / "home"),
        "MLFLOW_TRACKING_URI": tracking,
        "TIPBENCH_POLICY_STATE_URL": state,
    }
    admin = TipbenchServer(workdir / "admin", environment)
    admin.url = f"http://localhost:{admin.port}"  # a secure context: the cookie keeps Secure
    with (
        admin as server,
        chromium() as browser,
        fresh_page(browser, server.url, 30_000) as page,
    ):
        page.goto("/")
        page.get_by_label("Admin token").fill(TOKEN)
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(re.compile(r"/$"))
        section = page.locator("#online")
        expect(section.get_by_role("heading", name="Online tier")).to_be_visible()
        leader = section.locator("tbody tr").first
        expect(leader).to_have_attribute("data-standing", "leader", timeout=60_000)
        expect(leader).to_contain_text("v2-mentor")
        expect(section.locator("tr[data-criterion=composite]").first).to_have_attribute(
            "data-verdict", "agrees"
        )
        expect(page.locator("#online-condition")).to_contain_text("not worse online")
        expect(page.locator("#online-condition")).to_have_attribute("data-passed", "true")
