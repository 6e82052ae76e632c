"""A proposal's name and the rule every proposed template must keep.

A proposal is named after its template: `ROOT-gepa-HASH`, where ROOT is the version the
optimization started from (without an earlier `-gepa-HASH`) and HASH the first 8 hex digits
of the template's content hash. The same text is the same version wherever and whenever it
is proposed, so a resumed optimization, or a second one that proposes the same text, finds
it again instead of writing a duplicate.

A proposed template must keep every placeholder its parent's template uses (`$persona_name`,
`$tasks` and the rest: without them the prompt no longer says who the tips are for or what
the tasks are) and use no other one; an answer that does not is a skipped proposal.
"""

from __future__ import annotations

import re

from tipbench.suite import PLACEHOLDERS, content_hash, template_placeholders

_SUFFIX = re.compile(r"-gepa-[0-9a-f]{8}$")
#: A version name is at most 64 characters (the suite's rule): the root is cut to fit.
_MAX_ROOT = 40


def proposal_name(start: str, system: str, user: str) -> str:
    """The version name of a proposal with these templates, in the family of `start`."""
    root = _SUFFIX.sub("", start)[:_MAX_ROOT].rstrip("-._")
    return f"{root}-gepa-{content_hash([system, user])[:8]}"


def placeholder_problem(parent: str, proposed: str) -> str | None:
    """Why `proposed` cannot replace the template `parent`, or None if it can."""
    try:
        found = template_placeholders(proposed)
    except ValueError as exc:
        return str(exc)
    if missing := sorted(template_placeholders(parent) - found):
        return f"it drops the placeholder{'s' if len(missing) > 1 else ''} " + ", ".join(
            f"${name}" for name in missing
        )
    if unknown := sorted(found - PLACEHOLDERS):
        return f"unknown placeholder ${unknown[0]}"
    return None
