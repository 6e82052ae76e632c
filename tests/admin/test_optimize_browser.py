"""The Optimize page in a real browser (Debian's Chromium through Playwright) against
`tipbench serve` with a real MLflow store and the real job runner: an optimization started
from the form as a job, its progress per iteration, the lineage of its versions with their
scores and its chart; a screenshot goes to test-artifacts/pages/.

The models are the scripted world's on the fake Ollama server (real Ollama cannot be
installed here; the fake is checked with the official client in
`tests/support/test_ollama_server.py`): one iteration proposes P1, which says when in the
morning and beats v1 there (`support.scripted_world`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.ollama_server import FakeOllama
from support.scripted_world import (
    JUDGE,
    MORNING,
    REFLECTION,
    TASK,
    TRAINING,
    proposal,
    rule_reflection,
    said,
    scripted_world,
)
from support.servers import TipbenchServer
from tipbench.suite import load_suite

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect

from support.browser import chromium, fresh_page

pytestmark = pytest.mark.slow

TOKEN = "optimize-page-token-0123456789"
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
TIMEOUT_MS = 20_000
JOB_TIMEOUT_MS = 400_000
V1 = load_suite().prompt("v1")
P1 = proposal(said(V1, "system", MORNING), V1.user)
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def world() -> Iterator[FakeOllama]:
    with scripted_world() as fake:
        fake.respond(REFLECTION, rule_reflection)
        yield fake


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, world: FakeOllama) -> Iterator[TipbenchServer]:
    workdir = tmp_path_factory.mktemp("optimize-page")
    tracking = f"sqlite:///{workdir / 'mlflow.db'}"
    MlflowClient(tracking).search_experiments()  # the store's tables, before two processes race
    admin = TipbenchServer(
        workdir,
        {
            "TIPBENCH_ADMIN_TOKEN": TOKEN,
            "TIPBENCH_HOME": str(workdir / "home"),
            "MLFLOW_TRACKING_URI": tracking,
            "OLLAMA_HOST": world.url,
        },
    )
    admin.url = f"http://localhost:{admin.port}"  # a secure context: the cookie keeps Secure
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


def log_in(page: Page) -> None:
    page.goto("/optimize")
    expect(page).to_have_url(re.compile(r"/login$"))
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/optimize$"))


def test_the_api_needs_a_session_and_csrf_and_names_bad_fields(page: Page) -> None:
    assert page.request.get("/api/optimize/tip-bench-optimize").status == 401
    assert page.request.post("/api/optimize/run", data={}).status == 401
    log_in(page)
    statuses = page.evaluate(
        """async () => {
            const bare = await fetch("/api/optimize/run", {method: "POST",
                headers: {"Content-Type": "application/json"}, body: "{}"});
            const token = document.querySelector('meta[name="csrf-token"]').content;
            const bad = await fetch("/api/optimize/run", {method: "POST",
                headers: {"Content-Type": "application/json", "X-CSRF-Token": token},
                body: JSON.stringify({experiment: "prod", budget: 0, suite: "/etc"})});
            return [bare.status, bad.status, (await bad.json()).detail.map((e) => e.loc.at(-1))];
        }"""
    )
    assert statuses[0] == 403
    assert statuses[1] == 422 and set(statuses[2]) == {"experiment", "budget", "suite"}


def test_an_optimization_started_from_the_page_shows_its_iterations_and_lineage(
    page: Page,
) -> None:
    log_in(page)
    form = page.locator("#optimize-form")
    form.get_by_label("Model", exact=True).fill(f"ollama:{TASK}")
    form.get_by_label("Reflection model").fill(f"ollama:{REFLECTION}")
    form.get_by_label("Judge model").fill(f"ollama:{JUDGE}")
    form.get_by_label("Budget").fill("8")
    form.get_by_label("Training scenarios").fill(",".join(TRAINING))
    form.get_by_role("button", name="Start optimization").click()
    expect(page.locator("#optimize-job-state")).to_have_text("succeeded", timeout=JOB_TIMEOUT_MS)

    row = page.locator("#optimizations tbody tr").first
    expect(row.locator("td").nth(1)).to_have_text("finished")
    expect(row.locator("td").nth(4)).to_have_text("1")  # iteration
    expect(row.locator("td").nth(5)).to_have_text("8 / 8")
    expect(row.locator("td").nth(7)).to_have_text(P1)  # the shortlist
    iterations = page.locator("#iterations tbody tr")
    expect(iterations).to_have_count(2)
    expect(iterations.nth(1).locator("td").nth(0)).to_have_text("1")
    lineage = page.locator("#lineage tbody tr")
    expect(lineage).to_have_count(2)
    expect(lineage.nth(0).locator("td").nth(6)).to_have_text("start")
    expect(lineage.nth(1).locator("td").nth(0)).to_have_text(f"{P1} ★")
    expect(lineage.nth(1).locator("td").nth(1)).to_have_text("v1")
    expect(lineage.nth(1).locator("td").nth(6)).to_have_text("pool")
    # best on both: +2 on the morning, tied with v1 on the evening
    expect(lineage.nth(1).locator("td").nth(7)).to_have_text(", ".join(TRAINING))
    expect(lineage.nth(1).locator("td").nth(8)).to_have_text("say when.")
    plot = page.locator("#detail-plot")
    expect(plot).to_have_js_property("complete", True)
    assert plot.evaluate("img => img.naturalWidth") > 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "optimize.png", full_page=True)
