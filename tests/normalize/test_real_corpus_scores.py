"""The built-in rules on the labelled real-error corpus: scores on the dev part and, never tuned on, the held-out."""

from __future__ import annotations

import pytest

from tests._real_corpus import entries, score

DEV, HELDOUT = score(entries("dev")), score(entries("heldout"))


def test_the_dev_part_is_placed_with_few_wrong_codes() -> None:
    # Measured 2026-12-06 on 581 dev entries after the precision round: wrong 1.0% (6), unplaced 6.0% (35); before
    # it 2.6%, 4.3% (stricter families leave more texts in the author's words: a wanted trade). Then 1.2% (7): a name
    # "already used" is read as conflict (ask_user), not already_exists (stop), against one entry's label. With the
    # sixth batch (724 entries) after its dev-only round: wrong 1.1% (8), unplaced 6.5% (47); before it 2.1%, 9.4%.
    # With the seventh batch (882 entries) after its dev-only round: wrong 1.2% (11), unplaced 7.7% (68); before it
    # 2.5% (22), 11.1% (98). With the eighth batch (972 entries) after its dev-only round (the main clause decides,
    # then narrow phrasings): wrong 1.2% (12), unplaced 7.6% (74); before it 2.5% (24), 8.4% (82). With the ninth
    # batch (1102 entries) after its dev-only round: wrong 2.2% (24), unplaced 8.5% (94); its new layers went from 20
    # wrong, 24 unplaced of 130 to 12, 20, the older entries unchanged. With the tenth batch (1190 entries) after its
    # dev-only round (a list of quoted options is masked as values): wrong 2.4% (28), unplaced 9.6% (114). With the
    # eleventh batch (1262 entries) after its dev-only round: wrong 2.5% (32), unplaced 9.7% (122); its new layers
    # went from 10 wrong, 15 unplaced of 72 to 4, 8, the older entries unchanged.
    assert DEV.wrong_share <= 0.022
    assert DEV.unplaced_share <= 0.097


def test_the_held_out_part_does_not_fall_below_what_was_measured() -> None:
    # Measured 2026-12-06 on 385 held-out entries after the precision round (the seventh look): wrong 5.5% (21),
    # unplaced 17.1% (66); before it 5.7% (22), 16.9% (65). The ninth look, after the sixth batch's dev-only round:
    # unchanged, 5.5% (21), 17.1% (66). The tenth look, after the seventh batch (three new held-out layers, 473
    # entries) and its dev-only round: wrong 9.3% (44), unplaced 15.6% (74). The eleventh look, after the eighth
    # batch (four new held-out layers, 571 entries) and its dev-only round: wrong 9.3% (53), unplaced 15.8% (90). The
    # fourteenth look, after the ninth batch (three new held-out layers, 632 entries) and its dev-only round: wrong
    # 9.7% (61), unplaced 16.5% (104). The fifteenth look, after the tenth batch (three new held-out layers, 683
    # entries) and its dev-only round: wrong 9.4% (64), unplaced 16.7% (114). The seventeenth look, after the eleventh
    # batch (five new held-out layers, 803 entries) and its dev-only round: wrong 10.6% (85), unplaced 17.4% (140);
    # the older 683 unchanged (64, 114), the new 120 brought 21 wrong and 26 unplaced. The twenty-second look, after
    # a dev-only round (2026-12-08): wrong 10.5% (84), unplaced 17.4% (140). The floors follow the figures.
    wrong, unplaced = HELDOUT.wrong_share, HELDOUT.unplaced_share  # plain numbers: a failure prints no miss
    print(f"\nheld-out: wrong {wrong:.1%}, unplaced {unplaced:.1%}")
    assert wrong <= 0.105
    assert unplaced <= 0.175


@pytest.mark.xfail(strict=True, reason="issue 27's held-out targets are not met yet (see bench_classifier.py)")
def test_the_held_out_targets_are_met() -> None:
    wrong, unplaced = HELDOUT.wrong_share, HELDOUT.unplaced_share
    assert wrong <= 0.05
    assert unplaced <= 0.20


def test_no_code_is_decided_by_a_product_word_alone() -> None:
    from shadow.contract import Rules

    for text in ("billing backend timed out", "billing API returned 500", "payment service unavailable"):
        found = Rules.default().translate_result({"error": text})
        assert found is not None and found.error.code.value in ("upstream_timeout", "upstream_unavailable"), text
    found = Rules.default().translate_result({"error": "the billing team says hello"})
    assert found is not None and found.unmapped
