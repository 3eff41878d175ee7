"""No secret is stored, logged or served: redaction of key names and credential-shaped text, keyed fingerprints."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import itertools
import json
import os
import pkgutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import shadow
from shadow._fingerprint import fingerprint
from shadow._redact import REDACTED, dumps, scrub_text, to_jsonable
from tests._secrets_corpus import CORPUS, ECHOED, GENERATED_ONLY_NAMES, KEY_NAMES, PLAIN_NAMES

ROOT = Path(__file__).resolve().parents[1]


def _detectors() -> dict[str, type]:
    plugins = importlib.import_module("detect_secrets.plugins")
    found: dict[str, type] = {}
    for module in pkgutil.iter_modules(plugins.__path__):
        loaded = importlib.import_module(f"detect_secrets.plugins.{module.name}")
        found.update(inspect.getmembers(loaded, inspect.isclass))
    return found


def test_the_corpus_follows_detect_secrets_rules() -> None:
    detectors = _detectors()
    for name, plugin, text, needle in CORPUS:
        assert needle in text, name
        if plugin is not None:
            assert list(detectors[plugin]().analyze_string(text)), f"{plugin} does not flag {name}"


@pytest.mark.parametrize(("name", "text", "needle"), [(n, t, s) for n, _p, t, s in CORPUS])
def test_credential_shaped_text_is_scrubbed(name: str, text: str, needle: str) -> None:
    assert needle not in scrub_text(text)
    assert needle not in dumps(to_jsonable({"note": f"before {text} after", "items": [text]}))


def test_a_redacted_value_keeps_the_punctuation_after_it() -> None:
    """A fetch error's "...?api_key=KEY: DNS resolution failed" lost its colon with the key."""
    assert scrub_text("GET https://h.invalid/?api_key=Zq8Lm3Xp7Rt2Vw9Nb4Cy: DNS resolution failed") == (
        f"GET https://h.invalid/?api_key={REDACTED}: DNS resolution failed")
    assert scrub_text("token=Zq8Lm3Xp7Rt2Vw9Nb4Cy. Try again") == f"token={REDACTED}. Try again"


def test_ordinary_text_is_left_alone() -> None:
    for text in ("Bad request: due_date must be a date", "ratio=3, count: 5", "see https://example.com/a?b=c",
                 "time 12:30:45", "http://user@host/x", "monkey=3", "task 7", "2025-03-14"):
        assert scrub_text(text) == text


@pytest.mark.parametrize("key", KEY_NAMES)
def test_credential_key_names_are_redacted(key: str) -> None:
    assert to_jsonable({key: "KeyVal-Zq81", "n": 1}) == {key: REDACTED, "n": 1}


@pytest.mark.parametrize("key", GENERATED_ONLY_NAMES)
def test_a_bare_key_hides_a_generated_value_and_keeps_a_lookup_key(key: str) -> None:
    for generated in ("Zk3Qw9Lm2Np8Rt5Vx1Yb7Hd4", "a8Kq2Lm9Zp4Xw7Rt"):
        assert to_jsonable({key: generated, "n": 1}) == {key: REDACTED, "n": 1}
    for lookup in ("user:42", "ABCD2345", "missing", "q3 report", "ORD-2024-000123", "order_2024_000123",
                   "3f6c2b1e-8a4d-4c7e-9b2f-5d1e0a7c9b84", "978-3-16-148410-0", "2024-05-02T10:00:00Z",
                   "reports/2024/q3.csv"):
        assert to_jsonable({key: lookup}) == {key: lookup}
    assert to_jsonable({"twitter": "ORD-2024-000123"}) == {"twitter": REDACTED}  # a provider's name: as before


def test_a_lookup_key_the_tool_echoes_reaches_the_model_in_cutover() -> None:
    from shadow.testing import InMemoryFlags, InMemoryStore, recording

    flags = InMemoryFlags()
    flags.set("lookup", "cutover")

    @shadow.tool(flags=flags)
    def lookup(key: str) -> str:
        return f"Key {key} does not exist" if key == "missing" else f"value of {key}"

    with recording(InMemoryStore()):
        assert json.loads(str(lookup("missing")))["error"]["message"] == "Key missing does not exist"
        assert json.loads(str(lookup("user:42")))["data"] == "value of user:42"
        assert json.loads(str(lookup("INV-2024-000999")))["data"] == "value of INV-2024-000999"
        assert json.loads(str(lookup("Zk3Qw9Lm2Np8Rt5Vx1Yb7Hd4")))["data"] == f"value of {REDACTED}"


