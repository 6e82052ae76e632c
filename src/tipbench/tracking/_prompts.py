"""The suite's prompt versions in MLflow's Prompt Registry, and the runs and traces using them.

Each suite prompt version is a version of one registry prompt (`tipbench-tips`), tagged with
the suite's `prompt_version` and its `template_hash`: a template is registered once, when
collect first uses it (or when `promote` moves `production` to it), and an unchanged
template is found again by its hash. Cell runs and traces name the registry version they
used in MLflow's `mlflow.linkedPrompts` tag, which its run page and its Traces view read;
each registry version names the runs that used it (`mlflow.prompt.run_ids`), which the
Prompts page lists as the version's "MLflow runs"; the prompt names the experiments that use
it (`_mlflow_experiment_ids`), so each experiment's Prompts tab lists it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipbench.suite import PromptVersion

if TYPE_CHECKING:
    from mlflow import MlflowClient

DEFAULT_PROMPT_NAME = "tipbench-tips"
#: Tags of a registry version: the suite's prompt version and its template's hash.
PROMPT_VERSION_TAG = "prompt_version"
TEMPLATE_HASH_TAG = "template_hash"
#: MLflow's tag on a run or a trace naming the prompt versions it used (a JSON list).
LINKED_PROMPTS_TAG = "mlflow.linkedPrompts"
#: MLflow's tag on a registry prompt naming the experiments that use it (`,1,7,`).
_EXPERIMENT_IDS_TAG = "_mlflow_experiment_ids"
#: The tag on a registry version that the Prompts page lists runs from (run ids, `a,b`).
RUN_IDS_TAG = "mlflow.prompt.run_ids"
#: A registry tag's longest value (MLflow's limit): the oldest run ids give way.
_TAG_VALUE_LIMIT = 100_000

_PLACEHOLDER = re.compile(r"\$(?:(\$)|(\w+)|\{(\w+)\})")


@dataclass(frozen=True)
class RegisteredPrompt:
    """A version of a registry prompt."""

    name: str
    version: int


def registry_template(template: str) -> str:
    """A suite template (`$name`) in the registry's syntax (`{{name}}`)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        return "{{" + (match.group(2) or match.group(3)) + "}}"

    return _PLACEHOLDER.sub(replace, template)


def register_prompt(
    client: MlflowClient,
    name: str,
    prompt: PromptVersion,
    tags: dict[str, str] | None = None,
    message: str = "tipbench",
) -> RegisteredPrompt:
    """The registry version of `prompt`'s template, registered now if it is not yet.

    `tags` are set on the version either way (`promote` names the model and experiment it
    promoted from on the version collect registered). (The store's own calls, not
    `register_prompt`, which would also link the prompt to MLflow's globally active
    experiment.)
    """
    exists = client.get_prompt(name) is not None
    version = registered_version(client, name, prompt.template_hash) if exists else None
    if version is not None:
        for key, value in (tags or {}).items():
            client.set_prompt_version_tag(name, str(version), key, value)
    else:
        if not exists:
            client.create_prompt(name, "The tips prompt, one version per suite template.")
        registered = client.create_prompt_version(
            name,
            [
                {"role": "system", "content": registry_template(prompt.system)},
                {"role": "user", "content": registry_template(prompt.user)},
            ],
            description=f"{message}: {prompt.version}",
            tags={
                PROMPT_VERSION_TAG: prompt.version,
                TEMPLATE_HASH_TAG: prompt.template_hash,
                **(tags or {}),
            },
        )
        version = int(registered.version)
    return RegisteredPrompt(name, version)


def registered_version(client: MlflowClient, name: str, template_hash: str) -> int | None:
    """The registry version of prompt `name` with this template (None: not registered)."""
    if client.get_prompt(name) is None:
        return None
    token = None
    while True:
        page = client.search_prompt_versions(name, page_token=token)
        for version in page:
            if version.tags.get(TEMPLATE_HASH_TAG) == template_hash:
                return int(version.version)
        token = page.token
        if not token:
            return None


def link_prompt_to_experiment(client: MlflowClient, name: str, experiment_id: str) -> None:
    """List prompt `name` on the experiment's Prompts tab (once)."""
    prompt = client.get_prompt(name)
    known = (prompt.tags.get(_EXPERIMENT_IDS_TAG, "") if prompt is not None else "").strip(",")
    ids = [i for i in known.split(",") if i]
    if experiment_id not in ids:
        client.set_prompt_tag(name, _EXPERIMENT_IDS_TAG, f",{','.join([*ids, experiment_id])},")


def linked_prompts(*prompts: RegisteredPrompt) -> str:
    """The value of MLflow's `mlflow.linkedPrompts` tag naming these versions."""
    return json.dumps([{"name": p.name, "version": str(p.version)} for p in prompts])


def link_runs_to_prompt(
    client: MlflowClient,
    prompt: RegisteredPrompt,
    run_ids: list[str],
    replaced: frozenset[str] = frozenset(),
) -> None:
    """Add `run_ids` to the runs the version's Prompts page lists, and drop `replaced`
    (runs deleted since), in one write; the oldest give way past MLflow's tag limit."""
    found = client.get_prompt_version(prompt.name, prompt.version)
    known = found.tags.get(RUN_IDS_TAG, "") if found is not None else ""
    earlier = [i for i in known.split(",") if i and i not in replaced]
    ids = list(dict.fromkeys([*earlier, *run_ids]))
    while ids and len(",".join(ids)) > _TAG_VALUE_LIMIT:
        ids.pop(0)
    value = ",".join(ids)
    if value != known:
        client.set_prompt_version_tag(prompt.name, str(prompt.version), RUN_IDS_TAG, value)


#: Tags of a proposed version (`tipbench optimize`): its lineage in the registry.
PARENT_VERSION_TAG = "parent_prompt_version"
PARENT_REGISTRY_TAG = "parent_registry_version"
OPTIMIZATION_TAG = "optimization"
ITERATION_TAG = "iteration"
COMPONENT_TAG = "rewritten"
TRAINING_SCORES_TAG = "training_scores"


def register_proposal(
    client: MlflowClient, name: str, prompt: PromptVersion, parent: PromptVersion
) -> RegisteredPrompt:
    """Register a proposed version (`prompt.proposal` set) as a new version of prompt `name`
    with its lineage: the suite's parent version and the registry version it was registered
    as (registered first if it is not yet), the optimization, iteration and rewritten part.
    A template registered already keeps its version; its lineage tags are set either way."""
    proposal = prompt.proposal
    if proposal is None:
        raise ValueError(f"{prompt.version} is not a proposal: it has no parent")
    parent_registered = register_prompt(client, name, parent, message="tipbench optimize")
    tags = {
        PARENT_VERSION_TAG: parent.version,
        PARENT_REGISTRY_TAG: str(parent_registered.version),
        OPTIMIZATION_TAG: proposal.optimization,
        ITERATION_TAG: str(proposal.iteration),
        COMPONENT_TAG: proposal.component,
    }
    message = f"tipbench optimize, from {parent.version}"
    return register_prompt(client, name, prompt, tags, message)


def tag_training_scores(
    client: MlflowClient, prompt: RegisteredPrompt, scores: dict[str, float]
) -> None:
    """Set a registry version's training scores (`{"scenario": composite}`, JSON)."""
    value = json.dumps({k: round(v, 4) for k, v in sorted(scores.items())})
    client.set_prompt_version_tag(prompt.name, str(prompt.version), TRAINING_SCORES_TAG, value)
