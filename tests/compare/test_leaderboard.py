"""Leaderboards from judged cell runs in a real SQLite store, against figures worked by hand."""

from __future__ import annotations

import json
import math
from statistics import fmean

import pytest

from support.judged_experiment import ALPHA, AUTO, BETA, DELTA, GAMMA, HUMAN, JudgedExperiment
from support.judged_runs import JudgedCell, scores, uniform, write_cells
from tipbench._errors import TrackingError
from tipbench.compare import (
    Leaderboard,
    build_leaderboard,
    leaderboard_document,
    leaderboard_for,
    leaderboard_warnings,
    leaderboards_for,
)
from tipbench.stats import mean_interval, paired_comparison
from tipbench.tracking import CellRun, TrackingStore


def board(judged: JudgedExperiment, tier: str = "human", **options: int) -> Leaderboard:
    return leaderboard_for(judged.store, judged.name, tier, **options)  # type: ignore[arg-type]


def test_cells_are_ranked_by_the_evidence(judged: JudgedExperiment) -> None:
    human = board(judged)
    assert [(r.model, r.prompt_version, r.rank_text, r.standing) for r in human.rows] == [
        (ALPHA, "v1", "1=", "leader"),
        # Lowest mean, but it pairs with the leader on three scenarios only and with beta
        # on the same three: nothing is significantly ahead of it, nobody can say more.
        (GAMMA, "v1", "1=", "undecided"),
        (BETA, "v1", "3", "behind"),  # significantly behind alpha on six scenarios
        (ALPHA, "v2", "–", "too little data"),  # highest mean, but judged on two only
    ]
    assert human.leader is not None and human.leader.name == f"{ALPHA}|v1"
    assert [row.name for row in human.first] == [f"{ALPHA}|v1"]
    assert human.n_runs == 7 + 6 + 6 + 2  # the pending run and auto-only runs do not count


def test_each_scenario_weighs_the_same(judged: JudgedExperiment) -> None:
    alpha = board(judged).row(ALPHA, "v1")
    # s1 was run twice (13 and 15): one scenario value of 14, not two runs.
    assert alpha.composite == pytest.approx(85 / 6)
    assert alpha.composite != pytest.approx(fmean([13, 15, 14, 15, 13, 14, 15]))
    assert (alpha.n_scenarios, alpha.n_runs, alpha.n_candidates) == (6, 7, 14)
    for (model, prompt), values in HUMAN.items():
        row = board(judged).row(model, prompt)
        assert row.composite == pytest.approx(fmean(values.values()))
        assert row.scenarios == pytest.approx(values)  # what promotion pairs by scenario


