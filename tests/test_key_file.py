"""The fingerprint key file is read within a bound (never ``/dev/zero`` whole); ``shadow doctor`` flags a key file
that is empty, a device, short or unrelated, and spool or warehouse paths that are not files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOOD = "a1" * 32 + "\n"


def _doctor(tmp_path: Path, **env: str) -> tuple[int, dict[str, dict[str, object]]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    done = subprocess.run([sys.executable, "-m", "shadow", "doctor", "--offline", "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**base, "PYTHONPATH": str(ROOT), "SHADOW_DB_URL": f"sqlite:///{tmp_path / 's.db'}",
                               **env})
    return done.returncode, {check["name"]: check for check in json.loads(done.stdout)}


def _key(tmp_path: Path, kind: str) -> str:
    path = tmp_path / "fingerprint.key"
    if kind.startswith("/"):
        return kind
    content = {"empty": "", "blank": "  \n", "short": "abc\n", "good": GOOD,
               "unrelated": "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n",
               "binary": "\x00\x01\x02" * 20, "huge": GOOD * 200}[kind]
    path.write_text(content, encoding="latin-1")
    return str(path)


@pytest.mark.parametrize(("kind", "says"), [
    ("empty", "is empty"), ("blank", "is empty"), ("/dev/null", "is not a regular file"),
    ("short", "a key of 3 characters"), ("unrelated", "does not look like a key file"),
    ("binary", "does not look like a key file"), ("huge", "holds more than 4096 bytes"),
])
def test_doctor_flags_a_key_file_that_cannot_be_a_key(tmp_path: Path, kind: str, says: str) -> None:
    code, checks = _doctor(tmp_path, SHADOW_FINGERPRINT_KEY_FILE=_key(tmp_path, kind))
    assert code == 1
    assert checks["fingerprint key"]["ok"] is False
    assert says in str(checks["fingerprint key"]["detail"])


def test_doctor_passes_a_good_key_file(tmp_path: Path) -> None:
    code, checks = _doctor(tmp_path, SHADOW_FINGERPRINT_KEY_FILE=_key(tmp_path, "good"))
    assert code == 0, checks
    assert checks["fingerprint key"]["ok"] is True


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("SHADOW_SPOOL", "{tmp}", "is a directory"), ("SHADOW_SPOOL", "/dev/null", "not a regular file"),
    ("SHADOW_WAREHOUSE", "{tmp}", "is a directory"), ("SHADOW_WAREHOUSE", "/dev/null", "not a regular file"),
])
def test_doctor_flags_spool_and_warehouse_paths_that_are_not_files(tmp_path: Path, variable: str, value: str,
                                                                   says: str) -> None:
    key = _key(tmp_path, "good")
    code, checks = _doctor(tmp_path, SHADOW_FINGERPRINT_KEY_FILE=key, **{variable: value.format(tmp=tmp_path)})
    assert code == 1
    name = "spool" if variable == "SHADOW_SPOOL" else "warehouse"
    assert checks[name]["ok"] is False and says in str(checks[name]["detail"])


_FINGERPRINT = textwrap.dedent("""
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))  # an unbounded read fails, not the host
    from shadow import _fingerprint as fp
    started = time.monotonic()
    first = fp.fingerprint({"q": 1})
    fp.reset_key()
    print(first != fp.fingerprint({"q": 1}), round(time.monotonic() - started, 1))
""")


@pytest.mark.parametrize("kind", ["/dev/zero", "empty", "huge"])
def test_a_key_file_that_cannot_be_a_key_gives_a_key_of_this_process_only(tmp_path: Path, kind: str) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    done = subprocess.run([sys.executable, "-c", _FINGERPRINT], capture_output=True, text=True, timeout=120,
                          check=False, env={**base, "PYTHONPATH": str(ROOT),
                                            "SHADOW_FINGERPRINT_KEY_FILE": _key(tmp_path, kind)})
    assert done.returncode == 0, done.stderr[-2000:]
    random_each_time, _seconds = done.stdout.split()
    assert random_each_time == "True"  # a fresh random key per load: never a key everyone can derive
    assert "fingerprint_key_unavailable" in done.stderr
