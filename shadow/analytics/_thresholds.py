"""What a tool's shadow log must show before cutover (``shadow ready``'s limits), without the readiness queries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What a tool's shadow log must show before cutover. The defaults suit a tool with real traffic."""

    min_calls: int = 200
    min_errors: int = 20
    max_unmapped_share: float = 0.05
    max_schema_invalid: int = 0
    max_leaks: int = 0
    require_proposed: bool = False  # every code the inventory proposes must have been seen

    def __post_init__(self) -> None:
        for name in ("min_calls", "min_errors", "max_schema_invalid", "max_leaks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")
        share = self.max_unmapped_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ValueError(f"max_unmapped_share must be a fraction from 0 to 1, for example 0.05, not {share!r}")
