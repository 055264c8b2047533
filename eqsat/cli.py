"""The `eqsat` command: argument parsing and printing only; the work happens in the library.

    eqsat optimize resnet50 --small --target cuda --extractor ilp --json report.json
    eqsat optimize model.onnx --onnx optimized.onnx --onnx-contrib --log tuning.jsonl --explain
    eqsat compare bert --small --targets cpu,cuda --extractors greedy,ilp --diff
    eqsat tune resnet50 --small --log tuning.jsonl --trials 8 [--optimized]
    eqsat show resnet50 --small --op nn.conv2d_bias_act --depth 2 --max-nodes 30 --dot view.dot
    eqsat rules [SET]
    eqsat models
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Sequence

import ir
import strategies
from strategies.tuning import program_workloads

from .compare import compare
from .errors import EqsatError
from .extract import EXTRACTORS, IlpExtractor, get_extractor, node_costs
from .limits import Limits
from .optimize import cost_model, optimize, saturate_program
from .report import IterationRow
from .rules.library import RULESETS
from .visualize import DIRECTIONS, describe_eclass, eclasses_with_op, neighbourhood, render, to_dot

__all__ = ["main", "build_parser"]


def _load(source: str, small: bool) -> tuple[ir.IRModule, dict]:
    path = Path(source)
    if source.endswith(".onnx") or path.is_file():
        return ir.frontend.from_onnx(str(path))
    return ir.models.get(source, small=small)


def _extractor(name: str, ilp_seconds: float):
    return IlpExtractor(seconds=ilp_seconds) if name == "ilp" else EXTRACTORS[name]


def _progress(quiet: bool):
    if quiet:
        return None

    def show(row: IterationRow) -> None:
        top = sorted(row.matches_per_rule.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        most = ", ".join(f"{k} {v}" for k, v in top)
        print(f"  iteration {row.iteration}: {row.enodes} e-nodes, {row.eclasses} e-classes, "
              f"{row.total_seconds:.3f} s  {most}", file=sys.stderr, flush=True)
    return show


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value
    return parse


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(iterations=args.iterations, nodes=args.nodes, seconds=args.seconds)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _cmd_optimize(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    target = strategies.CostModel(args.target, log=args.log) if args.log else args.target
    res = optimize(mod, params, target=target, rules=args.rules, limits=_limits(args),
                   extractor=_extractor(args.extractor, args.ilp_seconds), progress=_progress(args.quiet),
                   verify=args.verify)
    print(res.summary())
    if args.explain:
        print(res.explain())
    if args.print:
        print(res.mod.astext())
    if args.json:
        data = {"model": args.model, "target": res.target, "extractor": res.extractor,
                "cost_before": _finite(res.cost_before), "cost_after": _finite(res.cost_after),
                "extract_seconds": res.extract_seconds,
                "extractor_info": {k: v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
                                   for k, v in res.info.items()},
                "report": res.report.to_dict()}
        Path(args.json).write_text(json.dumps(data, indent=2, default=str) + "\n")
    if args.onnx:
        import onnx
        onnx.save(ir.frontend.to_onnx(res.mod, res.params, contrib=args.onnx_contrib), args.onnx)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    result = compare(mod, params, targets=args.targets.split(","),
                     extractors=[_extractor(e, args.ilp_seconds) for e in args.extractors.split(",")],
                     rules=args.rules, limits=_limits(args), progress=_progress(args.quiet))
    print(result)
    if args.diff:
        print(result.diffs())
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    if args.optimized:
        res = optimize(mod, params, target=args.target, rules=args.rules, limits=_limits(args),
                       extractor=_extractor(args.extractor, args.ilp_seconds), progress=_progress(args.quiet))
        print(res.summary())
        mod, params = res.mod, res.params
    records = strategies.tune(mod, args.target, log=args.log, trials=args.trials, params=params,
                              repeat=args.repeat)
    workloads = [w for w in program_workloads(mod, params) if w.static]
    print(f"tuned {len(workloads)} workload(s) on {args.target}: {len(records)} measurement(s) "
          f"({sum(not r.ok for r in records)} failed) appended to {args.log}")
    history = strategies.TuningHistory.load(args.log)
    target = strategies.Target(args.target)
    for workload in workloads:
        tuned = strategies.select_implementation(workload, target, history)
        untuned = strategies.select_implementation(workload, target, strategies.TuningHistory([]))
        changed = untuned.implementation.name != tuned.implementation.name
        note = f"; untuned: {untuned.implementation.name}" if changed else ""
        print(f"{tuned.describe(target)}{note}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    sat = saturate_program(mod, params, rules=args.rules, limits=_limits(args), progress=_progress(args.quiet))
    view = sat.view
    costs = node_costs(view, cost_model(args.target))
    choice = get_extractor(_extractor(args.extractor, args.ilp_seconds)).extract(view, view.roots, costs)
    if args.op:
        found = eclasses_with_op(view, args.op)
        if not found:
            raise EqsatError(f"no e-class of {args.model} holds an {args.op!r} e-node")
        program = set(choice.classes(view))
        eclass = next((c for c in found if c in program and view.nodes[choice.node_of[c]].op == args.op), found[0])
    else:
        eclass = view.roots[0] if args.eclass is None else args.eclass
    print(sat.report.summary())
    print(describe_eclass(view, eclass, costs=costs, choice=choice))
    hood = neighbourhood(view, eclass, depth=args.depth, max_nodes=args.max_nodes, direction=args.direction,
                         choice=choice, costs=costs)
    dot = to_dot(hood, name=f"{args.model} e-class {eclass}")
    print(f"view: {len(hood.classes)} e-class(es), {hood.node_count} e-node(s), {len(hood.stubs)} stub(s); "
          f"highlighted: the program {choice.info.get('source', args.extractor)} extracts for {args.target}")
    if args.dot:
        Path(args.dot).write_text(dot)
        print(f"wrote {args.dot}")
    if args.render:
        print(f"wrote {render(dot, args.render)}")
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    names = [args.set] if args.set else sorted(RULESETS)
    for name in names:
        if name not in RULESETS:
            raise EqsatError(f"unknown rule set {name!r}; choose from {sorted(RULESETS)}")
        print(f"{name}: {', '.join(RULESETS[name].names)}")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    for name, entry in ir.models.MODELS.items():
        print(f"{name:<14} {entry.summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eqsat", description="Equality saturation for Relay-style tensor graphs.")
    sub = parser.add_subparsers(dest="command", required=True)

    def program_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("model", help="a zoo model name (see `eqsat models`) or an .onnx file")
        p.add_argument("--small", action="store_true", help="the zoo model's tiny test configuration")
        p.add_argument("--rules", default="default", help=f"rule sets joined by '+' ({', '.join(sorted(RULESETS))})")
        p.add_argument("--iterations", type=int, default=Limits.iterations)
        p.add_argument("--nodes", type=int, default=Limits.nodes)
        p.add_argument("--seconds", type=float, default=Limits.seconds)
        p.add_argument("--ilp-seconds", type=float, default=60.0, help="time limit of the ILP extractor")
        p.add_argument("--quiet", action="store_true", help="no per-iteration progress on stderr")

    opt = sub.add_parser("optimize", help="saturate a model and extract the best program for a target")
    program_args(opt)
    opt.add_argument("--target", default="cpu", help="a strategies target (cpu, cuda, ...) or 'ops'")
    opt.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS))
    opt.add_argument("--json", help="write the report as JSON to this file")
    opt.add_argument("--onnx", help="write the optimized program as ONNX to this file")
    opt.add_argument("--onnx-contrib", action="store_true",
                     help="with --onnx: fused ops as ONNX Runtime com.microsoft contrib ops where possible")
    opt.add_argument("--log", help="a tuning log (see `eqsat tune`) whose measurements the cost model uses")
    opt.add_argument("--explain", action="store_true", help="print what each rule and fused op changed and saved")
    check = opt.add_mutually_exclusive_group()
    check.add_argument("--verify", type=_int_at_least(1), default=1, metavar="N",
                       help="run the result against the input on N seeded random input sets (default 1)")
    check.add_argument("--no-verify", dest="verify", action="store_const", const=0, help="skip that check")
    opt.add_argument("--print", action="store_true", help="print the optimized program")
    opt.set_defaults(run=_cmd_optimize)

    cmp_ = sub.add_parser("compare", help="programs for several targets and extractors side by side")
    program_args(cmp_)
    cmp_.add_argument("--targets", default="cpu", help="comma-separated targets")
    cmp_.add_argument("--extractors", default="greedy", help="comma-separated: " + ", ".join(sorted(EXTRACTORS)))
    cmp_.add_argument("--diff", action="store_true", help="print each program's diff against the input")
    cmp_.set_defaults(run=_cmd_compare)

    tune = sub.add_parser("tune", help="measure the implementations of every workload and log the results")
    program_args(tune)
    tune.add_argument("--target", default="cpu", help="a strategies target (cpu, cuda, ...)")
    tune.add_argument("--log", default="tuning.jsonl", help="the JSON-lines tuning log to append to")
    tune.add_argument("--trials", type=_int_at_least(1), default=8, help="measurements per workload, at most")
    tune.add_argument("--repeat", type=_int_at_least(1), default=3, help="timed runs per measurement")
    tune.add_argument("--optimized", action="store_true",
                      help="tune the program `optimize` extracts for the target (fused calls included)")
    tune.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS), help="with --optimized")
    tune.set_defaults(run=_cmd_tune)

    show = sub.add_parser("show", help="describe one e-class of the saturated e-graph and draw its neighbourhood")
    program_args(show)
    where = show.add_mutually_exclusive_group()
    where.add_argument("--eclass", type=int, help="the e-class id (default: the root)")
    where.add_argument("--op", help="an e-class holding an e-node of this op (one where the program uses it first)")
    show.add_argument("--depth", type=_int_at_least(0), default=2, help="steps from the e-class")
    show.add_argument("--max-nodes", type=_int_at_least(1), default=40, help="e-nodes drawn, at most")
    show.add_argument("--direction", default="operands", choices=DIRECTIONS, help="which edges a step follows")
    show.add_argument("--target", default="cpu", help="costs and highlighted program for this target (or 'ops')")
    show.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS))
    show.add_argument("--dot", help="write the view as Graphviz DOT text to this file")
    show.add_argument("--render", help="draw the view to this .svg/.png file (needs Graphviz's dot program)")
    show.set_defaults(run=_cmd_show)

    rules = sub.add_parser("rules", help="list the rule sets and their rules")
    rules.add_argument("set", nargs="?", help="one rule set")
    rules.set_defaults(run=_cmd_rules)

    models = sub.add_parser("models", help="list the model zoo")
    models.set_defaults(run=_cmd_models)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `eqsat` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (EqsatError, ir.IRError, strategies.StrategyError, LookupError, OSError) as err:
        print(f"eqsat: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
