"""A small strict schema for DeePMD-kit's input.json sections.

Each section is a list of `Key`s. `normalize` resolves aliases, drops `_comment` keys, fills defaults, checks types
and values, and raises one `ConfigError` naming the key path (``model.descriptor.sel``) and what was expected;
an unknown key gets the nearest valid name as a suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REQUIRED = object()  # sentinel default: the key must be given


class ConfigError(ValueError):
    """A user error in input.json, with the key path in the message."""


@dataclass(frozen=True)
class Key:
    name: str
    types: tuple[type, ...]
    default: Any = REQUIRED
    aliases: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None  # returns an error text, or None when fine
    doc: str = ""
    sub: tuple[Key, ...] | None = field(default=None)  # nested section (for dict-valued keys)


def _type_name(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def _check_type(value: Any, key: Key, path: str) -> Any:
    # JSON has one number type: accept ints where floats are expected, never bools as numbers
    if float in key.types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in key.types:
        raise ConfigError(f"{path}: expected {_type_name(key.types)}, got a boolean ({value!r})")
    if not isinstance(value, key.types):
        raise ConfigError(f"{path}: expected {_type_name(key.types)}, got {type(value).__name__} ({value!r})")
    return value


def normalize(section: Any, keys: tuple[Key, ...], path: str) -> dict[str, Any]:
    """Return the section with aliases resolved, comments removed and defaults filled."""
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: expected an object (dict), got {type(section).__name__}")
    by_name = {k.name: k for k in keys}
    alias_of = {a: k.name for k in keys for a in k.aliases}
    out: dict[str, Any] = {}
    for raw_name, value in section.items():
        if raw_name.startswith("_"):
            continue  # DeePMD treats keys starting with "_" as comments
        name = alias_of.get(raw_name, raw_name)
        if name not in by_name:
            raise ConfigError(_unknown_key_message(raw_name, path, by_name, alias_of))
        if name in out:
            raise ConfigError(f"{path}.{name}: given twice (through the alias {raw_name!r})")
        out[name] = _normalize_value(value, by_name[name], f"{path}.{name}")
    for key in keys:
        if key.name not in out:
            if key.default is REQUIRED:
                raise ConfigError(f"{path}.{key.name}: required key is missing ({key.doc or _type_name(key.types)})")
            out[key.name] = _default(key, f"{path}.{key.name}")
    return out


def _default(key: Key, path: str) -> Any:
    if key.sub is not None and isinstance(key.default, dict):
        return normalize(dict(key.default), key.sub, path)
    return key.default() if callable(key.default) else key.default


def _normalize_value(value: Any, key: Key, path: str) -> Any:
    value = _check_type(value, key, path)
    if key.sub is not None and isinstance(value, dict):
        value = normalize(value, key.sub, path)
    if key.check is not None:
        problem = key.check(value)
        if problem:
            raise ConfigError(f"{path}: {problem} (got {value!r})")
    return value


def _unknown_key_message(name: str, path: str, by_name: dict, alias_of: dict) -> str:
    candidates = sorted(by_name) + sorted(alias_of)
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(by_name))}"
    return f"{path}.{name}: unknown key {name!r}{hint}"


# reusable value checks ------------------------------------------------------------------------------------------


def positive(value: Any) -> str | None:
    return None if value > 0 else "must be > 0"


def non_negative(value: Any) -> str | None:
    return None if value >= 0 else "must be >= 0"


def one_of(*choices: Any) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(repr, choices))}"

    return check


def list_of(item_type: type, min_len: int = 0) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if len(value) < min_len:
            return f"must have at least {min_len} entries"
        ok = all(isinstance(v, item_type) and not isinstance(v, bool) for v in value)
        return None if ok else f"must be a list of {item_type.__name__}"

    return check
