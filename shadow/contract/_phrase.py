"""One row of the phrase table: a pattern searched in a masked error text, the code it means, why, a remedy draft."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shadow.contract._codes import Code, NextAction


@dataclass(frozen=True, slots=True)
class Phrase:
    """One row: a pattern searched in the masked error text, the code it means, why, and a remedy draft."""

    source: str
    code: Code
    reason: str
    remedy: str
    #: A ``next_action`` other than the code's default, where the words say the model can act on it: a denial of
    #: where a path or an address points is ``permission_denied`` the model can answer with another path.
    action: NextAction | None = None
    _compiled: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def pattern(self) -> re.Pattern[str]:
        """``source`` compiled on first use: the table took ``import shadow`` about 40 ms, and a text is read row by
        row. Compiling imports nothing, so any thread may do it (two at once make the same pattern)."""
        if (found := self._compiled) is None:
            object.__setattr__(self, "_compiled", found := re.compile(self.source, re.IGNORECASE | re.MULTILINE))
        return found
