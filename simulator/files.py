"""File helpers shared by the layers: where the bundled files are, and writing results."""

from __future__ import annotations

import os
import sysconfig
import tempfile
from pathlib import Path


def bundled_dir(relative: str) -> Path:
    """A folder shipped with clustersim (``hardware_profiles``, ``data/nccl``, ``data/e2e``): the
    source tree's (a checkout or an editable install), else the copy a regular install puts
    under ``<prefix>/share/clustersim/`` (pyproject ``data-files``)."""
    source = Path(__file__).resolve().parents[1] / relative
    if source.is_dir():
        return source
    return Path(sysconfig.get_path("data")) / "share" / "clustersim" / relative


def write_atomically(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename, so a reader never sees
    a half-written file and a failure leaves nothing behind."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
