"""Converter of ONNX `Einsum`: contractions lowered to `nn.matmul` (`nn.dense` for a constant 2-D right
operand) with the transposes and reshapes around it; a lone operand becomes sums and a transpose.

    "bhqd,bhkd->bhqk"   nn.matmul(A, B, transpose_b=True)
    "bqhd,bkhd->bhqk"   nn.matmul(transpose(A), transpose(B), transpose_b=True)
    "bsd,hd->bsh"       nn.dense(A, W) for a constant W, else nn.matmul(A, B, transpose_b=True)

Each term names its operand's axes; `...` stands for the axes a term leaves unnamed, aligned from
the right across terms. Without `->` the output is the `...` axes, then the labels used once, in
alphabetical order. A label of one operand that the rest of the equation does not use is summed
first; a label of both operands is a batch axis where the output (or a later operand) keeps it and
is contracted where not. More than two operands are contracted left to right. A label repeated
within one term (a diagonal or a trace) is not supported.
"""

from __future__ import annotations

import math
import string
from typing import Any, Callable, Sequence

import numpy as np

from ..expr import Expr
from ..types import Dim
from .errors import FrontendError
from .import_context import NodeContext, converter

Labels = list[str]


def _parse(equation: str, ranks: Sequence[int]) -> tuple[list[Labels], Labels]:
    """Each operand's labels and the output's, with `...` spelled out as letters the equation leaves unused."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise FrontendError(f"Einsum {equation!r} has {len(terms)} term(s) for {len(ranks)} input(s)")
    for term in terms + ([rhs] if arrow else []):
        letters = term.replace("...", "", 1)
        if not all(c in string.ascii_letters for c in letters):
            raise FrontendError(f"Einsum {equation!r}: term {term!r} has characters other than letters and one '...'")
        repeated = sorted({c for c in letters if letters.count(c) > 1})
        if repeated:
            raise FrontendError(f"Einsum {equation!r}: label(s) {repeated} repeat within term {term!r} (a diagonal "
                                f"or trace), which is not supported")
    named = [len(t.replace("...", "")) for t in terms]
    ellipsis_ranks = [r - n if "..." in t else 0 for t, r, n in zip(terms, ranks, named)]
    if any(n + e != r or e < 0 for n, e, r in zip(named, ellipsis_ranks, ranks)):
        raise FrontendError(f"Einsum {equation!r}: the terms name {named} axes but the inputs have ranks {list(ranks)}")
    unused = [c for c in string.ascii_letters if c not in equation]
    broadcast = unused[:max(ellipsis_ranks, default=0)]
    operands = [_spell_out(t, broadcast[len(broadcast) - e:]) for t, e in zip(terms, ellipsis_ranks)]
    if arrow:
        output = _spell_out(rhs, broadcast)
    else:
        flat = [c for labels in operands for c in labels]
        output = broadcast + sorted(c for c in set(flat) - set(broadcast) if flat.count(c) == 1)
    missing = sorted(set(output) - {c for labels in operands for c in labels})
    if missing:
        raise FrontendError(f"Einsum {equation!r}: output label(s) {missing} appear in no input term")
    return operands, output


def _spell_out(term: str, broadcast: Labels) -> Labels:
    head, dots, tail = term.partition("...")
    return list(head) + (broadcast if dots else []) + list(tail)


def _swapped(labels: Labels, kept: Labels, first: Labels, second: Labels) -> bool:
    """Whether `labels` are `kept` + `second` + `first` (and not already in the order `kept` + `first` + `second`)."""
    return labels == kept + second + first != kept + first + second


class _Lowering:
    """The IR of one Einsum node, built with constants folded (a constant weight stays a constant)."""

    def __init__(self, ctx: NodeContext, equation: str):
        self.ctx, self.equation = ctx, equation

    def apply(self, x: Expr, op: str, fold: Callable[[np.ndarray], np.ndarray], **attrs: Any) -> Expr:
        """`op` on `x`, or `fold` on its value when `x` is a constant."""
        value = self.ctx.constant_value(x)
        return self.ctx.const(fold(value)) if value is not None else self.ctx.call(op, x, **attrs)

    def sum_out(self, x: Expr, labels: Labels, keep: set[str]) -> tuple[Expr, Labels]:
        """`x` summed over the labels outside `keep`."""
        axes = [i for i, c in enumerate(labels) if c not in keep]
        if not axes:
            return x, labels
        x = self.apply(x, "sum", lambda v: v.sum(axis=tuple(axes)), axis=axes)
        return x, [c for c in labels if c in keep]

    def transpose(self, x: Expr, labels: Labels, order: Labels) -> Expr:
        perm = [labels.index(c) for c in order]
        if perm == sorted(perm):
            return x
        return self.apply(x, "transpose", lambda v: np.transpose(v, perm), axes=perm)

    def sizes(self, x: Expr, labels: Labels) -> dict[str, Dim]:
        return dict(zip(labels, self.ctx.type_of(x).shape))

    def reshape(self, x: Expr, kept: int, groups: Sequence[Labels], sizes: dict[str, Dim]) -> Expr:
        """`x` with its first `kept` axes unchanged and the rest reshaped to one axis per group."""
        dims = []
        for group in groups:
            group_sizes = [sizes[c] for c in group]
            dims.append(math.prod(group_sizes) if all(isinstance(d, int) for d in group_sizes) else -1)
        if dims.count(-1) > 1:
            raise FrontendError(f"Einsum {self.equation!r}: merging axes {[''.join(g) for g in groups]} needs "
                                f"static sizes, got {self.ctx.type_of(x).shape_str()}")
        newshape = [0] * kept + dims
        return self.apply(x, "reshape", lambda v: v.reshape([v.shape[i] for i in range(kept)] + dims),
                          newshape=newshape)

    def arrange(self, x: Expr, labels: Labels, kept: Labels, groups: Sequence[Labels]) -> Expr:
        """`x` transposed to `kept` + the groups, each group merged into one axis."""
        sizes = self.sizes(x, labels)
        x = self.transpose(x, labels, kept + [c for g in groups for c in g])
        return x if all(len(g) == 1 for g in groups) else self.reshape(x, len(kept), groups, sizes)

    def contract(self, a: Expr, la: Labels, b: Expr, lb: Labels, keep: set[str]) -> tuple[Expr, Labels]:
        """The product of two operands over their shared labels outside `keep`; result labels are
        the batch labels, then A's free labels, then B's."""
        a, la = self.sum_out(a, la, keep | set(lb))
        b, lb = self.sum_out(b, lb, keep | set(la))
        batch = [c for c in la if c in lb and c in keep]
        contracted = [c for c in la if c in lb and c not in keep]
        a_free = [c for c in la if c not in lb]
        b_free = [c for c in lb if c not in la]
        sizes = {**self.sizes(b, lb), **self.sizes(a, la)}
        leading = [] if batch else a_free[:-1]  # without batch axes these stay: they broadcast against a 2-D B
        kept, m_group = batch + leading, a_free[len(leading):]
        weight = not batch and self.ctx.constant_value(b) is not None
        # an operand laid out with its two groups swapped is read transposed by the matmul, not moved
        transpose_a = not weight and _swapped(la, kept, m_group, contracted)
        a = self.arrange(a, la, kept, [contracted, m_group] if transpose_a else [m_group, contracted])
        transpose_b = weight or _swapped(lb, batch, contracted, b_free)  # nn.dense takes its weight as [N, K]
        b = self.arrange(b, lb, batch, [b_free, contracted] if transpose_b else [contracted, b_free])
        if weight:
            out = self.ctx.call("nn.dense", a, b)
        else:
            out = self.ctx.call("nn.matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)
        if len(m_group) != 1 or len(b_free) != 1:
            out = self.reshape(out, len(kept), [[c] for c in m_group + b_free], sizes)
        return out, batch + a_free + b_free


@converter("Einsum")
def convert_einsum(ctx: NodeContext) -> Expr:
    operands = ctx.inputs()
    equation = ctx.attr("equation")
    labels, output = _parse(equation, [ctx.type_of(x).ndim for x in operands])
    lowering = _Lowering(ctx, equation.replace(" ", ""))
    result, result_labels = lowering.sum_out(operands[0], labels[0], set(output).union(*labels[1:]))
    for i in range(1, len(operands)):
        keep = set(output).union(*labels[i + 1:])
        result, result_labels = lowering.contract(result, result_labels, operands[i], labels[i], keep)
    return lowering.transpose(result, result_labels, output)
