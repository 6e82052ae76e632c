"""The cell run's layout: how one (model, prompt, scenario) cell is laid out in MLflow (SPEC §3).

This module is the one home of that layout's names. Collect writes a cell run, both judge
tiers add their scores to it, compare, promote and the server read it back; all of them take
the names, the search filters and the reading from here and its two siblings:

- params (`CellParam`): what the cell was generated with;
- tags (`CellTag`): its identity (`tipbench.kind = cell`, `cell_key`, hashes, the id of its
  trace), its status
  (`cell_status`, `error`), whether the human judge still has to see it (`judge_pending`),
  and per judge tier a compact scores tag with its version and who judged when
  (`tracking._scores`);
- metrics (`CellMetric`): collect's figures, and per tier each score's mean over the
  candidates and `composite` (the automatic tier prefixes `auto_`), logged at step = the
  scores' version so that MLflow's metric history keeps earlier versions;
- artifacts: `candidates.json` (`CandidatesFile`), `rubric.md`, `prompt.txt`,
  `response.txt`, and per tier `<tier>_scores.json` plus `<tier>_scores/v<N>.json`.

`CellRun` (`tracking._cell_run`) is the typed view of a run as read back, and what a
writer logs for it; `score_fields` (`tracking._scores`) is what a tier logs.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: The tag that tells tipbench's runs apart, and its value on a cell run.
KIND_TAG = "tipbench.kind"
KIND_CELL = "cell"
#: MLflow's tag naming a run's parent: a cell run's collection (collect's parent run).
PARENT_RUN_TAG = "mlflow.parentRunId"

CELL_OK, CELL_FAILED = "ok", "failed"

CANDIDATES_FILE = "candidates.json"
RUBRIC_FILE = "rubric.md"
PROMPT_FILE = "prompt.txt"
RESPONSE_FILE = "response.txt"
#: The automatic judge's raw answers, every attempt per candidate (plus `auto_answers/v<N>.json`).
AUTO_ANSWERS_FILE = "auto_answers.json"


class CellParam:
    """Param names of a cell run."""

    MODEL = "model"
    BACKEND = "backend"
    PROMPT_VERSION = "prompt_version"
    SCENARIO_ID = "scenario_id"
    TEMPERATURE = "temperature"
    N_TIPS = "n_tips"
    SEED = "seed"
    MAX_TOKENS = "max_tokens"
    STRUCTURED = "structured"  # collect's structured mode; absent on runs from before it


class CellTag:
    """Tag names of a cell run (the judge tiers' own tags: `scores_tag` and its siblings)."""

    CELL_KEY = "cell_key"
    CELL_STATUS = "cell_status"
    SCENARIO_HASH = "scenario_hash"
    PROMPT_HASH = "prompt_hash"
    SUITE = "suite"
    RUBRIC = "rubric"
    MODEL_IDENTITY = "model_identity"
    JUDGE_PENDING = "judge_pending"
    JUDGE_KIND = "judge_kind"
    PARSE_METHOD = "parse_method"
    #: How the answer came about: `free`, `free+rest` (a free answer's tips and a constrained
    #: rest), `free+schema` (a constrained retry), `schema`, `json`.
    GENERATION_PATH = "generation_path"
    ERROR = "error"
    #: The cell's trace in MLflow's GenAI views (`tipbench.tracking._trace`); absent on cells
    #: collected without GenAI records.
    TRACE_ID = "trace_id"
    #: The threads the embedded model generated the cell on (`backends/_threads.py`); absent
    #: where the model ran elsewhere (a server) or the answer came from the cache.
    LLAMA_THREADS = "llama_threads"
    AUTO_JUDGE_ERROR = "auto_judge_error"
    AUTO_JUDGE_RESAMPLED = "auto_judge_resampled"
    AUTO_JUDGE_TEMPERATURE = "auto_judge_temperature"
    AUTO_JUDGE_SEED = "auto_judge_seed"
    #: The structured mode of the judge's requests (`schema`, `json` or `off`).
    AUTO_JUDGE_STRUCTURED = "auto_judge_structured"
    #: The automatic judge's own `format_ok`/`overlong` per candidate (`{"c1": [1, 0]}`):
    #: the tier records the rules' flags, only a human overrides them.
    AUTO_JUDGE_FLAGS = "auto_judge_flags"
    #: The threads the embedded judge model ran on when it scored the run.
    AUTO_JUDGE_LLAMA_THREADS = "auto_judge_llama_threads"


class CellMetric:
    """Metric names collect logs on a cell run (the tiers' metrics: `metric_name`)."""

    ATTEMPTS = "attempts"
    LATENCY_S = "latency_s"
    PROMPT_TOKENS = "prompt_tokens"
    COMPLETION_TOKENS = "completion_tokens"
    TOKENS_PER_S = "tokens_per_s"
    CACHED = "cached"
    PARSE_SUCCESS = "parse_success"
    CANDIDATE_COUNT = "candidate_count"
    FORMAT_OK_RATE = "format_ok_rate"
    OVERLONG_RATE = "overlong_rate"
    DIVERSITY = "diversity"


# --- search filters ------------------------------------------------------------------------

#: Every cell run, whatever its status.
CELL_RUNS = f"tags.`{KIND_TAG}` = '{KIND_CELL}'"
#: MLflow's status of a run its writer has completed: a cell run is created with its tags
#: and gets its candidates after them, so until then it is not judgeable.
RUN_FINISHED = "FINISHED"
#: The cell runs with candidates: what the judges score and compare ranks.
JUDGEABLE_RUNS = (
    f"{CELL_RUNS} AND tags.{CellTag.CELL_STATUS} = '{CELL_OK}'"
    f" AND attributes.status = '{RUN_FINISHED}'"
)
#: The judgeable runs the human judge has not scored yet.
PENDING_RUNS = f"{JUDGEABLE_RUNS} AND tags.{CellTag.JUDGE_PENDING} = 'true'"


def cell_selection(
    *, judgeable: bool = False, pending: bool = False, prompt_version: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The tag and param values that select cell runs: all, the judgeable or pending ones,
    or those of a prompt version (the judgeable ones are also `RUN_FINISHED`:
    `cell_run_status`)."""
    tags = {KIND_TAG: KIND_CELL}
    if judgeable or pending:
        tags[CellTag.CELL_STATUS] = CELL_OK
    if pending:
        tags[CellTag.JUDGE_PENDING] = "true"
    params = {CellParam.PROMPT_VERSION: prompt_version} if prompt_version is not None else {}
    return tags, params


def cell_run_status(*, judgeable: bool = False, pending: bool = False) -> str | None:
    """The MLflow status the selected cell runs have: a judgeable run is a finished one."""
    return RUN_FINISHED if judgeable or pending else None


def cell_filter(
    *, judgeable: bool = False, pending: bool = False, prompt_version: str | None = None
) -> str:
    """The MLflow filter of cell runs, narrowed to the judgeable or pending ones, or a prompt.

    Raises:
        ValueError: If `prompt_version` holds a quote (it would end the filter's string).
    """
    clause = PENDING_RUNS if pending else JUDGEABLE_RUNS if judgeable else CELL_RUNS
    if prompt_version is not None:
        if "'" in prompt_version:
            raise ValueError(f"a prompt version cannot hold a quote: {prompt_version!r}")
        clause += f" AND params.{CellParam.PROMPT_VERSION} = '{prompt_version}'"
    return clause


# --- candidates.json -----------------------------------------------------------------------


class RecordedCandidate(BaseModel):
    """One candidate tip as collect recorded it, with the rubric's rule-based flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str
    format_ok: int = Field(ge=0, le=1)
    overlong: int = Field(ge=0, le=1)


class CandidatesFile(BaseModel):
    """`candidates.json`: a successful cell's scenario and candidates, for the judges."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_key: str
    scenario: dict[str, Any]
    parse_method: str
    candidates: tuple[RecordedCandidate, ...]

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False)
