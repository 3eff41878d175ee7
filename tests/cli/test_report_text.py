"""``shadow report loop-rate`` as text: numbers read as numbers, each line says a thing once."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shadow.cli import app

runner = CliRunner()
#: A cell that is a number for a person: a count, a rate, a signed change, an interval, or "-".
_NUMBER = re.compile(r"^[-+]?[\d,.]+%?((-| to )[-+]?[\d,.]+%?)?$|^-$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The demo's directory, what ``shadow demo`` printed, then ``shadow report loop-rate`` on its store."""
    directory = tmp_path_factory.mktemp("report")
    made = runner.invoke(app, ["demo", "--dir", str(directory), "--sessions", "150", "--seed", "11"])
    assert made.exit_code == 0, made.output
    done = runner.invoke(app, ["report", "loop-rate", "--db-url", f"sqlite:///{directory / 'shadow.db'}",
                               "--warehouse", str(directory / "shadow.duckdb"), "--no-sync"])
    assert done.exit_code == 0, done.output
    return directory, made.stdout, done.stdout


@pytest.fixture(scope="module")
def outputs(demo: tuple[Path, str, str]) -> tuple[str, str]:
    return demo[1], demo[2]


def _tables(text: str) -> list[tuple[str, list[tuple[int, int]], list[str]]]:
    """Every table in ``text``: its header line, its columns' (start, end) from the dashes, its body lines."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if i == 0 or not re.fullmatch(r" *-+( +-+)+", line):
            continue
        spans = [m.span() for m in re.finditer(r"-+", line)]
        body = []
        for row in lines[i + 1:]:
            if not row.strip():
                break
            body.append(row)
        found.append((lines[i - 1], spans, body))
    return found


def test_number_columns_of_the_report_table_are_right_aligned_under_their_header(outputs: tuple[str, str]) -> None:
    report_text = outputs[1]
    tables = _tables(report_text)
    assert len(tables) >= 4, report_text
    numeric_columns = 0
    for header, spans, body in tables:
        for start, end in spans:
            cells = [row[start:end] for row in body]
            if not all(_NUMBER.match(c.strip()) for c in cells):
                continue
            numeric_columns += 1
            for cell in cells:
                assert cell == cell.rstrip().rjust(end - start), (header, body)
            title = header[start:end]
            assert title.strip() and title == title.rjust(end - start), (header, body)
        first = [row[spans[0][0]:spans[0][1]] for row in body]
        assert all(c == c.ljust(spans[0][1] - spans[0][0]) and not c.startswith(" ") for c in first), body
    assert numeric_columns >= 15, report_text


def test_the_savings_line_of_the_demo_and_the_report_says_randomised_once(outputs: tuple[str, str]) -> None:
    for text in outputs:
        start = text.index("Savings (")
        paragraph = text[start:text.index("per 1,000 tasks:", start)]
        assert "round trips saved per 1,000 tasks" in paragraph
        assert paragraph.count("randomised") == 1, paragraph


def test_shadow_ready_shows_the_unmapped_share_and_its_limit_in_the_same_unit(demo: tuple[Path, str, str]) -> None:
    directory = demo[0]
    done = runner.invoke(app, ["ready", "send_email", "--db-url", f"sqlite:///{directory / 'shadow.db'}",
                               "--max-unmapped-share", "0.1"])
    assert done.exit_code == 1, done.output  # the demo's send_email has errors no rule maps
    line = next(row for row in done.stdout.splitlines() if "unmapped_share" in row)
    assert re.search(r"FAIL unmapped_share +\d+\.\d%  \(needs <= 10\.0%\)$", line), line


def test_the_report_of_a_log_without_calls_says_how_calls_get_logged(tmp_path: Path) -> None:
    db = ["--db-url", f"sqlite:///{tmp_path}/log.db", "--warehouse", str(tmp_path / "wh.duckdb")]
    assert runner.invoke(app, ["db", "upgrade", *db[:2]]).exit_code == 0
    done = runner.invoke(app, ["report", "loop-rate", *db])
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())
    assert "No calls logged yet: a tool's calls are logged only while its flag is shadow or cutover" in text
    assert "shadow flags set TOOL shadow" in text
    assert "nothing to compare: no errors yet" in text and "only one arm has errors" not in text
    # no design to name: "none" is not one
    assert "Two-arm comparison (all tools):" in text and "Savings:" in text and "(none)" not in text
    assert "0 calls, 0 errors, 0 sessions" in text
    filtered = runner.invoke(app, ["report", "loop-rate", *db, "--until", "2001-01-01", "--no-sync"])
    assert filtered.exit_code == 0, filtered.output
    assert "No calls logged yet" not in filtered.stdout


def test_the_dashboard_takes_until_like_the_report_and_refuses_an_empty_range(
        demo: tuple[Path, str, str], tmp_path: Path) -> None:
    directory = demo[0]
    stores = ["--db-url", f"sqlite:///{directory / 'shadow.db'}", "--warehouse", str(directory / "shadow.duckdb"),
              "--no-sync"]
    report = runner.invoke(app, ["report", "loop-rate", *stores, "--format", "json"])
    first = json.loads(report.stdout)["data_range"]["first_call"][:10]
    until = (dt.date.fromisoformat(first) + dt.timedelta(days=2)).isoformat()

    def calls_on_page(*extra: str) -> int:
        out = tmp_path / f"page{len(extra)}.html"
        done = runner.invoke(app, ["dashboard", *stores, "--out", str(out), *extra])
        assert done.exit_code == 0, done.output
        return int(re.search(r"([\d,]+) calls? ·", out.read_text()).group(1).replace(",", ""))  # type: ignore[union-attr]

    windowed = runner.invoke(app, ["report", "loop-rate", *stores, "--until", until, "--format", "json"])
    assert calls_on_page("--until", until) == json.loads(windowed.stdout)["data_range"]["calls"] < calls_on_page()
    empty = runner.invoke(app, ["dashboard", *stores, "--since", until, "--until", first, "--out", str(tmp_path / "x")])
    assert empty.exit_code == 2 and "is not before --until" in empty.output
