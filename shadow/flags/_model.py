"""The flag model: modes, arms, the sticky percentage bucket, flag states, audit entries and ``SHADOW_FLAGS``."""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
from dataclasses import dataclass
from typing import Final

KILL_SWITCH: Final = "*"
ENV_VAR: Final = "SHADOW_FLAGS"


class Mode(enum.StrEnum):
    """What the adapter does for a tool."""

    LEGACY = "legacy"  # the legacy call, nothing else
    SHADOW = "shadow"  # the legacy result, and the structured payload logged
    CUTOVER = "cutover"  # the structured payload (for the percentage of sessions in the structured arm)


class Variant(enum.StrEnum):
    """What the model was served."""

    LEGACY = "legacy"
    STRUCTURED = "structured"


def bucket(session_id: str) -> int:
    """A session's stable bucket, 1 to 100: sticky, and raising a percentage never moves a session back."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8, person=b"shadow-arm").digest()
    return int.from_bytes(digest, "big") % 100 + 1


def parse_mode(mode: object) -> Mode:
    """A ``Mode`` from its name, with an error that lists the choices."""
    try:
        return Mode(str(mode))
    except ValueError:
        raise ValueError(f"unknown mode {mode!r}; use one of: legacy, shadow, cutover") from None


def check_percent(percent: object) -> int:
    """A cutover percentage: a whole number from 0 to 100."""
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise ValueError(f"percent must be a whole number from 0 to 100, not {percent!r}")
    return percent


@dataclass(frozen=True, slots=True)
class FlagState:
    """One tool's flag: its mode and, in cutover, the percentage of sessions served the structured payload."""

    mode: Mode = Mode.LEGACY
    percent: int = 100

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", parse_mode(self.mode))
        object.__setattr__(self, "percent", check_percent(self.percent))

    def variant(self, session_id: str) -> Variant:
        """The arm ``session_id`` is in under this flag."""
        if self.mode is not Mode.CUTOVER:
            return Variant.LEGACY
        if self.percent >= 100 or bucket(session_id) <= self.percent:
            return Variant.STRUCTURED
        return Variant.LEGACY


LEGACY: Final = FlagState()


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One flag change: who changed what, when and why."""

    id: str
    tool: str
    old_mode: str | None
    old_percent: int | None
    new_mode: str
    new_percent: int
    actor: str
    reason: str | None
    ts: dt.datetime


def parse_env(text: str) -> dict[str, FlagState]:
    """Parse ``SHADOW_FLAGS``: ``tool=mode[:percent]`` pairs separated by commas; ``*=legacy`` for every tool."""
    out: dict[str, FlagState] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        tool, sep, value = item.partition("=")
        if not sep or not tool.strip():
            raise ValueError(
                f"{ENV_VAR}: {item!r} is not tool=mode, for example {ENV_VAR}='search=shadow,book=cutover:25'"
            )
        mode, _, pct = value.strip().partition(":")
        try:
            out[tool.strip()] = FlagState(parse_mode(mode.strip()), int(pct) if pct else 100)
        except ValueError as exc:
            raise ValueError(f"{ENV_VAR}: {item!r}: {exc}") from None
    return out


def parse_env_lenient(text: str) -> tuple[dict[str, FlagState], list[str]]:
    """``parse_env`` that keeps the valid pairs and says what is wrong with each other one."""
    out: dict[str, FlagState] = {}
    problems: list[str] = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        try:
            out.update(parse_env(raw))
        except ValueError as exc:
            problems.append(str(exc))
    return out, problems
