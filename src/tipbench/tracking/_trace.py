"""The trace of a cell's generation: how it is laid out in MLflow, and its writer.

Beside its run, each generated cell is an MLflow trace, so that MLflow's GenAI views (Traces,
Overview, Quality) show tipbench's work:

- the root span, named like the run (`model|prompt_version|scenario_id`), has the scenario
  and the rendered messages as inputs and the candidates as outputs;
- a child span per request made (`request 1: free`, `request 2: schema`, ...) with its
  model, token counts, latency and constraint, and the error of a request that failed;
- a child span per candidate (`c1`, `c2`, ...), which the candidate's assessments are
  logged on (`candidate_span_id`);
- tags: `tipbench.kind = cell`, the cell key, model, prompt version and scenario id (the
  search filters of the Traces view) and the run id; metadata: MLflow's source run.

Trace ids and span ids are chosen here, not by MLflow: the run is written with its trace
id, and an assessment finds its candidate's span without reading the trace.
`write_trace` writes a whole trace through the tracking store's own trace API (the client's
tracking URI, never MLflow's global one), from the writer thread.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tipbench.tracking._layout import KIND_CELL, KIND_TAG, CellParam, CellTag

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Assessment, Span
    from mlflow.tracing.client import TracingClient

#: The tag that makes an experiment a GenAI one, and its value: MLflow's UI then opens it on
#: the views that show traces and their assessments.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND_GENAI = "genai_development"

#: The trace tag that names the run a trace belongs to (MLflow's own link is the metadata
#: `mlflow.sourceRun`, fixed when the trace is written).
RUN_ID_TAG = "run_id"
#: A trace tag: `true` on the trace of an answer that came from the response cache.
CACHED_TAG = "cached"

#: How much of the inputs and outputs the Traces list shows.
_PREVIEW_CHARS = 1000


@dataclass(frozen=True)
class RequestSpan:
    """One request of a cell's generation, as its span shows it."""

    name: str  # `request 1: free`
    started_at: float  # epoch seconds
    latency_s: float
    messages: tuple[tuple[str, str], ...]
    settings: dict[str, Any]  # temperature, seed, max_tokens, constraint, attempt
    text: str | None = None  # the answer (None: the request failed)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


@dataclass(frozen=True)
class CellTrace:
    """Everything one cell's trace will hold, ready to write."""

    trace_id: str
    name: str  # the run name
    model: str
    prompt_version: str
    scenario_id: str
    cell_key: str
    scenario: dict[str, Any]
    messages: tuple[tuple[str, str], ...]
    candidates: tuple[dict[str, Any], ...]  # `{"id": "c1", "text": ..., ...}`
    started_at: float
    ended_at: float
    requests: tuple[RequestSpan, ...] = ()
    attributes: dict[str, Any] = field(default_factory=dict)  # generation path, ...
    error: str | None = None
    cached: bool = False
    assessments: tuple[Assessment, ...] = ()  # logged with the trace (the rules' flags)
    linked_prompts: str | None = None  # MLflow's `mlflow.linkedPrompts` value

    def tags(self) -> dict[str, str]:
        """The trace's tags: what the Traces view searches by."""
        from mlflow.tracing.constant import TraceTagKey

        tags = {
            TraceTagKey.TRACE_NAME: self.name,
            KIND_TAG: KIND_CELL,
            CellTag.CELL_KEY: self.cell_key,
            CellParam.MODEL: self.model,
            CellParam.PROMPT_VERSION: self.prompt_version,
            CellParam.SCENARIO_ID: self.scenario_id,
        }
        if self.cached:
            tags[CACHED_TAG] = "true"
        if self.linked_prompts:
            tags[TraceTagKey.LINKED_PROMPTS] = self.linked_prompts
        return tags


#: How to start `mlflow server` or `mlflow ui` without MLflow's server jobs, which tipbench
#: does not use: since MLflow 3.17 seven consumer processes poll for them all the time
#: (a third of a core), and an embedded model beside them on 2 cores generated at half speed.
MLFLOW_WITHOUT_JOBS = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


