"""Plan files: YAML -> a validated, typed ``PlanConfig``.

Every problem becomes one ``UserError`` that names the file, the line and the key path, says what
is wrong and, where it can, how to fix it ("did you mean 'iodepth'?"). Pure: takes text, returns data.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace

import yaml
from pydantic import BaseModel, BeforeValidator, ValidationError

from storbench.config import values
from storbench.config.checks import (
    _check_adaptive,
    _check_engines,
    _check_lab,
    _check_search,
    _check_shared_directories,
    _check_steady_state,
    _check_writes,
)
from storbench.config.fio_checks import check_fio_meanings, check_fio_options
from storbench.config.operation_checks import _check_metadata, _check_objects, _check_trim, _check_volume_operations
from storbench.config.plan_yaml import PlanLoader, check_yaml_limits
from storbench.config.schema import PlanConfig
from storbench.config.source import KeyPath, PlanSource, format_key_path
from storbench.config.targets import DNS_LABEL_RE, TARGET_KINDS, PvcTargetConfig, _target_tag
from storbench.config.values import SAFE_NAME_RE
from storbench.config.workload import workload_key_hint
from storbench.errors import UserError, did_you_mean
from storbench.units import format_bytes, format_duration

__all__ = ["LoadedPlan", "load_plan_text", "with_namespace"]


@dataclass(frozen=True)
class LoadedPlan:
    config: PlanConfig
    source: PlanSource


def _key_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], source: str) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = (*path, key)
            if key in seen:
                raise UserError(
                    f"key '{key}' appears twice",
                    where=f"{source}:{key_node.start_mark.line + 1}: {format_key_path(child)}",
                    hint="remove one of them",
                )
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _key_lines(value_node, child, lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _key_lines(item, (*path, index), lines, source)


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The one schema model an annotation holds (itself, or inside Optional, Annotated, a list or a mapping's
    values); None for none, or several (a union of kinds)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    found = {m for arg in typing.get_args(annotation) if (m := _model_in(arg)) is not None}
    return found.pop() if len(found) == 1 else None


def _model_at(key_path: KeyPath, data: object) -> type[BaseModel] | None:
    """The schema model that owns the mapping at ``key_path`` (for "did you mean"): a target's by its kind, any
    other found from PlanConfig down its fields' types."""
    if len(key_path) >= 2 and key_path[0] == "targets" and isinstance(data, Mapping):
        targets = data.get("targets")
        if isinstance(targets, Mapping):
            target = targets.get(key_path[1])
            if isinstance(target, Mapping) and target.get("kind") in TARGET_KINDS:
                model: type[BaseModel] | None = TARGET_KINDS[str(target.get("kind"))]
                for part in key_path[2:]:
                    field = model.model_fields.get(str(part)) if model is not None else None
                    model = _model_in(field.annotation) if field is not None else None
                return model
        return None
    model = PlanConfig
    for part in key_path:
        if isinstance(part, int):
            continue  # an item of a list: the list's own model
        field = model.model_fields.get(part)
        found = _model_in(field.annotation) if field is not None else None
        if found is None:
            return None
        model = found
    return model


_PREFIXES = ("Value error, ", "Assertion failed, ")


