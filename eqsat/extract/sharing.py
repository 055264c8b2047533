"""Classes no program can share: where the ILP may say "one user at most" instead of "one per class".

Give every graph input (a class holding a `Var` node) a unit leaf vector and every other class the
sum of its children's vectors (with multiplicity; constants and other childless nodes count
nothing). When every candidate node agrees with its class (`count(c) == sum of count(children)`),
any acyclic program term rooted at class c holds exactly `count(c)` copies of each input, so the
program's roots together hold `total = sum of count(root)` over the distinct roots.

A class k is then **single-use** when some input v has `2 * count(k)[v] > total[v]`: two distinct
chosen nodes that both read k would place two copies of k, hence of its inputs, in the roots'
terms, more than there are. So in every program at most one chosen node reads k. Rewrites that
only reorder (associativity, commutativity) keep every node in agreement; in an expression where
each input is used once (a chain of adds and multiplies), every class that holds an input is
single-use, and the ILP's relaxation with one row per such class over all its users is the
relaxation of tree extraction, which is tight there (`bench_extract`). A rewrite that drops or
duplicates an input (`x * 0 -> 0`, `x + x -> 2 * x`) breaks the agreement; then no class is
declared single-use and nothing changes.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy.sparse import coo_matrix

from ..egraph.terms import Kind
from ..egraph.view import ClassId, EGraphView, NodeId

__all__ = ["single_use_classes"]

MAX_ENTRIES = 5_000_000
"""classes x inputs above which the counts are not computed (memory); nothing is single-use then."""
_EXACT = 2.0 ** 50
"""counts are float64; above this they may round, and the analysis declares nothing."""


def single_use_classes(view: EGraphView, cand: Mapping[ClassId, list[NodeId]],
                       roots: Sequence[ClassId]) -> frozenset[ClassId]:
    """The single-use classes among `cand`'s (module docstring); empty when any candidate node
    disagrees with its class, or the counts would be too large to hold."""
    classes = sorted(cand)
    index = {c: i for i, c in enumerate(classes)}
    inputs = [c for c in classes if any(view.nodes[n].kind is Kind.VAR for n in view.classes[c])]
    if not inputs or len(classes) * len(inputs) > MAX_ENTRIES:
        return frozenset()
    counts = _counts(view, cand, classes, index, inputs)
    if counts is None or not _agree(view, cand, index, counts):
        return frozenset()
    total = counts[[index[r] for r in dict.fromkeys(roots)]].sum(axis=0)
    if total.max(initial=0.0) > _EXACT:
        return frozenset()
    single = (2 * counts > total).any(axis=1)
    return frozenset(c for c in classes if single[index[c]] and c not in roots)


def _counts(view: EGraphView, cand: Mapping[ClassId, list[NodeId]], classes: list[ClassId],
            index: Mapping[ClassId, int], inputs: list[ClassId]) -> np.ndarray | None:
    """Each class's input counts, taken from its first candidate whose children are all counted
    (inputs first); None when some class cannot be counted (its candidates only reach cycles)."""
    counts = np.zeros((len(classes), len(inputs)))
    done = np.zeros(len(classes), dtype=bool)
    for j, c in enumerate(inputs):
        counts[index[c], j] = 1.0
        done[index[c]] = True
    waiting: dict[ClassId, list[NodeId]] = {}
    missing: dict[NodeId, int] = {}
    ready: list[NodeId] = []
    for c in classes:
        if done[index[c]]:
            continue
        for n in cand[c]:
            kids = set(view.nodes[n].children)
            missing[n] = sum(not done[index[k]] for k in kids)
            for k in kids:
                if not done[index[k]]:
                    waiting.setdefault(k, []).append(n)
            if missing[n] == 0:
                ready.append(n)
    while ready:
        n = ready.pop()
        c = view.nodes[n].eclass
        if done[index[c]]:
            continue
        for k in view.nodes[n].children:
            counts[index[c]] += counts[index[k]]
        done[index[c]] = True
        for m in waiting.pop(c, ()):
            missing[m] -= 1
            if missing[m] == 0:
                ready.append(m)
    return counts if done.all() else None


def _agree(view: EGraphView, cand: Mapping[ClassId, list[NodeId]], index: Mapping[ClassId, int],
           counts: np.ndarray) -> bool:
    """Whether every candidate's children's counts sum to its class's (input classes' Var nodes
    are their own definition)."""
    rows: list[int] = []
    cols: list[int] = []
    owner: list[int] = []
    for c, ns in cand.items():
        for n in ns:
            if view.nodes[n].kind is Kind.VAR:
                continue
            r = len(owner)
            owner.append(index[c])
            for k in view.nodes[n].children:
                rows.append(r)
                cols.append(index[k])
    if not owner:
        return True
    reads = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(owner), len(index))).tocsr()
    return bool(np.array_equal(reads @ counts, counts[owner]))
