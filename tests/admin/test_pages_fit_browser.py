"""Issue 34, item 4, and issue 47, items 2 and 3: the pages at 1280 px and on a phone
(390×844, a touch screen), in a real browser (Debian's Chromium through Playwright) against
`tipbench serve` on loopback with a real MLflow store. What is checked is where things are
on screen: bounding boxes within the viewport or the scrolling box, the order of elements,
what is visible, where a name goes on a new line. Screenshots at both widths go to
test-artifacts/pages/issue34-*.png and issue47-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.cells import record_cells
from support.judged_runs import JudgedCell, write_cells
from support.servers import TipbenchServer
from tipbench.compare import STANDINGS
from tipbench.human_tier import judging_state, next_run
from tipbench.tracking import Scores, TrackingStore, record_scores

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Locator, Page, Route, expect

from support.browser import chromium

pytestmark = pytest.mark.slow
TOKEN = "pages-fit-token-0123456789"
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
TIMEOUT_MS = 20_000
expect.set_options(timeout=TIMEOUT_MS)
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
STANDING_LABELS = [style.label for style in STANDINGS.values()]
# Long names, as real model specs are: they make the combined tier's table wide.
MODELS = ("llamacpp:smollm2-135m-instruct-q4_k_m", "ollama:qwen2.5:1.5b-instruct-q4_K_M")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TipbenchServer]:
    workdir = tmp_path_factory.mktemp("pages-fit")
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


def open_page(browser: Browser, server: TipbenchServer, size: dict[str, int], path: str) -> Page:
    """A fresh, logged-in page of `size`; a phone-sized one is a touch screen, as phones are."""
    phone = size["width"] < 600
    context = browser.new_context(
        base_url=server.url, viewport=size, has_touch=phone, is_mobile=phone
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"/login?next={path}")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(re.escape(path) + "$"))
    page.wait_for_load_state()  # its stylesheets too: a layout measured before is not the page's
    return page


def shot(page: Page, name: str, issue: int = 34, part: Locator | None = None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"issue{issue}-{name}.png"
    if part is None:
        page.screenshot(path=path, full_page=True)
    else:
        part.screenshot(path=path)


#: The character before each place an element's text goes on to a new line (spaces aside:
#: a line may always end between words).
LINE_ENDS = """element => {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    const seen = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
            if (!node.data[i].trim()) continue;
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            seen.push([node.data[i], range.getBoundingClientRect().top]);
        }
    }
    return seen.filter((c, i) => i + 1 < seen.length && seen[i + 1][1] > c[1] + 2).map(c => c[0]);
}"""


def line_ends(part: Locator) -> list[str]:
    ends: list[str] = part.evaluate(LINE_ENDS)
    return ends


def uncovered(part: Locator) -> bool:
    """Nothing lies over the middle of the part's right edge (a fixed column, say)."""
    covered: bool = part.evaluate(
        """e => { const r = e.getBoundingClientRect();
                  const top = document.elementFromPoint(r.right - 2, r.top + r.height / 2);
                  return top !== null && (e === top || e.contains(top)); }"""
    )
    return covered


def box(part: Locator) -> dict[str, float]:
    found = part.bounding_box()
    assert found is not None, part
    return found


