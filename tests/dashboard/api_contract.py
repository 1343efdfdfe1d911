"""Checks a dashboard response TypedDict against the OpenAPI component schema it mirrors.

The dashboard reads the API's JSON through TypedDicts in `dashboard/api/`; nothing ties
them to the backend's pydantic models but this check. For every field a TypedDict
declares it asks three things of the schema: is there such a property, is it always sent
when the TypedDict requires it, and does every JSON type the API may send fit the field's
annotation (following `$ref`, `anyOf`, list items, dict values, enums against `Literal`,
and, for a nested TypedDict, that the API sends the component that TypedDict mirrors).
Fields the API sends but the dashboard does not declare are fine: the pages read only
what they draw.

"Always sent": FastAPI serializes every field of a response model, defaults included,
unless the route sets `response_model_exclude_unset/_defaults/_none`. So every property
of a component is always in the JSON, except in components such a route answers with
(`partial`, see `components_under`), where only required, non-nullable ones are.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, Union

Schema = Mapping[str, Any]
_REF_PREFIX = "#/components/schemas/"
_WRAPPERS = (NotRequired, Required)
# The JSON types a Python annotation accepts; an int fits a float field.
_SCALARS: dict[object, set[str]] = {
    str: {"string"},
    int: {"integer"},
    float: {"number", "integer"},
    bool: {"boolean"},
    type(None): {"null"},
}
_LISTS: set[object] = {list, tuple, Sequence}
_DICTS: set[object] = {dict, Mapping}


def _json_kind(value: object) -> str:
    """The JSON type of an enum or Literal value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else "string"


def required_keys(typed_dict: type) -> set[str]:
    """Keys a TypedDict requires. Python 3.11 computes `__required_keys__` wrongly when the
    module uses `from __future__ import annotations` (every key counts as required), so
    `NotRequired`/`Required` are read from the evaluated hints instead."""
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    total = bool(getattr(typed_dict, "__total__", True))
    wrapped = {key: typing.get_origin(hint) for key, hint in hints.items()}
    return {
        key
        for key, origin in wrapped.items()
        if origin is Required or (origin is not NotRequired and total)
    }


def _unwrap(hint: Any) -> Any:
    """The annotation without `NotRequired[...]` / `Required[...]`."""
    while typing.get_origin(hint) in _WRAPPERS:
        hint = typing.get_args(hint)[0]
    return hint


