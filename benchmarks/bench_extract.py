"""Extraction benchmark: the ILP extractor on e-graphs grown by associativity and commutativity, and
TASO's substitutions on the zoo.

    python -m benchmarks.bench_extract          # -> results/extract.{json,md}

Parts:

- ilp (main table): e-graphs of 20k+ e-nodes grown by the AC rules, each lowered, grown once and
  extracted for cpu by greedy and by `IlpExtractor` (60 s limit: the reductions of
  `eqsat.extract.prune`, then HiGHS through scipy's `milp`), and, where highspy is installed, the
  same reduced program solved by HiGHS started from the greedy program. The e-graphs: a synthetic DL program (`dl_dag`) under `all` (default rules plus
  associativity; its adds and multiplies regroup), and a chain of adds and multiplies over
  tensors of four shapes under `ac` (long runs of one op: every grouping of a run is an e-class);
  and ResNet-50, Inception-v3 and MobileNet-v2 (small and full configurations) saturated for ort
  under default+layout, whose layout changes each way make cycles in the class graph, extracted
  for ort, and extracted again without the ILP's requirement rows (`eqsat.extract.requires`).
- taso: each zoo model's small configuration saturated under `default` and under `default+taso`
  (the `taso` rule set is in `all`, not in `default`), then extracted for cpu and ort by greedy and
  ILP: saturation size and time, cost, and how many merged calls (their `split`s) the program keeps.
"""

from __future__ import annotations

import collections
import sys
import time
from typing import Any, Callable
from unittest import mock

import numpy as np

import eqsat
import ir
import strategies
from eqsat.extract import GreedyDagExtractor, IlpExtractor, node_costs
from eqsat.extract import ilp
from eqsat.extract.ilp import build_model
from eqsat.extract.prune import reduce_problem
from eqsat.optimize import extract_program, saturate_program
from eqsat.target import resolve_target
from eqsat.rules.library import default_rules
from ir import relay
from ir.visitor import post_order

from .report import Section, write_results
from .synthetic import dl_dag

__all__ = ["ac_chain", "ilp_row", "layout_row", "taso_rows", "main"]
LAYOUT_MODELS = ("resnet50", "inception_v3", "mobilenet_v2")

ILP_SECONDS = 60.0
ZOO = ("inception_v3", "resnext50", "squeezenet", "nasneta", "bert", "nasrnn")
MERGE_OPS = ("split", "concatenate", "nn.conv2d", "nn.conv2d_bias_act", "nn.dense", "nn.dense_bias_act")


def ac_chain(n_inputs: int, seed: int = 0) -> ir.IRModule:
    """((v0 op v1) op v2) ..., each v of shape (8, 16), (16,), (8, 1) or (1, 16), op add or multiply."""
    rng = np.random.default_rng(seed)
    shapes = [(8, 16), (16,), (8, 1), (1, 16)]
    inputs = [relay.var(f"v{i}", shape=shapes[int(rng.integers(4))]) for i in range(n_inputs)]
    expr: ir.Expr = inputs[0]
    for v in inputs[1:]:
        expr = relay.add(expr, v) if rng.integers(2) else relay.multiply(expr, v)
    return ir.IRModule.from_expr(expr)


def _started_highs(view, costs, greedy, seconds: float) -> dict[str, Any]:
    """The ILP extractor's reduced program solved by HiGHS through highspy from the greedy program,
    with presolve off and on: the measurement behind not starting HiGHS (empty without highspy)."""
    try:
        from highspy import HighsLp, HighsSolution, HighsVarType, MatrixFormat
        from highspy._core import _Highs  # the public `Highs` prints a banner before it can be silenced
    except ImportError:
        return {}
    reduced = reduce_problem(view, view.roots, costs, greedy.dag_cost(view, costs) * (1 + 1e-9) + 1e-9)
    model = build_model(view, reduced, costs)
    node_of = reduced.repair(view, greedy.node_of, view.roots)
    start = np.zeros(model.n_cols)
    start[[model.nodes.index(n) for n in node_of.values()]] = 1.0
    row: dict[str, Any] = {}
    for presolve in ("off", "on"):
        highs = _Highs()
        highs.setOptionValue("output_flag", False)
        highs.setOptionValue("time_limit", seconds)
        highs.setOptionValue("presolve", presolve)
        lp = HighsLp()
        lp.num_col_, lp.num_row_ = model.n_cols, len(model.row_lower)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = model.objective, model.col_lower, model.col_upper
        lp.row_lower_, lp.row_upper_ = model.row_lower, model.row_upper
        csc = model.matrix.tocsc()
        lp.a_matrix_.format_ = MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = csc.indptr, csc.indices, csc.data
        lp.integrality_ = [HighsVarType.kInteger] * model.n_cols
        highs.passModel(lp)
        solution = HighsSolution()
        solution.col_value = start
        solution.value_valid = True
        highs.setSolution(solution)
        begin = time.perf_counter()
        highs.run()
        info = highs.getInfo()
        row.update({f"start_{presolve}_s": time.perf_counter() - begin,
                    f"start_{presolve}_status": highs.modelStatusToString(highs.getModelStatus()),
                    f"start_{presolve}_reported": info.objective_function_value,
                    f"start_{presolve}_cost": float(model.objective @ np.asarray(highs.getSolution().col_value))})
    return row


