"""The snapshot layer: each code's payload against a stored golden file."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

import shadow
from shadow.contract._codes import Code


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("code", [c.value for c in Code])
def test_each_codes_default_payload_matches_its_golden_file(code: str, snapshot_json: SnapshotAssertion) -> None:
    assert shadow.ToolError.of(code).payload() == snapshot_json


def test_the_example_from_the_readme_matches_its_golden_file(snapshot_json: SnapshotAssertion) -> None:
    payload = shadow.Fail(
        "validation_error", "The field 'due_date' must be an ISO 8601 date, for example 2025-03-14.",
        field="due_date", received="next friday",
    ).error.payload()
    assert payload == snapshot_json
