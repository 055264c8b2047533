"""Float predicates: `isnan`, `isinf`, `isfinite` (TVM's names), each a bool tensor of its input's shape.

Exporters write them where a value is checked before use, e.g. PyTorch's export of
`scaled_dot_product_attention` guards its softmax against rows that are all `-inf`.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..types import TensorType, Type
from .registry import OpPattern, register_op
from .tensor import float_unary_rel


def float_predicate_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = float_unary_rel(args, attrs)
    return TensorType(data.shape, "bool")


for _name, _doc in (("isnan", "x is NaN"), ("isinf", "x is +inf or -inf"), ("isfinite", "x is neither NaN nor infinite")):
    register_op(_name, ["data"], float_predicate_rel, OpPattern.ELEMWISE, doc=f"True where {_doc}.")
