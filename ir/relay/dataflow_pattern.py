"""`relay.dataflow_pattern`: the pattern language under its TVM name (see `ir.dataflow_pattern`)."""

from ..dataflow_pattern import *  # noqa: F401,F403
from ..dataflow_pattern import __all__  # noqa: F401
