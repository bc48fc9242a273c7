"""YAML for set files and configs, parsed within the limits of :mod:`retrieval_eval.safety.limits`.

libyaml's C loader (``CSafeLoader``, for large sets) when present, else PyYAML's Python one.

- Set files refuse anchors and aliases: a node constructed a second time is an alias's.
- A config may use them (``<<: *defaults``), as long as they expand to at most
  ``MAX_CONFIG_VALUES`` values and no value contains itself: checked on the composed nodes,
  each counted once, before anything is constructed.
- Nesting past ``MAX_NESTING`` levels is refused (libyaml stops at 1,000 levels by itself, and
  PyYAML's recursive composer earlier: both reported as the same limit).
- An integer past Python's int-to-text limit is an error at its line, not a ValueError.
"""

from __future__ import annotations

from typing import Any

import yaml

from retrieval_eval.safety.limits import (
    MAX_CONFIG_VALUES,
    MAX_NESTING,
    digits,
    shorten,
    too_deep,
    too_long_integer,
)

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ALIASES_REFUSED = (
    "YAML anchors and aliases are not allowed in a set file (the value anchored here is used "
    "again); write each value out"
)
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


class Refused(yaml.MarkedYAMLError):
    """A limit, not a syntax error: ``problem`` says which, ``problem_mark`` (if any) where."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _Loader(_Base):  # type: ignore[misc]
    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)  # type: ignore[no-any-return]
        except ValueError:  # past the int-to-text limit
            raise Refused(too_long_integer(digits(node.value)), node.start_mark) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


class _SetLoader(_Loader):
    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # without aliases every node is constructed once: a node seen again is an alias's
        if node in self.constructed_objects or node in self.recursive_objects:
            raise Refused(ALIASES_REFUSED, node.start_mark)
        return super().construct_object(node, deep)


def load_set_yaml(text: str) -> tuple[Any, Any]:
    """Parse a set file once: its node tree (for question line numbers) and its data.

    Raises :class:`yaml.YAMLError` (:class:`Refused` for a limit) or RecursionError (PyYAML's
    composer on deep nesting, without libyaml).
    """
    # no '&', no anchor, so no alias can resolve: the plain loader, without the per-node check
    loader = (_SetLoader if "&" in text else _Loader)(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


def load_config_yaml(text: str) -> Any:
    """Parse a config: aliases allowed within the expansion limit, nesting within its own."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Raise :class:`Refused` when the nodes, aliases expanded, hold more than
    ``MAX_CONFIG_VALUES`` values, nest past ``MAX_NESTING`` levels, or contain themselves.

    Depth first, each node measured once (its size and height memoized), so a bomb costs only
    its own nodes; a node met again while still open is a cycle.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node): (values, levels)
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        children = _children(node)
        if closing:
            open_nodes.discard(key)
            sizes = [measured[id(child)] for child in children]
            values = 1 + sum(size for size, _ in sizes)
            # a scalar is no level; a list or mapping is one more than its deepest child
            levels = (
                0
                if isinstance(node, yaml.ScalarNode)
                else 1 + max((h for _, h in sizes), default=0)
            )
            if values > MAX_CONFIG_VALUES:
                raise Refused(
                    f"YAML aliases expand the config past {MAX_CONFIG_VALUES:,} values (the "
                    "limit); write the values out or use fewer aliases"
                )
            if levels > MAX_NESTING:
                raise Refused(too_deep(), node.start_mark)
            measured[key] = (values, levels)
            continue
        if key in measured:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise Refused("a YAML alias refers to a value that contains it", child.start_mark)
            if id(child) not in measured:
                stack.append((child, False))


def describe(exc: yaml.YAMLError | RecursionError, *, column: bool = True) -> str:
    """A YAML failure as one message: ``line L[, column C]: what``, quoting little input."""
    if isinstance(exc, RecursionError):
        return too_deep()
    mark = getattr(exc, "problem_mark", None)
    where = ""
    if mark is not None:
        where = f"line {mark.line + 1}" + (f", column {mark.column + 1}" if column else "") + ": "
    problem = getattr(exc, "problem", None) or str(exc)
    if isinstance(exc, Refused):
        return where + problem
    if problem == _LIBYAML_TOO_DEEP:
        return where + too_deep()
    return f"{where}invalid YAML: {shorten(problem)}"
