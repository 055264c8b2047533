"""Patterns as text in builder syntax; a sub-pattern used more than once is named once.

    %0 = is_op("nn.conv2d")(wildcard(), wildcard())
    is_op("add")(is_op("nn.relu")(%0), is_op("nn.leaky_relu")(%0))

Naming shared sub-patterns shows which parts must bind the same expression node.
"""

from __future__ import annotations

from ..visitor import post_order
from .nodes import DFPattern

__all__ = ["pattern_text"]


def pattern_text(root: DFPattern) -> str:
    """`root` as builder-syntax text, shared sub-patterns first as numbered `%n = ...` lines."""
    order = list(post_order(root, lambda p: p.children()))
    uses: dict[DFPattern, int] = {}
    for node in order:
        for child in node.children():
            uses[child] = uses.get(child, 0) + 1
    text: dict[DFPattern, str] = {}
    lines: list[str] = []
    for node in order:
        rendered = node._render(text.__getitem__)
        if node is not root and uses[node] > 1:
            name = f"%{len(lines)}"
            lines.append(f"{name} = {rendered}")
            rendered = name
        text[node] = rendered
    return "\n".join([*lines, text[root]])
