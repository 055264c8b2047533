"""Provenance: every node of an extracted program knows the rule chain that made it."""

from __future__ import annotations

import json

import pytest

import eqsat
import ir
from eqsat.cli import main


@pytest.fixture(scope="module")
def bert():
    mod, params = ir.models.get("bert", small=True)
    return eqsat.optimize(mod, params, verify=False)


def test_every_node_of_the_json_report_carries_provenance_and_fused_nodes_name_their_rules(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["optimize", "bert", "--small", "--quiet", "--no-verify", "--json", str(out)]) == 0
    capsys.readouterr()
    program = json.loads(out.read_text())["program"]
    assert program and all(isinstance(node["rules"], list) for node in program)
    fused = [node for node in program if node["op"] == "nn.dense_bias_act"]
    assert fused and all("dense-bias" in node["rules"] for node in fused)
    assert all(node["rules"] == [] for node in program if node["op"] in ("var", "take"))  # input nodes


def test_a_chain_lists_every_rule_behind_a_node_in_order(bert):
    tanh_dense = [n for n in ir.post_order(bert.mod["main"].body) if isinstance(n, ir.Call)
                  and n.op.name == "nn.dense_bias_act" and n.attrs["activation"] == "tanh"]
    assert [bert.rules_of(n) for n in tanh_dense] == [("bias-add-as-add", "dense-bias", "dense-bias-tanh")]


def test_input_nodes_have_no_chain(bert):
    inputs = [n for n in ir.post_order(bert.mod["main"].body) if isinstance(n, ir.Call) and n.op.name == "take"]
    assert inputs and all(bert.rules_of(n) == () for n in inputs)


def test_the_printer_and_explain_show_provenance(bert):
    text = bert.astext(show_provenance=True)
    assert "/* rules: bias-add-as-add, dense-bias */" in text
    assert "rules:" not in bert.astext(show_provenance=False)
    assert "x nn.dense_bias_act: bias-add-as-add > dense-bias" in bert.explain()


def test_compare_names_the_rules_that_make_programs_differ():
    mod, params = ir.models.get("bert", small=True)
    result = eqsat.compare(mod, params, targets=["cpu", "cuda"])
    cpu, cuda = result.candidates
    assert "skip-layer-norm" in cuda.rules_used - cpu.rules_used
    assert "rules only in B (cuda/greedy): " in result.differences()


def test_chains_are_found_when_first_read(monkeypatch):
    from eqsat.provenance import Provenance
    found = []
    real = Provenance.chain
    monkeypatch.setattr(Provenance, "chain", lambda self, node: found.append(node) or real(self, node))
    mod, params = ir.models.get("bert", small=True)
    res = eqsat.optimize(mod, params, verify=False)
    assert found == []  # nothing read them yet
    made = [n for n in ir.post_order(res.mod["main"].body) if res.rules_of(n)]
    assert made and found and all(n in res.provenance for n in made)
