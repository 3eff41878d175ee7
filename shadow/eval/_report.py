"""The evaluation's report: per arm and code, agreement with next_action, the confusion row, ambiguous codes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shadow.contract._codes import CODE_TABLE, Code, NextAction
from shadow.eval._classify import Action, agrees

STRUCTURED: Final = "structured"
LEGACY: Final = "legacy"
ARMS: Final = (STRUCTURED, LEGACY)
DEFAULT_THRESHOLD: Final = 0.9


@dataclass(frozen=True, slots=True)
class Judgement:
    """The classifier's verdict on one example's reply."""

    arm: str
    example_id: str
    code: Code
    expected: NextAction
    action: Action
    reason: str

    @property
    def agrees(self) -> bool:
        """Whether the reply did what ``expected`` asks."""
        return agrees(self.expected, self.action)


@dataclass(frozen=True, slots=True)
class CodeRow:
    """One code in one arm: agreement with the expected next action and the confusion row."""

    code: Code
    expected: NextAction
    examples: int
    agreeing: int
    confusion: Mapping[Action, int]
    ambiguous: bool

    @property
    def agreement(self) -> float | None:
        """Share of examples whose reply agreed; None without examples."""
        return self.agreeing / self.examples if self.examples else None


@dataclass(frozen=True, slots=True)
class ArmReport:
    """Every code's row for one arm, and the judgements behind them."""

    arm: str
    rows: tuple[CodeRow, ...]
    judgements: tuple[Judgement, ...]

    @property
    def examples(self) -> int:
        """Examples judged in this arm."""
        return len(self.judgements)

    @property
    def agreeing(self) -> int:
        """Examples whose reply agreed."""
        return sum(j.agrees for j in self.judgements)

    @property
    def agreement(self) -> float | None:
        """Overall share of agreeing replies; None without examples."""
        return self.agreeing / self.examples if self.examples else None


@dataclass(frozen=True, slots=True)
class EvalReport:
    """The evaluation's result; ``ambiguous`` lists the structured arm's codes below the threshold."""

    model: str | None
    source: str  # live or replay
    threshold: float
    arms: tuple[ArmReport, ...]

    def arm(self, name: str) -> ArmReport | None:
        """The report of arm ``name``, if it ran."""
        return next((a for a in self.arms if a.arm == name), None)

    @property
    def ambiguous(self) -> tuple[Code, ...]:
        """Codes whose structured payloads the model follows less often than the threshold."""
        structured = self.arm(STRUCTURED)
        return tuple(r.code for r in structured.rows if r.ambiguous) if structured else ()

    def comparison(self) -> Comparison | None:
        """Both arms on the same examples (those with a legacy payload), or None without a legacy arm."""
        structured, legacy = self.arm(STRUCTURED), self.arm(LEGACY)
        if structured is None or legacy is None:
            return None
        paired = {j.example_id for j in legacy.judgements}
        mine = [j for j in structured.judgements if j.example_id in paired]
        codes = tuple(r.code for r in legacy.rows if r.examples)
        return Comparison(codes, len(mine), sum(j.agrees for j in mine), legacy.agreeing)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (what ``--format json`` prints)."""
        out: dict[str, Any] = {
            "model": self.model,
            "source": self.source,
            "threshold": self.threshold,
            "ambiguous": [c.value for c in self.ambiguous],
            "classes": [a.value for a in Action],
            "arms": {a.arm: _arm_json(a) for a in self.arms},
        }
        paired = self.comparison()
        if paired is not None:
            out["comparison"] = {
                "codes": [c.value for c in paired.codes], "examples": paired.examples,
                "structured_agreement": paired.structured_agreement, "legacy_agreement": paired.legacy_agreement,
            }
        return out


@dataclass(frozen=True, slots=True)
class Comparison:
    """The structured and the legacy arm on the same examples: the difference the contract makes."""

    codes: tuple[Code, ...]
    examples: int
    structured_agreeing: int
    legacy_agreeing: int

    @property
    def structured_agreement(self) -> float | None:
        """Agreement of the structured payloads on the paired examples."""
        return self.structured_agreeing / self.examples if self.examples else None

    @property
    def legacy_agreement(self) -> float | None:
        """Agreement of the legacy payloads on the same examples."""
        return self.legacy_agreeing / self.examples if self.examples else None


def summarise(
    judgements: Iterable[Judgement],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    model: str | None = None,
    source: str = "live",
) -> EvalReport:
    """Per arm and code: agreement and the confusion row; structured codes below ``threshold`` are ambiguous.

    Every code judged in any arm gets a row in every arm that ran, so a legacy row with no logged payloads shows
    as zero examples rather than vanishing.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold {threshold} is not a share; use a number from 0 to 1, for example 0.9")
    order = {code: n for n, code in enumerate(CODE_TABLE)}
    judged = sorted(judgements, key=lambda j: (ARMS.index(j.arm), order[j.code], j.example_id))
    codes = [c for c in CODE_TABLE if any(j.code is c for j in judged)]
    arms: list[ArmReport] = []
    for arm in ARMS:
        mine = [j for j in judged if j.arm == arm]
        if not mine and arm != STRUCTURED:
            continue
        rows = []
        for code in codes:
            of_code = [j for j in mine if j.code is code]
            confusion = {a: sum(j.action is a for j in of_code) for a in Action}
            agreeing = sum(j.agrees for j in of_code)
            expected = of_code[0].expected if of_code else CODE_TABLE[code].next_action
            share = agreeing / len(of_code) if of_code else None
            ambiguous = arm == STRUCTURED and share is not None and share < threshold
            rows.append(CodeRow(code, expected, len(of_code), agreeing, confusion, ambiguous))
        arms.append(ArmReport(arm, tuple(rows), tuple(mine)))
    return EvalReport(model, source, threshold, tuple(arms))


