"""A declarative rule's left sides as dataflow patterns, for explaining and tracing matches.

`call(op, ...)` becomes `is_op(op)(...)` with its literal attributes as `has_attr`; one pattern
variable becomes one `wildcard()` object wherever it is used (so it must meet one class, as in
the rule's query); `const_pat` and a literal become `is_constant()` (a literal's value, attribute
variables (`avar`) and dtype groups are not patterns: they are checked when the rule fires), and a
`many` tuple, of no fixed size, a `wildcard()`. One difference: the walk also tries the two
arguments of `add` and `multiply` swapped, which the rule's query does not.
"""

from __future__ import annotations

from ir.dataflow_pattern import DFPattern, is_constant, is_op, is_tuple, is_tuple_get_item, wildcard

from .callback import CallbackRule
from .pattern import AVar, Pat, PCall, PConst, PGetItem, PMany, PTuple, PVar
from .rule import Rewrite, Rule

__all__ = ["left_sides"]


def left_sides(rule: Rule) -> tuple[DFPattern, ...]:
    """The patterns a rule matches, one per root (empty for a rule of another kind)."""
    if isinstance(rule, CallbackRule):
        return (rule.callback.pattern,)
    if not isinstance(rule, Rewrite):
        return ()
    shared: dict[str, DFPattern] = {}

    def convert(p: Pat) -> DFPattern:
        if isinstance(p, PVar):
            return shared.setdefault(p.name, wildcard())
        if isinstance(p, PConst):
            return shared.setdefault(p.name, is_constant())
        if isinstance(p, PCall):
            out: DFPattern = is_op(p.op)(*(convert(a) for a in p.args))
            literal = {k: v for k, v in p.attrs if not isinstance(v, AVar) and not callable(v)}
            return out.has_attr(literal) if literal else out
        if isinstance(p, PTuple):
            return is_tuple([convert(f) for f in p.fields])
        if isinstance(p, PGetItem):
            return is_tuple_get_item(convert(p.tup), p.index)
        if isinstance(p, PMany):
            return wildcard()
        raise TypeError(f"{rule.name}: cannot read left side {p!r}")

    return tuple(convert(p) for p in rule.lhs)