@pytest.mark.parametrize("key", PLAIN_NAMES)
def test_plain_key_names_are_kept(key: str) -> None:
    assert to_jsonable({key: "v"}) == {key: "v"}


def test_a_stored_fingerprint_cannot_be_brute_forced_without_the_key() -> None:
    stored = fingerprint({"pin": "4821"})
    for pin in (f"{i:04d}" for i in range(10_000)):
        canonical = dumps(to_jsonable({"pin": pin}, redact=False)).encode()
        guesses = {hashlib.blake2b(canonical, digest_size=16).hexdigest(), hashlib.sha256(canonical).hexdigest()[:32],
                   hashlib.md5(canonical).hexdigest()}
        assert stored not in guesses


def _fingerprint_in_child(env: dict[str, str]) -> str:
    code = "from shadow._fingerprint import fingerprint; print(fingerprint({'pin': '4821'}))"
    full = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_FINGERPRINT")}
    out = subprocess.run([sys.executable, "-c", code], env={**full, "PYTHONPATH": str(ROOT), **env},
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def test_fingerprints_compare_across_processes_with_one_key_and_a_new_key_starts_new_ones(tmp_path: Path) -> None:
    same = [_fingerprint_in_child({"SHADOW_FINGERPRINT_KEY": "fleet-key"}) for _ in range(2)]
    other = _fingerprint_in_child({"SHADOW_FINGERPRINT_KEY": "rotated-key"})
    assert same[0] == same[1] != other


def test_a_key_file_is_created_once_outside_the_call_log_and_reused(tmp_path: Path) -> None:
    key_file = tmp_path / "conf" / "fingerprint.key"
    env = {"SHADOW_FINGERPRINT_KEY_FILE": str(key_file)}
    first = _fingerprint_in_child(env)
    assert key_file.exists() and oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert _fingerprint_in_child(env) == first
    key_file.write_text("rotated\n")
    assert _fingerprint_in_child(env) != first


_CHILD = textwrap.dedent('''
    import json, sys
    import shadow
    from shadow import Code, Rules
    sys.path.insert(0, {root!r})
    from tests._secrets_corpus import CORPUS, ECHOED, KEY_NAMES

    @shadow.tool
    def note(text: str) -> str:
        return "noted"

    @shadow.tool
    def legacy_value(text: str) -> dict:
        return {{"error": text}}

    @shadow.tool
    def legacy_raise(text: str) -> str:
        raise RuntimeError(text)

    @shadow.guard
    def guarded_raise(text: str) -> str:
        raise RuntimeError(text)

    @shadow.tool
    def store_kv(**kwargs: object) -> str:
        return "stored"

    rules = Rules.default().on(LookupError, Code.NOT_FOUND, "No task has the id {{id}}. List tasks to find it.",
                               context=lambda e: {{"id": e.args[0]}})

    @shadow.tool(rules=rules)
    def get_task(task_id: str) -> str:
        raise LookupError(task_id)

    def login(user: str, password: str, note: str) -> str:  # echoes a credential-keyed argument
        raise ValueError(f"bad login for {{user}} with {{password}}: {{note}}")

    @shadow.tool
    def connect(config: dict) -> dict:
        return {{"echo": "connected with " + config["auth"]["token"]}}

    login_cutover = shadow.tool("login")(login)
    login_shadow = shadow.tool("login_shadow")(login)  # SHADOW_FLAGS puts this one in shadow mode

    served = []
    for _name, _plugin, text, _needle in CORPUS:
        served += [note(text=text), legacy_value(text=text), legacy_raise(text=text), guarded_raise(text=text),
                   get_task(task_id=text)]
    for key in KEY_NAMES:
        served.append(store_kv(**{{key: "KeyVal-" + key + "-Zq81"}}))
    for i in range(3):
        served += [login_cutover("bad", password=ECHOED[0], note=f"n{{i}}"), connect({{"auth": {{"token": ECHOED[1]}}}}),
                   shadow.guard(login)("bad", ECHOED[0], f"g{{i}}")]
        try:
            login_shadow("bad", ECHOED[0], f"n{{i}}")
        except ValueError:
            pass
    assert shadow.flush(30)
    print(json.dumps(served))
''')


def _run_child(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT))], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "SHADOW_FLAGS": "*=cutover,login_shadow=shadow",
                               "SHADOW_LOG_LEVEL": "DEBUG", **env},
                          capture_output=True, text=True, timeout=300, check=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shadow", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_secret_of_the_corpus_reaches_any_store_log_export_dashboard_or_payload(tmp_path: Path) -> None:
    db = tmp_path / "shadow.db"
    env = {"SHADOW_DB_URL": f"sqlite:///{db}", "SHADOW_WAREHOUSE": str(tmp_path / "shadow.duckdb")}
    live = _run_child(env, tmp_path)
    assert live.returncode == 0, live.stderr[-2000:]
    spool_dir = tmp_path / "spooled"
    spool_dir.mkdir()
    spooled = _run_child({"SHADOW_DB_URL": f"postgresql+psycopg://u@127.0.0.1:{_closed_port()}/x",
                          "SHADOW_SPOOL": str(spool_dir / "calls.spool")}, tmp_path)
    assert spooled.returncode == 0, spooled.stderr[-2000:]
    steps = [_cli("sync", cwd=tmp_path, env=env), _cli("export", "parquet", str(tmp_path / "pq"), cwd=tmp_path,
                                                       env=env),
             _cli("dashboard", "--out", str(tmp_path / "cutover.html"), "--no-sync", cwd=tmp_path, env=env),
             _cli("rules", "suggest", cwd=tmp_path, env=env)]
    for step in steps:
        assert step.returncode == 0, step.stdout + step.stderr[-2000:]
    import duckdb

    with duckdb.connect(str(tmp_path / "shadow.duckdb"), read_only=True) as con:
        warehouse_text = json.dumps(con.execute("SELECT * FROM calls").fetchall(), default=str)
        parquet_text = json.dumps(con.execute(f"SELECT * FROM read_parquet('{tmp_path / 'pq'}/calls/**/*.parquet')"
                                              ).fetchall(), default=str)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files) and any("spool" in p.name for p in files)
    places = {
        "files (sqlite, spool, duckdb, parquet, dashboard)": b"".join(p.read_bytes() for p in files),
        "warehouse rows": warehouse_text.encode(), "parquet rows": parquet_text.encode(),
        "stderr": "".join(r.stderr for r in (live, spooled, *steps)).encode(),
        "rules suggest": steps[-1].stdout.encode(),
        "served payloads": (live.stdout + spooled.stdout).encode(),
    }
    needles = [s for _n, _p, _t, s in CORPUS] + [f"KeyVal-{k}-Zq81" for k in KEY_NAMES] + list(ECHOED)
    leaks = [(place, needle) for (place, blob), needle in itertools.product(places.items(), needles)
             if needle.encode() in blob or json.dumps(needle)[1:-1].encode() in blob]
    assert leaks == []
    assert "No task has the id [REDACTED]" in live.stdout
    assert "connected with [REDACTED]" in live.stdout  # the served payload, in cutover


