"""The plan reference's tables (pure): a model's keys with their defaults and meanings, a Ceph option's grammar."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from storbench.model.ceph_options import CephOption
from storbench.units import format_bytes

SWEEPABLE = {"rw", "rwmixread", "bs", "iodepth", "numjobs", "runtime", "ramp", "direct", "ioengine", "files",
             "file_size", "dirs", "objects", "osds",
             "osd_size", "objectstore", "pool_size", "cache_size", "osd_memory_target", "osd_cpus", "osd_cpuset",
             "db_device", "osds_per_device"}


def option_grammar(option: CephOption) -> str:
    if option.kind == "choice":
        return " \\| ".join(f"`{c}`" for c in option.choices)
    if option.kind == "bool":
        return "`true` \\| `false`"
    def shown(value: float) -> str:
        return format_bytes(int(value)) if option.kind == "size" else f"{value:g}" if option.kind == "float" \
            else str(int(value))

    low, high = option.minimum, option.maximum
    bounds = (f"{shown(low)} to {shown(high)}" if low is not None and high is not None
              else f">= {shown(low)}" if low is not None else f"<= {shown(high)}" if high is not None else "")
    return option.kind + (f" ({bounds})" if bounds else "")


def _default(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        made = field.default_factory()  # type: ignore[call-arg]
        if isinstance(made, BaseModel):
            return "see below"
        return "`" + repr(made) + "`"
    if field.default is PydanticUndefined:
        return ""
    value = field.default
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return f"`{value!r}`" if value == "" else f"`{value}`"


def table(model: type[BaseModel], sweep: bool = False) -> list[str]:
    lines = ["| key | default | meaning |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        description = (field.description or "").replace("|", "\\|")
        if sweep and name in SWEEPABLE:
            description += " A list sweeps."
        lines.append(f"| `{field.alias or name}` | {_default(model, name)} | {description} |")
    return lines
