"""API keys (issue 13, item 8): several per account, named, listed by prefix only, revocable, expiring.

A revoked or expired key answers 401 on the very next request, also on another app instance (another
worker) on the same database: authentication reads the key row on every request, nothing is cached.
The migration that introduced the ``api_keys`` table keeps every key issued before it working.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from anchorgpu.accounts import authenticate, hash_api_key
from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from anchorgpu.store.engine import make_engine
from anchorgpu.store.migrate import head_revision, upgrade


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_keys_are_created_listed_by_prefix_and_revoked_at_once(any_app: Any) -> None:
    client = any_app.client
    alice = any_app.caller("alice")
    made = client.post("/v1/keys", json={"name": "ci runner"}, headers=alice.auth)
    assert made.status_code == 201, made.text
    body = made.json()
    new_key = body["api_key"]
    assert set(body) >= {"id", "api_key", "prefix", "expires_at"} and body["expires_at"] is None
    assert new_key.startswith(body["prefix"]) and len(body["prefix"]) == 13 and body["status"] == "active"
    assert client.get("/v1/allocations", headers=_bearer(new_key)).status_code == 200

    listed = client.get("/v1/keys", headers=_bearer(new_key)).json()
    by_name = {k["name"]: k for k in listed["data"]}  # same created_at under the fixed clock: order by name here
    assert listed["count"] == 2 and set(by_name) == {"default", "ci runner"}
    assert new_key not in json.dumps(listed) and alice.api_key not in json.dumps(listed)  # prefixes only
    assert by_name["ci runner"]["current"] and not by_name["default"]["current"]

    revoked = client.delete(f"/v1/keys/{body['id']}", headers=alice.auth)
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    refused = client.get("/v1/allocations", headers=_bearer(new_key))
    assert refused.status_code == 401 and refused.headers["content-type"].startswith("application/problem+json")
    assert "revoked" in refused.json()["detail"]
    assert client.get("/v1/allocations", headers=alice.auth).status_code == 200  # the other key still works
    # revoking again answers the same; the last usable key cannot be revoked (the account would be locked out)
    assert client.delete(f"/v1/keys/{body['id']}", headers=alice.auth).json()["status"] == "revoked"
    default_id = by_name["default"]["id"]
    last = client.delete(f"/v1/keys/{default_id}", headers=alice.auth)
    assert last.status_code == 409 and last.json()["code"] == "last_api_key"


def test_a_key_expires_at_its_instant(any_app: Any, fixed_clock: Any) -> None:
    client = any_app.client
    alice = any_app.caller("alice")
    expires = fixed_clock.now.replace(hour=13).isoformat()  # one hour after the fixed clock's 12:00 UTC
    made = client.post("/v1/keys", json={"name": "one hour", "expires_at": expires}, headers=alice.auth)
    assert made.status_code == 201 and made.json()["expires_at"] == expires
    key = made.json()["api_key"]
    fixed_clock.advance(minutes=59)
    assert client.get("/v1/quotes", headers=_bearer(key)).status_code in (200, 405)
    assert client.get("/v1/allocations", headers=_bearer(key)).status_code == 200
    fixed_clock.advance(minutes=1)
    expired = client.get("/v1/allocations", headers=_bearer(key))
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    statuses = {k["name"]: k["status"] for k in client.get("/v1/keys", headers=alice.auth).json()["data"]}
    assert statuses == {"default": "active", "one hour": "expired"}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"name": "x", "expires_at": "2026-11-29T11:00:00Z"}, "not in the future"),
        ({"name": "x", "expires_at": "9999-12-31T00:00:00Z"}, "days ahead"),
        ({"name": "x", "expires_at": "2027-01-01T00:00:00"}, "time zone"),
        ({"name": "x", "expires_at": "abc"}, "ISO 8601 instant"),
        # QA pass: the API read a Unix timestamp (number or digit string) as 2030 where the CLI refused it
        ({"name": "x", "expires_at": 1893456000}, "string"),
        ({"name": "x", "expires_at": "1893456000"}, "ISO 8601 instant"),
        ({"name": "x", "expires_at": "2027-01-01"}, "ISO 8601 instant"),
        ({"name": "x", "expires_at": True}, "string"),
        ({"name": "a\u0000b"}, "control character"),
        ({"name": "x" * 101}, "at most 100"),
        ({"name": 5}, "string"),
        ({"name": "x", "scope": "admin"}, "Extra inputs"),
        # QA pass: names that display as something else, or as nothing, in every listing
        ({"name": "\u202egnp.exe"}, "text-direction control U+202E"),
        ({"name": "\u200b"}, "no visible character"),
        ({"name": "\ufeff\u0301\u0301"}, "no visible character"),
    ],
    ids=["past", "year-9999", "naive", "not-a-date", "unix-number", "unix-string", "date-only", "boolean", "nul",
         "long-name", "number-name", "unknown-field", "bidi-override", "zero-width", "marks-only"],
)
def test_bad_key_requests_answer_422_in_one_line(sqlite_app: Any, body: dict[str, Any], reason: str) -> None:
    alice = sqlite_app.caller("alice")
    answer = sqlite_app.client.post("/v1/keys", json=body, headers=alice.auth)
    assert answer.status_code == 422, answer.text
    assert reason.lower() in answer.text.lower()
    assert sqlite_app.client.get("/v1/keys", headers=alice.auth).json()["count"] == 1  # nothing created


def test_another_accounts_key_is_invisible_and_cannot_be_revoked(sqlite_app: Any) -> None:
    client = sqlite_app.client
    alice, bob = sqlite_app.caller("alice"), sqlite_app.caller("bob")
    bob_keys = client.get("/v1/keys", headers=bob.auth).json()["data"]
    answer = client.delete(f"/v1/keys/{bob_keys[0]['id']}", headers=alice.auth)
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_api_key"
    assert client.get("/v1/allocations", headers=bob.auth).status_code == 200
    assert client.get("/v1/keys").status_code == 401


def test_a_revoke_holds_at_once_on_another_worker(db_url: str, fixed_clock: Any) -> None:
    # Two app instances with their own engines and pools on one database stand for two workers.
    apps = [create_app(Settings(database_url=db_url, offline=True), clock=fixed_clock, session_secret="s") for _ in range(2)]
    with TestClient(apps[0], raise_server_exceptions=False) as first, TestClient(apps[1], raise_server_exceptions=False) as second:
        from anchorgpu.accounts import create_account

        assert first.get("/v1/healthz").status_code == 200 and second.get("/v1/healthz").status_code == 200
        _, key = create_account(apps[0].state.store.uow_factory(), "alice", clock=fixed_clock)
        spare = first.post("/v1/keys", json={"name": "spare"}, headers=_bearer(key)).json()
        assert second.get("/v1/allocations", headers=_bearer(spare["api_key"])).status_code == 200  # pool warm
        assert first.delete(f"/v1/keys/{spare['id']}", headers=_bearer(key)).status_code == 200
        assert second.get("/v1/allocations", headers=_bearer(spare["api_key"])).status_code == 401
    for app in apps:
        app.state.store.dispose()


def test_the_migration_keeps_keys_issued_before_it_working(empty_db_url: str, fixed_clock: Any) -> None:
    engine = make_engine(empty_db_url)
    old_key = "agpu_" + "k" * 43
    try:
        upgrade(engine, "0001_initial")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO accounts (id, name, api_key_hash, created_at) VALUES "
                              "('acct_00000000000000aa', 'old account', :h, :t)"),
                         {"h": hash_api_key(old_key), "t": fixed_clock.now.replace(tzinfo=None)})
        assert upgrade(engine) == head_revision()
    finally:
        engine.dispose()
    app = create_app(Settings(database_url=empty_db_url, offline=True), clock=fixed_clock, session_secret="s")
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/v1/allocations", headers=_bearer(old_key)).status_code == 200
        keys = client.get("/v1/keys", headers=_bearer(old_key)).json()["data"]
        assert [(k["id"], k["name"], k["prefix"], k["status"]) for k in keys] == [
            ("key_00000000000000aa", "original key", "agpu_", "active")]
        assert authenticate(app.state.store.uow_factory(), old_key, now=fixed_clock()).id == "acct_00000000000000aa"
    app.state.store.dispose()


def test_the_cli_creates_lists_and_revokes_keys(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from anchorgpu.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    assert main(["keys", "create", "laptop", "--expires-in", "30d", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["api_key"].startswith(made["prefix"]) and made["expires_at"]
    assert main(["keys", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(k["name"] for k in listed["data"]) == ["default", "laptop"] and made["api_key"] not in json.dumps(listed)
    assert main(["keys", "list", "--api-key", made["api_key"]]) == 0
    assert "laptop" in capsys.readouterr().out
    assert main(["keys", "revoke", made["id"]]) == 0
    assert "revoked" in capsys.readouterr().out
    assert main(["keys", "list", "--api-key", made["api_key"]]) == 3  # a revoked key is refused, one line
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "revoked" in err[0]
    assert main(["keys", "create", "x", "--expires-in", "١d"]) == 2  # ASCII digits only
    assert main(["keys", "create", "x", "--expires-in", "1d", "--expires-at", "2027-01-01T00:00:00Z"]) == 2
    default_id = next(k["id"] for k in listed["data"] if k["name"] == "default")
    local_key = next(iter(json.loads((tmp_path / "config" / "anchorgpu" / "cli-accounts.json").read_text()).values()))["api_key"]
    capsys.readouterr()
    assert main(["keys", "revoke", default_id, "--api-key", local_key]) == 4  # the last usable key
    assert "last usable key" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["1893456000", "2027-01-01", "2027-01-01T00:00:00", "2027-W01-1T00:00:00Z", "２０２７-01-01T00:00:00Z",
                                  "2027-01-01T00:00:00+25:00", "2027-02-30T00:00:00Z"])
def test_the_cli_and_the_api_read_an_expiry_by_one_rule(sqlite_app: Any, sqlite_url: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                        text: str) -> None:
    """QA pass: ``POST /v1/keys {"expires_at": "1893456000"}`` made a key expiring in 2030 (and a JSON number did
    too) where ``keys create --expires-at 1893456000`` was refused; both faces now call one parser."""
    from anchorgpu.cli import main

    alice = sqlite_app.caller("alice")
    api = sqlite_app.client.post("/v1/keys", json={"name": "x", "expires_at": text}, headers=alice.auth)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    cli = main(["keys", "create", "x", "--expires-at", text])
    err = capsys.readouterr().err
    assert (api.status_code, cli) == (422, 2), (api.status_code, api.text[:200], cli, err)
    assert err.removeprefix("error: --expires-at").strip() == api.json()["detail"].removeprefix("expires_at").strip()


def test_a_page_session_signed_in_with_a_key_ends_when_that_key_is_revoked(sqlite_app: Any) -> None:
    import re

    client = sqlite_app.client
    client.follow_redirects = False
    alice = sqlite_app.caller("alice")
    spare = client.post("/v1/keys", json={"name": "browser"}, headers=alice.auth).json()
    page = client.get("/signin").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    signed = client.post("/signin", data={"csrf_token": token.group(1), "api_key": spare["api_key"], "next": "/my/allocations"})
    assert signed.status_code == 303
    assert client.get("/my/allocations").status_code == 200
    assert client.delete(f"/v1/keys/{spare['id']}", headers=alice.auth).status_code == 200
    ended = client.get("/my/allocations")
    assert ended.status_code in (302, 303, 307) and ended.headers["location"].startswith("/signin")
    page = client.get("/signin").text  # signing in again with the revoked key says why it is refused
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    again = client.post("/signin", data={"csrf_token": token.group(1), "api_key": spare["api_key"]})
    assert again.status_code == 401 and "was revoked" in again.text


def test_the_cli_keeps_its_local_account_when_its_own_key_is_rotated(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from anchorgpu.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    assert main(["keys", "list", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["data"][0]
    assert main(["keys", "revoke", first["id"]]) == 4  # the key the CLI itself acts with: refused, one line
    assert "--api-key" in capsys.readouterr().err
    assert main(["keys", "create", "rotated", "--json"]) == 0
    rotated = json.loads(capsys.readouterr().out)
    assert main(["keys", "revoke", first["id"], "--api-key", rotated["api_key"]]) == 0
    capsys.readouterr()
    assert main(["keys", "list", "--json"]) == 0  # the same local account, now acting with the rotated key
    listed = json.loads(capsys.readouterr().out)["data"]
    assert {(k["name"], k["status"], k["current"]) for k in listed} == {("default", "revoked", False), ("rotated", "active", True)}