def no_page_overflow(page: Page) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def combined_experiment(store: TrackingStore, experiment: str) -> None:
    """Two long-named models × two prompts on six scenarios, both tiers, one human score per
    cell in the judging order: the combined tier has a table with every column."""
    cells = []
    for model in MODELS:
        for prompt, level in (("v1", 4), ("v3-few-shot", 2)):
            for s in range(1, 7):
                scores = {c: Scores(level, level, 3 + s % 2, 1, 0) for c in ("c1", "c2")}
                cells.append(JudgedCell(model, prompt, f"s{s}", human=None, auto=scores))
    experiment_id = store.experiment_id(experiment, create=True)
    write_cells(store.client, experiment_id, cells, with_candidates=True)
    for _ in range(4):
        run = next_run(judging_state(store, experiment))
        assert run is not None
        level = 4 if run.prompt_version == "v1" else 2
        human = {c: Scores(level, level + (c == "c1"), 4, 1, 0) for c in ("c1", "c2")}
        record_scores(store.client, run.run_id, "human", human, "ann", 0)


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_every_leaderboard_shows_its_composite_and_standing_without_scrolling(
    browser: Browser, server: TipbenchServer, experiment: str, size: dict[str, int]
) -> None:
    """Issue 47, items 2 and 3: at 390 px the leaderboard showed only #, model, prompt and
    the standing (a column fixed at the right edge, over the prompt: "v3-few-sh"); the
    composite and every figure were a sideways scroll away, the chart ran off the screen,
    and model names broke mid-word ("llamacpp:smoll / m2-135m"). Now each row's rank,
    names, composite and standing come first, in view without scrolling, nothing lies over
    a name, names go on to a new line only after a `:` or a `-`, the other figures scroll
    in the table's box, and the chart is drawn for the width it has."""
    store = TrackingStore(server.tracking_uri)  # type: ignore[attr-defined]
    if store.client.get_experiment_by_name(experiment) is None:
        combined_experiment(store, experiment)
    page = open_page(browser, server, size, "/")
    page.get_by_role("row", name=experiment).get_by_role("button", name="Leaderboard").click()
    combined = page.get_by_role("region", name="Combined (human + automatic) leaderboard")
    expect(combined.locator("tbody tr")).to_have_count(4)
    width = size["width"]
    tiers = page.locator("section.tier").all()
    assert len(tiers) == 3
    for tier in tiers:
        scroller = tier.locator(".table-scroll")
        scroller.evaluate("e => { e.scrollLeft = 0; }")
        frame = box(scroller)
        right = min(frame["x"] + frame["width"], width) + 0.5
        heads = [th.inner_text().split("\n")[0] for th in tier.locator("thead th.key").all()]
        assert heads == ["#", "model", "prompt", "composite", "standing"], heads
        rows = tier.locator("tbody tr").all()
        assert rows
        for row in rows:
            # down the page to the row: the table's box stays scrolled to its left
            row.evaluate("e => window.scrollBy(0, e.getBoundingClientRect().top - 200)")
            for cell in row.locator("td.key").all():  # rank, names, composite, standing
                edge = box(cell)
                assert frame["x"] - 0.5 <= edge["x"] and edge["x"] + edge["width"] <= right, (
                    cell.inner_text(),
                    edge,
                    frame,
                )
                assert cell.evaluate("e => e.scrollWidth <= e.clientWidth"), cell.inner_text()
                assert uncovered(cell), cell.inner_text()
            for name in row.locator("td.name").all():
                assert set(line_ends(name)) <= {":", "-"}, (name.inner_text(), line_ends(name))
            standing = row.locator("td.standing").inner_text().replace("\n", " ")
            assert standing in STANDING_LABELS, standing
        assert "v3-few-shot" in tier.locator("tbody").inner_text()  # whole, not "v3-few-sh"
        chart = tier.get_by_role("img", name=re.compile("Mean composite"))
        drawn = box(chart)
        assert drawn["x"] >= frame["x"] - 0.5 and drawn["x"] + drawn["width"] <= right
        assert tier.locator("figure.chart").evaluate("e => e.scrollWidth <= e.clientWidth")
        for text in chart.locator("text").all():  # labels, ticks and the axis's title
            edge = box(text)
            assert drawn["x"] - 0.5 <= edge["x"] <= edge["x"] + edge["width"] <= right, (
                text.text_content()
            )
        shown = [t.evaluate("e => e.firstChild.nodeValue") for t in chart.locator("text").all()]
        cut = [text for text in shown if text and "…" in text]  # the middle goes, the prompt stays
        assert all("v3-few-shot" in t or "· v1" in t for t in cut), shown
    no_page_overflow(page)
    combined.scroll_into_view_if_needed()
    shot(page, f"leaderboard-combined-{width}", 47, combined)
    shot(page, f"leaderboard-{width}", 47)
    page.context.close()


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_identifiers_go_on_to_a_new_line_only_after_a_colon_or_a_hyphen(
    browser: Browser, server: TipbenchServer, size: dict[str, int]
) -> None:
    """Issue 47, item 3: the Policies page's hint broke `tip-policy-` inside itself, and
    names broke mid-word wherever they met an edge. Every identifier of the pages (model
    specs, experiments, prompt versions) now wraps only after a `:` or a `-`, and the
    prefixes a name must start with (`tip-policy-`, `tip-bench-`) stay on one line."""
    experiment = "tip-bench-a-rather-long-experiment-name-for-a-phone"
    record_cells(server.tracking_uri, experiment, n_scenarios=1)  # type: ignore[attr-defined]
    for path in ("/", "/policies", f"/judge/{experiment}", "/judge/tip-bench-not-collected"):
        page = open_page(browser, server, size, path)
        page.wait_for_load_state("networkidle")
        idents = page.locator(".ident:visible").all()
        prefixes = page.locator("code.whole:visible").all()
        assert idents or prefixes, path
        for ident in idents:
            ends = line_ends(ident)
            assert set(ends) <= {":", "-"}, (path, ident.inner_text(), ends)
        for prefix in prefixes:
            assert not line_ends(prefix), (path, prefix.inner_text())
        if path == "/policies":
            expect(page.locator("#simulate-experiment-hint code")).to_have_text("tip-policy-")
        no_page_overflow(page)
        page.context.close()


