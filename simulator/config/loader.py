"""Read YAML and validate it into pydantic models, turning every failure into an InputError
that names the file, the field path and what was expected.

The reader is built for input that cannot hurt: a config file is a few kilobytes, so anything
far beyond that in bytes, nesting, alias expansion or digits is refused with the limit, before
it can use memory or time (a 450-byte YAML alias bomb expands to gigabytes if constructed).
"""

from __future__ import annotations

import copy
import difflib
import re
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from simulator.errors import InputError, quote

M = TypeVar("M", bound=BaseModel)

_KEY_PREFIX = re.compile(r"^([a-z_][a-z0-9_.]*): ")

# Limits of a config file (scenario, profile, overlay, plans file). The largest bundled file is
# under 10 KB with under 1,000 YAML nodes and 6 levels of nesting.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000  # after alias expansion
MAX_INT_DIGITS = 30  # no count or size in a config needs more (2**64 has 20 digits)

# YAML 1.2 floats: PyYAML implements YAML 1.1, where 1e6 (no dot) is a string. A user writing
# `flops: 1e12` means the number.
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _Refused(Exception):
    def __init__(self, message: str, mark: Any = None):
        super().__init__(message)
        self.mark = mark


class _Loader(yaml.SafeLoader):
    """SafeLoader with bounded nesting and integer length, and YAML 1.2 exponent floats."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nesting deeper than {MAX_DEPTH} levels; a configuration file needs a handful",
                               self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A key written twice in one mapping is refused: PyYAML keeps the last silently, so
        ``nodes: 2`` below ``nodes: 16`` would run a different cluster than the one read first.
        A merge (``<<: *base``) may still be overridden by a key of the mapping itself."""
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, Any], Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = (key_node.tag, key_node.value)
                if key in first:
                    raise _Refused(f"the key {quote(key_node.value)} appears twice in one mapping (first at line "
                                   f"{first[key].line + 1}); a key may be given once", key_node.start_mark)
                first[key] = key_node.start_mark
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise _Refused(f"an integer of {digits} digits; no setting needs more than {MAX_INT_DIGITS}",
                           node.start_mark)
        return super().construct_yaml_int(node)


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _check_expansion(root: Any) -> None:
    """Refuse documents whose aliases expand beyond MAX_NODES nodes or MAX_DEPTH levels, or
    refer to themselves, before anything is constructed: a node reached through N aliases is
    counted N times, as the constructed data (and any message quoting it) would hold it."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, height)
    active: set[int] = set()

    def walk(node: Any) -> tuple[int, int]:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _Refused("an alias that contains itself", node.start_mark)
        active.add(key)
        count, height = 1, 1
        value = node.value
        children = ([c for pair in value for c in pair] if isinstance(node, yaml.MappingNode)
                    else value if isinstance(node, yaml.SequenceNode) else [])
        for child in children:
            n, h = walk(child)
            count += n
            height = max(height, h + 1)
            if count > MAX_NODES:
                raise _Refused(f"aliases expand to more than {MAX_NODES:,} values; a configuration file "
                               "has a few hundred", node.start_mark)
            if height > MAX_DEPTH:
                raise _Refused(f"aliases nest deeper than {MAX_DEPTH} levels", node.start_mark)
        active.discard(key)
        sizes[key] = (count, height)
        return count, height

    walk(root)


# Parsed documents by their text. PyYAML's pure-Python parser takes ~80 ms for a hardware profile, and
# the same few profile files are read hundreds of times in a process (every predicted sweep, every
# perturbed profile of a fit loads its profile by name); the data parsed from a text is always the
# same, so each text is parsed once and every caller gets its own deep copy (callers change the data).
_PARSED: dict[str, Any] = {}
_PARSED_MAX_TEXTS = 512
_PARSED_MAX_CHARS = 256 * 1024


def parse_yaml(text: str, source: str | None = None) -> Any:
    """YAML text to Python data, within the limits above; InputError (with the line) otherwise."""
    if text in _PARSED:
        return copy.deepcopy(_PARSED[text])
    data = _parse_yaml(text, source)
    if len(text) <= _PARSED_MAX_CHARS:
        if len(_PARSED) >= _PARSED_MAX_TEXTS:
            _PARSED.clear()
        _PARSED[text] = copy.deepcopy(data)
    return data


def _parse_yaml(text: str, source: str | None) -> Any:
    """:func:`parse_yaml` without the memo."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _Refused as exc:
        where = f" at line {exc.mark.line + 1}" if exc.mark is not None else ""
        raise InputError(f"refused{where}: {exc}", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML{where}: {quote(problem, 200, repr_=False)}", source=source) from None
    except (ValueError, RecursionError) as exc:  # e.g. an out-of-range date or timestamp
        raise InputError(f"malformed YAML: {quote(str(exc), 200, repr_=False)}", source=source) from None
    finally:
        loader.dispose()


def read_text(path: str | Path, *, max_bytes: int = MAX_FILE_BYTES, what: str = "a YAML file") -> str:
    """A UTF-8 text file's contents, or an InputError saying why not (missing, a directory,
    unreadable, too large, not UTF-8)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"is a directory; expected {what}", source=str(path))
    if not p.is_file():
        raise InputError("no such file", source=str(path))
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"{size:,} bytes; refusing files over {max_bytes:,} bytes ({what} is a few KB)",
                             source=str(path))
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text: byte {exc.start} (line {line}) is {raw[exc.start:exc.start + 1]!r}; "
                         f"expected {what} in UTF-8", source=str(path)) from None


def key_line(path: str | Path, key: str) -> int | str:
    """The line of a top-level ``key:`` in a YAML file, for messages about that key ("?" when
    it cannot be told, e.g. a flow-style document)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "?"
    m = re.search(rf"^{re.escape(key)}\s*:", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else "?"


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Parse a YAML file that must hold a mapping at top level."""
    data = parse_yaml(read_text(path), str(path))
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


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold, through Optional, unions, Annotated
    and containers (a list of models, a mapping to models)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None:  # a plain type, or a Literal's value
        return []
    if origin is Annotated:
        return _models_in(args[0])
    if origin is dict:  # a mapping to models: its values
        args = args[1:]
    return [m for a in args if a is not Ellipsis for m in _models_in(a)]


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys a mapping at `loc` (a pydantic error location) accepts: the fields of the
    model(s) reached from `model` along `loc`, list indices and mapping keys stepped over."""
    models = [model]
    for part in loc:
        if isinstance(part, int) or not models:
            continue
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        if fields:
            models = [m for f in fields for m in _models_in(f.annotation)]
        # else: a mapping key (a dict of models) or a union member's tag: stay on these models
    return sorted({name for m in models for name in m.model_fields})


def _unknown_key(key: Any, accepted: list[str]) -> str:
    """'unknown key' with what was expected: the nearest accepted keys when the key looks like
    a misspelling of one or a part of one (``fsdp`` -> ``fsdp_grad_sync``), else every key the
    block accepts."""
    if not accepted:
        return "unknown key"
    key = str(key).lower()
    by_lower = {a.lower(): a for a in accepted}
    near = [by_lower[m] for m in difflib.get_close_matches(key, list(by_lower), n=3, cutoff=0.7)]
    if len(key) >= 3:
        near += [a for a in accepted if key in a.lower() and a not in near][:4 - len(near)]
    if near:
        return "unknown key; did you mean " + " or ".join(near) + "?"
    return f"unknown key; expected one of {', '.join(accepted)}"


def describe_validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """A readable message naming the field path of every problem in a pydantic error; an
    unknown key also names the keys its block accepts (those of `model`, the validated root)."""
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = field_path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            msg = _unknown_key(loc[-1] if loc else "", keys_at(model, loc[:-1]) if model else [])
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
                msg += f" (got {quote(err['input'])})"
        lines.append(f"{path}: {msg}")
    return "; ".join(lines)


def validate(model: type[M], data: Any, source: str | Path | None = None) -> M:
    """Validate `data` into `model`, raising InputError naming file and field on failure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, model), source=str(source) if source else None) from None


def load(model: type[M], path: str | Path) -> M:
    return validate(model, read_yaml(path), path)
