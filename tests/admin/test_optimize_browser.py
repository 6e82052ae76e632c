"""The Optimize page in a real browser (Debian's Chromium through Playwright) against
`tipbench serve` with a real MLflow store and the real job runner: an optimization started
from the form as a job, its progress per iteration, the lineage of its versions with their
scores and diffs, its chart, the held-out grid with the gate's verdict and the way to judge
it; before any, the empty state. The page is measured at 1280 px and on a phone (390 px,
as `test_pages_fit_browser.py` measures the other pages); screenshots go to
test-artifacts/pages/.

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
from playwright.sync_api import Browser, Locator, Page, expect

from support.browser import chromium, fresh_page

pytestmark = pytest.mark.slow

TOKEN = "optimize-page-token-0123456789"
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
TIMEOUT_MS = 20_000
JOB_TIMEOUT_MS = 400_000
PHONE = {"width": 390, "height": 844}
HELD_OUT = [
    "engineer-morning", "engineer-evening", "parent-morning", "parent-evening",
    "retiree-morning", "retiree-evening",
]  # fmt: skip
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


@pytest.fixture
def phone(browser: Browser, server: TipbenchServer) -> Iterator[Page]:
    """A phone-sized touch screen, as `test_pages_fit_browser.py` opens one."""
    context = browser.new_context(
        base_url=server.url, viewport=PHONE, has_touch=True, is_mobile=True
    )
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    assert not errors, errors


def log_in(page: Page) -> None:
    page.goto("/optimize")
    expect(page).to_have_url(re.compile(r"/login$"))
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/optimize$"))
    page.wait_for_load_state()  # its stylesheets too: a layout measured before is not the page's


def fits(page: Page, part: Locator) -> None:
    """Neither the page nor `part` is wider than the screen."""
    width = PHONE["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    found = part.bounding_box()
    assert found is not None and found["x"] >= 0 and found["x"] + found["width"] <= width, found


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


def test_before_any_optimization_the_page_says_so_and_checks_the_experiment_name(
    phone: Page,
) -> None:
    """Issue 45, item 6: an experiment without optimizations (here: none in the store yet)
    is an empty state, not a red "no experiment" and failing polls; the name's pattern is
    one a browser accepts (it compiles it with the `v` flag) and checks."""
    console: list[str] = []
    failed: list[str] = []
    phone.on("console", lambda message: console.append(message.text))
    phone.on(
        "response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    log_in(phone)
    empty = phone.locator("#list-empty")
    expect(empty).to_have_text(
        "Nothing optimized yet in tip-bench-optimize: start an optimization above."
    )
    expect(phone.locator("#list-error")).to_be_hidden()
    colour = "e => getComputedStyle(e).color"
    assert empty.evaluate(colour) != phone.locator("#list-error").evaluate(colour)
    experiment = phone.get_by_label("Experiment")
    for name, valid in (
        ("tip-bench-new_one.2-b", True), ("prod", False), ("tip-bench-", False),
        ("tip-bench-a b", False), ("tip-bench-optimize", True),
    ):  # fmt: skip
        experiment.fill(name)
        assert experiment.evaluate("e => e.checkValidity()") is valid, name
    assert not [line for line in console if "pattern" in line], console
    assert failed == []
    expect(phone.locator("#optimizations")).to_be_hidden()
    fits(phone, empty)


def test_an_optimization_started_from_the_page_shows_its_iterations_and_lineage(
    page: Page, phone: Page
) -> None:
    log_in(page)
    form = page.locator("#optimize-form")
    form.get_by_label("Model", exact=True).fill(f"ollama:{TASK}")
    form.get_by_label("Reflection model", exact=True).fill(f"ollama:{REFLECTION}")
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
    change = lineage.nth(1).locator("td").nth(9)  # the proposal as a diff from v1
    change.get_by_text("diff").click()
    expect(change.locator("pre .add")).to_have_text(f"+{said(V1, 'system', MORNING)}")
    expect(change.locator("pre .del")).to_have_text(f"-{V1.system}")
    plot = page.locator("#detail-plot")
    expect(plot).to_have_js_property("complete", True)
    assert plot.evaluate("img => img.naturalWidth") > 0

    # the held-out grid: v1 and the shortlist on the six held-out scenarios, judged by the
    # automatic judge only, so the gate refuses; people judge them on the judging page
    grid = page.locator("#heldout-grid")
    expect(grid.locator("thead th")).to_have_text(["Version", *HELD_OUT])
    expect(grid.locator("tbody th")).to_have_text(["v1", P1])
    expect(grid.locator("tbody td")).to_have_text(["auto-judged"] * 12)
    expect(page.locator("#heldout-summary")).to_have_text(
        "0 of 12 cells judged by people in tip-bench-optimize-heldout."
    )
    expect(page.locator("#heldout-gate")).to_contain_text("Gate: nothing to promote yet: ")
    expect(page.locator("#heldout-checks li").first).to_be_visible()
    judge = page.get_by_role("link", name="Judge these cells")
    expect(judge).to_have_attribute("href", "/judge/tip-bench-optimize-heldout")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / "optimize.png", full_page=True)

    # on a phone: the chart and the grid within the screen, the grid scrolling in its box
    log_in(phone)
    chart = phone.locator("#detail-plot")
    expect(chart).to_be_visible()
    expect(chart).to_have_js_property("complete", True)
    assert chart.evaluate("img => img.naturalWidth") > PHONE["width"]  # drawn wider: scaled
    fits(phone, chart)
    fits(phone, phone.locator("#heldout .table-scroll"))
    fits(phone, phone.locator("#heldout-gate"))
    phone.screenshot(path=SHOTS / "optimize-phone.png", full_page=True)
    judge = phone.get_by_role("link", name="Judge these cells")
    judge.click()
    expect(phone).to_have_url(re.compile(r"/judge/tip-bench-optimize-heldout$"))
