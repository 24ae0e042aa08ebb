"""Figures of what a store holds, for papers and reports (matplotlib, the ``topics`` extra).

- ``accuracy``: recognition accuracy per task, model and strategy with Wilson intervals, the
  baselines that never read the text, and the paper's reference numbers
  (``halugen report --plot FILE``);
- ``cost``: a run's spend per stage and task over its time, and its cost per accepted sample
  (``halugen status --plot FILE``);
- ``canvas``: the one place matplotlib is imported (lazily) and figures are saved, in the
  format the file's extension names (png, svg, pdf).

Each figure module takes plain row data and draws; reading the store is a separate function.
"""

from __future__ import annotations

from .canvas import FIGURE_FORMATS, MISSING_EXTRA, figure_format

__all__ = ["FIGURE_FORMATS", "MISSING_EXTRA", "figure_format"]
