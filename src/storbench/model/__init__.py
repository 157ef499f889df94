"""Typed data that flows through the pure core. Frozen, with units in the field names.

``operations`` (directions, statuses, fio's rw patterns), ``target`` (the target union), ``lab_point`` (the test
beds a case runs on), ``case`` (workload point, case, precondition), ``measure`` (fio output, histograms, outcomes)
and ``stored`` (what the store gives back). Every name of a module's ``__all__`` is re-exported here: import from
``storbench.model``."""

from storbench.model.case import *  # noqa: F403
from storbench.model.lab_point import *  # noqa: F403
from storbench.model.measure import *  # noqa: F403
from storbench.model.operations import *  # noqa: F403
from storbench.model.stored import *  # noqa: F403
from storbench.model.target import *  # noqa: F403
