"""Plan files: YAML -> a validated, typed ``PlanConfig``.

``schema`` declares what a plan may say, ``loading`` reads YAML with the line of every key and turns pydantic's
errors into one ``UserError`` naming file, line and key path, ``checks`` holds the rules that span several keys,
``source`` says where a plan came from. Pure: takes text, returns data.
"""

from storbench.config.design import (
    design_changes,
    plan_design,
    stopping_rule_fields,
)
from storbench.config.fio_checks import (
    check_fio_options,
)
from storbench.config.lab import (
    CephLabConfig,
    HostsConfig,
    HostsLabConfig,
    K8sLabConfig,
    LabConfig,
    NfsLabConfig,
    VolumeLabConfig,
)
from storbench.config.loading import (
    LoadedPlan,
    load_plan_text,
)
from storbench.config.repeat import (
    CI_STOP_CONFIDENCE,
    CI_STOP_MIN_ROUNDS,
    CompareConfig,
    RepeatConfig,
    SearchConfig,
    SteadyStateConfig,
)
from storbench.config.schema import PlanConfig, repeat_bounds, run_order
from storbench.config.source import (
    KeyPath,
    PlanSource,
    format_key_path,
)
from storbench.config.targets import (
    DNS_LABEL_RE,
    IMAGE_RE,
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    TARGET_KINDS,
    BlockTargetConfig,
    CephfsTargetConfig,
    ExpectConfig,
    NfsTargetConfig,
    PathTargetConfig,
    PreconditionConfig,
    PvcTargetConfig,
    RbdTargetConfig,
    S3TargetConfig,
    TargetConfig,
)
from storbench.config.telemetry import (
    DEFAULT_PROCESSES,
    METRIC_NAME_RE,
    PROCESS_NAME_RE,
    PrometheusConfig,
    TelemetryConfig,
)
from storbench.config.values import (
    FIO_OPTION_NAME_RE,
    MANAGED_FIO_OPTIONS,
    SAFE_NAME_RE,
    SAFE_PATH_RE,
    Duration,
    FioScalar,
    RwPattern,
    Size,
    StrictModel,
    Sweep,
)
from storbench.config.workload import WorkloadConfig, fio_value_text

__all__ = [
    "CI_STOP_CONFIDENCE",
    "CI_STOP_MIN_ROUNDS",
    "DEFAULT_PROCESSES",
    "DNS_LABEL_RE",
    "FIO_OPTION_NAME_RE",
    "IMAGE_RE",
    "LABEL_KEY_RE",
    "LABEL_VALUE_RE",
    "MANAGED_FIO_OPTIONS",
    "METRIC_NAME_RE",
    "PROCESS_NAME_RE",
    "SAFE_NAME_RE",
    "SAFE_PATH_RE",
    "TARGET_KINDS",
    "BlockTargetConfig",
    "CephLabConfig",
    "CephfsTargetConfig",
    "CompareConfig",
    "Duration",
    "ExpectConfig",
    "FioScalar",
    "HostsConfig",
    "HostsLabConfig",
    "K8sLabConfig",
    "KeyPath",
    "LabConfig",
    "LoadedPlan",
    "NfsLabConfig",
    "NfsTargetConfig",
    "PathTargetConfig",
    "PlanConfig",
    "PlanSource",
    "PreconditionConfig",
    "PrometheusConfig",
    "PvcTargetConfig",
    "RbdTargetConfig",
    "RepeatConfig",
    "RwPattern",
    "S3TargetConfig",
    "SearchConfig",
    "Size",
    "SteadyStateConfig",
    "StrictModel",
    "Sweep",
    "TargetConfig",
    "TelemetryConfig",
    "VolumeLabConfig",
    "WorkloadConfig",
    "check_fio_options",
    "design_changes",
    "fio_value_text",
    "format_key_path",
    "load_plan_text",
    "plan_design",
    "repeat_bounds",
    "run_order",
    "stopping_rule_fields",
]
