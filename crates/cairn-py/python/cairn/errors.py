"""The exceptions Cairn raises: one class per error family, all under
:class:`CairnError`. The message always names what it is about (node, edge, commit,
branch, setting, file line).

- :class:`NotFound` — no repository at the path; an unknown revision, branch, tag,
  node or edge.
- :class:`InvalidInput` — input refused by validation (bad id, non-finite float, wrong
  dimension, unknown field, bad time...); nothing was changed.
- :class:`Conflict` — the branch moved under a transaction (retry on the new head); a
  merge with unresolved conflicts; a repository, branch or tag that already exists.
- :class:`Corrupt` — a stored object, ref or index is missing or damaged.
- :class:`StoreError` — the store failed (I/O, a full disk, locked by another process).
- :class:`RetrieveError` — a retrieval could not run (malformed spec, a setting out of
  range, a lane an index refused, a revision that does not resolve).
"""

from ._native import CairnError, Conflict, Corrupt, InvalidInput, NotFound, RetrieveError, StoreError

__all__ = ["CairnError", "NotFound", "InvalidInput", "Conflict", "Corrupt", "StoreError", "RetrieveError"]
