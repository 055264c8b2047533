"""Converter of ONNX control flow: `If`, whose branches are subgraphs that see the outer values."""

from __future__ import annotations

from ..expr import Expr, If, Tuple
from .errors import FrontendError
from .import_context import NodeContext, converter


@converter("If")
def convert_if(ctx: NodeContext) -> list[Expr]:
    branches = [ctx.graph.import_subgraph(ctx.attr(key)) for key in ("then_branch", "else_branch")]
    if not len(branches[0]) == len(branches[1]) == ctx.num_outputs:
        raise FrontendError(f"the branches return {len(branches[0])} and {len(branches[1])} values "
                            f"for {ctx.num_outputs} outputs")
    bodies = [outs[0] if len(outs) == 1 else Tuple(outs) for outs in branches]
    result = ctx.typed(If(ctx.input(0), *bodies))
    if ctx.num_outputs == 1:
        return [result]
    return [ctx.item(result, i) for i in range(ctx.num_outputs)]
