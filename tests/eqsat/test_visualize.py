"""Bounded e-graph views: what a neighbourhood keeps, and its networkx, DOT and text forms."""

from __future__ import annotations

import re

import networkx as nx
import pytest

import eqsat
import ir
import strategies
from eqsat import visualize
from eqsat.optimize import saturate_program

from .graphs import view_of

# c3 = k(c2, c1); c2 = h(c1, c1); c1 = f(c0) | g(c0); c0 = x
DIAMOND = view_of({0: [("x", ())], 1: [("f", (0,)), ("g", (0,))], 2: [("h", (1, 1))], 3: [("k", (2, 1))]}, (3,))


@pytest.fixture(scope="module")
def resnet():
    """A saturated small ResNet-50, its cpu costs and the greedy choice."""
    mod, params = ir.models.get("resnet50", small=True)
    view = saturate_program(mod, params, limits=eqsat.Limits(iterations=6)).view
    costs = eqsat.node_costs(view, strategies.CostModel("cpu"))
    return view, costs, eqsat.GreedyDagExtractor().extract(view, view.roots, costs)


def op_of(view, n):
    return view.nodes[n].op


def test_operand_walk_keeps_classes_within_depth_and_stubs_the_rest():
    hood = eqsat.neighbourhood(DIAMOND, 3, depth=1)
    assert hood.depth == {3: 0, 1: 1, 2: 1}
    assert {c: [op_of(DIAMOND, n) for n in ns] for c, ns in hood.nodes.items()} == {3: ["k"], 1: ["f", "g"],
                                                                                   2: ["h"]}
    assert hood.stubs == (0,)


def test_user_walk_follows_parents_and_depth_zero_is_the_class_alone():
    hood = eqsat.neighbourhood(DIAMOND, 0, depth=3, direction="users")
    assert hood.depth == {0: 0, 1: 1, 2: 2, 3: 2}
    assert hood.stubs == ()
    alone = eqsat.neighbourhood(DIAMOND, 1, depth=0, direction="both")
    assert alone.classes == (1,) and alone.stubs == (0,)


def test_node_budget_keeps_the_chosen_node_first_and_counts_the_hidden():
    g = next(n for n in DIAMOND.classes[1] if op_of(DIAMOND, n) == "g")
    choice = eqsat.Choice((3,), {c: ns[0] for c, ns in DIAMOND.classes.items()} | {1: g})
    hood = eqsat.neighbourhood(DIAMOND, 1, depth=0, max_nodes=1, choice=choice)
    assert hood.nodes == {1: (g,)} and hood.hidden(1) == 1 and hood.chosen >= {g}
    assert "+1 e-node(s) not shown" in eqsat.to_dot(hood)


@pytest.mark.parametrize("depth, max_nodes, direction", [(1, 5, "operands"), (3, 25, "both"), (6, 60, "users")])
def test_real_model_views_respect_both_caps(resnet, depth, max_nodes, direction):
    view, _, _ = resnet
    center = eqsat.eclasses_with_op(view, "nn.conv2d_bias_act")[0]
    hood = eqsat.neighbourhood(view, center, depth=depth, max_nodes=max_nodes, direction=direction)
    assert 0 < hood.node_count <= max_nodes
    assert hood.classes[0] == center and max(hood.depth.values()) <= depth
    used = {k for ns in hood.nodes.values() for n in ns for k in view.nodes[n].children}
    assert set(hood.stubs) == used - set(hood.nodes)


def test_chosen_nodes_are_the_extracted_program_only(resnet):
    view, costs, choice = resnet
    program = set(choice.classes(view))
    hood = eqsat.neighbourhood(view, view.roots[0], depth=4, max_nodes=80, choice=choice, costs=costs)
    for cls, members in hood.nodes.items():
        marked = [n for n in members if n in hood.chosen]
        assert marked == ([choice.node_of[cls]] if cls in program else [])
    dot = eqsat.to_dot(hood)
    assert dot.count('fillcolor="#ffd36e"') == len(hood.chosen & {n for ns in hood.nodes.values() for n in ns})


