"""`decide_region` on small graphs: one form per node (the direct matcher) and several (an e-graph)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ir.dataflow_pattern.region import Region, Stop, decide_region


@dataclass
class Toy:
    """Nodes named by strings; a form is the tuple of its inputs; `p` is the only parent match."""

    forms: dict[str, list[tuple[str, ...]]]
    """node -> its forms that match the path pattern."""
    strict: bool
    leaves: set[str] = field(default_factory=lambda: {"x", "c"})
    asked: list[str] = field(default_factory=list)

    def is_parent(self, node: str) -> bool:
        self.asked.append(node)
        return node == "p"

    def is_leaf(self, node: str) -> bool:
        return node in self.leaves

    def path_forms(self, node: str) -> list[tuple[str, ...]]:
        return self.forms.get(node, [])

    def inputs(self, form: tuple[str, ...]) -> tuple[str, ...]:
        return form


DIAMOND = {"a": [("p", "c")], "b": [("a",)], "d": [("p",)]}  # child(b, d): b -> a -> p (and a constant), d -> p


def test_one_form_per_node_gives_the_same_region_strict_or_not():
    strict, lenient = decide_region(("b", "d"), Toy(DIAMOND, True)), decide_region(("b", "d"), Toy(DIAMOND, False))
    assert strict == lenient == Region("p", (("b", ("a",)), ("a", ("p", "c")), ("d", ("p",))))


def test_the_parent_is_asked_in_depth_first_order_until_one_matches():
    graph = Toy(DIAMOND, True)
    decide_region(("b", "d"), graph)
    assert graph.asked == ["b", "a", "p"]


def test_a_dead_end_fails_at_once_with_one_form_but_not_when_another_form_leads_back():
    one = {"a": [("x", "c")], "b": [("p",)]}
    assert decide_region(("a", "b"), Toy(one, True)) == Stop("dead_end", "a")
    several = {"a": [("x", "c"), ("p", "x")], "b": [("p",)]}
    assert decide_region(("a", "b"), Toy(several, False)) == Region("p", (("a", ("p", "x")), ("b", ("p",))))


def test_a_node_matching_no_path_form_stops_the_strict_search_only():
    forms = {"b": [("a",), ("p",)]}  # a matches no path form; b's second form avoids it
    assert decide_region(("b",), Toy(forms, True)) == Stop("path", "a")
    assert decide_region(("b",), Toy(forms, False)) == Region("p", (("b", ("p",)),))


def test_with_several_forms_a_cycle_that_never_reaches_the_parent_does_not_count():
    cycle = {"a": [("b",)], "b": [("a",)], "d": [("p",)]}
    assert decide_region(("a", "d"), Toy(cycle, False)) == Stop("unreached")
    # the strict search takes a node met again as leading back, as the explainer over an e-graph view does
    assert decide_region(("a", "d"), Toy(cycle, True)) == Region("p", (("a", ("b",)), ("b", ("a",)), ("d", ("p",))))
    assert decide_region(("a",), Toy({"a": [("a", "x")]}, True)) == Region(None, (("a", ("a", "x")),))
    assert decide_region(("d",), Toy({"d": [("x",)]}, False)) == Stop("parent")
