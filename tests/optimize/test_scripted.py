"""`tipbench optimize` with a scripted reflection model: every proposal known in advance, so the
front, the lineage, the registry's versions and the held-out split are checked exactly.

The world (`support.scripted_world`): a version scores its start's score plus exactly 2 on a
scenario whose time of day it asks the tips to name ("Say when in the morning."). Training on
student-morning and student-evening (minibatch: both), the script proposes:

1. from v1, a system template that says when in the morning: +2 on the morning: accepted;
2. from P1, a user template without `$tasks`: skipped, nothing written;
3. from P1, a system template saying when in the evening instead: +2 on the evening, −2 on
   the morning, no better on the minibatch: rejected;
4. from P1, a user template saying when in the evening too: +2 on both: accepted.

(GEPA picks P1 as the parent from iteration 2 on: it is on every front v1 is on, so v1 is
dominated; it rewrites system and user parts in turn, per parent.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from support.scripted_world import (
    EVENING,
    MORNING,
    REFLECTION,
    TRAINING,
    Heard,
    reflection,
    said,
    scripted_world,
    settings,
)
from tipbench.optimize import (
    BEST_METRIC,
    LINEAGE_FILE,
    PLOT_FILE,
    OptimizationResult,
    SkipReason,
    optimize,
)
from tipbench.suite import content_hash, load_suite
from tipbench.tracking import DEFAULT_PROMPT_NAME, TrackingStore

V1 = load_suite().prompt("v1")
HELD_OUT = [s.id for s in load_suite().scenarios if s.id not in TRAINING]


def name(system: str, user: str) -> str:
    """The documented name of a proposal: the start's, `-gepa-`, its template's hash."""
    return f"v1-gepa-{content_hash([system, user])[:8]}"


P1_SYSTEM, P2_SYSTEM = said(V1, "system", MORNING), said(V1, "system", EVENING)
P3_USER = said(V1, "user", EVENING)
P1, P2, P3 = name(P1_SYSTEM, V1.user), name(P2_SYSTEM, V1.user), name(P1_SYSTEM, P3_USER)
SCRIPT = [
    reflection(P1_SYSTEM, "Tips never say when."),
    reflection(V1.user.replace("$tasks", "the tasks"), "Shorter."),
    reflection(P2_SYSTEM, "Evenings matter more."),
    reflection(P3_USER, "Evenings too."),
]


@dataclass(frozen=True)
class Scripted:
    """One optimization of the script, shared by the module's tests (it takes a minute)."""

    result: OptimizationResult
    heard: Heard
    uri: str
    requests: list[dict[str, Any]]  # every chat request the fake server answered


@pytest.fixture(scope="module")
def scripted(module_home: Path) -> Scripted:
    uri = f"sqlite:///{module_home / 'mlflow.db'}"
    with scripted_world() as world:
        world.script(REFLECTION, SCRIPT)
        heard = Heard()
        result = optimize(settings(world), tracking_uri=uri, progress=heard)
        return Scripted(result, heard, uri, world.requests)


def test_front_lineage_and_skipped_proposal_are_the_scripts(scripted: Scripted) -> None:
    """Proposals, skips, scores and the final front are the ones worked out above."""
    result, heard = scripted.result, scripted.heard
    assert heard.versions == [P1, P2, P3]
    assert [(s.iteration, s.parent, s.component, s.problem, s.reason) for s in heard.skips] == [
        (2, P1, "user", "it drops the placeholder $tasks", SkipReason.PLACEHOLDERS)
    ]
    start = {p.version: p for p in heard.iterations[0].programs}["v1"].scores
    final = {p.version: p for p in result.final.programs}
    morning, evening = TRAINING
    assert final["v1"].scores == start
    assert final[P1].scores == {morning: start[morning] + 2, evening: start[evening]}
    assert final[P3].scores == {morning: start[morning] + 2, evening: start[evening] + 2}
    assert P2 not in final  # rejected on the minibatch
    assert result.final.front == {morning: (P1, P3), evening: (P3,)}
    assert [p.version for p in result.shortlist] == [P3, P1]
    assert result.final.iteration == 4 and result.final.evaluations == 20
    assert [s.iteration for s in heard.iterations] == [0, 1, 2, 3, 4]


def test_each_proposal_is_a_version_file_with_its_parent_reasons_and_training_scores(
    scripted: Scripted,
) -> None:
    result, heard = scripted.result, scripted.heard
    suite = load_suite(result.suite)
    start = {p.version: p for p in heard.iterations[0].programs}["v1"].scores
    morning, evening = TRAINING
    expected = {
        P1: ("v1", 1, "system", "Tips never say when.", {morning: 2, evening: 0}),
        P2: (P1, 3, "system", "Evenings matter more.", {morning: 0, evening: 2}),
        P3: (P1, 4, "user", "Evenings too.", {morning: 2, evening: 2}),
    }
    for version, (parent, iteration, part, reasons, gains) in expected.items():
        proposal = suite.prompt(version).proposal
        assert proposal is not None
        assert (proposal.parent, proposal.iteration, proposal.component) == (
            parent, iteration, part
        )  # fmt: skip
        assert proposal.reasons == reasons
        assert proposal.training_scores == pytest.approx(
            {s: start[s] + gain for s, gain in gains.items()}
        )
    skipped_template = V1.user.replace("$tasks", "the tasks")
    assert all(p.user != skipped_template for p in suite.prompts.values())
    assert sorted(suite.prompts) == sorted(["v1", "v2-mentor", "v3-few-shot", P1, P2, P3])


