"""An id that names two or more conversations of one import is refused before anything is written."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from shadow.transcripts._formats import Conversation, FormatError


class IdCollision(FormatError):
    """One conversation id names several conversations of one import: they would merge into one session."""


def _key(conversation_id: str) -> int:
    """8 bytes standing for an id: what the first pass keeps per conversation, whatever the id's length."""
    digest = hashlib.blake2b(conversation_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def refuse_shared_ids(conversations: Callable[[], Iterable[Conversation]], id_key: str) -> None:
    """Raise ``IdCollision`` when one id names two or more of ``conversations()``, saying how to fix it.

    One pass keeps 8 bytes per id; only when two of those agree does a second pass collect the ids' places (and
    tells a true repeat from two ids whose 8 bytes happen to agree).
    """
    seen: set[int] = set()
    shared: set[int] = set()
    for conversation in conversations():
        if conversation.conversation_id is not None:
            key = _key(conversation.conversation_id)
            (shared if key in seen else seen).add(key)
    if not shared:
        return
    del seen
    places: dict[str, tuple[int, list[str]]] = {}  # id -> (how many conversations, the first three places)
    for conversation in conversations():
        cid = conversation.conversation_id
        if cid is not None and _key(cid) in shared:
            count, first = places.get(cid, (0, []))
            places[cid] = (count + 1, first if len(first) >= 3 else [*first, conversation.where])
    repeated = {cid: found for cid, found in places.items() if found[0] > 1}
    if not repeated:
        return
    cid, (count, first) = next(iter(repeated.items()))
    shown = ", ".join(first) + (f" and {count - 3} more" if count > 3 else "")
    raise IdCollision(
        f"--id-key {id_key} does not tell conversations apart: {len(repeated)} ids name several conversations each, "
        f"for example {cid!r} names {count} ({shown}); they would merge into one session. Pass a key that is "
        "unique per conversation, or a combined key such as --id-key task_id,trial"
    )
