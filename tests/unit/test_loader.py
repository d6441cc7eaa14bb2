from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from simulator.config.loader import load, read_yaml
from simulator.errors import InputError


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tp: int = 1
    mode: Literal["a", "b"] = "a"


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    parallel: Inner = Inner()


def write(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def test_valid_file_loads(tmp_path):
    cfg = load(Outer, write(tmp_path, "name: x\nparallel: {tp: 4}\n"))
    assert cfg.parallel.tp == 4


def test_malformed_yaml_names_file_and_line(tmp_path):
    p = write(tmp_path, "name: x\nparallel: {tp: 4\n")
    with pytest.raises(InputError) as e:
        read_yaml(p)
    assert str(p) in str(e.value) and "line" in str(e.value)


def test_unknown_key_names_the_field_path(tmp_path):
    p = write(tmp_path, "name: x\nparallel: {tpp: 4}\n")
    with pytest.raises(InputError) as e:
        load(Outer, p)
    assert "parallel.tpp: unknown key" in str(e.value) and str(p) in str(e.value)


def test_wrong_type_says_what_was_expected(tmp_path):
    p = write(tmp_path, "name: x\nparallel: {tp: eight}\n")
    with pytest.raises(InputError) as e:
        load(Outer, p)
    assert "parallel.tp" in str(e.value) and "integer" in str(e.value) and "'eight'" in str(e.value)


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_yaml(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="mapping"):
        read_yaml(write(tmp_path, "- 1\n- 2\n"))