def test_per_criterion_means_average_runs_then_scenarios(sqlite_uri: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("criteria", create=True)
    runs = {
        "s1": [scores((5, 4, 3, 1, 0), (3, 2, 1, 0, 1))],
        "s2": [scores((4, 4, 4, 1, 0), (4, 4, 4, 1, 0))],
        "s3": [scores((5, 5, 5, 1, 0), (5, 5, 5, 1, 0)), scores((1, 1, 1, 0, 1), (1, 1, 1, 0, 1))],
    }
    write_cells(
        store.client,
        experiment_id,
        [JudgedCell(ALPHA, "v1", s, human=h) for s, many in runs.items() for h in many],
    )
    row = leaderboard_for(store, "criteria", "human").row(ALPHA, "v1")

    def expected(name: str) -> float:  # runs' means, then scenarios' means, then the mean
        return fmean(
            fmean(fmean(c.as_dict()[name] for c in run.values()) for run in many)
            for many in runs.values()
        )

    assert row.relevance == pytest.approx(11 / 3)  # (4 + 4 + 3) / 3
    for name in ("relevance", "actionability", "tone", "format_ok", "overlong"):
        assert row.mean(name) == pytest.approx(expected(name)), name
    assert row.format_ok == pytest.approx((0.5 + 1 + 0.5) / 3)  # share of flagged candidates
    composite = row.relevance + row.actionability + row.tone + 2 * row.format_ok - row.overlong
    assert row.composite == pytest.approx(composite)


def test_interval_is_over_scenario_values(judged: JudgedExperiment) -> None:
    human = board(judged)
    for row in human.rows:
        values = list(HUMAN[(row.model, row.prompt_version)].values())
        expected = mean_interval(values)
        assert row.interval == expected and row.composite == pytest.approx(expected.value)
        assert row.interval.method == "sign-flip" or row.n_scenarios < 6
    alpha = human.row(ALPHA, "v1")  # six values: the exact interval is their range
    assert (alpha.interval.low, alpha.interval.high, alpha.interval.method) == (
        13.0, 15.0, "sign-flip",
    )  # fmt: skip
    short = human.row(ALPHA, "v2")  # two values: no 95% interval exists
    assert short.interval.method == "none" and math.isnan(short.interval.low)
    interval = short.to_dict()["interval"]  # the one interval of every JSON: `Estimate`'s keys
    assert interval == {
        "value": short.composite, "low": None, "high": None, "method": "none", "se": None,
        "n": 2, "confidence": 0.95,
    }  # fmt: skip


def test_comparison_with_the_leader_pairs_shared_scenarios(judged: JudgedExperiment) -> None:
    human = board(judged)
    leader = HUMAN[(ALPHA, "v1")]
    assert human.row(ALPHA, "v1").vs_leader is None

    beta = human.row(BETA, "v1")
    assert beta.vs_leader == paired_comparison(leader, HUMAN[(BETA, "v1")])
    assert beta.vs_leader is not None
    assert beta.vs_leader.n_pairs == 6
    assert beta.vs_leader.difference.value == pytest.approx(-14 / 6)
    assert beta.vs_leader.p_value == pytest.approx(2 / 64)  # behind on every scenario
    assert not beta.tied_with_leader

    gamma = human.row(GAMMA, "v1")  # s7..s9 have no counterpart: only s4..s6 pair
    assert gamma.vs_leader is not None
    assert gamma.vs_leader.n_pairs == 3
    assert gamma.vs_leader.difference.value == pytest.approx(0.0)  # +1, 0, −1
    assert gamma.composite < beta.composite  # ranked by mean, though level on shared ones
    # Three pairs: no p below 2/8 is attainable, so nothing can be concluded, not even a tie.
    assert gamma.vs_leader.min_p_value == 0.25
    assert gamma.verdict == "inconclusive"
    assert not gamma.tied_with_leader


def test_cells_with_too_little_data_are_shown_unranked(judged: JudgedExperiment) -> None:
    row = board(judged).row(ALPHA, "v2")
    assert (row.rank, row.status, row.vs_leader, row.standing) == (
        None, "insufficient data", None, "too little data",
    )  # fmt: skip
    assert row.composite == 17.0 and row.n_scenarios == 2

    relaxed = board(judged, min_scenarios=2)
    assert relaxed.row(ALPHA, "v2").rank == 1
    assert relaxed.row(ALPHA, "v1").vs_leader is not None

    strict = board(judged, min_scenarios=7)
    assert strict.leader is None
    assert all(r.status == "insufficient data" and r.vs_leader is None for r in strict.rows)


def test_each_tier_ranks_its_own_scores(judged: JudgedExperiment) -> None:
    human, auto = leaderboards_for(judged.store, judged.name)
    assert (human.tier, auto.tier) == ("human", "auto")
    assert [(r.model, r.rank_text, r.standing) for r in auto.rows] == [
        (BETA, "1=", "leader"), (DELTA, "1=", "undecided"), (ALPHA, "3", "behind"),
    ]  # fmt: skip
    for row in auto.rows:
        assert row.composite == pytest.approx(fmean(AUTO[(row.model, "v1")].values()))
    assert DELTA not in {r.model for r in human.rows}  # judged by the auto tier only
    assert GAMMA not in {r.model for r in auto.rows}  # judged by the human tier only
    delta = auto.row(DELTA, "v1")
    assert delta.vs_leader is not None and delta.vs_leader.n_pairs == 3
    # −1 on each of three scenarios (the case): p = 2/8 cannot be significant, and
    # no 95% interval exists on three pairs (a bootstrap gave [−1, −1], excluding 0).
    difference = delta.vs_leader.difference
    assert math.isnan(difference.low) and difference.method == "none"
    assert delta.vs_leader.p_value == 0.25 == delta.vs_leader.min_p_value
    assert delta.verdict == "inconclusive" and delta.standing == "undecided"
    document = delta.to_dict()
    assert (document["standing"], document["rank"], document["rank_shared"]) == (
        "undecided", 1, True,
    )  # fmt: skip
    assert document["tied_with_leader"] is False
    assert document["vs_leader"]["verdict"] == "inconclusive"
    assert document["vs_leader"]["difference"]["method"] == "none"
    assert document["vs_leader"]["min_p_value"] == 0.25
    alpha = auto.row(ALPHA, "v1")  # −2 on six: p = 2/64, the interval excludes 0
    assert alpha.verdict == "different" and alpha.standing == "behind"


def test_build_leaderboard_is_a_pure_function_of_the_runs(judged: JudgedExperiment) -> None:
    runs = judged.store.cell_runs(judged.experiment_id, judgeable=True)
    first = build_leaderboard(runs, "human", experiment=judged.name)
    again = build_leaderboard(list(reversed(runs)), "human", experiment=judged.name)
    assert first.rows == again.rows
    assert first.rows == board(judged).rows
    with pytest.raises(ValueError, match="min_scenarios"):
        build_leaderboard(runs, "human", min_scenarios=0)


def test_the_document_is_plain_json_with_the_notes_after_the_rows(
    judged: JudgedExperiment,
) -> None:
    human = board(judged)
    document = json.loads(json.dumps(leaderboard_document(human), allow_nan=False))
    assert list(document)[list(document).index("rows") + 1] == "notes"
    assert document["experiment"] == judged.name and document["tier"] == "human"
    assert document["leader"] == {"model": ALPHA, "prompt_version": "v1"}
    assert [row["rank"] for row in document["rows"]] == [1, 1, 3, None]
    assert [row["standing"] for row in document["rows"]] == [
        "leader", "undecided", "behind", "too little data",
    ]  # fmt: skip
    assert any("no value" in note for note in document["notes"])  # why some have no interval
    beta = document["rows"][2]
    assert beta["vs_leader"]["n_pairs"] == 6
    assert beta["vs_leader"]["p_value"] == pytest.approx(2 / 64)
    assert beta["composite"] == pytest.approx(71 / 6)
    assert document["rows"][0]["vs_leader"] is None


def test_no_shared_scenario_gives_no_figures_and_no_tie(sqlite_uri: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("apart", create=True)
    write_cells(
        store.client,
        experiment_id,
        [JudgedCell(ALPHA, "v1", f"a{i}", uniform(14)) for i in range(3)]
        + [JudgedCell(BETA, "v1", f"b{i}", uniform(12)) for i in range(3)],
    )
    human = leaderboard_for(store, "apart", "human")
    beta = human.row(BETA, "v1")
    assert beta.rank == 1 and beta.vs_leader is not None and beta.vs_leader.n_pairs == 0
    assert beta.standing == "undecided" and not beta.tied_with_leader
    assert math.isnan(beta.vs_leader.p_value)
    vs = human.to_dict()["rows"][1]["vs_leader"]
    assert vs["n_pairs"] == 0 and vs["difference"]["value"] is None and vs["p_value"] is None


def test_experiment_without_judged_runs(sqlite_uri: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("pending", create=True)
    write_cells(store.client, experiment_id, [JudgedCell(ALPHA, "v1", "s1")])
    human = leaderboard_for(store, "pending", "human")
    assert human.rows == () and human.leader is None and human.n_runs == 0


def test_unknown_experiment(sqlite_uri: str) -> None:
    with pytest.raises(TrackingError, match="no experiment 'nope'"):
        leaderboard_for(TrackingStore(sqlite_uri), "nope", "human")


def test_cells_collected_under_different_structured_modes_are_flagged(sqlite_uri: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id("modes", create=True)
    write_cells(
        store.client,
        experiment_id,
        [JudgedCell(ALPHA, "v1", f"s{i}", uniform(14), structured="auto") for i in range(3)]
        + [JudgedCell(BETA, "v1", f"s{i}", uniform(12)) for i in range(2)]  # before the modes
        + [JudgedCell(BETA, "v1", "s2", uniform(12), structured="auto")],
    )
    human = leaderboard_for(store, "modes", "human")
    assert human.row(ALPHA, "v1").structured == ("auto",)
    assert human.row(BETA, "v1").structured == ("auto", "schema")
    assert human.to_dict()["rows"][1]["structured"] == ["auto", "schema"]
    assert any(
        "different --structured modes (auto, schema;" in warning
        for warning in leaderboard_warnings(human)
    )

    write_cells(
        store.client,
        store.experiment_id("one-mode", create=True),
        [JudgedCell(ALPHA, "v1", f"s{i}", uniform(14), structured="auto") for i in range(6)],
    )
    one_mode = leaderboard_warnings(leaderboard_for(store, "one-mode", "human"))
    assert not any("--structured" in warning for warning in one_mode)


# -- ranks and standings follow the evidence, never names ---------------------------------


def in_memory(cells: dict[tuple[str, str], list[float]], tier: str = "human") -> Leaderboard:
    """A leaderboard of cells with the given composite per scenario s1, s2, …"""
    runs = [
        CellRun(model, prompt, f"s{i}", metrics={"composite" if tier == "human" else
                                                  "auto_composite": value})
        for (model, prompt), values in cells.items()
        for i, value in enumerate(values, start=1)
    ]  # fmt: skip
    return build_leaderboard(runs, tier)  # type: ignore[arg-type]


EIGHT = [12.0, 14.0, 11.0, 15.0, 13.0, 12.0, 14.0, 13.0]


@pytest.mark.parametrize("names", [("v1", "v2"), ("v2", "v1")])
def test_equal_cells_share_the_top_rank_whatever_their_names(names: tuple[str, str]) -> None:
    first, second = names
    human = in_memory({(ALPHA, first): EIGHT, (ALPHA, second): EIGHT, (BETA, "v1"): [
        v - 3 for v in EIGHT]})  # fmt: skip
    by_name = {row.prompt_version: row for row in human.rows if row.model == ALPHA}
    assert {row.rank_text for row in by_name.values()} == {"1="}
    assert sorted(row.standing for row in by_name.values()) == ["leader", "tied"]
    assert {row.name for row in human.first} == {f"{ALPHA}|v1", f"{ALPHA}|v2"}
    assert human.row(BETA, "v1").rank_text == "3" and human.row(BETA, "v1").standing == "behind"


def test_behind_another_cell_is_behind_even_when_level_with_the_leader() -> None:
    """x is not separable from the leader (their differences swing ±), but the middle cell is
    significantly ahead of it on every scenario: "first" means no cell is ahead."""
    human = in_memory({
        (ALPHA, "leader"): [14.0, 7.0] * 4,  # mean 10.5
        (ALPHA, "middle"): [10.0] * 8,
        (ALPHA, "x"): [9.0] * 8,
    })  # fmt: skip
    x = human.row(ALPHA, "x")
    assert x.verdict == "not different"  # against the leader alone it would be tied
    assert (x.standing, x.rank_text) == ("behind", "3")
    assert (human.row(ALPHA, "middle").standing, human.row(ALPHA, "middle").rank_text) == (
        "tied", "1=",
    )  # fmt: skip
