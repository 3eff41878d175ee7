"""An error text is fitted to the contract once per text; a ``Public`` text never shares the plain text's entry."""

from __future__ import annotations

import pytest

from shadow._redact import Public
from shadow.contract import _author


def test_a_repeated_error_text_is_fitted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _author._fit_text.cache_clear()
    fitted: list[object] = []
    fit = _author._fit
    monkeypatch.setattr(_author, "_fit", lambda text: fitted.append(text) or fit(text))
    for _ in range(5):
        assert _author.fit_message("Error: Bad request") == "Bad request"
    assert fitted == ["Error: Bad request"]
    long = "x " * 400
    _author.fit_message(long)
    _author.fit_message(long)
    assert fitted.count(long) == 2  # long texts are not kept


def test_a_public_text_and_the_same_plain_text_are_fitted_apart() -> None:
    _author._fit_text.cache_clear()
    token = "ghp_R7tQ2xZ9mKpL4vW8nB3cY6dF1gH5jS0aE2uI"
    public = _author.fit_message(Public(f"Error: bad token {token}"))
    plain = _author.fit_message(f"Error: bad token {token}")
    assert plain is not None and token not in plain
    assert public is not None
