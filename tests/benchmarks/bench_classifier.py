"""How the built-in rules place real tool errors: per-code precision, wrong and unplaced shares, dev vs held-out.

Run: python3 tests/benchmarks/bench_classifier.py [--misses dev]
The corpus is tests/fixtures/real_errors/corpus.jsonl (hand-labelled, split once by tool layer). Rules are tuned on
the dev part only; the held-out part measures how they generalise. Targets on held-out: wrong <= 5%, unplaced
<= 20%. A prediction is right when it is the label or one of the label's defensible alternatives; "unplaced" is
an error served as `rejected` in the tool's own words and counted unmapped.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests._real_corpus import entries, score


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", choices=["dev"], help="list the dev part's misses (never the held-out's)")
    args = parser.parse_args()
    results = {split: score(entries(split)) for split in ("dev", "heldout")}
    print(f"{'split':<8} {'entries':>7} {'right':>6} {'wrong':>12} {'unplaced':>12}")
    for split, r in results.items():
        print(f"{split:<8} {r.total:>7} {r.right:>6} {r.wrong:>5} ({r.wrong_share:5.1%}) "
              f"{r.unplaced:>5} ({r.unplaced_share:5.1%})")
    held = results["heldout"]
    print("\nheld-out precision per predicted code:")
    for code in sorted(held.predicted, key=lambda c: -held.predicted[c]):
        precision = held.precision(code)
        shown = "  n/a" if math.isnan(precision) else f"{precision:5.1%}"
        print(f"  {code:<22} {held.correct[code]:>4}/{held.predicted[code]:<4} {shown}")
    target = held.wrong_share <= 0.05 and held.unplaced_share <= 0.20
    print(f"\nheld-out targets (wrong <= 5%, unplaced <= 20%): {'met' if target else 'NOT met'}")
    if args.misses == "dev":
        by_id = {e["id"]: e for e in entries("dev")}
        for entry_id, got, label in results["dev"].misses:
            print(f"  {got:>20} (label {label}): {by_id[entry_id]['text'][:120]!r}")


if __name__ == "__main__":
    main()
