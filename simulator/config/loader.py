"""Read YAML and validate it into pydantic models, turning every failure into an InputError
that names the file, the field path and what was expected."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from simulator.errors import InputError

M = TypeVar("M", bound=BaseModel)

_KEY_PREFIX = re.compile(r"^([a-z_][a-z0-9_.]*): ")


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Parse a YAML file that must hold a mapping at top level."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such file", source=str(path))
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML{where}: {problem}", source=str(path)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of keys at top level, got {type(data).__name__}", source=str(path))
    return data


def field_path(loc: tuple[Any, ...]) -> str:
    """('parallel', 'tp') -> 'parallel.tp'; list indices as [i]."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def describe_validation_error(exc: ValidationError) -> str:
    """A readable message naming the field path of every problem in a pydantic error."""
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = field_path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            msg = "unknown key"
        elif kind == "missing":
            msg = "required field is missing"
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
                # A model-level rule names the key it is about as "key: ..."; make it part of the path.
                m = _KEY_PREFIX.match(msg)
                if m:
                    path = f"{path}.{m.group(1)}" if loc else m.group(1)
                    msg = msg[m.end():]
            if "input" in err and kind not in ("value_error",) and not isinstance(err["input"], (dict, list)):
                msg += f" (got {err['input']!r})"
        lines.append(f"{path}: {msg}")
    return "; ".join(lines)


def validate(model: type[M], data: Any, source: str | Path | None = None) -> M:
    """Validate `data` into `model`, raising InputError naming file and field on failure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc), source=str(source) if source else None) from None


def load(model: type[M], path: str | Path) -> M:
    return validate(model, read_yaml(path), path)
