"""A scenario YAML written for a test: a base mapping with top-level keys replaced and
``parallel_<key>`` arguments set in its ``parallel`` block."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def write_scenario(tmp_path: Path, base: dict[str, Any], **top: Any) -> str:
    """``base`` (deep-copied) with ``top``'s keys applied, written to ``tmp_path / "scn.yaml"``."""
    data = json.loads(json.dumps(base))
    for key, value in top.items():
        if key.startswith("parallel_"):
            data["parallel"][key.removeprefix("parallel_")] = value
        else:
            data[key] = value
    path = tmp_path / "scn.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)
