"""
Equal scores at a search's cut, settled by point id instead of the order the engine holds the points in.

A vector engine returns equal scores in the order its segments (or shards) hold the points, which depends on the
store's write history: two builds of the same documents would rank, and cut at `top_k`, tied hits differently (the
repealed 1995 Estatuto and the 2015 one share many passages word for word, so BM25 ties are common). A search asks
for `TIE_MARGIN` hits past `top_k`; `settle_ties` orders them by score, then point id (the uuid5 of the document id,
the same on the embedded store and on a Qdrant server), and cuts at `top_k`, unless the tie at the cut runs to the
end of what was fetched: then the search is asked again twice as deep, up to `TIE_MAX_DEPTH` past `top_k`, so that a
question matching thousands of equally scored points costs a bounded search.
"""

from collections.abc import Sequence
from typing import TypeVar

Hit = TypeVar("Hit")

# hits a search fetches past its top_k, and the deepest it goes to settle a tie at the cut
TIE_MARGIN = 16
TIE_MAX_DEPTH = 1024


def settle_ties(
    hits: Sequence[tuple[float, str, Hit]], top_k: int, depth: int
) -> list[tuple[float, str, Hit]] | None:
    """
    The first `top_k` of `hits` (`(score, point id, hit)` from a search `top_k + depth` deep), best score first and
    equal scores in point id order; `None` when the tie at the cut may go on past what was fetched (ask again,
    `2 * depth` deep). At `TIE_MAX_DEPTH` the cut keeps what the search returned, in point id order.

    Usage example:
    ```python
    from components.document_stores.ties import TIE_MARGIN, settle_ties

    settle_ties([(0.5, "b", "x"), (0.9, "c", "y"), (0.5, "a", "z")], top_k=2, depth=TIE_MARGIN)
    # [(0.9, "c", "y"), (0.5, "a", "z")]
    ```
    """
    ordered = sorted(hits, key=lambda hit: (-hit[0], hit[1]))
    full = len(ordered) > top_k and len(ordered) >= top_k + depth
    if full and depth < TIE_MAX_DEPTH and ordered[top_k - 1][0] == ordered[-1][0]:
        return None
    return ordered[:top_k]