def test_networkx_export_is_bipartite_with_member_and_operand_edges(resnet):
    view, costs, choice = resnet
    hood = eqsat.neighbourhood(view, view.roots[0], depth=3, max_nodes=30, choice=choice, costs=costs)
    graph = eqsat.to_networkx(hood)
    assert isinstance(graph, nx.DiGraph) and graph.graph["center"] == f"c{view.roots[0]}"
    enodes = [v for v, d in graph.nodes(data=True) if d["kind"] == "enode"]
    eclasses = [v for v, d in graph.nodes(data=True) if d["kind"] == "eclass"]
    assert len(enodes) == hood.node_count and len(eclasses) == len(hood.classes) + len(hood.stubs)
    for v in enodes:
        data = graph.nodes[v]
        assert [u for u in graph.predecessors(v)] == [f"c{data['eclass']}"]
        assert data["cost"] == costs[int(v[1:])] and data["chosen"] == (int(v[1:]) in hood.chosen)
    for u, v, data in graph.edges(data=True):
        assert (graph.nodes[u]["kind"], graph.nodes[v]["kind"], data["role"]) in {
            ("eclass", "enode", "member"), ("enode", "eclass", "operand")}
    assert all(graph.nodes[f"c{s}"]["stub"] and graph.nodes[f"c{s}"]["depth"] is None for s in hood.stubs)


def test_dot_text_is_well_formed_and_deterministic(resnet):
    view, costs, choice = resnet
    center = eqsat.eclasses_with_op(view, "nn.batch_norm")[0]

    def make() -> str:
        hood = eqsat.neighbourhood(view, center, depth=2, max_nodes=20, direction="both", choice=choice, costs=costs)
        return eqsat.to_dot(hood)

    dot = make()
    assert dot == make()
    assert dot.startswith('digraph "egraph" {') and dot.count("{") == dot.count("}")
    declared = set(re.findall(r"^\s+([nc]\d+) \[label=", dot, flags=re.MULTILINE))
    for tail, head in re.findall(r"^\s+(n\d+) -> ([nc]\d+)", dot, flags=re.MULTILINE):
        assert tail in declared and head in declared
    clusters = re.findall(r"subgraph cluster_(\d+)", dot)
    assert len(clusters) == len(set(clusters)) and f"cluster_{center}" in dot


def test_describe_lists_every_enode_with_attributes_and_cost(resnet):
    view, costs, choice = resnet
    cls = next(c for c in choice.classes(view) if view.nodes[choice.node_of[c]].op == "nn.conv2d_bias_act")
    text = eqsat.describe_eclass(view, cls, costs=costs, choice=choice)
    head, *lines = text.splitlines()
    assert head.startswith(f"e-class {cls}: Tensor[") and f"{len(view.classes[cls])} e-node(s)" in head
    assert len(lines) == len(view.classes[cls])
    starred = [line for line in lines if line.startswith("*")]
    assert len(starred) == 1 and "nn.conv2d_bias_act(c" in starred[0] and "kernel_size=" in starred[0]
    assert all("cost " in line for line in lines)
    assert "alpha=" not in text  # attributes at their defaults are left out


def test_bad_requests_name_what_is_wrong(tmp_path, monkeypatch):
    with pytest.raises(eqsat.EqsatError, match="e-class 99 is not in this e-graph"):
        eqsat.neighbourhood(DIAMOND, 99)
    with pytest.raises(eqsat.EqsatError, match="e-class -1"):
        eqsat.describe_eclass(DIAMOND, -1)
    with pytest.raises(ValueError, match="direction"):
        eqsat.neighbourhood(DIAMOND, 3, direction="up")
    with pytest.raises(ValueError, match="max_nodes=0"):
        eqsat.neighbourhood(DIAMOND, 3, max_nodes=0)
    monkeypatch.setattr(visualize.shutil, "which", lambda name: None)
    with pytest.raises(eqsat.EqsatError, match="`dot` program is not on PATH"):
        eqsat.render("digraph {}", tmp_path / "g.svg")


@pytest.mark.skipif(visualize.shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_render_draws_svg_with_dot(tmp_path):
    path = eqsat.render(eqsat.to_dot(eqsat.neighbourhood(DIAMOND, 3, depth=3)), tmp_path / "diamond.svg")
    assert path.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_eclasses_with_op_finds_every_class_holding_the_op(resnet):
    view, _, _ = resnet
    found = eqsat.eclasses_with_op(view, "nn.conv2d")
    assert found == sorted(found) and found
    assert all(any(view.nodes[n].op == "nn.conv2d" for n in view.classes[c]) for c in found)
    assert eqsat.eclasses_with_op(view, "no.such_op") == []
