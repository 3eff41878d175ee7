"""Redaction cost per typical value: shadow's prefiltered scrub next to one regex of every pattern (ratio < 1 wins).

Run: python3 tests/benchmarks/bench_redact.py [--rounds R]
The writer redacts every string of every record, so common shapes (short strings, small dicts, a sentence of error
text) must stay cheap while the credential corpus (tests/_secrets_corpus.py) is still caught.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

from shadow import _redact as redact
from shadow import _scrub as scrub

SHAPES = {
    "short string": "task 7",
    "date": "2025-03-14",
    "error sentence": "Bad request: due_date must be a date in the future, for example 2025-03-14",
    "path": "/var/data/exports/2025/report-03.csv",
    "uuid id": "3f2b8c1e-9a7d-4e6f-8b1c-2d3e4f5a6b7c",
    "bare token": "glpat-Xy7Qm2Lp9Rt4Vw8Nb3Cz",
    "200 chars of prose": "The upstream service returned an error while processing the request for customer 42. " * 2,
}
SMALL_DICT = {"title": "task 7", "due_date": "2025-03-14", "tags": ["a", "b"], "priority": 2}


def _one_regex() -> re.Pattern[str]:
    parts = [scrub._KEY_BLOCK.pattern, scrub._URL_CREDENTIALS.pattern, scrub._AT_WORD_SOURCE,
             *(rf"\b(?:{rx})" for _starts, rx in scrub._STARTING), *(rx.pattern for _need, rx in scrub._INSIDE)]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.DOTALL | re.IGNORECASE)


def per_call_us(fn: Callable[[], object], n: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    naive = _one_regex()
    print(f"{'shape':<22} {'shadow us':>10} {'one regex us':>13} {'ratio':>6}")
    for name, text in SHAPES.items():
        ours = per_call_us(lambda t=text: redact.scrub_text(t), 5000, rounds)
        theirs = per_call_us(lambda t=text: naive.sub(redact.REDACTED, t), 5000, rounds)
        print(f"{name:<22} {ours:>10.2f} {theirs:>13.2f} {ours / theirs:>6.2f}")
    small = per_call_us(lambda: redact.to_jsonable(SMALL_DICT), 5000, rounds)
    plain = per_call_us(lambda: redact.to_jsonable(SMALL_DICT, redact=False), 5000, rounds)
    print(f"{'small dict':<22} {small:>10.2f} {'(no redaction)':>13} {small / plain:>6.2f}x of to_jsonable(redact=False)")


if __name__ == "__main__":
    main()
