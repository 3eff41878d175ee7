"""``import shadow`` and a process's first call, side by side with another revision (prints ratios, asserts nothing).

Run: python3 tests/benchmarks/bench_import.py [--before REF] [--rounds R] [--bytecode both|compiled|source]
The other revision (default ``main``) is exported with ``git archive`` into a temporary directory, this tree's
``shadow/`` copied beside it. Each round runs every measurement for both trees in fresh subprocesses, alternating
which goes first: the whole process (``python -c 'import shadow'`` less ``python -c pass``), ``-X importtime``'s
cumulative time for ``shadow``, and a process that makes one call of a tool whose flag is in a SQLite call log at
cutover 100% (its import, its first call, and whether it was served structured). Medians are printed, with
after/before ratios, for each way the modules are loaded: ``compiled`` (both trees byte-compiled first, as an
installed wheel is) and ``source`` (no bytecode: every module compiled from source on each import, as with
``PYTHONDONTWRITEBYTECODE=1`` in a checkout).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import shadow
t1 = time.perf_counter()

@shadow.tool
def create_task(title: str) -> dict:
    return {"id": 1, "title": title}

t2 = time.perf_counter()
out = create_task("x")
t3 = time.perf_counter()
heavy = [m for m in ("sqlalchemy", "alembic", "structlog", "jsonschema") if m in sys.modules]
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t3 - t2) * 1e3,
                  "structured": str(out).startswith('{"ok":true'), "heavy": heavy}))
"""


def _export(ref: str, into: Path) -> Path:
    archive = into / "tree.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", ref, "shadow"], cwd=ROOT, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def _copy(tree: Path, into: Path, compiled: bool) -> Path:
    """A copy of ``tree``'s package, byte-compiled (``compiled``) or with no bytecode at all."""
    shutil.copytree(tree / "shadow", into / "shadow", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if compiled and not compileall.compile_dir(into / "shadow", quiet=1, workers=0):
        raise RuntimeError(f"could not byte-compile {into}")
    return into


def _env(tree: Path, url: str, compiled: bool) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_") and k != "PYTHONDONTWRITEBYTECODE"}
    # a source tree must stay without bytecode: nothing written by its imports
    written = {} if compiled else {"PYTHONDONTWRITEBYTECODE": "1"}
    return {**base, **written, "PYTHONPATH": str(tree), "SHADOW_DB_URL": url, "SHADOW_FINGERPRINT_KEY": "bench"}


def _wall(args: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=cwd, check=True, capture_output=True)
    return (time.perf_counter() - t0) * 1e3


def _importtime(env: dict[str, str], cwd: Path) -> float:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import shadow"], env=env, cwd=cwd, check=True,
                          capture_output=True, text=True)
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "shadow" and not parts[2].startswith("  "):
            return int(parts[1]) / 1e3
    raise RuntimeError("no 'shadow' line in -X importtime's output")


def _first_call(env: dict[str, str], cwd: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, cwd=cwd, check=True, capture_output=True,
                          text=True)
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="the git revision to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--bytecode", choices=("both", "compiled", "source"), default="both",
                        help="load the modules byte-compiled, from source, or measure both (default)")
    opts = parser.parse_args()
    modes = ("compiled", "source") if opts.bytecode == "both" else (opts.bytecode,)
    with tempfile.TemporaryDirectory(prefix="shadow-bench-import-") as tmp_name:
        tmp = Path(tmp_name)
        sources = {"before": _export(opts.before, tmp), "after": ROOT}
        runs = [(name, mode) for mode in modes for name in sources]
        trees = {(name, mode): _copy(sources[name], tmp / f"{name}-{mode}", mode == "compiled") for name, mode in runs}
        dbs = {}
        for name in sources:
            work = tmp / f"work-{name}"
            work.mkdir()
            url = f"sqlite:///{work / 'shadow.db'}"
            subprocess.run([sys.executable, "-m", "shadow.cli", "flags", "set", "create_task", "cutover", "--force",
                            "--reason", "bench"], env=_env(trees[name, modes[0]], url, True), cwd=work, check=True,
                           capture_output=True)
            dbs[name] = (work, url)
        samples: dict[tuple[str, str], dict[str, list[float]]] = {run: {} for run in runs}
        served: dict[str, list[bool]] = {n: [] for n in sources}
        heavy: dict[str, set[str]] = {n: set() for n in sources}
        for round_no in range(opts.rounds):
            order = runs if round_no % 2 == 0 else list(reversed(runs))
            for name, mode in order:
                work, url = dbs[name]
                env = _env(trees[name, mode], url, mode == "compiled")
                got = samples[name, mode]
                base = _wall(["-c", "pass"], env, work)
                got.setdefault("process: import shadow (ms, less python -c pass)", []).append(
                    _wall(["-c", "import shadow"], env, work) - base)
                got.setdefault("-X importtime: shadow cumulative (ms)", []).append(_importtime(env, work))
                first = _first_call(env, work)
                got.setdefault("one-call process: import (ms)", []).append(float(str(first["import_ms"])))
                got.setdefault("one-call process: first call (ms)", []).append(float(str(first["first_call_ms"])))
                served[name].append(bool(first["structured"]))
                heavy[name].update(str(m) for m in first["heavy"])  # type: ignore[attr-defined]
        print(f"{opts.rounds} rounds, alternating; before = {opts.before}, after = this tree")
        for mode in modes:
            print(f"\n{mode}: {'both trees byte-compiled' if mode == 'compiled' else 'no bytecode, compiled on import'}")
            print(f"{'measurement':<52} {'before':>9} {'after':>9} {'after/before':>13}")
            for key in samples["before", mode]:
                b = statistics.median(samples["before", mode][key])
                a = statistics.median(samples["after", mode][key])
                print(f"{key:<52} {b:>9.1f} {a:>9.1f} {a / b:>13.2f}")
        print()
        for name in sources:
            print(f"{name}: first call served structured in {sum(served[name])} of {len(served[name])} processes; "
                  f"imported by the one-call process: {', '.join(sorted(heavy[name])) or 'none of the heavy ones'}")


if __name__ == "__main__":
    main()
