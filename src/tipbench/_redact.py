"""Credentials never leave in a URI: what tipbench prints, logs or stores is redacted.

A tracking URI such as `http://user:password@host/?token=abc` may carry secrets in its
user-info and in its query. `redact_uri` masks both (`http://***@host/?token=***`);
`redact_text` does the same to every URI inside a message (an exception, a log line), so
that errors from MLflow, SQLAlchemy or requests can be shown as they are.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

MASK = "***"

# Query parameters whose values are secrets (matched anywhere in the name, any case):
# password, pwd, secret, token, api_key, X-Amz-Signature, sig, auth, credential, session…
_SECRET_PARAM = re.compile(r"pass|pwd|secret|token|key|sig|auth|credential|session", re.I)
_QUERY_PAIR = re.compile(r"(?P<name>[^=&;#]+)=(?P<value>[^&;#]*)")
# A URI inside free text: scheme://… up to whitespace, a quote or an angle bracket.
_URI_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def has_credentials(uri: str) -> bool:
    """Whether `uri` carries a user name or password, or a secret query parameter."""
    return redact_uri(uri) != uri


def redact_uri(uri: str) -> str:
    """`uri` with its user-info and the values of secret query parameters masked.

    Anything else (scheme, host, port, path, other parameters) is kept, so the redacted
    URI still says which store is meant.
    """
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an invalid IPv6 host: still mask what looks like user-info
        return re.sub(r"(://)[^/@]*@", rf"\1{MASK}@", uri)
    redacted = uri
    if "@" in parts.netloc:
        _, _, host = parts.netloc.rpartition("@")
        start = uri.index(parts.netloc)
        redacted = f"{uri[:start]}{MASK}@{host}{uri[start + len(parts.netloc) :]}"
    if parts.query:
        query = _QUERY_PAIR.sub(_mask_secret_value, parts.query)
        if query != parts.query:
            head, _, tail = redacted.partition("?")
            redacted = f"{head}?{query}{tail[len(parts.query) :]}"
    return redacted


def redact_text(text: str) -> str:
    """`text` with every URI in it redacted as `redact_uri` does."""
    return _URI_IN_TEXT.sub(lambda found: redact_uri(found.group(0)), text)


def _mask_secret_value(pair: re.Match[str]) -> str:
    name = pair.group("name")
    return f"{name}={MASK}" if _SECRET_PARAM.search(name) and pair.group("value") else pair.group(0)
