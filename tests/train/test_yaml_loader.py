"""Reading YAML configs: duplicate keys and alias bombs are refused on one line, quickly;
merge keys and ordinary aliases still work."""

import time

import pytest

from buildingai.train import Config, ConfigError
from buildingai.train.yaml_loader import MAX_YAML_VALUES, expanded_size

yaml = pytest.importorskip("yaml")


def alias_bomb(levels: int, width: int = 9) -> str:
    """``levels`` lines, each a list of ``width`` aliases of the line before: width**levels
    values in a few hundred bytes."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['x'] * width)}]"]
    for before, name in zip(names, names[1:]):
        lines.append(f"{name}: &{name} [{', '.join(['*' + before] * width)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_in_well_under_a_second():
    text = alias_bomb(8)  # 9**8 = 43 million values in about 300 bytes
    assert len(text.encode()) < 400
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        Config.from_yaml_string(text, source="bomb.yaml")
    assert time.perf_counter() - started < 1.0
    assert caught.value.message == (
        f"cannot read YAML from bomb.yaml: the YAML expands to more than {MAX_YAML_VALUES} "
        f"values through its aliases (*name); a config holds at most {MAX_YAML_VALUES}"
    )


def test_a_smaller_bomb_past_the_limit_is_refused_too():
    with pytest.raises(ConfigError, match="expands to more than"):  # 9**6 = 531441 values
        Config.from_yaml_string(alias_bomb(6))
    assert Config.from_yaml_string(alias_bomb(4)).d[0][0][0] == ["x"] * 9  # 6561 values: fine


def test_overrides_go_through_the_same_reader():
    from buildingai.train import parse_value

    with pytest.raises(ConfigError, match="cannot parse the value .* refers to itself"):
        parse_value("&a [*a]")


def test_expanded_size_counts_each_use_of_a_shared_node():
    node = yaml.compose("a: &a [1, 2]\nb: [*a, *a, *a]\n")
    # root 1 + key a 1 + [1, 2] 3 + key b 1 + list 1 + three uses of [1, 2] 9
    assert expanded_size(node) == 16


def test_a_self_referring_alias_is_refused():
    with pytest.raises(ConfigError, match=r"refers to itself through an alias \(line 1\)"):
        Config.from_yaml_string("a: &a [1, *a]\n")


def test_a_duplicate_key_names_the_key_and_both_lines():
    text = "epochs: 2\noptim:\n  type: SGD\n  lr: 0.1\n  lr: 0.5\n"
    with pytest.raises(ConfigError) as caught:
        Config.from_yaml_string(text, source="c.yaml")
    assert caught.value.message == (
        "cannot read YAML from c.yaml: the key 'lr' is written twice in one mapping (lines 4 "
        "and 5); YAML would keep only the second"
    )
    assert caught.value.help == "keep one of them"
    # the same key in different mappings is no duplicate
    assert Config.from_yaml_string("a: {lr: 1}\nb: {lr: 2}\n").b.lr == 2


def test_merge_keys_may_override_what_they_merge():
    text = "base: &base {lr: 0.1, momentum: 0.9}\nfast:\n  <<: *base\n  lr: 0.5\n"
    assert Config.from_yaml_string(text).fast.to_dict() == {"lr": 0.5, "momentum": 0.9}


def test_yaml_still_reads_exponent_floats_and_plain_files(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("lr: 1e-3\nname: adam\nsizes: [1, 2]\n")
    assert Config.from_yaml(path).to_dict() == {"lr": 1e-3, "name": "adam", "sizes": [1, 2]}
