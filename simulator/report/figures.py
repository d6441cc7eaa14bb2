"""The matplotlib figure every clustersim plot returns, built with the object API.

No module of the package imports ``matplotlib.pyplot`` or calls ``matplotlib.use``: a library
that picks a backend at import replaces a notebook's inline backend, and the figures of the
notebook vanish. A :class:`PlotFigure` is a plain ``matplotlib.figure.Figure`` (saving it to PNG
needs no backend: ``savefig`` renders with Agg) that also knows how to show itself in Jupyter
(``_repr_png_``, which IPython calls for the last expression of a cell), so
``plot_gantt(sim)`` displays its picture whether or not the notebook enabled
``%matplotlib inline``.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

from simulator.files import write_atomically

DPI = 120


class PlotFigure(Figure):
    """A Figure that renders itself as PNG for IPython's display machinery."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=DPI)
        return buf.getvalue()


def new_figure(width_in: float, height_in: float) -> PlotFigure:
    return PlotFigure(figsize=(width_in, height_in))


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as PNG (or the format the suffix names) through a temporary file and a
    rename (:func:`simulator.files.write_atomically`: the umask's mode), so a failed or
    interrupted save never leaves a truncated picture."""
    p = Path(path)
    fmt = p.suffix.lstrip(".").lower() or "png"
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI)
    return write_atomically(p, buf.getvalue())
