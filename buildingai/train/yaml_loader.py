"""Reading YAML configs safely: PyYAML's ``SafeLoader`` (no Python objects), plus three checks
a config file needs and plain YAML does not give.

- ``1e-3`` reads as a float (YAML 1.1 wants ``1.0e-3`` and would give the string ``'1e-3'``).
- A key written twice in one mapping is refused, naming the key and both lines: YAML keeps the
  last one silently, so a setting the user changed could be overridden further down the file.
- A document whose aliases expand past ``MAX_YAML_VALUES`` values is refused before anything is
  built from it. Aliases (``*name``) share one node, so ten lines can describe ``9**8`` values
  (an "alias bomb"); the count is made on the node graph, each shared node counted once per
  use, in time linear in the file, so the refusal takes milliseconds.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import BuildingAIError

# The most values (scalars, lists and mappings, each alias counted as what it expands to) one
# YAML config may hold. A training config has a few hundred; a hundred thousand leaves room
# for long lists (class weights, schedules) and keeps reading under a second.
MAX_YAML_VALUES = 100_000

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlError(BuildingAIError, ValueError):
    """A YAML text that is not read: a syntax error, a duplicate key or too large an expansion."""


def import_yaml():
    """The ``yaml`` module, or an error that says how to install it."""
    try:
        import yaml
    except ImportError:
        raise YamlError(
            "reading or writing YAML needs the optional package pyyaml, which is not installed",
            help="pip install pyyaml  (or build the Config from a dict in Python)",
        ) from None
    return yaml


def expanded_size(root, limit: int = MAX_YAML_VALUES) -> int:
    """How many values the node graph under ``root`` holds once every alias is expanded;
    raises ``YamlError`` as soon as the count passes ``limit`` or a node contains itself."""
    yaml = import_yaml()
    sizes: dict[int, int] = {}  # id(node) -> its expanded size, each shared node counted once
    # depth-first without recursion: (node, whether its children are counted already)
    stack: list[tuple[Any, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        children = (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if not children_done:
            if key in open_nodes:
                line = node.start_mark.line + 1
                raise YamlError(f"the YAML refers to itself through an alias (line {line})")
            open_nodes.add(key)
            stack.append((node, True))
            for child in children:
                if id(child) in open_nodes:
                    line = child.start_mark.line + 1
                    raise YamlError(f"the YAML refers to itself through an alias (line {line})")
                stack.append((child, False))
            continue
        open_nodes.discard(key)
        size = 1 + sum(sizes[id(child)] for child in children)
        if size > limit:
            raise YamlError(
                f"the YAML expands to more than {limit} values through its aliases "
                f"(*name); a config holds at most {limit}",
                help="write the values out, or use fewer nested aliases",
            )
        sizes[key] = size
    return sizes[id(root)]


def config_loader():
    """A ``SafeLoader`` subclass with the checks of this module (see its docstring)."""
    yaml = import_yaml()

    class ConfigLoader(yaml.SafeLoader):
        def construct_document(self, node):
            expanded_size(node)  # before anything is built from the nodes
            return super().construct_document(node)

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                refuse_duplicate_keys(self, node)
            return super().construct_mapping(node, deep=deep)

    ConfigLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
        list("-+0123456789."),
    )
    return ConfigLoader


def refuse_duplicate_keys(loader, node) -> None:
    """Raise ``YamlError`` naming a key written twice in the mapping ``node`` and both lines.
    Keys merged in with ``<<: *defaults`` may be overridden; that is what merging is for."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # PyYAML refuses an unhashable key with its own message
        line = key_node.start_mark.line + 1
        if key in seen:
            raise YamlError(
                f"the key {key!r} is written twice in one mapping (lines {seen[key]} and "
                f"{line}); YAML would keep only the second",
                help="keep one of them",
            )
        seen[key] = line


def load_yaml(text: str, source: str = "<string>", what: str | None = None) -> Any:
    """The document in ``text`` as plain Python values, read with ``config_loader``; every
    problem is a ``YamlError`` that starts with ``what`` (default: reading from ``source``)."""
    yaml = import_yaml()
    what = what or f"cannot read YAML from {source}"
    try:
        return yaml.load(text, Loader=config_loader())
    except YamlError as error:
        raise YamlError(f"{what}: {error.message}", help=error.help) from None
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as error:
        reason = " ".join(str(error).split())
        raise YamlError(f"{what}: {reason}") from None
