"""Patterns as text in builder syntax; a sub-pattern used more than once is named once.

    %0 = is_op("nn.conv2d")(wildcard(), wildcard())
    is_op("add")(is_op("nn.relu")(%0), is_op("nn.leaky_relu")(%0))

Naming shared sub-patterns shows which parts must bind the same expression node. A redirected
wildcard is named where it is made and redirected once its target is written, as it was built,
so a recursive pattern prints in finitely many lines:

    %0 = wildcard()
    %1 = is_op("cast")(%0)
    %0.redirect_to((%1 | is_op("nn.dense")(wildcard(), wildcard())))
    %1
"""

from __future__ import annotations

from ..visitor import post_order_from
from .nodes import DFPattern, WildcardPattern

__all__ = ["pattern_text"]


def _made_from(p: DFPattern) -> tuple[DFPattern, ...]:
    """The sub-patterns `p` was built from: a redirect is added later, so a wildcard has none."""
    return () if isinstance(p, WildcardPattern) else p.children()


def _is_redirected(p: DFPattern) -> bool:
    return isinstance(p, WildcardPattern) and p.redirect is not None


def _redirected(order: list[DFPattern]) -> dict[DFPattern, list[WildcardPattern]]:
    """Redirect target -> the wildcards redirected to it."""
    by_target: dict[DFPattern, list[WildcardPattern]] = {}
    for p in order:
        if _is_redirected(p):
            by_target.setdefault(p.redirect, []).append(p)
    return by_target


def _construction_order(root: DFPattern) -> list[DFPattern]:
    """Every sub-pattern once, each after what it is built from; redirect targets are roots too."""
    starts = [root]
    while True:
        order = list(post_order_from(starts, _made_from))
        targets = [t for t in _redirected(order) if t not in starts]
        if not targets:
            return order
        starts += targets


def pattern_text(root: DFPattern) -> str:
    """`root` as builder-syntax text, shared sub-patterns first as numbered `%n = ...` lines."""
    order = _construction_order(root)
    redirects = _redirected(order)
    uses = {target: len(wildcards) for target, wildcards in redirects.items()}
    for node in order:
        for child in _made_from(node):
            uses[child] = uses.get(child, 0) + 1
    text: dict[DFPattern, str] = {}
    lines: list[str] = []
    names = 0
    for node in order:
        rendered = node._render(text.__getitem__)
        if uses.get(node, 0) > (0 if node is root else 1) or _is_redirected(node):
            lines.append(f"%{names} = {rendered}")
            rendered = f"%{names}"
            names += 1
        text[node] = rendered
        ready = [w for w in redirects.get(node, ()) if w in text]
        if _is_redirected(node) and node.redirect in text:
            ready.append(node)
        lines += [f"{text[w]}.redirect_to({text[w.redirect]})" for w in ready]
    return "\n".join([*lines, text[root]])
