"""The policy service's tokens: one per scope, from a variable or a file, long enough, none
shared between scopes, none the bench server's admin token (variable or file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tipbench import ConfigError
from tipbench._tokens import token_matches
from tipbench.policy_service.api._scopes import ScopedTokens
from tipbench.policy_service.api._settings import PolicyServerSettings

TOKEN = "policy-service-token-0123456789"
OTHER = "another-policy-token-abcdefghij"
ADMIN = "policy-admin-token-0123456789"
MONITOR = "policy-monitor-token-0123456789"
SCOPED = (
    "TIPBENCH_POLICY_TOKEN", "TIPBENCH_POLICY_ADMIN_TOKEN", "TIPBENCH_POLICY_MONITOR_TOKEN",
    "TIPBENCH_ADMIN_TOKEN",
)  # fmt: skip


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SCOPED:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)


def test_tokens_from_the_variable_and_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIPBENCH_POLICY_TOKEN", f" {TOKEN} ")
    assert PolicyServerSettings().tokens == ScopedTokens(serve=(TOKEN,))
    file = tmp_path / "tokens"
    file.write_text(f"{OTHER}\n\n")
    monkeypatch.setenv("TIPBENCH_POLICY_TOKEN_FILE", str(file))
    admin_file = tmp_path / "admin"
    admin_file.write_text(ADMIN + "\n")
    monkeypatch.setenv("TIPBENCH_POLICY_ADMIN_TOKEN_FILE", str(admin_file))
    monkeypatch.setenv("TIPBENCH_POLICY_MONITOR_TOKEN", MONITOR)
    assert PolicyServerSettings().tokens == ScopedTokens(
        serve=(TOKEN, OTHER), admin=(ADMIN,), monitor=(MONITOR,)
    )


def test_each_token_opens_its_scopes() -> None:
    tokens = ScopedTokens(serve=(TOKEN, OTHER), admin=(ADMIN,), monitor=(MONITOR,))
    assert tokens.scopes(OTHER) == {"serve", "monitor"}
    assert tokens.scopes(ADMIN) == {"admin", "serve", "monitor"}
    assert tokens.scopes(MONITOR) == {"monitor"}
    assert tokens.scopes("") == tokens.scopes(TOKEN[:-1]) == tokens.scopes(ADMIN + "x") == set()
    assert ScopedTokens(serve=(TOKEN,)).scopes("") == set()  # no admin token: none matches ""


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "no service token: set TIPBENCH_POLICY_TOKEN"),
        ({"TIPBENCH_POLICY_TOKEN": "short"}, "at least 16 characters"),
        ({"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_POLICY_ADMIN_TOKEN": "short"}, "16 char"),
        ({"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_ADMIN_TOKEN": f"x,{TOKEN}"}, "must differ"),
        (
            {"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_POLICY_ADMIN_TOKEN": f"{OTHER},{TOKEN}"},
            "TIPBENCH_POLICY_TOKEN and TIPBENCH_POLICY_ADMIN_TOKEN must differ",
        ),
        (
            {"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_POLICY_MONITOR_TOKEN": ADMIN,
             "TIPBENCH_POLICY_ADMIN_TOKEN": ADMIN},
            "TIPBENCH_POLICY_ADMIN_TOKEN and TIPBENCH_POLICY_MONITOR_TOKEN must differ",
        ),
        (
            {"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_POLICY_ADMIN_TOKEN": ADMIN,
             "TIPBENCH_ADMIN_TOKEN": ADMIN},
            "TIPBENCH_POLICY_ADMIN_TOKEN: the policy service's tokens must differ",
        ),
        ({"TIPBENCH_POLICY_TOKEN_FILE": "/nonexistent/tokens"}, "/nonexistent/tokens"),
        (
            {"TIPBENCH_POLICY_TOKEN": TOKEN, "TIPBENCH_POLICY_ADMIN_TOKEN_FILE": "/nonexistent/a"},
            "/nonexistent/a",
        ),
    ],
)  # fmt: skip
def test_bad_token_configuration_is_refused(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        PolicyServerSettings().tokens  # noqa: B018


def test_the_bench_admin_token_file_is_never_a_policy_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The file form of the bench server's admin token was accepted as the service token."""
    bench = tmp_path / "bench-admin"
    bench.write_text(f"some-other-admin-token-xyz\n{TOKEN}\n")
    monkeypatch.setenv("TIPBENCH_POLICY_TOKEN", TOKEN)
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN_FILE", str(bench))
    with pytest.raises(ConfigError, match="must differ from the admin token of the bench server"):
        PolicyServerSettings().tokens  # noqa: B018
    monkeypatch.setenv("TIPBENCH_ADMIN_TOKEN_FILE", str(tmp_path / "unreadable-elsewhere"))
    assert PolicyServerSettings().tokens.serve == (TOKEN,)


def test_token_comparison() -> None:
    assert token_matches(TOKEN, (OTHER, TOKEN))
    assert not token_matches(TOKEN[:-1], (TOKEN,))
    assert not token_matches("", (TOKEN,))
