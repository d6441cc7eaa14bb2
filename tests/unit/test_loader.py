import datetime
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from simulator.config.loader import keys_at, load, read_yaml
from simulator.errors import InputError


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tp: int = 1
    mode: Literal["a", "b"] = "a"


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    parallel: Inner = Inner()


class Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = 1.0
    beta: float = 2.0


class Holder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plans: list[Inner] = []
    by_name: dict[str, Leaf] = {}
    maybe: Annotated[Leaf | None, "doc"] = None


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


def test_a_text_parsed_again_is_the_same_data_and_a_copy_of_its_own():
    """parse_yaml keeps each text's data (a validation run loads one profile per row): a second
    parse of a text gives the data a fresh parse gives, anchors shared as they were, and a
    caller's change to its copy (load_profile pops ``base``) reaches no other caller."""
    from simulator.config import loader

    text = "base: dgx-h100\ngpu: &g {name: x, sms: [1, 2]}\nalso: *g\nwhen: 2024-01-02\n"
    first = loader.parse_yaml(text)
    first.pop("base")
    first["gpu"]["sms"].append(3)
    again = loader.parse_yaml(text)
    assert again == loader._parse_yaml(text, None) == {"base": "dgx-h100", "gpu": {"name": "x", "sms": [1, 2]},
                                                  "also": {"name": "x", "sms": [1, 2]},
                                                  "when": datetime.date(2024, 1, 2)}
    assert again["gpu"] is again["also"]


def test_keys_at_follows_lists_mappings_and_optionals():
    """The keys a block accepts, reached through a list of models, a mapping to models and an
    Optional under Annotated: what an unknown-key message offers."""
    assert keys_at(Holder, ()) == ["by_name", "maybe", "plans"]
    assert keys_at(Holder, ("plans", 3)) == ["mode", "tp"]
    assert keys_at(Holder, ("by_name", "some-key")) == ["alpha", "beta"]
    assert keys_at(Holder, ("maybe",)) == ["alpha", "beta"]
    assert keys_at(Outer, ("parallel",)) == ["mode", "tp"]


def test_unknown_key_says_what_was_expected(tmp_path):
    with pytest.raises(InputError) as e:
        load(Holder, write(tmp_path, "by_name: {x: {alpa: 3}}\nplans: [{tp: 2, mod: a}]\nother: 1\n"))
    msg = str(e.value)
    assert "by_name.x.alpa: unknown key; did you mean alpha?" in msg
    assert "plans[0].mod: unknown key; did you mean mode?" in msg
    assert "other: unknown key; expected one of by_name, maybe, plans" in msg