def test_a_board_the_reader_opened_stays_when_the_first_loads_answer_comes_late(
    browser: Browser, server: TipbenchServer, experiment: str
) -> None:
    """The panel's first load shows the newest experiment's board; when its answer came
    after the reader had opened another experiment's board, it replaced that board (the
    table being read was drawn anew, with another experiment's figures). Now the board the
    reader opened stays: the same table, its four combined rows."""
    store = TrackingStore(server.tracking_uri)  # type: ignore[attr-defined]
    combined_experiment(store, experiment)
    newest = experiment.replace("-test-", "-newer-")  # no name contains the other
    record_cells(server.tracking_uri, newest, n_scenarios=1)  # type: ignore[attr-defined]
    page = open_page(browser, server, PHONE, "/")
    # This document's own first load ends before the route is set: a request it made later
    # would be held, then lost with the document at the reload.
    expect(page.locator("#leaderboard-experiment")).to_have_value(newest)
    page.wait_for_load_state("networkidle")
    held: list[Route] = []  # the first load's request for the newest board, answered late
    page.route(f"**/api/bench/leaderboard/{newest}/view*", lambda route: held.append(route))
    page.reload()
    for _ in range(TIMEOUT_MS // 100):  # the route's handler runs as events are dispatched
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the first load asked for no board"
    page.get_by_role("row", name=experiment).get_by_role("button", name="Leaderboard").click()
    combined = page.get_by_role("region", name="Combined (human + automatic) leaderboard")
    expect(combined.locator("tbody tr")).to_have_count(4)
    table = combined.locator("table").element_handle()
    with page.expect_response(lambda r: newest in r.url):
        held[0].continue_()
    page.wait_for_load_state("networkidle")
    expect(page.locator("#leaderboard-experiment")).to_have_value(experiment)
    expect(combined.locator("tbody tr")).to_have_count(4)
    assert table.evaluate("e => e.isConnected")  # not drawn anew
    page.context.close()


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_the_judging_page_puts_the_scenario_first_on_a_phone(
    browser: Browser, server: TipbenchServer, experiment: str, size: dict[str, int]
) -> None:
    """On a phone the scenario comes before the scores (it was about 1,000 px below them)
    and the keyboard hints are hidden on its touch screen; at 1280 the scenario sits beside
    the candidate and the hints show."""
    record_cells(server.tracking_uri, experiment, n_scenarios=2)  # type: ignore[attr-defined]
    page = open_page(browser, server, size, f"/judge/{experiment}")
    scenario = page.get_by_role("region", name=re.compile("^Scenario"))
    candidate = page.get_by_role("region", name=re.compile("^Candidate"))
    scores = page.locator("#score-form")
    expect(page.locator("#persona-name")).to_have_text("Maya")
    hints = page.locator(".key-hint")
    touch = page.evaluate("matchMedia('(hover: none) and (pointer: coarse)').matches")
    if size is PHONE:
        assert touch
        assert box(scenario)["y"] + box(scenario)["height"] <= box(scores)["y"]
        assert box(scenario)["y"] < box(candidate)["y"]
        assert box(scenario)["y"] < size["height"]  # on the first screen
        assert all(not hint.is_visible() for hint in hints.all())
        assert page.locator("kbd:visible").count() == 0
        scores.locator(".level").first.click()  # a tap scores relevance 1 ...
        expect(page.locator('input[name="relevance"][value="1"]')).to_be_checked()
        page.get_by_role("button", name="Save candidate").click()  # ... the rest is missing
        expect(page.locator("#judge-error")).to_have_text("Score actionability and tone first.")
    else:
        assert not touch
        assert box(scenario)["x"] >= box(candidate)["x"] + box(candidate)["width"]
        assert abs(box(scenario)["y"] - box(candidate)["y"]) < 2
        expect(hints.first).to_be_visible()
        expect(page.locator("#save kbd")).to_have_text("Enter")
    for part in (scenario, candidate, scores, page.get_by_role("button", name="Save candidate")):
        edge = box(part)
        assert edge["x"] >= 0 and edge["x"] + edge["width"] <= size["width"], part
    no_page_overflow(page)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, f"judge-{size['width']}")
    page.context.close()


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "390"])
def test_a_command_to_copy_never_wraps_inside_an_option(
    browser: Browser, server: TipbenchServer, size: dict[str, int]
) -> None:
    """The Policies page broke `--apply` across two lines: each word of a command is now
    laid out on one line (it may wrap between words), and copying gives the command."""
    page = open_page(browser, server, size, "/policies")
    command = page.locator("code.command")
    expect(command).to_have_text("tipbench policy promote --challenger NAME --apply")
    lines_per_word = command.evaluate(
        """code => [...code.querySelectorAll("span")].map(word => {
            const range = document.createRange();
            range.selectNodeContents(word);
            return [word.textContent, new Set([...range.getClientRects()].map(r => r.top)).size];
        })"""
    )
    assert [word for word, _ in lines_per_word] == [
        "tipbench", "policy", "promote", "--challenger", "NAME", "--apply",
    ]  # fmt: skip
    assert all(lines == 1 for _, lines in lines_per_word), lines_per_word
    edge = box(command)
    assert edge["x"] >= 0 and edge["x"] + edge["width"] <= size["width"]
    no_page_overflow(page)
    command.scroll_into_view_if_needed()
    shot(page, f"policies-{size['width']}")
    page.context.close()


def test_every_page_has_an_icon_and_asks_for_nothing_missing(
    browser: Browser, server: TipbenchServer, experiment: str
) -> None:
    """/favicon.ico was a 404 on every page: each page links the icon, which answers
    before login too; no request of any page fails."""
    record_cells(server.tracking_uri, experiment, n_scenarios=1)  # type: ignore[attr-defined]
    context = browser.new_context(base_url=server.url, viewport=WIDE)
    page = context.new_page()
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "requestfailed",  # a request cut short by the next navigation is no failure
        lambda r: None if "ERR_ABORTED" in (r.failure or "") else failed.append(f"{r.url}"),
    )
    page.goto("/login")
    icon = page.evaluate(
        """async () => {
            const link = document.querySelector('link[rel="icon"]');
            const response = await fetch(link.href, {credentials: "omit"});
            return [new URL(link.href).pathname, response.status,
                    response.headers.get("content-type")];
        }"""
    )
    assert icon == ["/favicon.ico", 200, "image/svg+xml"]
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/$"))
    for path in ("/", f"/judge/{experiment}", "/policies"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.locator('link[rel="icon"]').get_attribute("href") == "/favicon.ico"
    assert not [f for f in failed if "/api/policies" not in f], failed
    context.close()
