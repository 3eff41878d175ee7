"""Every Python and shell example of the README and the docs runs as written (one temporary directory per page)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _examples import _FENCE, CI_COMMAND, PAGES, ROOT, RUN_ELSEWHERE, blocks, environment, needs, prepare, run

pytestmark = pytest.mark.slow


def _param(page: Path) -> object:
    marks = [pytest.mark.postgres] if "postgres" in needs(page) else []
    marks += [pytest.mark.spark] if "spark" in needs(page) else []
    return pytest.param(page, id=str(page.relative_to(ROOT)), marks=marks)


@pytest.mark.parametrize("page", [_param(p) for p in PAGES if blocks(p) and p not in RUN_ELSEWHERE])
def test_each_example_of_the_page_runs_as_written(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    overrides: dict[str, str] = {}
    if "postgres" in needs(page):
        overrides["SHADOW_DB_URL"] = request.getfixturevalue("pg_url")
    if "spark" in needs(page) and (shutil.which("java") is None):
        pytest.skip("Spark needs Java 17+ (apt-get install -y openjdk-17-jre-headless)")
    cwd = tmp_path / "work"
    cwd.mkdir()
    prepare(cwd)
    env = environment(tmp_path / "home", overrides)
    for block in blocks(page):
        if block.code.strip() == CI_COMMAND:
            continue  # the test run itself: test_the_readme_test_command_is_what_ci_runs checks it
        done = run(block, cwd, env)
        if done is None:
            continue
        expected = int(block.options.get("exit", "0"))
        assert done.returncode == expected, (
            f"{block.where}: exit {done.returncode}, expected {expected}\n--- block\n{block.code}"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = [b.code.strip() for b in blocks(ROOT / "README.md")]
    assert CI_COMMAND in readme
    assert CI_COMMAND in (ROOT / ".ci" / "run").read_text().splitlines()


def test_every_block_directive_is_understood() -> None:
    for page in PAGES:
        for block in blocks(page):
            assert set(block.options) <= {"file", "exit", "serve"}, block.where


def test_every_fence_is_closed_so_no_example_is_silently_left_out() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fences = [line for line in text.splitlines() if line.startswith("```")]
        assert len(fences) == 2 * len(_FENCE.findall(text)), page


def test_the_pages_run_elsewhere_are_run_there() -> None:
    for page, test in RUN_ELSEWHERE.items():
        assert page.relative_to(ROOT).parts[-1] in (ROOT / test).read_text(), (page, test)
