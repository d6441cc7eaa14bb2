"""The pydantic configuration every config model shares: unknown keys are errors, numbers and
booleans are what they say.

Lax pydantic turns ``nodes: true`` into 1 node, ``sequence_parallel: 1`` into true and
``tp: 2.0`` into 2, and accepts ``.inf`` and ``.nan`` for any float; a mistake in a scenario
then changes the result silently. Strict mode refuses each of them with the field's path. Floats
still accept integers (``hbm_GiB: 80``), and YAML lists are accepted where a field holds a tuple.
"""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator, ConfigDict

STRICT_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _list_to_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# A tuple-typed field written as a YAML list: ``Annotated[tuple[int, ...], FROM_LIST]``.
FROM_LIST = BeforeValidator(_list_to_tuple)

__all__ = ["STRICT_CONFIG", "FROM_LIST"]