def test_echoed_credential_argument_values_are_found_by_key_and_short_ones_are_left() -> None:
    from shadow._redact import redact_values, secret_values

    found = secret_values({"user": "bob", "password": "Hunter2-Login-Zq81", "pin": "12",
                           "config": {"auth": {"token": "Tok-Nested-Zq81", "n": 12345}, "title": "Tok-Plain"}})
    assert found == ("Hunter2-Login-Zq81", "Tok-Nested-Zq81", "12345")
    assert secret_values({"user": "bob", "title": "Hunter2-Login-Zq81"}) == ()
    text = {"message": "bad login for bob with Hunter2-Login-Zq81 (12 tries)", "Tok-Nested-Zq81": ["Tok-Nested-Zq81"]}
    assert redact_values(text, found) == {"message": f"bad login for bob with {REDACTED} (12 tries)",
                                          REDACTED: [REDACTED]}


#: Values a reviewer needs to read, kept as they are: ids (order, booking, ticket, tracking numbers, UUIDs used as
#: ids, commit hashes), dates and times, paths, amounts, sentences, and prose about a credential without its value.
ORDINARY = (
    "ORD-20391", "booking BK-7Q2X9L confirmed", "PNR X7K2QM", "ticket JIRA-1234", "jira: PROJ-12345",
    "tracking 1Z999AA10123456784", "3f2b8c1e-9a7d-4e6f-8b1c-2d3e4f5a6b7c", "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
    "2025-03-14", "2025-03-14T10:30:00Z", "between 09:00 and 17:30", "/var/data/exports/2025/report-03.csv",
    "C:\\Users\\ann\\Documents\\invoice_2025_03.pdf", "12.50 EUR", "$1,234.56", "amount=1234.56 currency=EUR",
    "The upstream service returned an error while processing the request for customer 42.",
    "Bad request: due_date must be a date in the future, for example 2025-03-14",
    "the password is incorrect", "password is required", "the token is expired", "your API token was revoked",
    "scikit sk-learn-compatible-model", "user_id: u-48213", "phone +1-202-555-0143", "epoch 1733300000000",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "req_8f14e45fceea167a",
    "see https://example.com/orders/ORD-20391?tab=items", "status: shipped, eta: 2025-03-16",
)