def _arm_json(arm: ArmReport) -> dict[str, Any]:
    return {
        "examples": arm.examples,
        "agreeing": arm.agreeing,
        "agreement": arm.agreement,
        "codes": [
            {"code": r.code.value, "expected": r.expected.value, "examples": r.examples, "agreeing": r.agreeing,
             "agreement": r.agreement, "confusion": {a.value: r.confusion[a] for a in Action},
             "ambiguous": r.ambiguous}
            for r in arm.rows
        ],
        "judgements": [
            {"example": j.example_id, "code": j.code.value, "expected": j.expected.value, "action": j.action.value,
             "reason": j.reason, "agrees": j.agrees}
            for j in arm.judgements
        ],
    }


def render_table(report: EvalReport) -> str:
    """The report as a plain-text table: per code, agreement and confusion row, the legacy arm side by side."""
    structured = report.arm(STRUCTURED)
    legacy = report.arm(LEGACY)
    if structured is None or not structured.rows:
        return "no examples were judged\n"
    heads = ["code", "expected", "n", "agree", *(a.value for a in Action)]
    if legacy is not None:
        heads += ["legacy n", "legacy agree"]
    heads.append("")
    legacy_rows = {r.code: r for r in legacy.rows} if legacy is not None else {}
    lines: list[list[str]] = []
    for row in structured.rows:
        cells = [row.code.value, row.expected.value, str(row.examples), _pct(row.agreement)]
        cells += [str(row.confusion[a]) for a in Action]
        if legacy is not None:
            other = legacy_rows.get(row.code)
            cells += [str(other.examples) if other else "0", _pct(other.agreement if other else None)]
        cells.append("AMBIGUOUS" if row.ambiguous else "")
        lines.append(cells)
    total = ["all codes", "", str(structured.examples), _pct(structured.agreement)]
    total += [str(sum(r.confusion[a] for r in structured.rows)) for a in Action]
    if legacy is not None:
        total += [str(legacy.examples), _pct(legacy.agreement)]
    total.append("")
    widths = [max(len(c[i]) for c in [heads, *lines, total]) for i in range(len(heads))]

    def fmt(cells: list[str]) -> str:
        padded = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded).rstrip()

    rule = fmt(["-" * w for w in widths])
    where = f"model {report.model}" if report.model else "unknown model"
    out = [
        f"Does the model follow next_action? {where}, {report.source}, threshold {_pct(report.threshold)}",
        "(agreement: retry wants the identical call; ask_user a question or a changed call; stop a report)",
        "",
        fmt(heads), rule, *map(fmt, lines), rule, fmt(total),
    ]
    if legacy is not None:
        out += ["", "Legacy payloads from the shadow log on the same turns, confusion rows:"]
        out += [
            f"  {r.code.value}: " + ", ".join(f"{a.value} {r.confusion[a]}" for a in Action if r.confusion[a])
            for r in legacy.rows if r.examples
        ]
        missing = [r.code.value for r in legacy.rows if not r.examples]
        if missing:
            out.append("  no logged legacy payloads for: " + ", ".join(missing))
        paired = report.comparison()
        if paired is not None and paired.examples:
            out.append(
                f"On the same {paired.examples} examples: structured {_pct(paired.structured_agreement)} agree, "
                f"legacy {_pct(paired.legacy_agreement)}."
            )
    if report.ambiguous:
        out += ["", f"ambiguous (below {_pct(report.threshold)}): " + ", ".join(c.value for c in report.ambiguous)]
    else:
        out += ["", f"no code below {_pct(report.threshold)}"]
    return "\n".join(out) + "\n"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.0f}%"
