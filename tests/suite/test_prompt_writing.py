"""Writing a proposed prompt version into a suite folder (`write_prompt_version`): whole or
not at all, checked as `load_suite` checks it, never another template under a taken name."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tipbench import SuiteError
from tipbench.suite import (
    PromptVersion,
    Proposal,
    bundled_suite_path,
    load_suite,
    prompt_file,
    write_prompt_version,
)

V1 = load_suite().prompt("v1")
PROPOSAL = Proposal("v1", "abc123", 2, "system", "Tips never say when.", {"student-morning": 12.5})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "tips"
    shutil.copytree(bundled_suite_path(), copy)
    return copy


def proposed(system: str = V1.system + " Say when.") -> PromptVersion:
    return replace(V1, version="v1-gepa-0000aaaa", system=system, proposal=PROPOSAL)


def test_a_proposal_round_trips_with_its_lineage(folder: Path) -> None:
    path = write_prompt_version(folder, proposed(), "proposed by a test")
    assert path == prompt_file(folder, "v1-gepa-0000aaaa")
    assert path.read_text().startswith("# proposed by a test\n")
    loaded = load_suite(folder).prompt("v1-gepa-0000aaaa")
    assert loaded.proposal == PROPOSAL
    assert (loaded.system, loaded.user) == (V1.system + " Say when.", V1.user)
    assert [p.name for p in folder.joinpath("prompts").iterdir() if p.name.startswith(".")] == []


def test_new_training_scores_rewrite_the_file_another_template_is_refused(folder: Path) -> None:
    first = proposed()
    write_prompt_version(folder, first)
    scored = replace(first, proposal=replace(PROPOSAL, training_scores={"a": 1.0}))
    write_prompt_version(folder, scored)
    assert yaml.safe_load(prompt_file(folder, "v1-gepa-0000aaaa").read_text())["proposal"][
        "training_scores"
    ] == {"a": 1.0}
    before = prompt_file(folder, "v1-gepa-0000aaaa").read_text()
    with pytest.raises(SuiteError, match="exists with another template"):
        write_prompt_version(folder, proposed(V1.system + " Other."))
    assert prompt_file(folder, "v1-gepa-0000aaaa").read_text() == before


def test_an_unknown_placeholder_is_refused_and_nothing_written(folder: Path) -> None:
    with pytest.raises(SuiteError, match=r"unknown placeholder \$mood"):
        write_prompt_version(folder, proposed(V1.system + " Feel $mood."))
    assert not prompt_file(folder, "v1-gepa-0000aaaa").exists()


def test_proposals_are_not_in_the_default_grid_of_a_suite_that_names_none(folder: Path) -> None:
    meta = folder / "suite.yaml"
    meta.write_text(meta.read_text().replace("default_prompts: [v1, v2-mentor, v3-few-shot]\n", ""))
    write_prompt_version(folder, proposed())
    assert load_suite(folder).default_prompts == ("v1", "v2-mentor", "v3-few-shot")