#: Where that command serves MLflow's UI: not MLflow's default 5000, which an `mlflow server`
#: on the same machine (docs/mlflow-ui.md) or macOS's AirPlay receiver often holds; beside
#: `tipbench serve`'s 8765 and `tipbench policy serve`'s 8766.
MLFLOW_UI_PORT = 8767


def mlflow_ui_command(uri: str) -> str:
    """The shell command that serves the local store `uri` in MLflow's UI, without jobs."""
    variables = " ".join(f"{name}={value}" for name, value in MLFLOW_WITHOUT_JOBS.items())
    return f"{variables} mlflow ui --backend-store-uri {uri} --port {MLFLOW_UI_PORT}"


def traces_page(ui_url: str, experiment_id: str) -> str:
    """The address of an experiment's Traces view in the MLflow UI served at `ui_url`."""
    return f"{ui_url.rstrip('/')}/#/experiments/{experiment_id}/traces"


def new_trace_id() -> str:
    """A fresh MLflow trace id (`tr-` and 32 hex digits: an OpenTelemetry trace id)."""
    return f"tr-{uuid.uuid4().hex}"


def span_id(trace_id: str, name: str) -> str:
    """The id of the span `name` in a trace: 16 hex digits derived from both, never 0."""
    digest = hashlib.sha256(f"{trace_id}/{name}".encode()).hexdigest()[:16]
    return digest if int(digest, 16) else "1".rjust(16, "0")


ROOT_SPAN = "root"


def candidate_span_id(trace_id: str, candidate_id: str) -> str:
    """The span of candidate `candidate_id` (`c1`, ...) in a cell's trace."""
    return span_id(trace_id, f"candidate {candidate_id}")


def candidate_of_span(trace_id: str, span: str | None, count: int) -> str | None:
    """Which of a trace's `count` candidates has span `span` (None: none of them)."""
    if span is None:
        return None
    for number in range(1, count + 1):
        candidate = f"c{number}"
        if candidate_span_id(trace_id, candidate) == span:
            return candidate
    return None


def write_trace(
    client: MlflowClient, experiment_id: str, trace: CellTrace, run_id: str | None
) -> None:
    """Write `trace` whole: its info, then its spans.

    In this order MLflow's SQL store inserts the info with its tags and assessments at once
    (spans first would create a bare trace that the info then has to be merged into, row by
    row: twice the work); the spans then keep the info's fields, and tag where they are kept.

    Raises:
        Exception: whatever the store raised; the writer retries (writing again is safe).
    """
    from mlflow.entities import TraceData, TraceInfo, TraceLocation, TraceState
    from mlflow.tracing.constant import TraceMetadataKey

    tracing = tracing_client(client)
    tags = trace.tags()
    metadata = {}
    if run_id:
        tags[RUN_ID_TAG] = run_id
        metadata[TraceMetadataKey.SOURCE_RUN] = run_id
    info = TraceInfo(
        trace_id=trace.trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=int(trace.started_at * 1000),
        execution_duration=max(0, int((trace.ended_at - trace.started_at) * 1000)),
        state=TraceState.ERROR if trace.error else TraceState.OK,
        request_preview=_preview(_root_inputs(trace)),
        response_preview=_preview(_root_outputs(trace)),
        trace_metadata=metadata,
        tags=tags,
        assessments=list(trace.assessments),
    )
    written = tracing.start_trace(info)
    spans = _spans(trace)
    try:
        tracing.log_spans(experiment_id, spans)
    except NotImplementedError:  # a store that keeps spans as an artifact of the trace
        tracing._upload_trace_data(written, TraceData(spans=spans))


def link_trace(client: MlflowClient, trace_id: str, run_id: str) -> None:
    """Make an existing trace (a cached cell's, from an earlier run) belong to `run_id`."""
    client.set_trace_tag(trace_id, RUN_ID_TAG, run_id)
    client.link_traces_to_run([trace_id], run_id)


def cell_trace_ids(client: MlflowClient, experiment_id: str, cell_key: str) -> list[str]:
    """The traces of a cell (by key) in an experiment."""
    filter_string = f"tags.`{KIND_TAG}` = '{KIND_CELL}' AND tags.{CellTag.CELL_KEY} = '{cell_key}'"
    found = client.search_traces(
        locations=[experiment_id], filter_string=filter_string, include_spans=False
    )
    return [trace.info.trace_id for trace in found]


