"""``Config``: a nested settings tree with attribute and item access, YAML files, dotted
command-line overrides and validation against the defaults it was built from.

Example::

    config = Config(batch_size=256, optim=dict(type="Adam", lr=1e-3))
    config.optim.lr                                     # 0.001
    config["optim"]["lr"] == config["optim.lr"]         # True
    config.merge_overrides(["optim.lr=0.01", "+optim.weight_decay=0.1"])
    config.merge_overrides(["optim.lrr=1"])  # ConfigError: unknown key 'optim.lrr' — did you mean 'optim.lr'?

YAML needs the optional ``pyyaml`` package; everything else is plain Python.

The Trainer's schema lives here too: ``DEFAULTS`` (every setting and its default), ``RULES``
(what each allows), ``load_config`` and ``validate_config``.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import BuildingAIError
from .yaml_loader import YamlError, import_yaml, load_yaml


class ConfigError(BuildingAIError, ValueError):
    """An unknown or mistyped key, a malformed override, or a change to a frozen config."""


def _yaml():
    try:
        return import_yaml()
    except YamlError as error:
        raise ConfigError(error.message, help=error.help) from None


def parse_value(text: str) -> Any:
    """Read an override's value as a YAML scalar or flow collection: ``0.01`` -> float,
    ``18`` -> int, ``true`` -> bool, ``null`` -> None, ``[64, 32]`` -> list, ``adam`` -> str.
    Without pyyaml, numbers, booleans, null and plain strings are understood."""
    try:
        _yaml()
    except ConfigError:
        pass
    else:
        try:
            return load_yaml(text, what=f"cannot parse the value {text!r}")
        except YamlError as error:  # a YAML syntax error: report it as a config error
            raise ConfigError(error.message, help=error.help) from None
    lowered = text.strip().lower()
    if lowered in ("null", "none", "~", ""):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def suggest(key: str, candidates: Iterable[str]) -> str:
    """`` — did you mean 'x'?`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.6)
    return f" — did you mean {close[0]!r}?" if close else ""


def _convert(value: Any) -> Any:
    """Dicts become Configs, recursively (also inside lists); Configs are copied."""
    if isinstance(value, Mapping):
        return Config(value)
    if isinstance(value, (list, tuple)):
        return [_convert(item) for item in value]
    if isinstance(value, os.PathLike):  # paths are kept as text, as YAML writes them
        return os.fspath(value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


class Config:
    """A tree of settings: ``config.optim.lr``, ``config["optim"]["lr"]``, ``config["optim.lr"]``.

    Nested dicts become Configs. ``freeze()`` forbids changes (an attempt raises ``ConfigError``);
    ``merge(other)`` and ``merge_overrides([...])`` update it in place, rejecting unknown keys
    with a suggestion unless they are marked as new (``+key=value``).
    """

    def __init__(self, mapping: Mapping[str, Any] | None = None, /, **entries: Any) -> None:
        object.__setattr__(self, "_data", {})
        object.__setattr__(self, "_frozen", False)
        for key, value in {**(mapping or {}), **entries}.items():
            if not isinstance(key, str):
                raise ConfigError(f"config keys must be strings, got {key!r}")
            self._data[key] = _convert(value)

    # ----- access -----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return data[name]
        if name.startswith("__"):  # copy/pickle probe special names; answer as objects do
            raise AttributeError(name)
        raise AttributeError(f"config has no key {name!r}{suggest(name, data)}")

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __getitem__(self, key: str) -> Any:
        node, leaf = self._parent_of(key, create=False)
        if leaf not in node._data:
            raise KeyError(f"config has no key {key!r}{suggest(key, self.keys_flat())}")
        return node._data[leaf]

    def __setitem__(self, key: str, value: Any) -> None:
        node, leaf = self._parent_of(key, create=True)
        node._check_mutable(key)
        node._data[leaf] = _convert(value)

    def __delitem__(self, key: str) -> None:
        node, leaf = self._parent_of(key, create=False)
        node._check_mutable(key)
        del node._data[leaf]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Config({self.to_dict()!r})"

    def keys(self):
        return self._data.keys()

    def values(self):
        return self._data.values()

    def items(self):
        return self._data.items()

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys_flat(self, prefix: str = "") -> list[str]:
        """Every key path, depth first: ``['batch_size', 'optim', 'optim.lr', ...]``."""
        paths = []
        for key, value in self._data.items():
            path = prefix + key
            paths.append(path)
            if isinstance(value, Config):
                paths.extend(value.keys_flat(path + "."))
        return paths

    def _parent_of(self, key: str, create: bool) -> tuple[Config, str]:
        """The Config holding the last part of a dotted ``key``, and that last part."""
        *parents, leaf = key.split(".")
        node = self
        for depth, part in enumerate(parents):
            child = node._data.get(part)
            if child is None and create:
                node._check_mutable(key)
                child = node._data[part] = Config()
            if not isinstance(child, Config):
                where = ".".join(parents[: depth + 1])
                raise KeyError(
                    f"config has no section {where!r}"
                    + (f" ({where} is {child!r})" if child is not None else "")
                    + suggest(where, self.keys_flat())
                )
            node = child
        return node, leaf

    # ----- freezing ---------------------------------------------------------------------------
    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> Config:
        """Forbid changes to this config and every section in it; returns ``self``."""
        object.__setattr__(self, "_frozen", True)
        for value in self._data.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Config):
                    item.freeze()
        return self

    def unfreeze(self) -> Config:
        object.__setattr__(self, "_frozen", False)
        for value in self._data.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Config):
                    item.unfreeze()
        return self

    def _check_mutable(self, key: str) -> None:
        if self._frozen:
            raise ConfigError(
                f"cannot set {key!r}: the config is frozen",
                help="change a copy (config.copy()) or call config.unfreeze() first",
            )

    # ----- conversion -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy (nested Configs become dicts)."""
        return {key: _plain(value) for key, value in self._data.items()}

    def copy(self) -> Config:
        """A deep, unfrozen copy."""
        return Config(self.to_dict())

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> Config:
        """Read a YAML file whose top level is a mapping."""
        path = Path(path)
        if path.is_dir():
            raise ConfigError(
                f"config path {str(path)!r} is a directory, not a YAML file",
                help=f"name the YAML file inside it, e.g. {str(path / 'config.yaml')!r}",
            )
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"config file {str(path)!r} does not exist",
                help="check the path (examples/configs holds ready-made configs)",
            ) from None
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read config file {str(path)!r}: {error}") from None
        return cls.from_yaml_string(text, source=str(path))

    @classmethod
    def from_yaml_string(cls, text: str, source: str = "<string>") -> Config:
        _yaml()
        try:
            data = load_yaml(text, source)
        except YamlError as error:
            raise ConfigError(error.message, help=error.help) from None
        if data is None:  # an empty file (or only comments) is a wrong or truncated file
            raise ConfigError(
                f"the YAML in {source} is empty",
                help="write the settings to change (e.g. 'epochs: 3'), or '{}' to keep every "
                "default",
            )
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"the YAML in {source} must be a mapping of keys to values, got "
                f"{type(data).__name__}"
            )
        return cls(data)

    def to_yaml(self, path: str | os.PathLike | None = None) -> str:
        """The config as YAML (key order kept); also written to ``path`` when given."""
        text = _yaml().safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    # ----- merging and validation -------------------------------------------------------------
    def merge(
        self,
        other: Mapping[str, Any],
        strict: bool = True,
        _prefix: str = "",
        _plus_hint: bool = True,
    ) -> Config:
        """Update this config from ``other`` (a dict or Config), recursively; returns ``self``.

        With ``strict``, every key of ``other`` must already exist here (this config is the
        schema): an unknown key raises ``ConfigError`` with the closest known key. A value must
        have the type of the value it replaces (an int may replace a float; anything may replace
        None or be replaced by None). A section with a ``type`` (``optim: {type: Adam, ...}``)
        describes a class: its keys are the class's arguments, checked against its signature
        when it is built (``Registry.build``), so new keys are accepted there; and a different
        ``type`` replaces the section whole.
        """
        open_section = "type" in self._data  # keys are checked by the class's signature
        for key, value in other.items():
            path = _prefix + key
            if key not in self._data:
                if strict and not open_section:
                    known = [_prefix + name for name in self._data]
                    hint = f"known keys here: {', '.join(known) or '(none)'}"
                    if _plus_hint:
                        hint += f"; mark a new key with a '+' on the command line (+{path}=...)"
                    raise ConfigError(f"unknown key {path!r}{suggest(path, known)}", help=hint)
                self[key] = value
                continue
            current = self._data[key]
            if isinstance(current, Config) and isinstance(value, Mapping):
                new_type = value.get("type", current.get("type"))
                if "type" in current and new_type != current["type"]:
                    self[key] = value
                else:
                    current._check_mutable(path)
                    current.merge(value, strict=strict, _prefix=path + ".", _plus_hint=_plus_hint)
                continue
            if strict:
                check_type(path, current, value)
            self[key] = value
        return self

    def merge_overrides(self, overrides: Iterable[str]) -> Config:
        """Apply command-line overrides in place; returns ``self``.

        ``"optim.lr=0.01"`` sets an existing key (an unknown key raises ``ConfigError`` with a
        suggestion); ``"+optim.weight_decay=0.1"`` adds a new one; ``"~scheduler"`` removes one.
        Values are read as YAML scalars (``0.01``, ``18``, ``true``, ``null``, ``[64, 32]``).
        """
        for override in overrides:
            if override.startswith("~"):
                key = override[1:]
                if key not in self:
                    raise ConfigError(
                        f"cannot remove {key!r}: no such key" + suggest(key, self.keys_flat())
                    )
                del self[key]
                continue
            key, sep, text = override.partition("=")
            if not sep or not key.strip("+"):
                raise ConfigError(
                    f"malformed override {override!r}",
                    help="write key=value (optim.lr=0.01), +key=value to add a key, ~key to "
                    "remove one",
                )
            value = parse_value(text)
            if key.startswith("+"):
                self[key[1:]] = value
                continue
            if key not in self:
                if self._in_open_section(key):  # the class's signature checks it when built
                    self[key] = value
                    continue
                raise ConfigError(
                    f"unknown key {key!r}{suggest(key, self.keys_flat())}",
                    help=f"add a new key with +{key}={text}",
                )
            current = self[key]
            if isinstance(current, Config) and isinstance(value, Mapping):
                Config({key: current}).merge({key: value})
                continue
            check_type(key, current, value)
            self[key] = value
        return self

    def _in_open_section(self, key: str) -> bool:
        """Whether dotted ``key`` names an argument of a section with a ``type`` (a class whose
        arguments are checked against its signature): ``optim.lr`` when ``optim.type`` is set."""
        parent, _, _ = key.rpartition(".")
        section = self.get(parent) if parent else None
        return isinstance(section, Config) and "type" in section

    def validate(self, schema: Config | Mapping[str, Any]) -> Config:
        """Check every key of this config against ``schema`` (the defaults); returns ``self``.
        Raises ``ConfigError`` on the first unknown or mistyped key."""
        Config(schema).merge(self, strict=True)
        return self


def check_type(path: str, current: Any, value: Any) -> None:
    """A value must keep the kind of the one it replaces: numbers stay numbers (int may become
    float), strings stay strings, lists stay lists, sections stay sections. None fits anything."""
    if current is None or value is None:
        return

    def kind(item: Any) -> str:
        if isinstance(item, bool):
            return "bool"
        if isinstance(item, (int, float)):
            return "int" if isinstance(item, int) else "float"
        if isinstance(item, (Config, Mapping)):
            return "section"
        if isinstance(item, (list, tuple)):
            return "list"
        return type(item).__name__

    expected, got = kind(current), kind(value)
    if expected == got or (expected == "float" and got == "int"):
        return
    article = "an" if expected[0] in "aeiou" else "a"
    raise ConfigError(
        f"{path!r} expects {article} {expected} (default {_plain(current)!r}), got {got} "
        f"{_plain(value)!r}",
        help=f"write {article} {expected}, e.g. {path}={_plain(current)!r}",
    )


Mapping.register(Config)  # a Config reads like a dict: isinstance(config, Mapping) is True


# ----- the Trainer's schema: its settings, their defaults and what each allows -----------------
# What ``Trainer.from_config`` accepts: a config is checked against these defaults, so a
# misspelt key fails at once with the closest valid name.
DEFAULTS = Config(
    seed=0,
    epochs=1,
    max_steps=None,  # stop early after this many steps in all
    batch_size=128,  # the training batches' size (the loader setting; eval_batch_size below)
    lr=None,  # shorthand for optim.lr; giving both with different values is an error
    eval_batch_size=1000,
    device="cpu",
    run_dir=None,  # where config.yaml, metrics and checkpoints go; None keeps nothing
    data=dict(
        train=dict(type="MNIST", split="train"),
        eval=dict(type="MNIST", split="test"),
        num_workers=0,
        prefetch=None,  # None: 2 per worker, and no background thread with num_workers=0
        shuffle=True,
        drop_last=False,
    ),
    model=dict(type="MLP"),
    optim=dict(type="Adam"),  # lr: set here or through the top-level shorthand (default 1e-3)
    scheduler=None,  # e.g. {type: CosineAnnealingLR, T_max: 5}; positions count epochs
    loss=dict(type="CrossEntropyLoss"),
    metrics=["accuracy"],
    grad_clip=None,  # max global gradient norm
    log_every=50,
    checkpoint=dict(every_steps=None, keep_last=2, keep_best=None, mode="max"),
    early_stopping=None,  # e.g. {metric: eval/loss, mode: min, patience: 3}
    trackers=[],  # e.g. [tensorboard, {type: wandb, project: mnist}, mlflow]
    progress=True,
    compile=False,  # run each training step as a static graph (buildingai.compile)
    # keep freed host memory for the next step instead of returning it to the OS
    # (buildingai.backend.retain_freed_memory: a process-wide malloc setting)
    retain_freed_memory=True,
    # the faster kernels of buildingai.accel (process-wide, said once on standard error when
    # turned on); false runs every op on its record's reference code; null leaves it as set
    accel=True,
    # BuildingAI's threads (buildingai.set_num_threads: process-wide); null leaves them as set
    threads=None,
    # one pool: the matrix products on those threads too (set_num_threads(threads, gemm=...));
    # null: the default arrangement (one pool where BuildingAI has a BLAS of its own)
    one_pool=None,
)


def load_config(source: str | os.PathLike | Config | dict, overrides: Iterable[str] = ()) -> Config:
    """``DEFAULTS`` updated from a YAML file (or a dict), then from ``key=value`` overrides;
    every key is checked against the defaults, so a typo fails here with a suggestion."""
    config = source if isinstance(source, (Config, dict)) else Config.from_yaml(source)
    # DEFAULTS is the whole schema: a key it lacks is a typo, never a key to add with '+'
    config = DEFAULTS.copy().merge(config, _plus_hint=False)
    overrides = list(overrides)
    for override in overrides:
        name = override.partition("=")[0]
        key = name.lstrip("+")
        if override.startswith("~") or not key or key in config or _addable(config, key):
            continue
        known = suggest(key, config.keys_flat())
        what = f"{name!r} adds the key {key!r}, but" if name != key else f"unknown key {key!r}:"
        raise ConfigError(
            f"{what} the Trainer has no such setting{known}",
            help="the Trainer's settings are the keys of buildingai.train.DEFAULTS; a class's "
            "arguments go in its section (e.g. model.dropout=0.1)",
        )
    return config.merge_overrides(overrides)


def stored_config(stored: Any, source: str) -> Config:
    """The training config saved in a checkpoint (``state["config"]``), read as data: a mapping
    of settings merged into ``DEFAULTS``. Anything else, a string above all, is refused: a
    string would otherwise be opened as a YAML path on the machine reading the checkpoint."""
    if not isinstance(stored, Mapping):
        raise ConfigError(
            f"the config stored in {source} is {type(stored).__name__} {_short(stored)}, not a "
            "mapping of settings; a checkpoint's config is data, never a path to read",
            help="use a checkpoint written by `buildingai train` (Trainer.save_checkpoint)",
        )
    return load_config(Config(stored))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _addable(config: Config, key: str) -> bool:
    """Whether an override may add dotted ``key``: it lies in a section with a ``type`` (whose
    class's signature checks it) or in one that is off (``scheduler: null``) and being written."""
    parts = key.split(".")
    for depth in range(1, len(parts)):
        value = config.get(".".join(parts[:depth]), _MISSING)
        if value is None or (isinstance(value, Config) and "type" in value):
            return True
        if value is _MISSING:
            return False
    return False


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_at_least(minimum: int) -> Callable[[Any], bool]:
    return lambda value: _is_int(value) and value >= minimum


def _number_at_least(minimum: float, strictly: bool = False) -> Callable[[Any], bool]:
    """A finite number >= ``minimum`` (> with ``strictly``): infinity and NaN are refused, as
    a learning rate or a clipping norm of ``.inf`` only turns the weights into NaN."""

    def test(value: Any) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        if not math.isfinite(value):
            return False
        return value > minimum if strictly else value >= minimum

    return test


def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or test(value)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _is_section(value: Any) -> bool:
    return isinstance(value, Config)


def _as_written(value: Any) -> str:
    """A value as a config file spells it: null, true, 0.5, 'ten', [1], {type: MLP}."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return repr(value.to_dict() if isinstance(value, Config) else value)


_MISSING = object()
# What each setting allows: (key, allowed values in words, test). Sections with a ``type``
# (model, optim, data.train, ...) are checked against their class's signature instead.
RULES: list[tuple[str, str, Callable[[Any], bool]]] = [
    ("seed", "an integer", _is_int),
    ("epochs", "an integer >= 1", _int_at_least(1)),
    ("max_steps", "null or an integer >= 1", _optional(_int_at_least(1))),
    ("batch_size", "an integer >= 1", _int_at_least(1)),
    ("eval_batch_size", "null or an integer >= 1", _optional(_int_at_least(1))),
    ("lr", "null or a finite number >= 0", _optional(_number_at_least(0))),
    ("optim.lr", "a finite number >= 0", _number_at_least(0)),
    ("device", "a device name such as 'cpu' or 'cuda'", _is_name),
    ("run_dir", "null or a directory path", _optional(_is_name)),
    ("grad_clip", "null (no clipping) or a finite number > 0",
     _optional(_number_at_least(0, True))),
    ("log_every", "an integer >= 1", _int_at_least(1)),
    ("metrics", "a list of metric names such as ['accuracy']",
     lambda value: isinstance(value, list) and all(_is_name(name) for name in value)),
    ("progress", "true or false", _is_bool),
    ("compile", "true or false", _is_bool),
    ("retain_freed_memory", "true or false", _is_bool),
    ("accel", "null, true or false", _optional(_is_bool)),
    ("threads", "null or an integer >= 1", _optional(_int_at_least(1))),
    ("one_pool", "null, true or false", _optional(_is_bool)),
    ("data.num_workers", "an integer >= 0", _int_at_least(0)),
    ("data.prefetch", "null or an integer >= 0", _optional(_int_at_least(0))),
    ("data.shuffle", "true or false", _is_bool),
    ("data.drop_last", "true or false", _is_bool),
    ("checkpoint.every_steps", "null or an integer >= 1", _optional(_int_at_least(1))),
    ("checkpoint.keep_last", "null (keep all) or an integer >= 1", _optional(_int_at_least(1))),
    ("checkpoint.keep_best", "null or a metric name such as 'eval/accuracy'", _optional(_is_name)),
    ("checkpoint.mode", "'min' or 'max'", lambda value: value in ("min", "max")),
    ("model", "a section naming a model, e.g. {type: MLP}", _is_section),
    ("optim", "a section naming an optimizer, e.g. {type: Adam, lr: 0.001}", _is_section),
    ("loss", "a section naming a loss, e.g. {type: CrossEntropyLoss}", _is_section),
    ("data.train", "a section naming a dataset, e.g. {type: MNIST, split: train}", _is_section),
    ("data.eval", "null (no evaluation) or a section naming a dataset", _optional(_is_section)),
    ("scheduler", "null or a section naming a scheduler", _optional(_is_section)),
    ("early_stopping", "null or a section such as {metric: eval/loss, patience: 3}",
     _optional(_is_section)),
    ("trackers", "a list of tracker names or sections, e.g. [tensorboard, {type: wandb}]",
     lambda value: isinstance(value, list)
     and all(_is_name(entry) or isinstance(entry, (Config, dict)) for entry in value)),
]  # fmt: skip
_OPTIONAL_KEYS = {"optim.lr"}  # checked only when present


def validate_config(config: Config) -> Config:
    """Check every value ``RULES`` knows (``config`` already merged into ``DEFAULTS``) and
    resolve the ``lr`` shorthand into ``optim.lr``; returns ``config``. The first bad value
    raises ``ConfigError`` naming the key, the value and what is allowed."""
    for key, allowed, test in RULES:
        value = config.get(key, _MISSING)
        if value is _MISSING:
            if key in _OPTIONAL_KEYS:
                continue
            raise ConfigError(f"config key {key!r} is missing; it must be {allowed}")
        if not test(value):
            raise ConfigError(f"config key {key!r} is {_as_written(value)}; it must be {allowed}")
    if config.lr is not None:
        explicit = config.optim.get("lr")
        if explicit is not None and explicit != config.lr:
            raise ConfigError(
                f"lr={config.lr!r} and optim.lr={explicit!r} disagree (lr is shorthand for "
                "optim.lr)",
                help="set only one of them",
            )
        config.optim.lr, config.lr = config.lr, None  # one place for it in the saved config
    return config