def ilp_row(name: str, build: Callable[[], ir.IRModule], rules: str, nodes: int) -> dict[str, Any]:
    """Grow one e-graph to `nodes` e-nodes and extract it for cpu with greedy, the ILP extractor and a
    started HiGHS."""
    low = eqsat.lower(build())
    report = eqsat.saturate(low.egraph, eqsat.resolve_rules(rules), eqsat.Limits(nodes=nodes, iterations=100,
                                                                                    seconds=120))
    view = low.view()
    costs = node_costs(view, strategies.CostModel("cpu"))
    row = _extraction_row(name, rules, report, view, costs)
    greedy = GreedyDagExtractor().extract(view, view.roots, costs)
    row.update(_started_highs(view, costs, greedy, ILP_SECONDS))
    return row


def layout_row(model: str, small: bool) -> dict[str, Any]:
    """A zoo model saturated for ort (rules default+layout, default limits: layout changes each way
    make cycles in the class graph), extracted for ort by greedy and the ILP extractor."""
    mod, params = ir.models.get(model, small=small)
    rules = default_rules("ort")
    sat = saturate_program(mod, params, rules=rules, limits=eqsat.Limits())
    costs = node_costs(sat.view, resolve_target("ort").model)
    row = _extraction_row(f"{model} ({'small' if small else 'full'})", rules, sat.report, sat.view, costs)
    with mock.patch.object(ilp, "requirements", lambda *args: []):
        unaided = IlpExtractor(seconds=ILP_SECONDS).extract(sat.view, sat.view.roots, costs)
    row.update(unaided_gap=unaided.info["gap"], unaided_status=unaided.info["status"])
    return row


def _extraction_row(name: str, rules: str, report: Any, view: Any, costs: list[float]) -> dict[str, Any]:
    """Greedy and the ILP extractor on one e-graph: seconds, costs, gap, status, the model's size."""
    start = time.perf_counter()
    greedy = GreedyDagExtractor().extract(view, view.roots, costs)
    greedy_s = time.perf_counter() - start
    greedy_cost = greedy.dag_cost(view, costs)
    start = time.perf_counter()
    choice = IlpExtractor(seconds=ILP_SECONDS).extract(view, view.roots, costs)
    ilp_s = time.perf_counter() - start
    choice.check(view)
    ilp_cost = choice.dag_cost(view, costs)
    info = choice.info
    row = {"graph": name, "rules": rules, "enodes": report.enodes, "eclasses": report.eclasses,
           "stop": str(report.stop_reason), "saturate_s": report.seconds, "greedy_s": greedy_s,
           "cost_bottom_up": greedy.info["refined_from"], "cost_greedy": greedy_cost, "ilp_s": ilp_s,
           "cost_ilp": ilp_cost, "greedy_over_ilp": greedy_cost / ilp_cost, "ilp_gap": info["gap"],
           "ilp_status": info["status"], "killed": info["killed"], "dual_bound": info["dual_bound"],
           "nodes_before": info["nodes_before"], "unusable": info["unusable_nodes"],
           "dominated": info["dominated_nodes"], "nodes_after": info["nodes_after"],
           "mandatory_classes": info["mandatory_classes"], "fixed_nodes": info["fixed_nodes"],
           "variables": info["variables"], "constraints": info["constraints"], "pair_cuts": info["pair_cuts"],
           "requirement_rows": info["requirement_rows"],
           "cycle_cuts": info["cycle_cuts"], "rounds": info["rounds"]}
    print(f"ilp {name}: {row['enodes']} e-nodes, {row['ilp_status']} in {ilp_s:.1f} s, gap {row['ilp_gap']:.3g}",
          file=sys.stderr, flush=True)
    return row


def _merge_ops(mod: ir.IRModule) -> dict[str, int]:
    counts = collections.Counter(n.op.name for n in post_order(mod["main"].body)
                                 if isinstance(n, ir.Call) and hasattr(n.op, "name"))
    return {op: counts.get(op, 0) for op in MERGE_OPS}


