"""Human annotation of responses: the browser workflow and the labels it stores.

server.py      the aiohttp app and page behind ``halugen annotate serve``
serving.py     a running server: start, URLs, close, serve until a signal
label_body.py  what a label submitted from the page must look like
assign.py      which item an annotator gets next (at most ``per_item`` annotators each)
static/        the page itself: plain HTML, JS and CSS, no build step
"""

from __future__ import annotations

__all__: list[str] = []