def _translate(error: Mapping[str, object], data: object, source: PlanSource) -> UserError:
    raw_loc = error.get("loc", ())
    loc: KeyPath = tuple(p for p in raw_loc if isinstance(p, str | int)) if isinstance(raw_loc, tuple) else ()
    kind = str(error.get("type", ""))
    message = str(error.get("msg", "invalid value"))
    for prefix in _PREFIXES:
        message = message.removeprefix(prefix)
    # pydantic puts the union tag into the location of a target's fields; people never wrote it.
    if len(loc) >= 3 and loc[0] == "targets" and loc[2] in TARGET_KINDS:
        loc = (*loc[:2], *loc[3:])
    loc = _written_location(data, loc, keep_missing_key=kind == "missing")
    hint = ""
    if kind == "extra_forbidden":
        parent, key = loc[:-1], str(loc[-1])
        model = _model_at(parent, data)
        message = f"unknown key '{key}'"
        if model is not None and model.model_fields:
            hint = (workload_key_hint(parent, key) or did_you_mean(key, list(model.model_fields))
                    or "known keys: " + ", ".join(model.model_fields))
        elif model is not None:
            hint = "it takes no keys here"
    elif kind == "missing":
        message = f"required key '{loc[-1]}' is missing"
        model = _model_at(loc[:-1], data)
        field = model.model_fields.get(str(loc[-1])) if model else None
        if field is not None and field.description:
            text = field.description
            hint = "add it: " + (text[0].lower() + text[1:] if text[1:2].islower() else text)
    elif kind == "target_kind":
        target = _lookup(data, loc)
        tag = _target_tag(target)
        written = target.get("kind") if isinstance(target, Mapping) else None
        message = (f"unknown target kind {tag!r}" if tag else
                   "a target is a mapping with a kind, e.g. {kind: path, path: /mnt/test}" if not isinstance(
                       target, Mapping) else
                   "the target has no 'kind'" if written is None else f"kind {written!r} is not a target kind")
        hint = did_you_mean(tag or "", list(TARGET_KINDS)) or "kinds: " + ", ".join(TARGET_KINDS)
    elif kind == "literal_error":
        ctx = error.get("ctx")
        expected = str(ctx.get("expected", "")) if isinstance(ctx, Mapping) else ""
        given = error.get("input")
        message = f"{given!r} is not allowed"
        choices = re.findall(r"'([^']+)'", expected)
        hint = (did_you_mean(str(given), choices) if isinstance(given, str) else "") or f"one of: {expected}"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        message = f"expected a mapping of keys, got {error.get('input')!r}"
        model = _model_at(loc, data)
        if model is not None:
            hint = "keys: " + ", ".join(model.model_fields)
    elif kind in ("int_parsing", "int_type", "int_from_float", "float_parsing", "float_type", "bool_parsing",
                  "bool_type"):
        given = _lookup(data, loc) if loc else error.get("input")
        wanted = {"int": "a whole number", "float": "a number", "bool": "true or false"}[kind.split("_")[0]]
        message = f"{given!r} is not {wanted}"
        hint = "e.g. 4" if wanted == "a whole number" else "e.g. 0.5" if wanted == "a number" else "true or false"
    elif kind == "string_type" and loc and isinstance(loc[-1], int) and isinstance(_lookup(data, loc), Mapping):
        message = f"the name {loc[-1]} is a number, and a name is text"  # a mapping's key, as `targets: {1: ...}`
        hint = f"quote it: '{loc[-1]}'"
    elif kind == "string_type":
        given = _lookup(data, loc) if loc else error.get("input")
        message = f"expected text, got {given!r}" if not hasattr(given, "isoformat") else \
            f"{given} was read as a date, not text"
        hint = "quote it: '...'"
    elif kind == "list_type":
        given = error.get("input")
        message = f"{message}, got {given!r}"
        if loc and isinstance(given, str | int | float | Mapping):
            shown = yaml.safe_dump(given, default_flow_style=True, width=1000).strip().removesuffix("\n...")
            hint = f"make it a list: {loc[-1]}: [{shown.removesuffix('...').strip()}]"
    elif kind == "finite_number":
        hint = "e.g. 4"
    elif kind == "value_error" and message.endswith(" is listed twice"):
        hint = "list each value once"
    elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        ctx = error.get("ctx")
        bound = next(iter(ctx.values()), None) if isinstance(ctx, Mapping) and ctx else None
        where = {"greater_than_equal": "at least", "less_than_equal": "at most", "greater_than": "more than",
                 "less_than": "less than"}[kind]
        written = _lookup(data, loc)
        unit = _unit_of(loc, data)
        if unit is not None and isinstance(bound, int | float):  # said as the plan writes it, not as stored
            shown = unit(float(bound))
            message = f"{written!r} is not {where} {shown}"
            hint = f"give {where} {shown}"
            if unit is _as_percent and isinstance(written, int | float) and written > 1:
                hint = f"write {written:g}% for {written:g} percent: a plain number is a fraction"
        else:
            message = f"{message}, got {error.get('input')!r}"
            hint = f"give {where} {bound}" if bound is not None else ""
    return UserError(message, where=source.where(loc), hint=hint)


def _as_percent(fraction: float) -> str:
    return f"{100 * fraction:g}%"


def _unit_of(loc: KeyPath, data: object) -> typing.Callable[[float], str] | None:
    """How the value at ``loc`` is written in a plan when its schema stores it in other units: a fraction as a
    percent, seconds as a duration (1h), bytes as a size; None for a plain number."""
    model = _model_at(loc[:-1], data) if loc else None
    field = model.model_fields.get(str(loc[-1])) if model is not None and isinstance(loc[-1], str) else None
    if field is None:
        return None
    found = _validators(field.annotation) | _validators(field.metadata)
    units: dict[typing.Callable[[object], object], typing.Callable[[float], str]] = {
        values._fraction: _as_percent, values._duration: format_duration, values._size: format_bytes}
    return next((unit for validator, unit in units.items() if validator in found), None)


def _validators(annotation: object) -> set[object]:
    """The functions of every BeforeValidator inside an annotation (Annotated, Optional, unions, lists)."""
    found: set[object] = set()
    for part in (annotation if isinstance(annotation, list) else [annotation]):
        if isinstance(part, BeforeValidator):
            found.add(part.func)
        for arg in (*typing.get_args(part), *getattr(part, "__metadata__", ())):
            found |= _validators(arg)
    return found


