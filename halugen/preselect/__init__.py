"""Pre-selection for the general user-query track: read queries, score how much each query's
sampled responses agree (mean pairwise BERTScore F1) and keep the K that agree least.

``queries`` reads query files, ``scoring`` holds the BERTScore scorer (an optional extra,
imported only when used) and ``topk`` the streaming least-similar selection.
"""

from __future__ import annotations

__all__: list[str] = []