@pytest.mark.parametrize("value", ORDINARY)
def test_ordinary_values_survive_unredacted_in_text_values_keys_and_the_fast_path(value: str) -> None:
    from shadow.calllog import _plain

    assert scrub_text(value) == value
    record = {"note": value, "items": [value], "order_id": value, "nested": {"a": [{"b": value}]}}
    assert to_jsonable(record) == record
    assert _plain.clean(record)  # the fast path too
    assert value in to_jsonable({value: "seen"})  # as a key
    provider = {"twitter_handle": "@acme_support", "jira": "PROJ-12345", "slack_channel": "#orders"}
    assert to_jsonable(provider) == provider


def test_a_cutover_success_serves_the_tools_own_data_unchanged_but_stores_it_redacted(tmp_path: Path) -> None:
    import shadow
    from shadow.calllog._store import SqlStore
    from shadow.testing import InMemoryFlags, recording

    token = "ghp_R7tQ2xZ9mKpL4vW8nB3cY6dF1gH5jS0aE2uI"
    url = f"sqlite:///{tmp_path / 'shadow.db'}"

    @shadow.tool(flags=InMemoryFlags({"create_key": "cutover"}))
    def create_key(owner: str) -> dict[str, str]:
        return {"owner": owner, "key": token, "note": f"made {token}"}

    with recording(SqlStore(url)):
        served = create_key("ann")
        assert shadow.flush(30)
    assert served == {"ok": True, "data": {"owner": "ann", "key": token, "note": f"made {token}"}}
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the database and its write-ahead log
    assert token.encode() not in stored and b"ann" in stored


_ECHO_IN_ARGS_CHILD = """
import sys
import shadow

@shadow.tool
def connect(host: str, token: str, options: dict) -> dict:
    return {"connected": host}

shadow.flags.wait()
secret = sys.argv[1]
for plain in (secret, secret + "-2"):
    connect("db.example.org", plain, {"retry": {"policy": [{"raw": plain}]}, plain: "as a key", "note": "ORD-20391"})
assert shadow.flush(30)
"""


@pytest.mark.parametrize("secret", ["Zebra!qfOGveqcOI", "LQp6Z07xknsP+lqAQQ2SNve6anfNlzF8HFmelPgz",
                                    "5152 6671 7426 5000"])
def test_a_credential_argument_repeated_in_another_argument_or_as_a_key_is_redacted_there_too(
    tmp_path: Path, secret: str
) -> None:
    # a value passed under a credential key (token=) is known to be one: a copy of it elsewhere in the same call's
    # arguments (nested, or as a mapping key) is stored redacted as well, as in its result or exception text
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    env.update(PYTHONPATH=str(ROOT), SHADOW_FLAGS="*=shadow", SHADOW_DB_URL=f"sqlite:///{tmp_path / 'shadow.db'}")
    done = subprocess.run([sys.executable, "-c", _ECHO_IN_ARGS_CHILD, secret], cwd=tmp_path, env=env, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in stored
    assert b"ORD-20391" in stored and b"db.example.org" in stored
