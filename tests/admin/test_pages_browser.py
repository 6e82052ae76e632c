"""The web pages in a real browser: Debian's Chromium driven by Playwright, against
`tipbench serve` on loopback with a real MLflow store and its real job runner.

Chromium counts http://localhost as a secure context, so the session cookie keeps its
Secure flag here exactly as in production. Screenshots of every page go to
test-artifacts/pages/.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.cells import record_cells
from support.judged_experiment import ALPHA, BETA, DELTA, GAMMA, make_judged_experiment
from support.servers import ServerProcess
from tipbench.compare import STANDINGS

playwright_sync = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Dialog, Locator, Page, expect  # noqa: E402

pytestmark = pytest.mark.slow

TOKEN = "browser-test-token-0123456789"
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
TIMEOUT_MS = 15_000
RUN_TIMEOUT_MS = 600_000
expect.set_options(timeout=TIMEOUT_MS)  # a loaded 2-core machine answers slowly at times


class AdminServer(ServerProcess):
    """`tipbench serve`, with its own store and home."""

    health_path = "/login"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.url = f"http://localhost:{self.port}"  # a secure context for Chromium
        self.tracking_uri = f"sqlite:///{workdir / 'mlflow.db'}"
        self.env = {
            "TIPBENCH_ADMIN_TOKEN": TOKEN,
            "TIPBENCH_HOME": str(workdir / "home"),
            "MLFLOW_TRACKING_URI": self.tracking_uri,
        }

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "tipbench.cli", "serve",
            "--host", "127.0.0.1", "--port", str(self.port),
        ]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminServer]:
    admin = AdminServer(tmp_path_factory.mktemp("admin-server"))
    # Create the store's tables first: MLflow migrating one fresh SQLite file from two
    # processes at once (the page's first request, the job's `tipbench run`) fails.
    MlflowClient(admin.tracking_uri).search_experiments()
    with admin as started:
        yield started  # type: ignore[misc]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("chromium is not installed (scripts/test installs it with apt-get)")
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, server: AdminServer) -> Iterator[Page]:
    """A fresh browser context (no cookies) that reports script errors as test failures."""
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, errors


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"{name}.png", full_page=True)


def log_in(page: Page, token: str = TOKEN) -> None:
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Log in").click()


def test_every_page_needs_a_session_and_a_wrong_token_gets_none(page: Page) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login$"))
    shot(page, "login")
    for path in ("/static/bench.js", "/judge/tip-bench-any"):
        page.goto(path)
        expect(page).to_have_url(re.compile(r"/login$"))
    assert page.request.get("/api/bench/experiments").status == 401

    page.goto("/login")
    log_in(page, "not-the-admin-token-at-all")
    expect(page.get_by_role("alert")).to_have_text("Wrong token.")
    shot(page, "login-wrong-token")
    assert page.request.get("/api/bench/experiments").status == 401
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login$"))

    log_in(page)
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_role("heading", name="Bench", exact=True)).to_be_visible()
    (cookie,) = page.context.cookies()
    assert (cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (True, True, "Strict")
    assert page.request.get("/api/bench/experiments").status == 200

    # The cookie alone does not authorize a change: the CSRF token must come with it.
    statuses = page.evaluate(
        """async () => {
            const bare = await fetch("/logout", {method: "POST"});
            const token = document.querySelector('meta[name="csrf-token"]').content;
            const wrong = await fetch("/api/bench/judging/tip-bench-any/scores",
                {method: "POST", headers: {"X-CSRF-Token": token + "x"}});
            return [bare.status, wrong.status];
        }"""
    )
    assert statuses == [403, 403]

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login$"))
    assert page.request.get("/api/bench/experiments").status == 401


def test_judging_page_scores_candidates_from_the_keyboard(
    page: Page, server: AdminServer, experiment: str
) -> None:
    run_ids = record_cells(server.tracking_uri, experiment, n_scenarios=2)
    client = MlflowClient(server.tracking_uri)

    page.goto(f"/judge/{experiment}")
    log_in(page)  # and back to the judging page
    expect(page).to_have_url(re.compile(f"/judge/{experiment}$"))
    remaining = page.locator("#remaining")
    expect(remaining).to_have_text("4 candidates left in 2 runs")
    expect(page.locator("#persona-name")).to_have_text("Maya")
    expect(page.locator("#rubric-heading")).to_contain_text("tip-v1")
    page.get_by_label("Judged by").fill("browser-judge")
    page.get_by_label("Judged by").blur()  # remembered for the next visit
    # Blind judging: an item number, never the run id, the model or the prompt.
    expect(page.locator("#run-info")).to_have_text(re.compile(r"^Item [12] of 2$"))
    card = page.get_by_role("region", name=re.compile("^Candidate")).inner_text()
    assert "smollm2" not in card and "prompt" not in card
    assert not any(run_id in page.locator("body").inner_text() for run_id in run_ids)
    number = page.locator("#run-info").inner_text().split()[1]
    shot(page, "judge")

    page.keyboard.press("Enter")  # nothing scored yet: refused, inline
    expect(page.locator("#judge-error")).to_contain_text("Score relevance, actionability")
    shot(page, "judge-incomplete")

    for key in ("4", "3", "5", "Enter"):
        page.keyboard.press(key)
    expect(page.locator("#candidate-position")).to_have_text("2 of 2")
    expect(remaining).to_have_text("3 candidates left in 2 runs")
    for key in ("2", "2", "1", "o", "Enter"):  # o: this one is overlong after all
        page.keyboard.press(key)
    expect(remaining).to_have_text("2 candidates left in 1 run")
    expect(page.locator("#judge-notice")).to_have_text(f"Saved item {number}.")

    (first_run,) = [r for r in run_ids if client.get_run(r).data.tags["judge_pending"] == "false"]
    run = client.get_run(first_run)
    assert run.data.metrics["relevance"] == 3.0  # (4 + 2) / 2
    assert run.data.metrics["actionability"] == 2.5
    assert run.data.metrics["tone"] == 3.0
    assert run.data.metrics["overlong"] == 0.5
    assert run.data.metrics["format_ok"] == 1.0
    assert run.data.tags["judge_pending"] == "false"
    assert run.data.tags["judged_by"] == "browser-judge"

    # The second run disappears before it is saved: the API's validation error is shown
    # inline, and nothing is lost; once the run is back, the same keystroke saves it.
    (second_run,) = set(run_ids) - {first_run}
    client.delete_run(second_run)
    for key in ("5", "5", "5", "Enter", "1", "1", "1", "Enter"):
        page.keyboard.press(key)
    expect(page.locator("#judge-error")).to_contain_text("not a judgeable cell run")
    shot(page, "judge-api-error")
    client.restore_run(second_run)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Nothing left to judge")).to_be_visible()
    expect(remaining).to_have_text("Nothing left to judge.")
    shot(page, "judge-done")
    assert client.get_run(second_run).data.metrics["composite"] == pytest.approx(
        ((5 + 5 + 5 + 2) + (1 + 1 + 1 + 2)) / 2
    )


def test_the_judging_page_keeps_a_partly_scored_run_and_asks_before_leaving(
    page: Page, server: AdminServer, experiment: str
) -> None:
    tips = ("Start the lab report intro now.", "Email Dr. Ruiz before noon.", "Nap first.")
    (run_id,) = record_cells(server.tracking_uri, experiment, n_scenarios=1, tips=tips)
    page.goto(f"/judge/{experiment}")
    log_in(page)
    position, notice = page.locator("#candidate-position"), page.locator("#judge-notice")
    expect(page.locator("#run-info")).to_have_text("Item 1 of 1")
    for key in ("4", "3", "5", "Enter"):
        page.keyboard.press(key)
    expect(notice).to_have_text("Draft of item 1 saved: 1 of 3 candidates scored.")
    expect(position).to_have_text("2 of 3")
    page.keyboard.press("2")  # the second candidate's relevance: not saved yet
    asked: list[str] = []

    def leave(dialog: Dialog) -> None:
        asked.append(dialog.type)
        dialog.accept()

    page.on("dialog", leave)
    page.reload()  # the browser asks first; the judge leaves anyway

    assert asked == ["beforeunload"]
    expect(page.locator("#remaining")).to_have_text("2 candidates left in 1 run")
    expect(position).to_have_text("2 of 3")  # the first candidate not scored yet
    steps = page.locator("#candidate-steps li")
    expect(steps.nth(0)).to_have_class(re.compile("scored"))
    page.keyboard.press("ArrowLeft")
    expect(position).to_have_text("1 of 3")
    for name, level in (("relevance", 4), ("actionability", 3), ("tone", 5)):
        expect(page.locator(f'input[name="{name}"][value="{level}"]')).to_be_checked()
    shot(page, "judge-draft-reloaded")
    tags = MlflowClient(server.tracking_uri).get_run(run_id).data.tags
    draft = json.loads(tags["human_draft"])
    assert [values[:3] for values in draft.values()] == [[4, 3, 5]]
    assert tags["judge_pending"] == "true" and tags["human_scores_version"] == "1"

    page.reload()  # nothing unsaved: no question
    expect(position).to_have_text("2 of 3")
    assert asked == ["beforeunload"]


def test_bench_panel_shows_each_tiers_leaderboard_as_table_and_chart(
    page: Page, server: AdminServer, experiment: str
) -> None:
    make_judged_experiment(server.tracking_uri, experiment)  # leaderboards known by hand
    page.goto("/login")
    log_in(page)
    page.get_by_role("row", name=experiment).get_by_role("button", name="Leaderboard").click()
    human = page.get_by_role("region", name="Human judge leaderboard")
    auto = page.get_by_role("region", name="Automatic judge leaderboard")
    expect(human.locator("tbody tr")).to_have_count(4)

    rows = human.locator("tbody tr")
    assert _cells(rows.nth(0))[:4] == ["1=", ALPHA, "v1", f"{85 / 6:.2f}"]
    assert _cells(rows.nth(0))[4] == "leader"  # the standing beside the composite
    assert _cells(rows.nth(1))[:3] == ["1=", GAMMA, "v1"]  # three pairs: cannot be separated
    assert _cells(rows.nth(1))[4] == "undecided"
    assert _cells(rows.nth(2))[:3] == ["3", BETA, "v1"]
    assert _cells(rows.nth(2))[4] == "behind"
    assert _cells(rows.nth(3))[:3] == ["–", ALPHA, "v2"]
    assert _cells(rows.nth(3))[4] == "too little data"
    assert _cells(rows.nth(3))[5] == "–"  # two scenarios: no interval, and the notes say why
    expect(human).to_contain_text("none (–) on fewer than 6 scenarios")
    assert [_cells(row)[1] for row in auto.locator("tbody tr").all()] == [BETA, DELTA, ALPHA]

    # The page shows the class the leaderboard computed (JSON), in its colour, for each row.
    document = page.evaluate(
        "(name) => tipbench.get(`/api/bench/leaderboard/${encodeURIComponent(name)}`)", experiment
    )
    standings = [row["standing"] for row in document["human"]["rows"]]
    assert standings == ["leader", "undecided", "behind", "too little data"]
    assert [row.get_attribute("data-standing") for row in rows.all()] == standings
    chart = human.get_by_role("img", name=re.compile("Mean composite"))
    bars = chart.locator("rect")
    expect(bars).to_have_count(4)
    colours = [bars.nth(i).get_attribute("fill") for i in range(4)]
    assert colours == [STANDINGS[s].colour for s in standings]
    assert colours[1] != STANDINGS["behind"].colour  # an undecided row is not drawn "behind"
    expect(human).to_contain_text("Cells judged on fewer than 3 scenarios are not ranked.")
    legend = page.locator("#leaderboard .legend")
    for style in STANDINGS.values():
        expect(legend).to_contain_text(style.legend)
    assert [r.get_attribute("fill") for r in legend.locator("rect").all()] == [
        style.colour for style in STANDINGS.values()
    ]
    expect(page.get_by_role("link", name="Judge its pending candidates")).to_have_attribute(
        "href", f"/judge/{experiment}"
    )
    shot(page, "bench-leaderboard")


def phone(browser: Browser, server: AdminServer, width: int) -> Page:
    """A fresh, logged-in browser page `width` pixels wide (390: a phone)."""
    context = browser.new_context(base_url=server.url, viewport={"width": width, "height": 844})
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    opened.goto("/login")
    log_in(opened)
    expect(opened.locator("#run-size")).not_to_be_empty()  # the page's script is running
    return opened


def assert_fits(page: Page, *parts: Locator) -> None:
    """No horizontal overflow, and each part visible within the page's width."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    for part in parts:
        expect(part).to_be_visible()
        left, right = part.evaluate(
            "e => [e.getBoundingClientRect().left, e.getBoundingClientRect().right]"
        )
        assert left >= 0 and right <= width, (part, left, right)
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [390, 1280])
def test_the_bench_panel_fits_a_phone_and_defaults_to_a_small_grid(
    browser: Browser, server: AdminServer, experiment: str, width: int
) -> None:
    make_judged_experiment(server.tracking_uri, experiment)
    page = phone(browser, server, width)
    row = page.get_by_role("row", name=experiment)
    leaderboard = row.get_by_role("button", name="Leaderboard")
    form = page.get_by_role("region", name="Run a benchmark")
    assert_fits(
        page,
        row,
        leaderboard,
        row.get_by_role("link", name="Judge"),
        form.get_by_label("Models"),
        form.get_by_label("Experiment"),
        form.get_by_role("button", name="Start run"),
    )
    # The form's grid finishes in a few minutes, and says how large it is.
    expect(form.get_by_label("Scenarios")).to_have_value("3")
    expect(form.get_by_label("Tips per cell")).to_have_value("3")
    expect(form.locator("#run-size")).to_have_text(
        "9 cells: 1 model × 3 prompts × 3 scenarios, 3 tips each"
    )
    form.get_by_label("Scenarios").fill("0")  # 0 = all of the bundled suite's 8
    expect(form.locator("#run-size")).to_have_text(re.compile("^24 cells: "))

    leaderboard.click()
    human = page.get_by_role("region", name="Human judge leaderboard")
    expect(human.locator("tbody tr")).to_have_count(4)
    assert_fits(page, human.get_by_role("heading"), page.get_by_label("Experiment").first)
    page.context.close()
    page = phone(browser, server, width)  # the screenshot: the page as a user first sees it
    expect(page.get_by_role("row", name=experiment)).to_be_visible()
    expect(page.get_by_role("region", name="Human judge leaderboard")).to_be_visible()
    shot(page, f"bench-{width}")
    page.context.close()


