"""Which returned texts shadow reads as errors: real tools' plain-string results, errors and successes, dev vs held-out.

Run: python3 tests/benchmarks/bench_error_strings.py [--dev-only [--misses]]
The corpus is tests/fixtures/returned_texts/corpus.jsonl: strings real tool layers return as a tool's whole result,
labelled `error` or `success` by hand, split by tool layer with the error corpus's rule. A success read as an error
would be served `ok: false` in cutover (a false alarm); an error read as success data is served `ok: true` and never
counted. The opening rules are tuned on the dev part only; `--dev-only` reads nothing of the held-out part.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests._returned_texts import Detection, detect, entries


def _line(split: str, d: Detection) -> str:
    return (f"{split:<8} {d.errors:>6} {d.caught:>6} ({d.recall:5.1%}) {d.successes:>9} {d.false_alarms:>6} "
            f"({d.false_alarm_share:5.1%}) {d.precision:9.1%} {d.ambiguous:>9}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dev-only", action="store_true",
                        help="score the dev part alone; nothing of the held-out part is computed or printed")
    parser.add_argument("--misses", action="store_true", help="with --dev-only: list the dev part's misses")
    args = parser.parse_args()
    print(f"{'split':<8} {'errors':>6} {'read as errors':>15} {'successes':>9} {'false alarms':>15} "
          f"{'precision':>9} {'ambiguous':>9}")
    splits = ("dev",) if args.dev_only else ("dev", "heldout")
    for split in splits:
        items = entries(split)
        found = detect(items)
        print(_line(split, found))
        if args.dev_only and args.misses:
            by_id = {e["id"]: e for e in items}
            for kind, ids in (("missed error", found.missed), ("false alarm", found.alarms)):
                for entry_id in ids:
                    print(f"  {kind}: {by_id[entry_id]['text'][:140]!r}")


if __name__ == "__main__":
    main()
