"""
Ids and meta keys that several stages share: article-key prefixes, block (parent) ids, score fields.

Stages write and read these names; keeping them here means an indexing stage and a query stage agree on them
without importing each other.
"""

from typing import Final

# article keys of the annexed "Ato das Disposições Constitucionais Transitórias" (CF88) and of the approving
# decree of a texto refundido carry a prefix, so they do not collide with the body's article numbers
ADCT_PREFIX: Final[str] = "adct-"
APPROVAL_PREFIX: Final[str] = "rd-"