def test_a_run_started_on_a_phone_is_listed_and_followed_at_once(
    browser: Browser, server: AdminServer, experiment: str
) -> None:
    page = phone(browser, server, 390)
    form = page.get_by_role("region", name="Run a benchmark")
    form.get_by_label("Experiment").fill(experiment)
    form.get_by_role("button", name="Start run").click()

    job, state = page.locator("#job"), page.locator("#job-state")
    expect(state).to_have_text(re.compile("queued|running"))
    expect(job).to_be_in_viewport(ratio=0.9)  # the progress card is where the user looks
    row = page.get_by_role("row", name=experiment)
    expect(row).to_be_visible()  # listed as soon as the run is started, ...
    assert state.inner_text() in ("queued", "running")
    # ... and with its buttons once its collect has created it, long before the run ends.
    expect(row.get_by_role("button", name="Leaderboard")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#job-cells")).to_have_text(re.compile(r"^[0-8] of 9 cells$"))
    assert state.inner_text() == "running"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "bench-390-run")
    page.get_by_role("button", name="Cancel").click()
    expect(state).to_have_text("cancelled", timeout=RUN_TIMEOUT_MS)
    page.context.close()


def test_a_run_started_from_the_form_is_watched_to_its_leaderboard(
    page: Page, experiment: str
) -> None:
    """The whole pipeline on the embedded model: 3 scenarios, so the automatic judge's
    leaderboard ranks the cell (3 judged scenarios are the minimum)."""
    page.goto("/login")
    log_in(page)
    form = page.get_by_role("region", name="Run a benchmark")
    form.get_by_label("Models").fill("llamacpp:smollm2-135m")
    form.get_by_label("Prompts").fill("v9")
    form.get_by_role("button", name="Start run").click()  # refused by the API, shown inline
    expect(form.get_by_role("alert")).to_contain_text("v9")
    shot(page, "bench-run-refused")
    form.get_by_label("Prompts").fill("v1")
    form.get_by_label("Tips per cell").fill("2")
    form.get_by_label("Scenarios").fill("3")
    form.get_by_label("Experiment").fill(experiment)
    form.get_by_role("button", name="Start run").click()

    state = page.locator("#job-state")
    expect(state).to_have_text(re.compile("queued|running"))
    page.locator("#job summary").click()  # open the log
    expect(page.locator("#job-experiment")).to_have_text(experiment)
    cells = page.locator("#job-cells")
    expect(cells).to_have_text(re.compile(r"^[123] of 3 cells$"), timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#job-log")).to_contain_text("[1/3] llamacpp:smollm2-135m|v1|")
    shot(page, "bench-run-progress")
    # Issue 34: while the judge loads its model and reads the rubric, its line says so
    # (it read "0 of 6 candidates judged" for 46 s)
    judged = page.locator("#job-judged")
    expect(judged).to_have_text("loading the judge model…", timeout=RUN_TIMEOUT_MS)
    shot(page, "issue34-bench-judge-loading")
    expect(state).to_have_text(re.compile("succeeded|failed|cancelled"), timeout=RUN_TIMEOUT_MS)
    assert state.inner_text() == "succeeded", page.locator("#job-error").inner_text()
    expect(page.locator("#job-cells")).to_have_text("3 of 3 cells")
    expect(page.locator("#job-judged")).to_have_text("6 of 6 candidates judged")
    expect(page.locator("#job-log")).to_contain_text("== leaderboard")

    # Done: the experiment is listed, and its leaderboard is on screen.
    expect(page.get_by_role("row", name=experiment)).to_be_visible()
    board = page.get_by_role("region", name="Leaderboard")
    expect(board.get_by_label("Experiment")).to_have_value(experiment)
    auto = page.get_by_role("region", name="Automatic judge leaderboard")
    row = auto.locator("tbody tr")
    expect(row).to_have_count(1)
    assert _cells(row)[:3] == ["1", "llamacpp:smollm2-135m", "v1"]
    assert _cells(row)[4] == "leader"
    expect(auto.get_by_role("note")).to_contain_text(
        "judge llamacpp:smollm2-135m is NOT calibrated"
    )  # its scores are not evidence, and the panel says so
    chart = auto.get_by_role("img", name=re.compile("Mean composite"))
    expect(chart.locator("rect")).to_have_count(1)
    human = page.get_by_role("region", name="Human judge leaderboard")
    expect(human).to_contain_text("No runs judged by a human yet")
    shot(page, "bench-run-done")


def _cells(row: Locator) -> list[str]:
    return [cell.strip() for cell in row.locator("td").all_inner_texts()]
