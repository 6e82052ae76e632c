"""Issue 47, items 4 and 5: what the pages say before there is anything to show, and what a
job card counts, in Chromium against `tipbench serve` on loopback with a real MLflow store.

On a fresh install a page showed an empty state as a failure (red, polling into 404s); a
job card read "0 of 0 candidates judged" while its run was still collecting; the panel
started a 1-scenario run without the warning `tipbench run` gives for 3. The job-card test
runs the server with `TIPBENCH_RUN_JOBS=false`: the API queues a job and never runs it,
and the test moves the job through its phases in the server's own job store, as the
runner does from a run's progress events (a whole run through the panel is
tests/admin/test_pages_browser.py's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.servers import TipbenchServer
from tipbench.admin._jobs import JobStore, Progress
from tipbench.collect import CollectConfig
from tipbench.pipeline import never_promotes
from tipbench.tracking import TrackingStore

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, Page, expect

from support.browser import chromium

pytestmark = pytest.mark.slow
TOKEN = "panel-states-token-0123456789"
TIMEOUT_MS = 20_000
SHOTS = Path(__file__).parents[2] / "test-artifacts" / "pages"
expect.set_options(timeout=TIMEOUT_MS)


def serve(workdir: Path, **env: str) -> TipbenchServer:
    tracking = f"sqlite:///{workdir / 'mlflow.db'}"
    MlflowClient(tracking).search_experiments()  # the store's tables, before two processes race
    admin = TipbenchServer(
        workdir,
        {
            "TIPBENCH_ADMIN_TOKEN": TOKEN,
            "TIPBENCH_HOME": str(workdir / "home"),
            "MLFLOW_TRACKING_URI": tracking,
            **env,
        },
    )
    admin.url = f"http://localhost:{admin.port}"  # a secure context: the cookie keeps Secure
    admin.tracking_uri = tracking  # type: ignore[attr-defined]
    return admin


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def logged_in(browser: Browser, server: TipbenchServer, width: int) -> tuple[Page, list[str]]:
    """A fresh page, logged in; the list collects every request that failed from then on."""
    phone = width < 600
    context = browser.new_context(
        base_url=server.url,
        viewport={"width": width, "height": 844},
        has_touch=phone,
        is_mobile=phone,
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto("/login")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/$"))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "requestfailed",  # a request cut short by the next navigation is no failure
        lambda r: None if "ERR_ABORTED" in (r.failure or "") else failed.append(r.url),
    )
    page.on("pageerror", lambda error: failed.append(f"script error: {error}"))
    return page, failed


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"issue47-{name}.png", full_page=True)


@pytest.mark.parametrize("width", [390, 1280])
def test_a_fresh_install_shows_empty_states_that_say_what_to_do(
    browser: Browser, tmp_path: Path, width: int
) -> None:
    """Every page but Optimize (its own test's), on a store with nothing in it, and the
    judging page of an experiment that has no run yet: each says what to do, nothing is in
    an error's colour, and no request of the page fails, also after its polls."""
    empty = "tip-bench-empty"
    with serve(tmp_path) as server:
        page, failed = logged_in(browser, server, width)
        expected = [
            (
                "/",
                "No experiments yet: start a run.",
                "No leaderboard yet: start a run above, and its leaderboard shows here.",
            ),
            (
                "/judge/tip-bench-auto",
                "Nothing to judge yet",
                "has no collected runs yet. Start a run on the bench panel",
            ),
            (
                "/policies",
                "Nothing served yet: tipbench policy serve starts the policies",
                "No simulation in tip-policy-sim yet: start one below.",
                "Nothing logged to evaluate yet",
                "Nothing served yet: a dry run needs the live policy",
            ),
            (f"/judge/{empty}", "Nothing to judge yet", "Start a run on the bench panel"),
            ("/", "No runs judged by a human yet", "No runs judged by the automatic judge yet"),
        ]
        for path, *texts in expected:
            if path == f"/judge/{empty}":  # an experiment, created by a run that has no cell yet
                TrackingStore(server.tracking_uri).experiment_id(empty, create=True)  # type: ignore[attr-defined]
            page.goto(path)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(2_500)  # a poll or two more
            for text in texts:
                expect(page.locator("main")).to_contain_text(text)
            alarms = page.locator(".error:visible, [role=alert]:visible, .not-calibrated:visible")
            assert alarms.count() == 0, (path, alarms.all_inner_texts())
            assert not failed, (path, failed)
            shot(page, f"empty{path.replace('/', '-').rstrip('-') or '-bench'}-{width}")
        page.context.close()


def test_a_job_card_counts_what_its_phase_does_and_warns_like_the_cli(
    browser: Browser, tmp_path: Path, experiment: str
) -> None:
    """The run form says, before a 1-scenario run starts, what `tipbench run` warns (the
    same words); the job card repeats it, counts cells while the run collects (no judge
    line: it read "0 of 0 candidates judged"), then the judge's candidates; a simulation
    job, which counts no cells, shows no "0 of 0" either."""
    with serve(tmp_path, TIPBENCH_RUN_JOBS="false") as server:
        jobs = JobStore(tmp_path / "home" / "jobs.sqlite", tmp_path / "home" / "jobs")
        page, failed = logged_in(browser, server, 390)
        form = page.get_by_role("region", name="Run a benchmark")
        warning = form.locator("#run-warning")
        three = never_promotes(CollectConfig(n_scenarios=3))
        one = never_promotes(CollectConfig(n_scenarios=1))
        assert three is not None and one is not None
        expect(warning).to_have_text(f"{three[0].upper()}{three[1:]}.")  # the form's default
        form.get_by_label("Scenarios").fill("0")  # all 8: a grid that can promote
        expect(warning).to_be_hidden()
        form.get_by_label("Scenarios").fill("1")
        expect(warning).to_have_text(f"{one[0].upper()}{one[1:]}.")
        form.get_by_label("Experiment").fill(experiment)
        form.get_by_label("Tips per cell").fill("2")
        form.get_by_role("button", name="Start run").click()
        card = page.locator("#job")
        expect(page.locator("#job-state")).to_have_text("queued")
        expect(card.locator("#job-warning")).to_have_text(f"{one[0].upper()}{one[1:]}.")
        (job,) = jobs.jobs()

        def phase(progress: Progress) -> None:
            jobs.set_progress(job.id, progress)

        assert jobs.claim(job.id)
        phase(Progress("collect", 1, 3))
        expect(page.locator("#job-cells")).to_have_text("1 of 3 cells")
        expect(page.locator("#job-phase")).to_have_text("collecting candidates")
        expect(page.locator("#job-judge-line")).to_be_hidden()
        assert "0 of 0" not in card.inner_text()
        shot(page, "job-collect-390")
        phase(Progress("judge", 3, 3, 0, 6, judge_loading="llamacpp:smollm2-135m"))
        expect(page.locator("#job-judged")).to_have_text("loading the judge model…")
        phase(Progress("judge", 3, 3, 2, 6))
        expect(page.locator("#job-judged")).to_have_text("2 of 6 candidates judged")
        expect(page.locator("#job-cells")).to_have_text("3 of 3 cells")
        phase(Progress("report", 3, 3, 6, 6))
        jobs.finish(job.id, "succeeded", exit_code=0, error=None)
        expect(page.locator("#job-state")).to_have_text("succeeded")
        expect(page.locator("#job-judged")).to_have_text("6 of 6 candidates judged")

        simulation = page.request.post(
            "/api/policies/simulate",
            data={"policies": ["egreedy-v1"], "seeds": 1, "days": 1, "users": 2},
            headers={"X-CSRF-Token": csrf(page)},
        )
        assert simulation.status == 202, simulation.text()
        assert jobs.claim(simulation.json()["job_id"])
        page.reload()  # the card follows the latest job
        expect(page.locator("#job-id")).to_have_text(simulation.json()["job_id"])
        expect(page.locator("#job-state")).to_have_text("running")
        expect(page.locator("#job-cells-line")).to_be_hidden()
        expect(page.locator("#job-judge-line")).to_be_hidden()
        expect(page.locator("#job-warning")).to_be_hidden()
        assert "0 of 0" not in card.inner_text()
        assert not failed, failed
        page.context.close()


def csrf(page: Page) -> str:
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    assert token
    return token
