"""The layout: subpackage fronts, private modules, deprecated paths, a light core, and no logging set-up on import."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from shadow._deprecated import MOVED

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "shadow"
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
#: Public modules at the top: everything else there is private (a leading underscore).
PUBLIC_TOP = {"__init__.py", "__main__.py", "testing.py", "tokens.py", "typing.py"}


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff (RUF022) keeps ``__all__`` in: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          check=False, cwd=ROOT)


def test_top_level_modules_are_private_but_for_the_documented_public_ones() -> None:
    for path in PACKAGE.glob("*.py"):
        assert path.name in PUBLIC_TOP or path.name.startswith("_"), path.name


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_front_has_a_sorted_all_of_names_it_really_has(name: str) -> None:
    front = importlib.import_module(f"shadow.{name}")
    exported = list(getattr(front, "__all__", []))
    if name != "cli":
        assert exported, f"shadow.{name} has no __all__"
    assert exported == sorted(exported, key=_isort_key)
    for attr in exported:
        assert getattr(front, attr) is not None, f"shadow.{name}.{attr}"
    for module in (PACKAGE / name).glob("*.py"):
        assert module.name == "__init__.py" or module.name.startswith("_"), f"{module} is not private"


#: Modules still being split (each by the change that reworks it); this set only shrinks.
_SPLIT_PENDING: set[str] = set()


def test_no_module_is_longer_than_about_400_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 420}
    assert set(long) <= _SPLIT_PENDING, long


def test_production_code_never_imports_the_testing_helpers_or_the_whole_package() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name == "testing.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module != "shadow.testing", path
                assert not (node.module == "shadow" and path.parent == PACKAGE and path.name != "__init__.py"
                            and any(a.name not in {"_deprecated"} and not a.name.startswith("_")
                                    for a in node.names)), path
            if isinstance(node, ast.Import):
                assert all(a.name not in {"shadow", "shadow.testing"} for a in node.names), path


@pytest.mark.parametrize(("old", "name"), [
    ("shadow.store", "SqlStore"),
    ("shadow.writer", "get_writer"),
    ("shadow.warehouse", "Warehouse"),
    ("shadow.report", "loop_rate_report"),
    ("shadow.dashboard_data", "collect"),
    ("shadow.flags_openfeature", "OpenFeatureFlags"),
    ("shadow.migrate", "upgrade"),
    ("shadow.sql", "run"),
    ("shadow.ready", "readiness"),
    ("shadow.redact", "Public"),
    ("shadow.records", "CallRecord"),
    ("shadow.codes", "Code"),
])
def test_documented_import_paths_that_moved_still_work_and_warn(old: str, name: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved"):
        value = getattr(module, name)
    _public, private = MOVED[old.removeprefix("shadow.")]
    assert value is getattr(importlib.import_module(private), name)


def test_every_moved_path_resolves_and_the_attribute_form_works_too() -> None:
    import shadow

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old, (_public, private) in MOVED.items():
            assert importlib.import_module(f"shadow.{old}").__name__ == f"shadow.{old}"
            importlib.import_module(private)
        assert shadow.store.SqlStore is importlib.import_module("shadow.calllog").SqlStore  # type: ignore[attr-defined]


def test_import_shadow_loads_no_analytics_dashboard_postgres_driver_spark_or_opentelemetry() -> None:
    result = _run("""
        import sys
        import shadow, shadow.flags, shadow.calllog, shadow.contract, shadow.normalize, shadow.testing, shadow.cli
        print(sorted(m for m in ("duckdb", "numpy", "opentelemetry", "plotly", "psycopg", "pyarrow", "pyspark")
                     if m in sys.modules))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_import_shadow_leaves_the_host_logging_and_structlog_configuration_alone() -> None:
    result = _run("""
        import logging, structlog
        logging.basicConfig(level=logging.ERROR, format="HOST %(name)s %(message)s")
        structlog.configure(processors=[structlog.processors.KeyValueRenderer()])
        before = (structlog.get_config()["processors"], logging.getLogger().handlers[:], logging.getLogger().level,
                  logging.getLogger("shadow").handlers[:], logging.getLogger("shadow").level)
        import shadow
        after = (structlog.get_config()["processors"], logging.getLogger().handlers[:], logging.getLogger().level,
                 logging.getLogger("shadow").handlers[:], logging.getLogger("shadow").level)
        print(before == after)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_shadow_events_go_through_the_host_standard_logging_when_structlog_is_not_configured() -> None:
    result = _run("""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="HOST %(name)s %(levelname)s %(message)s")
        import shadow
        from shadow.testing import InMemoryFlags
        flags = InMemoryFlags()
        shadow.flags.DbFlags  # the flag module is importable without side effects

        @shadow.guard
        def broken() -> None:
            raise RuntimeError("boom")

        broken()
    """)
    assert result.returncode == 0, result.stderr
    assert "HOST shadow." in result.stdout
    assert result.stderr == ""


def test_import_shadow_does_not_need_posix_only_modules() -> None:
    result = _run("""
        import sys
        sys.modules["fcntl"] = None  # as on Windows
        import shadow, shadow.calllog
        print("ok")
    """)
    assert result.returncode == 0, result.stderr


def test_importing_an_old_module_path_never_rebinds_a_public_function_of_the_same_name() -> None:
    import shadow

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old in ("guard", "describe", "schema"):
            importlib.import_module(f"shadow.{old}")
    assert callable(shadow.guard) and callable(shadow.describe) and callable(shadow.schema)
    assert shadow.guard.__module__ == "shadow.contract._guard"


def test_ci_runs_the_readmes_test_command_verbatim_and_it_puts_back_every_marked_test() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    command = ci[-1]
    assert f"```sh\n{command}\n```" in readme
    # the default run leaves out slow and spark tests; two workers, a module's tests in one of them (its fixtures)
    assert command.endswith("python3 -m pytest -m '' -n 2 --dist loadfile")