def test_registry_versions_carry_the_lineage(scripted: Scripted) -> None:
    """Each proposal is a new version of the same registry prompt, naming its parent's."""
    client = MlflowClient(scripted.uri)
    versions = {
        v.tags["prompt_version"]: v for v in client.search_prompt_versions(DEFAULT_PROMPT_NAME)
    }
    assert {"v1", P1, P2, P3} <= set(versions)
    for version, parent in ((P1, "v1"), (P2, P1), (P3, P1)):
        tags = versions[version].tags
        assert tags["parent_prompt_version"] == parent
        assert tags["parent_registry_version"] == str(versions[parent].version)
    assert json.loads(versions[P3].tags["training_scores"]).keys() == set(TRAINING)


def test_the_split_holds_out_six_scenarios_the_optimizer_never_saw(scripted: Scripted) -> None:
    """Training cells are on training scenarios only; the held-out grid is the start and the
    shortlist on the six others only; no reflection prompt names a held-out person."""
    result = scripted.result
    store = TrackingStore(scripted.uri)
    training = store.cell_runs(store.experiment_id("tip-bench-optimize"))
    assert {(r.prompt_version, r.scenario_id) for r in training} == {
        (v, s) for v in ("v1", P1, P2, P3) for s in TRAINING
    }
    heldout = store.cell_runs(store.experiment_id("tip-bench-optimize-heldout"))
    assert sorted((r.prompt_version, r.scenario_id) for r in heldout) == sorted(
        (v, s) for v in ("v1", P3, P1) for s in HELD_OUT
    )
    assert result.split.heldout == tuple(HELD_OUT)
    reflections = [r for r in scripted.requests if r["model"] == REFLECTION and r["messages"]]
    assert len(reflections) == len(SCRIPT)
    prompts = "\n".join(m["content"] for r in reflections for m in r["messages"])
    assert "Maya" in prompts  # the student: the training scenarios' person
    for person in ("Daniel", "Sofia", "Harold"):  # the held-out ones
        assert person not in prompts
    assert result.heldout is not None
    gate = result.heldout.gate.decision
    assert not gate.promote  # no person has judged the held-out cells yet


def test_the_run_shows_the_front_per_iteration_and_the_best_score_chart(
    scripted: Scripted, tmp_path: Path
) -> None:
    result, heard = scripted.result, scripted.heard
    client = MlflowClient(scripted.uri)
    run = client.get_run(result.run_id)
    history = sorted(
        (m.step, m.value) for m in client.get_metric_history(run.info.run_id, BEST_METRIC)
    )
    means = [s.best.mean for s in heard.iterations]
    assert history == list(enumerate(means))
    assert means[1] == means[2] == means[3] < means[4]  # P1 from iteration 1, P3 at 4
    files = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {LINEAGE_FILE, PLOT_FILE, "front", "shortlist.json"} <= files
    fronts = [f.path for f in client.list_artifacts(run.info.run_id, "front")]
    assert fronts == [f"front/iteration-{i:04d}.json" for i in range(5)]
    lineage = json.loads(
        Path(client.download_artifacts(run.info.run_id, LINEAGE_FILE, str(tmp_path))).read_text()
    )
    rows = {row["version"]: row for row in lineage["rows"]}
    assert [row["version"] for row in lineage["rows"]] == ["v1", P1, P2, P3]
    assert (rows[P2]["standing"], rows[P3]["standing"]) == ("rejected", "pool")
    assert rows[P3]["front"] == list(TRAINING) and rows[P3]["shortlisted"]
    assert lineage["skipped"][0]["problem"] == "it drops the placeholder $tasks"
    assert lineage["skipped_by_reason"] == {"placeholder problem": 1}
    # each proposal as a diff of the part it rewrote, from its parent's
    assert rows[P1]["diff"].splitlines()[:2] == ["--- v1 (system)", f"+++ {P1} (system)"]
    assert rows[P1]["diff"].splitlines()[-2:] == [f"-{V1.system}", f"+{P1_SYSTEM}"]
    assert rows[P3]["diff"].splitlines()[:2] == [f"--- {P1} (user)", f"+++ {P3} (user)"]
    assert rows[P2]["diff"].splitlines()[-1] == f"+{P2_SYSTEM}" and rows["v1"]["diff"] == ""
    assert run.data.tags["shortlist"] == f"{P3},{P1}"
    assert run.info.status == "FINISHED"
