"""A proposal's name.

A proposal is named after its template: `ROOT-gepa-HASH`, where ROOT is the version the
optimization started from (without an earlier `-gepa-HASH`) and HASH the first 8 hex digits
of the template's content hash. The same text is the same version wherever and whenever it
is proposed, so a resumed optimization, or a second one that proposes the same text, finds
it again instead of writing a duplicate.
"""

from __future__ import annotations

import re

from tipbench.suite import content_hash

_SUFFIX = re.compile(r"-gepa-[0-9a-f]{8}$")
#: A version name is at most 64 characters (the suite's rule): the root is cut to fit.
_MAX_ROOT = 40


def proposal_name(start: str, system: str, user: str) -> str:
    """The version name of a proposal with these templates, in the family of `start`."""
    root = _SUFFIX.sub("", start)[:_MAX_ROOT].rstrip("-._")
    return f"{root}-gepa-{content_hash([system, user])[:8]}"
