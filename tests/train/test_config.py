"""Config: access, nesting, YAML round trip, overrides, validation errors with suggestions."""

import pytest

from buildingai.train import Config, ConfigError, load_config, parse_value

pytest.importorskip("yaml")


def make():
    return Config(
        batch_size=256, lr=1e-3, model=dict(type="CustomResNet", depth=50, widen_factor=2)
    )


def test_attribute_item_and_dotted_access():
    config = make()
    assert config.batch_size == 256 and config["lr"] == 1e-3
    assert isinstance(config.model, Config)
    assert config.model.depth == config["model"]["depth"] == config["model.depth"] == 50
    config.model.depth = 18
    config["model.widen_factor"] = 4
    assert config.to_dict() == {
        "batch_size": 256, "lr": 1e-3, "model": {"type": "CustomResNet", "depth": 18, "widen_factor": 4}
    }  # fmt: skip
    assert "model.depth" in config and "model.width" not in config
    assert config.get("model.missing", 7) == 7
    assert "model.widen_factor" in config.keys_flat()


def test_missing_key_suggests():
    config = make()
    with pytest.raises(AttributeError, match="did you mean 'batch_size'"):
        config.batch_sise  # noqa: B018
    with pytest.raises(KeyError, match="did you mean 'model.depth'"):
        config["model.deph"]


def test_lists_of_dicts_become_configs_and_copy_is_deep():
    config = Config(layers=[{"width": 3}, {"width": 4}])
    assert config.layers[1].width == 4
    copy = config.copy()
    copy.layers[0].width = 9
    assert config.layers[0].width == 3


def test_yaml_round_trip(tmp_path):
    config = make()
    config.optim = {"betas": [0.9, 0.99], "eps": 1e-8, "name": None, "nesterov": True}
    path = tmp_path / "c.yaml"
    config.to_yaml(path)
    again = Config.from_yaml(path)
    assert again == config and again.to_dict() == config.to_dict()
    assert list(again.keys()) == list(config.keys())  # order kept


def test_yaml_reads_exponent_floats(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("lr: 1e-3\nsteps: 10\nname: adam\n")
    config = Config.from_yaml(path)
    assert config.lr == 1e-3 and isinstance(config.lr, float)
    assert config.steps == 10 and config.name == "adam"


def test_yaml_top_level_must_be_a_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        Config.from_yaml(path)


@pytest.mark.parametrize(
    "text, value",
    [("0.01", 0.01), ("1e-3", 1e-3), ("18", 18), ("true", True), ("null", None),
     ("[64, 32]", [64, 32]), ("adam", "adam")],
)  # fmt: skip
def test_parse_value(text, value):
    assert parse_value(text) == value


def test_merge_overrides():
    config = Config(optim=dict(lr=1e-3), model=dict(depth=50, name="resnet"))
    config.merge_overrides(["optim.lr=0.01", "model.depth=18", "+optim.weight_decay=0.1"])
    assert config.optim.lr == 0.01 and config.model.depth == 18
    assert config.optim.weight_decay == 0.1
    config.merge_overrides(["~optim.weight_decay"])
    assert "optim.weight_decay" not in config


def test_override_unknown_key_suggests():
    config = Config(optim=dict(lr=1e-3))
    with pytest.raises(
        ConfigError, match="unknown key 'optim.lrr' — did you mean 'optim.lr'?"
    ) as info:
        config.merge_overrides(["optim.lrr=0.01"])
    assert "+optim.lrr=0.01" in str(info.value)


@pytest.mark.parametrize("override", ["optim.lr", "=3", "+=1"])
def test_malformed_override(override):
    with pytest.raises(ConfigError, match="malformed override"):
        Config(optim=dict(lr=1e-3)).merge_overrides([override])


def test_override_wrong_type():
    config = Config(epochs=5, lr=0.1, name="x", layers=[1, 2])
    config.merge_overrides(["lr=1"])  # an int may replace a float
    with pytest.raises(ConfigError, match="'epochs' expects an int .* got str 'five'"):
        config.merge_overrides(["epochs=five"])
    with pytest.raises(ConfigError, match="'layers' expects a list"):
        config.merge_overrides(["layers=3"])


def test_merge_validates_against_defaults():
    defaults = Config(epochs=1, optim=dict(type="Adam", lr=1e-3), checkpoint=dict(every=10))
    with pytest.raises(ConfigError, match="unknown key 'epoch' — did you mean 'epochs'?"):
        defaults.copy().merge({"epoch": 3})
    with pytest.raises(
        ConfigError, match="unknown key 'checkpoint.evry' — did you mean 'checkpoint.every'"
    ):
        defaults.copy().merge({"checkpoint": {"evry": 3}})
    # A typed section is open (its class's signature checks it) and a new type replaces it.
    merged = defaults.copy().merge({"optim": {"type": "SGD", "momentum": 0.9}})
    assert merged.optim.to_dict() == {"type": "SGD", "momentum": 0.9}
    merged = defaults.copy().merge({"optim": {"betas": [0.9, 0.9]}})
    assert merged.optim.lr == 1e-3 and merged.optim.betas == [0.9, 0.9]
    with pytest.raises(ConfigError, match="unknown key 'epoch'"):
        Config(epoch=1).validate(defaults)


def test_frozen():
    config = make().freeze()
    assert config.frozen and config.model.frozen
    with pytest.raises(ConfigError, match="frozen"):
        config.lr = 0.1
    with pytest.raises(ConfigError, match="frozen"):
        config.model.depth = 1
    with pytest.raises(ConfigError, match="frozen"):
        config.merge_overrides(["lr=0.2"])
    config.copy().lr = 0.1  # a copy is not frozen
    config.unfreeze().lr = 0.1
    assert config.lr == 0.1


def test_load_config_uses_trainer_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: 2\noptim: {type: SGD, lr: 0.1}\n")
    config = load_config(path, ["batch_size=8"])
    assert config.epochs == 2 and config.batch_size == 8 and config.optim.type == "SGD"
    assert config.seed == 0  # from the defaults
    path.write_text("epochz: 2\n")
    with pytest.raises(ConfigError, match="did you mean 'epochs'"):
        load_config(path)


def test_yaml_missing_gives_a_clear_error(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # as if pyyaml were not installed
    with pytest.raises(ConfigError, match="needs the optional package pyyaml") as info:
        make().to_yaml(tmp_path / "c.yaml")
    assert "pip install pyyaml" in str(info.value)
    assert parse_value("0.5") == 0.5 and parse_value("true") is True  # plain fallback


def test_yaml_files_that_cannot_be_a_config(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing but a comment\n")
    with pytest.raises(ConfigError, match="the YAML in .*empty.yaml is empty"):
        Config.from_yaml(empty)
    (tmp_path / "braces.yaml").write_text("{}\n")  # an explicit empty mapping is fine
    assert Config.from_yaml(tmp_path / "braces.yaml") == {}
    with pytest.raises(ConfigError, match="config file '.*missing.yaml' does not exist"):
        Config.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="is a directory, not a YAML file"):
        load_config(tmp_path)


def test_overrides_may_set_new_arguments_of_a_typed_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("optim: {type: SGD}\n")
    config = load_config(path, ["optim.lr=0.1", "optim.momentum=0.9"])
    assert config.optim.to_dict() == {"type": "SGD", "lr": 0.1, "momentum": 0.9}
    with pytest.raises(ConfigError, match="unknown key 'checkpoint.evry'"):
        load_config(path, ["checkpoint.evry=3"])  # an untyped section stays closed
