"""Writing a prompt version into a suite folder: `tipbench optimize` adds its proposals there.

A version file is written whole or not at all (a temporary file renamed over the target),
checked the way `load_suite` checks it before it is written, and never replaces another
template under the same name: a version names one template for good (the cells, the
registry and the leaderboards refer to it by name).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tipbench._errors import SuiteError
from tipbench.suite._files import PromptFile
from tipbench.suite._scenario import PLACEHOLDERS, PromptVersion, template_placeholders

PROMPTS_DIR = "prompts"


def prompt_file(folder: Path, version: str) -> Path:
    """Where version `version` of the suite in `folder` lives."""
    return folder / PROMPTS_DIR / f"{version}.yaml"


def write_prompt_version(folder: Path, prompt: PromptVersion, header: str = "") -> Path:
    """Write `prompt` as `prompts/<version>.yaml` of the suite in `folder` (with `header` as
    its leading comment), atomically; rewriting the same template (new training scores) is
    allowed, another template under an existing name is not.

    Raises:
        SuiteError: the version would be refused by `load_suite`, or its name is taken by
            another template, or the folder cannot be written.
    """
    target = prompt_file(folder, prompt.version)
    document = _document(prompt)
    try:
        PromptFile.model_validate(document)
        for part in ("system", "user"):
            if unknown := template_placeholders(getattr(prompt, part)) - PLACEHOLDERS:
                raise SuiteError(f"{target}: {part}: unknown placeholder ${sorted(unknown)[0]}")
    except (ValidationError, ValueError) as exc:
        raise SuiteError(f"{target}: not a valid prompt version: {exc}") from None
    _refuse_other_template(target, prompt)
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    text = comment + yaml.dump(document, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True)
    _replace(target, text)
    return target


def _document(prompt: PromptVersion) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": prompt.version,
        "description": prompt.description,
        "system": prompt.system,
        "user": prompt.user,
    }
    if (proposal := prompt.proposal) is not None:
        document["proposal"] = {
            "parent": proposal.parent,
            "optimization": proposal.optimization,
            "iteration": proposal.iteration,
            "component": proposal.component,
            "reasons": proposal.reasons,
            "training_scores": {k: round(v, 4) for k, v in proposal.training_scores.items()},
        }
    return document


def _refuse_other_template(target: Path, prompt: PromptVersion) -> None:
    if not target.exists():
        return
    try:
        existing = yaml.safe_load(target.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{target}: cannot read the version already there: {exc}") from None
    if (existing.get("system"), existing.get("user")) != (prompt.system, prompt.user):
        raise SuiteError(f"{target}: version {prompt.version} exists with another template")


def _replace(target: Path, text: str) -> None:
    """Write `text` to `target` through a temporary file in the same folder, renamed."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise SuiteError(f"{target}: cannot write: {exc.strerror or exc}") from None


class _BlockDumper(yaml.SafeDumper):
    """YAML with multi-line strings as `|` blocks, as the suite's own files are written."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _string)
