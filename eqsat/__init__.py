"""The e-graph engine: lower IR into egglog, saturate under limits, extract per target, lift back.

    import ir, eqsat
    mod, params = ir.models.resnet50(batch=1, image=224)
    res = eqsat.optimize(mod, params, target="cpu", rules="default",
                         limits=eqsat.Limits(iterations=30, nodes=50_000, seconds=60), extractor="greedy")
    print(res.summary())                 # stop reason, sizes, cost before -> after (µs), op changes, check
    print(res.explain())                 # per rule and fused op: cost before -> after, implementation
    print(res.astext())                  # the program, each rule-made node with its rule chain
    print(eqsat.why_not(res, "conv-bias-relu", "%12"))   # why a rule did not rewrite a node
    print(eqsat.bisect_unsound(mod, params, rules="default"))  # the first rule result that changed a value
    res.mod, res.report.stop_reason, res.cost_before, res.cost_after
    print(eqsat.compare(mod, params, targets=["cpu", "cuda"], extractors=["greedy", "ilp"]))

Layers, bottom up: `egraph` (terms, the egglog backend, lowering and lifting, a plain-data view),
`rules` (declarative rewrites, dataflow patterns and callbacks as rules, the rule library),
`runner` (saturation with limits, back-off scheduling, reports), `extract` (tree, greedy DAG and
ILP extractors over one cost interface), then `optimize`, `compare`, `provenance` (which rules
made each extracted node), `why` (why a rule did not rewrite a node), `bisect` (which rule
application made a program wrong), `progress` and the `cli`.
"""

from __future__ import annotations

from .compare import Candidate, Comparison, compare
from .egraph.egraph import EGraph
from .egraph.lower import Lowered, lift, lift_params, lower
from .egraph.view import EGraphView
from .errors import EqsatError, ExtractionError, LoweringError, PatternCompileError, RuleError, VerificationError
from .explain import Change
from .fleet import BatchOptions, batch, tune_batch
from .extract import (EXTRACTORS, Choice, CostModel, GreedyDagExtractor, IlpExtractor, OpCount, TreeExtractor,
                      get_extractor, node_costs)
from .limits import Limits, Stop, StopReason
from .onnx_io import optimize_onnx
from .optimize import Optimized, optimize
from .report import IterationRow, Report
from .rules.callback import CallbackRule, find_matches
from .rules.library import RULESETS, resolve_rules
from .rules.pattern import attr, avar, call, choose, const_pat, getitem, many, nn, ops, pvars, tuple_pat
from .rules.rule import Rule, RuleSet, birewrite, rule, ruleset
from .runner import prove, run_schedule, saturate
from .scheduler import BackoffScheduler, Phase, SimpleScheduler
from .soundness.bisect import Bisection, UnsoundApplication, bisect_unsound
from .soundness.check import RuleCheck, check_rule
from .soundness.verify import Verification, verify
from .target import TargetSpec, resolve_target
from .visualize import Neighbourhood, describe_eclass, eclasses_with_op, neighbourhood, render, to_dot, to_networkx
from .why import WHY_CAUSES, WhyNot, why_not

__version__ = "0.1.0"

__all__ = [
    "optimize", "optimize_onnx", "Optimized", "compare", "Comparison", "Candidate", "Limits", "Stop", "StopReason",
    "Report", "IterationRow", "saturate", "run_schedule", "prove", "BackoffScheduler", "SimpleScheduler", "Phase",
    "resolve_target", "TargetSpec",
    "EGraph", "EGraphView", "Lowered", "lower", "lift",
    "Rule", "RuleSet", "rule", "birewrite", "ruleset", "pvars", "avar", "call", "const_pat", "tuple_pat", "getitem",
    "ops", "nn", "many", "choose", "attr",
    "CallbackRule", "find_matches", "RULESETS", "resolve_rules", "check_rule", "RuleCheck",
    "Choice", "CostModel", "OpCount", "TreeExtractor", "GreedyDagExtractor", "IlpExtractor", "EXTRACTORS",
    "get_extractor", "node_costs",
    "EqsatError", "LoweringError", "RuleError", "PatternCompileError", "ExtractionError", "VerificationError",
    "Verification", "verify", "Change", "lift_params", "bisect_unsound", "Bisection", "UnsoundApplication",
    "Neighbourhood", "neighbourhood", "to_networkx", "to_dot", "describe_eclass", "eclasses_with_op", "render",
    "why_not", "WhyNot", "WHY_CAUSES", "batch", "tune_batch", "BatchOptions",
]
