"""Plan files: YAML -> a validated, typed ``PlanConfig``.

``schema`` declares what a plan may say, ``loading`` reads YAML with the line of every key and turns pydantic's
errors into one ``UserError`` naming file, line and key path, ``checks`` holds the rules that span several keys,
``source`` says where a plan came from. Every name of a module's ``__all__`` is re-exported here. Pure: takes text,
returns data.
"""

from storbench.config.design import *  # noqa: F403
from storbench.config.fio_checks import *  # noqa: F403
from storbench.config.lab import *  # noqa: F403
from storbench.config.loading import *  # noqa: F403
from storbench.config.repeat import *  # noqa: F403
from storbench.config.schema import *  # noqa: F403
from storbench.config.source import *  # noqa: F403
from storbench.config.targets import *  # noqa: F403
from storbench.config.telemetry import *  # noqa: F403
from storbench.config.values import *  # noqa: F403
from storbench.config.workload import *  # noqa: F403
