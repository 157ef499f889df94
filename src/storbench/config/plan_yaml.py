"""How a plan's YAML is read (pure): limits checked on YAML's event stream before anything is built from it (a
hostile plan could otherwise make the loader run for minutes or exhaust memory with a "billion laughs" of aliases,
or crash it with nesting), and the loader, whose booleans are YAML 1.2's (`PlanLoader`)."""

from __future__ import annotations

import re

import yaml

from storbench.errors import UserError

# Limits on a plan file, checked before it is built (a hostile plan could otherwise make the loader run for
# minutes or exhaust memory with a "billion laughs" of aliases, or crash it with nesting): real plans are a few
# kilobytes, a few levels deep, with a handful of aliases.
MAX_PLAN_BYTES = 256 * 1024
MAX_PLAN_DEPTH = 32
MAX_PLAN_ALIASES = 200
MAX_PLAN_NODES = 50_000  # with every alias expanded


def _limit(source_name: str, line: int, what: str, hint: str) -> UserError:
    return UserError(f"plan refused: {what}", where=f"{source_name}:{line}", hint=hint)


def check_yaml_limits(text: str, source_name: str) -> None:
    """Refuse, in one line and in milliseconds, a plan that is too large, too deep, has too many aliases or
    documents, or expands to too many nodes; checked on the YAML event stream (libyaml where present) before
    anything is built from it."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PLAN_BYTES:
        raise _limit(source_name, 1, f"it is larger than {MAX_PLAN_BYTES // 1024} KiB",
                     "a plan is a few kilobytes: sweep with lists, not by repeating cases")
    _scan(text, source_name, getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _scan(text: str, source_name: str, loader: type) -> None:
    """The limits on ``loader``'s event stream. Where libyaml finds a syntax error the plan's own loader (PyYAML's
    parser) may not (`%YAML 1.3`: libyaml refuses it, PyYAML warns and reads on), so its events are scanned then."""
    depth = aliases = documents = nodes = 0
    anchors: dict[str, int] = {}  # anchor -> nodes it stands for, aliases expanded
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, nodes so far) of each open collection
    try:
        for event in yaml.parse(text, Loader=loader):
            line = event.start_mark.line + 1 if event.start_mark else 1
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _limit(source_name, line, "it holds more than one YAML document ('---')",
                                 "one plan per file")
            elif isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_PLAN_DEPTH:
                    raise _limit(source_name, line, f"it nests deeper than {MAX_PLAN_DEPTH} levels",
                                 "plans are a few levels deep")
                open_nodes.append((event.anchor, 1))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                anchor, count = open_nodes.pop()
                if anchor is not None:
                    anchors[anchor] = count
                if open_nodes:
                    parent_anchor, parent_count = open_nodes[-1]
                    open_nodes[-1] = (parent_anchor, parent_count + count)
                nodes = max(nodes, count)
            elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                if isinstance(event, yaml.AliasEvent):
                    aliases += 1
                    if aliases > MAX_PLAN_ALIASES:
                        raise _limit(source_name, line, f"it uses more than {MAX_PLAN_ALIASES} aliases (*name)",
                                     "write the values out, or sweep with lists")
                    if event.anchor not in anchors:  # undefined, or the collection it sits in (recursive)
                        raise _limit(source_name, line, f"alias *{event.anchor} refers to no finished anchor "
                                     "(undefined or recursive)", "define &name before using *name, outside it")
                    count = anchors[event.anchor]
                else:
                    count = 1
                    if event.anchor is not None:
                        anchors[event.anchor] = 1
                if open_nodes:
                    parent_anchor, parent_count = open_nodes[-1]
                    open_nodes[-1] = (parent_anchor, parent_count + count)
                nodes = max(nodes, count)
            if (open_nodes and open_nodes[0][1] > MAX_PLAN_NODES) or nodes > MAX_PLAN_NODES:
                raise _limit(source_name, line, f"it expands to more than {MAX_PLAN_NODES:,} values once its "
                             "aliases are expanded", "write the plan without nested aliases")
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own limit (1000), hit while it reads ahead of its events
            mark = exc.problem_mark or exc.context_mark
            raise _limit(source_name, mark.line + 1 if mark else 1,
                         f"it nests deeper than {MAX_PLAN_DEPTH} levels", "plans are a few levels deep") from None
        if loader is not yaml.SafeLoader:  # what the plan's loader reads, scanned as it reads it
            _scan(text, source_name, yaml.SafeLoader)
        return  # a syntax error: the loader says where, with its hint
    except yaml.YAMLError as exc:  # not even YAML text (control characters, ...)
        raise UserError(f"not a YAML text: {exc}".splitlines()[0], where=f"{source_name}:1",
                        hint="a plan is a UTF-8 YAML file") from None


class PlanLoader(yaml.SafeLoader):
    """YAML as plans are read: true and false are the only booleans (YAML 1.2), so `on:` (a fault's key), `no` or
    `off` stay words instead of turning into booleans as YAML 1.1 would have them; and numbers are YAML 1.2's too:
    decimal whatever its leading zeros (`iodepth: [08, 016]` is 8 and 16; YAML 1.1 read 016 as octal 14), octal
    only as 0o17, hexadecimal as 0x1f, and no base 60 (YAML 1.1 read `1:30` as 90)."""


_REPLACED = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
PlanLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
PlanLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))
PlanLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(
    r"^(?:[-+]?[0-9][0-9_]*|[-+]?0o[0-7]+|[-+]?0x[0-9a-fA-F]+)$"), list("-+0123456789"))
PlanLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(  # YAML 1.1's, but for base 60
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))


def _whole_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """A YAML 1.2 integer: decimal (leading zeros too), 0o octal or 0x hexadecimal; underscores as YAML 1.1 let
    them be."""
    text = str(loader.construct_scalar(node)).replace("_", "")
    digits = text.lstrip("+-")
    try:
        value = (int(digits[2:], 8) if digits.startswith("0o") else int(digits[2:], 16) if digits.startswith("0x")
                 else int(digits, 10))
    except ValueError:
        raise yaml.constructor.ConstructorError(None, None, f"{text!r} is not a whole number",
                                                node.start_mark) from None
    return -value if text.startswith("-") else value


PlanLoader.add_constructor("tag:yaml.org,2002:int", _whole_number)
