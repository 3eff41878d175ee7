"""Every notebook in notebooks/ runs top to bottom (nbclient) against a store made by ``shadow demo``."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from shadow.demo._run import run_demo

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    result = run_demo(tmp_path_factory.mktemp("notebook-demo"), sessions=80, seed=4, dashboard=False)
    return result.db_url, result.warehouse


def test_the_walkthrough_notebook_exists() -> None:
    assert any(p.name == "loop_rate_walkthrough.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_runs_top_to_bottom_on_a_demo_store(
    path: Path, demo_store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, warehouse = demo_store
    monkeypatch.setenv("SHADOW_DB_URL", url)
    monkeypatch.setenv("SHADOW_WAREHOUSE", str(warehouse))
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert url in text, "the notebook reads the store from SHADOW_DB_URL"
    assert "Loop rate:" in text, "the report was printed"
    plots = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(plots) >= 7, "every dashboard chart and the session timeline were drawn"
