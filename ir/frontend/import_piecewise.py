"""Converters of ONNX's piecewise activations and InstanceNormalization to `ir.op.piecewise` ops."""

from __future__ import annotations

from ..expr import Expr
from ..op.piecewise import SELU_ALPHA, SELU_GAMMA
from .import_context import NodeContext, converter


@converter("Elu")
def convert_elu(ctx: NodeContext) -> Expr:
    return ctx.call("nn.elu", ctx.input(0), alpha=ctx.attr("alpha", 1.0))


@converter("Selu")
def convert_selu(ctx: NodeContext) -> Expr:
    return ctx.call("nn.selu", ctx.input(0), alpha=ctx.attr("alpha", SELU_ALPHA), gamma=ctx.attr("gamma", SELU_GAMMA))


@converter("Celu")
def convert_celu(ctx: NodeContext) -> Expr:
    return ctx.call("nn.celu", ctx.input(0), alpha=ctx.attr("alpha", 1.0))


@converter("Shrink")
def convert_shrink(ctx: NodeContext) -> Expr:
    return ctx.call("nn.shrink", ctx.input(0), lambd=ctx.attr("lambd", 0.5), bias=ctx.attr("bias", 0.0))


@converter("InstanceNormalization")
def convert_instance_norm(ctx: NodeContext) -> Expr:
    return ctx.call("nn.instance_norm", ctx.input(0), ctx.input(1), ctx.input(2), axis=1,
                    epsilon=ctx.attr("epsilon", 1e-5))