def tracing_client(client: MlflowClient) -> TracingClient:
    """The client's own tracing client: MLflow's trace calls against its tracking URI."""
    tracing: TracingClient = client._tracing_client
    return tracing


def _root_inputs(trace: CellTrace) -> dict[str, Any]:
    return {"scenario": trace.scenario, "messages": _messages(trace.messages)}


def _root_outputs(trace: CellTrace) -> dict[str, Any]:
    outputs: dict[str, Any] = {"candidates": list(trace.candidates)}
    if trace.error:
        outputs["error"] = trace.error
    return outputs


def _messages(messages: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in messages]


def _preview(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)[:_PREVIEW_CHARS]


def _spans(trace: CellTrace) -> list[Span]:
    from mlflow.entities import SpanType
    from mlflow.tracing.constant import SpanAttributeKey

    tid = trace.trace_id
    root = span_id(tid, ROOT_SPAN)
    start_ns, end_ns = _ns(trace.started_at), _ns(trace.ended_at)
    spans = [
        _span(
            tid,
            trace.name,
            root,
            None,
            start_ns,
            end_ns,
            SpanType.CHAIN,
            _root_inputs(trace),
            _root_outputs(trace),
            trace.attributes,
            trace.error,
        )
    ]
    for request in trace.requests:
        usage = {
            "input_tokens": request.prompt_tokens,
            "output_tokens": request.completion_tokens,
            "total_tokens": request.prompt_tokens + request.completion_tokens,
        }
        started = _ns(request.started_at)
        outputs = None
        if request.text is not None:
            outputs = {
                "choices": [{"message": {"role": "assistant", "content": request.text}}],
                "usage": usage,
            }
        attributes: dict[str, Any] = {
            SpanAttributeKey.MODEL: trace.model,
            "latency_s": round(request.latency_s, 4),
            **request.settings,
        }
        if request.text is not None:
            attributes[SpanAttributeKey.CHAT_USAGE] = usage
        spans.append(
            _span(
                tid,
                request.name,
                span_id(tid, request.name),
                root,
                started,
                started + _ns(request.latency_s),
                SpanType.CHAT_MODEL,
                {"messages": _messages(request.messages), **request.settings},
                outputs,
                attributes,
                request.error,
            )
        )
    for candidate in trace.candidates:
        cid = str(candidate["id"])
        spans.append(
            _span(
                tid,
                cid,
                candidate_span_id(tid, cid),
                root,
                end_ns,
                end_ns,
                SpanType.PARSER,
                None,
                candidate,
                {},
                None,
            )
        )
    return spans


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _span(
    trace_id: str,
    name: str,
    sid: str,
    parent: str | None,
    start_ns: int,
    end_ns: int,
    span_type: str,
    inputs: Any,
    outputs: Any,
    attributes: Mapping[str, Any],
    error: str | None,
) -> Span:
    """An ended span, its attributes encoded as MLflow's live spans encode them (JSON)."""
    from mlflow.entities import Span
    from mlflow.tracing.constant import SpanAttributeKey
    from mlflow.tracing.utils import build_otel_context
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Status, StatusCode

    otel_trace = int(trace_id.removeprefix("tr-"), 16)
    encoded = {
        SpanAttributeKey.REQUEST_ID: trace_id,
        SpanAttributeKey.SPAN_TYPE: span_type,
        **attributes,
    }
    if inputs is not None:
        encoded[SpanAttributeKey.INPUTS] = inputs
    if outputs is not None:
        encoded[SpanAttributeKey.OUTPUTS] = outputs
    status = Status(StatusCode.ERROR, error) if error else Status(StatusCode.OK)
    return Span(
        ReadableSpan(
            name=name,
            context=build_otel_context(otel_trace, int(sid, 16)),
            parent=build_otel_context(otel_trace, int(parent, 16)) if parent else None,
            start_time=start_ns,
            end_time=end_ns,
            attributes={k: json.dumps(v, ensure_ascii=False) for k, v in encoded.items()},
            status=status,
            resource=Resource.get_empty(),
        )
    )