def _written_location(data: object, loc: KeyPath, *, keep_missing_key: bool) -> KeyPath:
    """The location as the user wrote it: pydantic adds union tags ('path', 'str', ...) and the index 0 of
    sweep values we wrapped in a list. Keep only parts that exist in the data, and a final missing key."""
    kept: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            kept.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            kept.append(part)
        elif keep_missing_key and index == len(loc) - 1 and isinstance(part, str) and isinstance(node, Mapping):
            kept.append(part)  # a missing key: the user did not write it, but it belongs there
    return tuple(kept)


def _lookup(data: object, loc: KeyPath) -> object:
    node = data
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return None
    return node


def with_namespace(loaded: LoadedPlan, namespace: str | None) -> LoadedPlan:
    """The plan with every pvc target's pods, claims and config maps in ``namespace`` (the operator's `-n`, which
    a plan does not override); None: as the plan says."""
    if namespace is None:
        return loaded
    if not DNS_LABEL_RE.fullmatch(namespace):
        raise UserError(f"namespace {namespace!r} is not a DNS label", hint="lowercase letters, digits and '-'")
    targets = {name: target.model_copy(update={"namespace": namespace}) if isinstance(target, PvcTargetConfig)
               else target for name, target in loaded.config.targets.items()}
    levels = sorted({t.pod_security for t in targets.values() if isinstance(t, PvcTargetConfig)})
    if len(levels) > 1:  # one namespace now holds them all, and a namespace storbench makes enforces one level
        raise UserError(f"-n {namespace} puts pvc targets with pod_security {' and '.join(levels)} in one namespace",
                        hint="give them the same pod_security, or run them without -n (each in its own namespace)")
    return replace(loaded, config=loaded.config.model_copy(update={"targets": targets}))


def load_plan_text(text: str, source_name: str) -> LoadedPlan:
    """Parse and validate a plan. Raises ``UserError`` with file, line and key path."""
    check_yaml_limits(text, source_name)
    try:
        root = yaml.compose(text, Loader=PlanLoader)
    except RecursionError:  # the limits above should have refused it first
        raise UserError("the plan nests too deeply to read", where=f"{source_name}:1",
                        hint="plans are a few levels deep") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise UserError(
            f"YAML syntax error: {exc.problem or exc}",
            where=f"{source_name}:{line}",
            hint="check indentation and that every 'key: value' has a space after the colon",
        ) from None
    except yaml.YAMLError as exc:  # not marked: the reader's (control characters, bad encoding)
        raise UserError(f"not a YAML text: {exc}".splitlines()[0], where=f"{source_name}:1",
                        hint="a plan is a UTF-8 YAML file") from None
    if root is None:
        raise UserError("the plan is empty", where=f"{source_name}:1", hint="storbench example quickstart shows one")
    lines: dict[KeyPath, int] = {}
    _key_lines(root, (), lines, source_name)
    source = PlanSource(path=source_name, text=text, lines=lines)
    try:
        data = yaml.load(text, Loader=PlanLoader)  # PlanLoader is a SafeLoader
    except yaml.MarkedYAMLError as exc:  # constructor errors (bad tags, ...)
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise UserError(f"YAML error: {exc.problem or exc.context}", where=f"{source_name}:{line}",
                        hint="plans are plain YAML: no tags such as !!python") from None
    except yaml.YAMLError as exc:
        raise UserError(f"not a YAML text: {exc}".splitlines()[0], where=f"{source_name}:1",
                        hint="a plan is a UTF-8 YAML file") from None
    if not isinstance(data, Mapping):
        raise UserError(
            "a plan must be a mapping of keys (name, targets, workload, ...)",
            where=f"{source_name}:1",
            hint="storbench example quickstart shows one",
        )
    for key in data:
        if not isinstance(key, str):
            raise UserError(f"key {key!r} is not a string", where=source.where(()))
    try:
        config = PlanConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # an unknown key first: `{kind: path, dir: ...}` is a misspelt `path`, not a missing one
        first = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
        raise _translate(dict(first), data, source) from None
    for name in config.targets:
        if not SAFE_NAME_RE.fullmatch(name):
            raise UserError(f"target name {name!r} must be letters, digits, '_', '.' or '-'",
                            where=source.where(("targets", name)), hint="rename the target, e.g. 'my-disk'")
    check_fio_options(config.workload.fio, source)
    check_fio_meanings(config, source)
    _check_engines(config, source)
    _check_lab(config, source)
    _check_adaptive(config, source)
    _check_steady_state(config, source)
    _check_search(config, source)
    _check_metadata(config, source)
    _check_trim(config, source)
    _check_objects(config, source)
    _check_volume_operations(config, source)
    _check_shared_directories(config, source)
    _check_writes(config, source)
    return LoadedPlan(config=config, source=source)