def taso_rows() -> list[dict[str, Any]]:
    """Per zoo model, rule set, target and extractor: saturation, cost and the merge ops extracted."""
    rows = []
    for model in ZOO:
        mod, params = ir.models.get(model, small=True)
        for rules in ("default", "default+taso"):
            sat = saturate_program(mod, params, rules=rules, limits=eqsat.Limits())
            applied = {k: v for k, v in sat.report.applied_per_rule.items()
                       if k in eqsat.RULESETS["taso"].names or k.startswith("merge")}
            for target in ("cpu", "ort"):
                for extractor in ("greedy", "ilp"):
                    out = extract_program(sat, resolve_target(target).model, extractor)
                    rows.append({"model": model, "rules": rules, "enodes": sat.report.enodes,
                                 "saturate_s": sat.report.seconds, "target": target, "extractor": extractor,
                                 "cost_before": out.cost_before, "cost_after": out.cost_after,
                                 "gap": out.choice.info.get("gap", ""), **_merge_ops(out.mod),
                                 "merges_found": sum(v for k, v in applied.items() if k.startswith("merge")),
                                 "taso_applied": sum(v for k, v in applied.items() if not k.startswith("merge"))})
        print(f"taso {model}: done", file=sys.stderr, flush=True)
    return rows


ILP_COLUMNS = ("graph", "rules", "enodes", "eclasses", "stop", "saturate_s", "greedy_s", "cost_bottom_up",
               "cost_greedy", "ilp_s", "cost_ilp", "greedy_over_ilp", "ilp_gap", "ilp_status", "killed",
               "nodes_before", "dominated", "nodes_after", "mandatory_classes", "fixed_nodes", "variables",
               "constraints", "pair_cuts", "requirement_rows", "cycle_cuts", "rounds", "unaided_gap",
               "unaided_status", "start_off_s", "start_off_status", "start_off_cost", "start_on_s",
               "start_on_status", "start_on_reported", "start_on_cost")
TASO_COLUMNS = ("model", "rules", "enodes", "saturate_s", "target", "extractor", "cost_before", "cost_after", "gap",
                "merges_found", "taso_applied", *MERGE_OPS)

ILP_NOTES = """\
Wall-clock seconds on a 2-core machine shared with other work (timings vary by tens of percent).
`ilp_*`: `IlpExtractor(seconds={seconds:g})` (greedy, the reductions of `eqsat.extract.prune`, HiGHS
through scipy's `milp`); `ilp_gap`: the returned program's distance from HiGHS's proven lower bound
(`0` proven optimal; HiGHS stops at its default relative tolerance 1e-4). `nodes_before` /
`nodes_after`: e-nodes of the reachable classes before and after the reductions (`dominated`:
dropped for a no dearer node of their class that needs a subset of their children);
`mandatory_classes`: classes every program contains (`fixed_nodes`: their lone candidates).
`cost_bottom_up`: greedy's bottom-up program before its local search; `cost_greedy`: after it.
`greedy_over_ilp`: greedy's cost over ILP's. `killed`: the solver worker was killed at the deadline;
`pair_cuts` / `cycle_cuts` / `rounds`: cuts for classes that use each other, cycle cuts added
lazily, and solves; `requirement_rows`: rows saying that a class needs a way out of each component
it requires (`eqsat.extract.requires`). `unaided_*`: the ILP extractor on the same layout-grown
e-graph without those rows (the measurement behind them). `start_off_*` / `start_on_*`: the same reduced program
solved by HiGHS through highspy (when installed), started from the greedy program, with presolve
off / on: seconds, status, the objective HiGHS reports and the cost of the solution it returns (the
measurement behind solving without a start)."""

TASO_NOTES = """\
Each zoo model's small configuration saturated under `default` and `default+taso` (default limits),
then extracted for cpu and ort by greedy and by ILP (60 s). `merges_found`: merge-rule applications
(two convolutions or dense layers of one input made one wide call and a split); `taso_applied`:
applications of the `taso` rules. The op columns count the extracted program's calls: a `split`
is a merged call the program kept."""


def main() -> None:
    rows = [ilp_row("dl_dag 5000", lambda: dl_dag(5000), "all", 20_000),
            ilp_row("dl_dag 6000", lambda: dl_dag(6000), "all", 30_000),
            ilp_row("add/multiply chain of 24", lambda: ac_chain(24), "ac", 20_000),
            *(layout_row(model, small) for model in LAYOUT_MODELS for small in (True, False))]
    taso = taso_rows()
    path = write_results("extract", rows, ILP_COLUMNS, ILP_NOTES.format(seconds=ILP_SECONDS),
                         [Section("TASO substitutions on the zoo", taso, TASO_COLUMNS, TASO_NOTES)])
    print(path)


if __name__ == "__main__":
    main()
