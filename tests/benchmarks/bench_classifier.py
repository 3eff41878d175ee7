"""How the built-in rules place real tool errors: per-code precision, wrong and unplaced shares, dev vs held-out.

Run: python3 tests/benchmarks/bench_classifier.py [--misses dev] | --dev-only [--misses dev]
The corpus is tests/fixtures/real_errors/corpus.jsonl (hand-labelled, split once by tool layer). Rules are tuned on
the dev part only; the held-out part measures how they generalise. Targets on held-out: wrong <= 5%, unplaced
<= 20%. A prediction is right when it is the label or one of the label's defensible alternatives; "unplaced" is
an error served as `rejected` in the tool's own words and counted unmapped. `--dev-only` scores the dev part alone
(its line and its per-code precision) and never reads, scores or prints anything of the held-out part: the mode to
tune with.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests._real_corpus import Score, entries, score


def _line(split: str, r: Score) -> str:
    return (f"{split:<8} {r.total:>7} {r.right:>6} {r.wrong:>5} ({r.wrong_share:5.1%}) "
            f"{r.unplaced:>5} ({r.unplaced_share:5.1%})")


def _precision(title: str, r: Score) -> None:
    print(f"\n{title} precision per predicted code:")
    for code in sorted(r.predicted, key=lambda c: -r.predicted[c]):
        precision = r.precision(code)
        shown = "  n/a" if math.isnan(precision) else f"{precision:5.1%}"
        print(f"  {code:<22} {r.correct[code]:>4}/{r.predicted[code]:<4} {shown}")


def _misses(dev: Score) -> None:
    by_id = {e["id"]: e for e in entries("dev")}
    for entry_id, got, label in dev.misses:
        print(f"  {got:>20} (label {label}): {by_id[entry_id]['text'][:120]!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", choices=["dev"], help="list the dev part's misses (never the held-out's)")
    parser.add_argument("--dev-only", action="store_true",
                        help="score the dev part alone; nothing of the held-out part is computed or printed")
    args = parser.parse_args()
    header = f"{'split':<8} {'entries':>7} {'right':>6} {'wrong':>12} {'unplaced':>12}"
    if args.dev_only:
        dev = score(entries("dev"))
        print(header)
        print(_line("dev", dev))
        _precision("dev", dev)
        if args.misses == "dev":
            print("\ndev misses:")
            _misses(dev)
        return
    results = {split: score(entries(split)) for split in ("dev", "heldout")}
    print(header)
    for split, r in results.items():
        print(_line(split, r))
    held = results["heldout"]
    _precision("held-out", held)
    target = held.wrong_share <= 0.05 and held.unplaced_share <= 0.20
    print(f"\nheld-out targets (wrong <= 5%, unplaced <= 20%): {'met' if target else 'NOT met'}")
    if args.misses == "dev":
        _misses(results["dev"])

if __name__ == "__main__":
    main()