def _union(hint: Any) -> list[Any]:
    """The alternatives of `A | B | None` (one element for anything else)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return [alt for arg in typing.get_args(hint) for alt in _union(arg)]
    return [hint]


def _accepted(hint: Any) -> set[str] | None:
    """The JSON types one (non-union) annotation accepts; None for `Any`."""
    if hint is Any:
        return None
    origin = typing.get_origin(hint) or hint
    if origin is Literal:
        return {_json_kind(v) for v in typing.get_args(hint)}
    if typing.is_typeddict(hint) or origin in _DICTS:
        return {"object"}
    if origin in _LISTS:
        return {"array"}
    return _SCALARS.get(hint, set())


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


@dataclass(frozen=True)
class Contract:
    """The API's component schemas and which TypedDict mirrors which component."""

    components: Mapping[str, Schema]
    mirrors: Mapping[type, str]
    partial: frozenset[str] = frozenset()  # components some route sends with fields left out

    def check(self, typed_dict: type, component: str) -> list[str]:
        """Every way `typed_dict` disagrees with the component schema; [] when it fits."""
        schema = self.components[component]
        properties: Mapping[str, Schema] = schema.get("properties", {})
        required = set(schema.get("required", []))
        needed = required_keys(typed_dict)
        problems: list[str] = []
        for key, hint in typing.get_type_hints(typed_dict, include_extras=True).items():
            where = f"{typed_dict.__name__}.{key}"
            if key not in properties:
                close = difflib.get_close_matches(key, list(properties), n=1)
                hint_text = f" (renamed to {close[0]!r}?)" if close else ""
                problems.append(f"{where}: {component} has no field {key!r}{hint_text}")
                continue
            prop = properties[key]
            if (
                key in needed
                and component in self.partial
                and not self._always_sent(prop, key in required)
            ):
                problems.append(
                    f"{where}: {component} may leave it out; mark it NotRequired in the TypedDict"
                )
            problems += self._type_problems(_unwrap(hint), prop, where)
        return problems

    def _always_sent(self, prop: Schema, required: bool) -> bool:
        """In a component sent with fields left out, only a required property that cannot be
        None is always there (`exclude_none` drops a None even from a required field)."""
        kinds = [_kinds(alt) for alt, _ref in self._alternatives(prop)]
        return required and not any(k is None or "null" in k for k in kinds)

    def _resolve(self, schema: Schema) -> tuple[Schema, str | None]:
        """Follow `$ref` (and a lone `allOf`) to the schema; the component name if any."""
        ref: str | None = None
        while True:
            if "$ref" in schema:
                ref = str(schema["$ref"]).removeprefix(_REF_PREFIX)
                schema = self.components[ref]
            elif len(schema.get("allOf", ())) == 1:
                schema = schema["allOf"][0]
            else:
                return schema, ref

    def _alternatives(self, schema: Schema) -> Iterator[tuple[Schema, str | None]]:
        """Each schema the value may match, with the component it came from."""
        resolved, ref = self._resolve(schema)
        branches = resolved.get("anyOf") or resolved.get("oneOf")
        if not branches:
            yield resolved, ref
            return
        for branch in branches:
            yield from self._alternatives(branch)

    def _type_problems(self, hint: Any, schema: Schema, where: str) -> list[str]:
        """Every JSON type the API may send must fit the annotation. Alternatives of one
        JSON type (kernel rows by name or by group: two arrays) are met when the annotation
        fits one of them; the dashboard asks for the one it reads."""
        by_kind: dict[str | None, list[tuple[Schema, str | None]]] = {}
        for alt, ref in self._alternatives(schema):
            known = _kinds(alt)
            for kind in sorted(known) if known is not None else [None]:
                by_kind.setdefault(kind, []).append((alt, ref))
        problems: list[str] = []
        for kind, alternatives in by_kind.items():
            fits = [h for h in _union(hint) if (acc := _accepted(h)) is None or kind in acc]
            if kind is None and hint is not Any:
                problems.append(
                    f"{where}: the API leaves the type open, the field says {_name(hint)}"
                )
            elif not fits:
                problems.append(f"{where}: the API may send {kind}, the field is {_name(hint)}")
            else:
                found = [
                    self._inner_problems(fit, alt, ref, where)
                    for alt, ref in alternatives
                    for fit in fits
                ]
                if all(found):
                    problems += found[0]
        return problems

    def _inner_problems(self, hint: Any, schema: Schema, ref: str | None, where: str) -> list[str]:
        """What is inside one value: list items, dict values, TypedDict identity, enums."""
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Literal and "enum" in schema:
            extra = [v for v in schema["enum"] if v not in args]
            return [f"{where}: the API may send {extra}, not in {_name(hint)}"] if extra else []
        if typing.is_typeddict(hint):
            mirrored = self.mirrors.get(hint)
            if ref is None or ref == mirrored:
                return []  # a free-form object the dashboard knows more about, or a match
            return [f"{where}: the API sends {ref}, but {_name(hint)} mirrors {mirrored}"]
        if origin in _LISTS and args and "items" in schema:
            return self._type_problems(args[0], schema["items"], f"{where}[]")
        extra_values = schema.get("additionalProperties")
        if origin in _DICTS and len(args) == 2 and isinstance(extra_values, Mapping):
            return self._type_problems(args[1], extra_values, f"{where}{{}}")
        return []


def _kinds(schema: Schema) -> set[str] | None:
    """The JSON types a (resolved, non-union) schema allows; None when it says nothing."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    if "enum" in schema:
        return {_json_kind(v) for v in schema["enum"]}
    if "const" in schema:
        return {_json_kind(schema["const"])}
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    return None


def components_under(fragment: object, components: Mapping[str, Schema]) -> set[str]:
    """Every component a schema fragment refers to, directly or through other components."""
    found: set[str] = set()
    pending = [fragment]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
                name = ref.removeprefix(_REF_PREFIX)
                if name not in found:
                    found.add(name)
                    pending.append(components[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found
