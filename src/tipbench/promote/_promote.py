"""`promote`: decide from both tiers' leaderboards, and on `apply` act and record why."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from tipbench._errors import ConfigError
from tipbench.auto_judge import DEFAULT_MIN_KAPPA
from tipbench.compare import (
    DEFAULT_MIN_SCENARIOS,
    combined_board,
    combined_versus,
    leaderboards_for,
)
from tipbench.human_tier import judging_state
from tipbench.promote._combined_gate import CombinedEvidence
from tipbench.promote._gate import DEFAULT_MARGIN_POINTS, Decision, decide
from tipbench.promote._online import DEFAULT_ONLINE_MARGIN, OnlineEvidence, with_online
from tipbench.promote._registry import PRODUCTION_ALIAS, production_prompt, promote_prompt
from tipbench.suite import PromptVersion, load_suite
from tipbench.tracking import (
    DEFAULT_PROMPT_NAME,
    KIND_TAG,
    TIERS,
    RunRecord,
    TrackingStore,
    record_run,
)

KIND_PROMOTION = "promotion"


@dataclass(frozen=True)
class PromotionResult:
    decision: Decision
    applied: bool
    registry_version: int | None = None  # the version `production` now points at
    decision_run: str | None = None  # the MLflow run recording the decision


def promote(
    store: TrackingStore,
    experiment: str,
    *,
    apply: bool = False,
    record: bool = False,
    prompt_name: str = DEFAULT_PROMPT_NAME,
    margin: float = DEFAULT_MARGIN_POINTS,
    min_scenarios: int = DEFAULT_MIN_SCENARIOS,
    suite: str | Path | None = None,
    min_kappa: float = DEFAULT_MIN_KAPPA,
    online: OnlineEvidence | None = None,
    online_margin: float = DEFAULT_ONLINE_MARGIN,
) -> PromotionResult:
    """Decide whether the winning prompt goes to production; with `apply`, act on it.

    Where both tiers have scores drawn in a judging order, the combined tier decides (see
    `promote._combined_gate`); else both tiers must agree (`decide`).

    A dry run (the default) only decides, and records the decision only with `record`
    (tagged `dry_run`). With `apply`, a passing decision registers the prompt in the MLflow
    Prompt Registry and moves the `production` alias to it; either way the decision is
    recorded as a run of the experiment with its evidence. The automatic tier counts only if
    its judge's calibration reaches `min_kappa` on every criterion. With `online` (what the
    decision log says of two sources of tips, `promote._online`), the candidate must also not
    be worse with users than production by `online_margin`, where the log can tell.

    Raises:
        ConfigError: if the suite's template of the winner differs from the judged one.
        TrackingError: if the store or the registry cannot be used.
    """
    human, auto = leaderboards_for(
        store, experiment, TIERS, min_scenarios, suite=suite, min_kappa=min_kappa
    )
    state = judging_state(store, experiment, start=False)
    board = replace(combined_board(state, min_scenarios, experiment), calibration=auto.calibration)
    combined = CombinedEvidence(board, partial(combined_versus, state))
    production = production_prompt(store.client, prompt_name)
    decision = decide(human, auto, production, margin, combined=combined)
    decision = with_online(decision, online, online_margin)
    if not apply:
        if not record:
            return PromotionResult(decision, applied=False)
        experiment_id = store.experiment_id(experiment)
        run_id = _record(store, experiment_id, prompt_name, decision, None, dry_run=True)
        return PromotionResult(decision, False, decision_run=run_id)
    experiment_id = store.experiment_id(experiment)
    version = None
    if decision.promote and decision.prompt_version and decision.model:
        prompt = _judged_prompt(store, experiment_id, decision.prompt_version, suite)
        version = promote_prompt(
            store.client,
            prompt_name,
            prompt,
            {"model": decision.model, "experiment": experiment},
        )
    run_id = _record(store, experiment_id, prompt_name, decision, version)
    return PromotionResult(decision, True, version, run_id)


def _judged_prompt(
    store: TrackingStore, experiment_id: str, version: str, suite: str | Path | None
) -> PromptVersion:
    """The suite's prompt version, checked against the template the runs were made with."""
    prompt = load_suite(suite).prompt(version)
    runs = store.cell_runs(experiment_id, prompt_version=version)
    judged = {run.prompt_hash for run in runs}
    if prompt.template_hash not in judged:
        raise ConfigError(
            f"prompt {version} of the suite is not the template that was judged "
            "(it changed since collect): run the benchmark again before promoting"
        )
    return prompt


def _record(
    store: TrackingStore,
    experiment_id: str,
    prompt_name: str,
    decision: Decision,
    version: int | None,
    *,
    dry_run: bool = False,
) -> str:
    """Record the decision as one run of the experiment (or none: a failed write leaves none).

    Raises:
        TrackingError: The run could not be written (after a promotion, the message says
            that the registry has moved all the same).
    """
    outcome = ("would_promote" if dry_run else "promoted") if decision.promote else "refused"
    tags = {
        "dry_run": str(dry_run).lower(),
        KIND_TAG: KIND_PROMOTION,
        "decision": outcome,
        "candidate": f"{decision.model}|{decision.prompt_version}",
        "production_before": decision.production or "",
        "prompt_name": prompt_name,
    }
    if version is not None:
        tags[f"{PRODUCTION_ALIAS}_version"] = str(version)
    record = RunRecord(
        run_name=f"promote dry run: {outcome}" if dry_run else f"promote {outcome}",
        params={},
        tags=tags,
        metrics={},
        artifacts={"decision.json": json.dumps(decision.to_dict(), indent=2)},
    )
    what = "the decision"
    if version is not None:
        alias = f"the '{PRODUCTION_ALIAS}' alias of {prompt_name}"
        what += f" ({alias} already points at version {version})"
    return record_run(store, experiment_id, record, what)
