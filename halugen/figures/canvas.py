"""Where matplotlib is imported (only when a figure is made) and figures are saved.

Figures are drawn on matplotlib's Agg canvas directly, never through pyplot, so making one
needs no display and never changes the backend of a program that imported halugen. The
format is the file's extension: ``.png``, ``.svg`` or ``.pdf``. SVG keeps its text as text
(searchable, smaller) and files carry no creation date, so the same data gives the same
bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError

__all__ = ["FIGURE_FORMATS", "MISSING_EXTRA", "figure_format", "label", "new_figure", "save"]

FIGURE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
MISSING_EXTRA = "figures need matplotlib, in the topics extra: pip install 'halugen[topics]'"

_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
}


def figure_format(path: str | Path) -> str:
    """``png`` / ``svg`` / ``pdf`` from the file name; a UsageError for anything else."""
    suffix = Path(path).suffix.lower()
    try:
        return FIGURE_FORMATS[suffix]
    except KeyError:
        raise UsageError(
            f"figure file {path}: name it .png, .svg or .pdf (the extension picks the format)"
        ) from None


def new_figure(width: float, height: float) -> Any:
    """A matplotlib ``Figure`` on an Agg canvas; a UsageError naming the extra without it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: str | Path, *, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` (parents created) in the format of its extension."""
    import matplotlib

    path = Path(path)
    fmt = figure_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "halugen"}):
        fig.savefig(path, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
    return path


def label(text: object) -> str:
    """Text from data as a matplotlib label: a ``$`` must not start mathtext."""
    return str(text).replace("$", r"\$")
