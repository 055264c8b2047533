"""The `eqsat` command: argument parsing and printing only; the work happens in the library.

    eqsat optimize resnet50 --small --target cuda --extractor ilp --json report.json
    eqsat optimize model.onnx --onnx optimized.onnx --onnx-contrib --log tuning.jsonl --explain
    eqsat compare bert --small --targets cpu,cuda --extractors greedy,ilp --diff --json compare.json
    eqsat tune resnet50 --small --log tuning.jsonl --trials 8 [--optimized]
    eqsat tune resnet50 --target ort --candidates --log ort.jsonl --repeat 5 --threads 2
    eqsat tune resnet50 --small --target ort --db tuning.db
    eqsat batch models/ resnet50 --small --out results/ [--workers 2 | --address ray://head:10001]
    eqsat batch models/ --tune --db tuning.db --target ort
    eqsat show resnet50 --small --op nn.conv2d_bias_act --depth 2 --max-nodes 30 --dot view.dot
    eqsat why bert --small --rule dense-bias-tanh --node %86 [--pattern my_pattern.py]
    eqsat rules [SET]
    eqsat check-rules --rules simplify+algebra
    eqsat bisect resnet50 --small --rules default
    eqsat coverage mobilenet_v2 --small --log tuning.jsonl --target cpu
    eqsat models

Saturation shows its progress on stderr when stderr is a terminal (`--progress` / `--no-progress`
force it; `--quiet` is `--no-progress`). `check-rules` exits 1 when some rule fails its check.
Options are checked before any work starts. A failure is one line on stderr: exit status 2 for
input to fix, 3 for a result that failed or could not finish verification (nothing is written), 1
for an internal error, 130 for Ctrl-C, 141 (quietly) when stdout's reader went
away (`--debug` or EQSAT_DEBUG=1 shows the traceback instead). Output files are written only
when the whole run succeeded, each atomically. numpy's RuntimeWarnings (overflow, NaN) never
reach stderr: a non-finite value is a value the program computes, not an error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import runpy
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

import ir
import strategies
from ir.dataflow_pattern import DFPattern
from ir.printer import node_names
from strategies.coverage import tuning_coverage
from strategies.records import read_log
from strategies.executor import prepare_program
from strategies.tuning import program_weight_bytes, tune_workloads, workload_constants
from strategies.tuning_db import TuningDatabase, this_device

from . import __version__
from .atomic import write_files
from .cli_args import (Parser, comma_list, existing_file, extractor_name, int_at_least, model_name, output_file,
                       rule_sets, seconds, target_kind)
from .candidates import candidate_workloads
from .cli_errors import EXIT_BROKEN_PIPE, UsageError, failure
from .compare import compare
from .errors import EqsatError
from .extract import EXTRACTORS, IlpExtractor, get_extractor, node_costs
from .fleet.cli import batch_args, run_batch
from .limits import Limits
from .cli_output import comparison_record, onnx_output, original_of, report_record
from .onnx_io import optimize_to_onnx
from .optimize import DEFAULT_TRIALS, optimize, saturate_program
from .progress import ProgressLine
from .rules.library import FAMILIES, RULESETS
from .soundness.audit import audit_random, audit_rules
from .soundness.bisect import bisect_unsound
from .visualize import DIRECTIONS, describe_eclass, eclasses_with_op, neighbourhood, render, to_dot
from .target import TargetSpec, in_session, resolve_target
from .why import find_rule, why_not

__all__ = ["main", "build_parser"]


#: skipped lines of a tuning log named in the CLI's warning, at most
_SKIPPED_SHOWN = 3


def _load(source: str, small: bool) -> tuple[ir.IRModule, dict]:
    """A zoo model or an ONNX file (`source` passed `_model`); a file the importer rejects is a `UsageError`."""
    if source in ir.models.MODELS:
        return ir.models.get(source, small=small)
    import onnx
    try:
        return ir.frontend.from_onnx(source)
    except ir.IRError:
        raise
    except (ValueError, onnx.checker.ValidationError) as err:
        raise UsageError(f"cannot import {source}: {err}") from err


def _history(path: str) -> strategies.TuningHistory:
    """The records of a tuning log; skipped lines are summed up in one warning, and a log with no usable
    line but some bad ones is a `UsageError` (probably not a tuning log at all)."""
    log = read_log(path)
    if log.skipped:
        named = "; ".join(f"{s.where}: {s.reason}" for s in log.skipped[:_SKIPPED_SHOWN])
        more = f"; and {len(log.skipped) - _SKIPPED_SHOWN} more" if len(log.skipped) > _SKIPPED_SHOWN else ""
        if not log.records:
            raise UsageError(f"{path} has no usable tuning record: {named}{more}")
        print(f"eqsat: warning: {len(log.skipped)} bad line(s) of tuning log {path} skipped: {named}{more}",
              file=sys.stderr)
    return strategies.TuningHistory(log.records, path)


def _extractor(name: str, ilp_seconds: float):
    return IlpExtractor(seconds=ilp_seconds) if name == "ilp" else EXTRACTORS[name]


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[ProgressLine | None]:
    """The saturation progress display the options ask for (default: when stderr is a terminal),
    cleared when the block ends."""
    if not (sys.stderr.isatty() if args.progress is None else args.progress):
        yield None
        return
    with ProgressLine(_limits(args)) as line:
        yield line


def _target(args: argparse.Namespace, name: str = "cpu", log: strategies.TuningHistory | None = None) -> TargetSpec:
    """The target `name` resolved once (`resolve_target`): for an ort target, in the ONNX Runtime session
    that --ort-optimizer and --threads name where the command has them; its rules are --rules if given."""
    target = in_session(name, args.ort_optimizer, args.threads) if hasattr(args, "ort_optimizer") else name
    spec = resolve_target(target, log, standard_onnx=getattr(args, "standard_onnx", False))
    return dataclasses.replace(spec, rules=args.rules) if getattr(args, "rules", None) else spec


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(iterations=args.iterations, nodes=args.nodes, seconds=args.seconds)




def _cmd_optimize(args: argparse.Namespace) -> int:
    onnx_out = onnx_output(args)
    spec = _target(args, args.target, _history(args.log) if args.log else None)
    mod, params = _load(args.model, args.small)
    written = None
    with _progress(args) as show:
        options = dict(target=spec, limits=_limits(args), extractor=_extractor(args.extractor, args.ilp_seconds),
                       progress=show, verify=args.verify)
        if onnx_out:
            written = optimize_to_onnx(mod, params, original_of(args.model), standard_onnx=args.standard_onnx,
                                       onnx_contrib=args.onnx_contrib, speed=args.speed_check, **options)
            res = written.optimized
        else:
            res = optimize(mod, params, **options)
    print(res.summary())
    if args.explain:
        print(res.explain())
    if args.print:
        print(res.astext(show_provenance=True))
    outputs: dict[str, bytes] = {}
    if written is not None and written.verdict is not None:
        print(written.verdict_summary())
    if args.json:
        data = report_record(args.model, res, written.verdict if written is not None else None)
        outputs[args.json] = (json.dumps(data, indent=2, default=str) + "\n").encode()
    if onnx_out:
        outputs[onnx_out] = written.serialized()
    write_files(outputs)
    return 0


def verify_args(parser: argparse.ArgumentParser) -> None:
    """--verify N / --no-verify: how a command checks each program it extracts."""
    check = parser.add_mutually_exclusive_group()
    check.add_argument("--verify", type=int_at_least(1), default=DEFAULT_TRIALS, metavar="N",
                       help="run each result against the input on N seeded input sets (typical, edge values, "
                            "inf/NaN, small, large: in that order) where its target runs it")
    check.add_argument("--no-verify", dest="verify", action="store_const", const=False, default=argparse.SUPPRESS,
                       help="skip that check: the one way to get a program that was not verified")


def _cmd_compare(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    with _progress(args) as show:
        result = compare(mod, params, targets=[_target(args, t) for t in args.targets],
                         extractors=[_extractor(e, args.ilp_seconds) for e in args.extractors],
                         rules=args.rules, limits=_limits(args), progress=show, verify=args.verify)
    print(result)
    if args.diff:
        print(result.diffs())
    if args.json:
        write_files({args.json: (json.dumps(comparison_record(args.model, result), indent=2, default=str) + "\n").encode()})
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    if args.optimized and args.candidates:
        raise UsageError("--optimized tunes the extracted program and --candidates every form it is chosen from; "
                         "give one of them")
    db = TuningDatabase(args.db) if args.db else None
    where = args.db or args.log
    earlier = (db.history(args.target, this_device(args.threads).key).records if db is not None
               else _history(args.log).records if Path(args.log).exists() else [])
    mod, params = _load(args.model, args.small)
    if args.optimized:
        with _progress(args) as show:
            res = optimize(mod, params, target=_target(args, args.target), limits=_limits(args),
                           extractor=_extractor(args.extractor, args.ilp_seconds), progress=show)
        print(res.summary())
        mod, params = res.mod, res.params
    if args.candidates:
        with _progress(args) as show:
            sat = saturate_program(mod, params, rules=_target(args, args.target).rules, limits=_limits(args),
                                   progress=show)
        print(sat.report.summary())
        items = candidate_workloads(sat.view, args.target)
    else:
        items = workload_constants(mod, params)
    records = tune_workloads(items, args.target, log=db or args.log, trials=args.trials, repeat=args.repeat,
                             threads=args.threads, weight_bytes=program_weight_bytes(mod, params))
    workloads = [w for w, _ in items if w.static]
    target = strategies.Target(args.target)
    if "ort" in target.keys:
        _print_ort_tuning(args, workloads, records, earlier, prepare_program(mod, params))
        return 0
    print(f"tuned {len(workloads)} workload(s) on {args.target}: {len(records)} measurement(s) "
          f"({sum(not r.ok for r in records)} failed) added to {where}")
    history = strategies.TuningHistory(earlier + records, where)
    for workload in workloads:
        tuned = strategies.select_implementation(workload, target, history)
        untuned = strategies.select_implementation(workload, target, strategies.TuningHistory([]))
        changed = untuned.implementation.name != tuned.implementation.name
        note = f"; untuned: {untuned.implementation.name}" if changed else ""
        print(f"{tuned.describe(target)}{note}")
    return 0


def _print_ort_tuning(args: argparse.Namespace, workloads: list[strategies.Workload],
                      records: list[strategies.TuningRecord], earlier: list[strategies.TuningRecord],
                      program: ir.Function) -> None:
    """What ONNX Runtime measured per workload next to the roofline, and the program's cost both ways."""
    how = ""
    if records:
        config = records[0].config
        how = (f" in ONNX Runtime {config['onnxruntime']} ({config['intra_op_threads']} intra-op thread(s), "
               f"graph optimization {config['graph_optimization']})")
    print(f"timed {len(records)} workload(s) on {args.target}{how}: {sum(not r.ok for r in records)} failed; "
          f"added to {args.db or args.log}")
    by_key = {r.workload: r for r in earlier + records}  # a database's workloads measured earlier are not timed again
    roofline = strategies.CostModel(args.target)
    for workload in workloads:
        record = by_key[workload.key]
        estimate = roofline.node_cost(workload.op, workload.attrs, workload.in_types, workload.out_type)
        measured = f"{record.latency_us:.1f} µs measured" if record.ok else f"failed ({record.error_msg})"
        print(f"{args.target}: {workload.describe()}: {measured}, roofline {estimate:.1f} µs")
    tuned = strategies.CostModel(args.target, earlier + records)
    print(f"{args.target}: the program costs {tuned.program_cost(program):.4g} µs with the log, "
          f"{roofline.program_cost(program):.4g} µs by the roofline; {tuned.coverage(program).summary()}")


def _cmd_show(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    spec = _target(args, args.target)
    with _progress(args) as show:
        sat = saturate_program(mod, params, rules=spec.rules, limits=_limits(args), progress=show)
    view = sat.view
    costs = node_costs(view, spec.model)
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
    if args.render:
        print(f"wrote {render(dot, args.render)}")
    if args.dot:
        write_files({args.dot: dot.encode()})
        print(f"wrote {args.dot}")
    return 0


def _rule_name(text: str) -> str:
    """An argparse type: the name of a library rule."""
    try:
        return find_rule(text).name
    except EqsatError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _node_name(text: str) -> str:
    """An argparse type: a node as the program prints it: `%12` (or `12`) or a variable `%x`."""
    name = text if text.startswith("%") else f"%{text}"
    if len(name) < 2:
        raise argparse.ArgumentTypeError(f"expected a node such as %12 or %x, got {text!r}")
    return name


def _load_pattern(path: str) -> DFPattern:
    """The `pattern` a Python file defines; a file that fails to run or defines none is a `UsageError`."""
    try:
        namespace = runpy.run_path(path)
    except Exception as err:  # the user's file: any error it raises is theirs to fix
        raise UsageError(f"cannot run {path}: {type(err).__name__}: {err}") from err
    pattern = namespace.get("pattern")
    if not isinstance(pattern, DFPattern):
        found = "no `pattern`" if pattern is None else f"`pattern` as a {type(pattern).__name__}"
        raise UsageError(f"{path} must define `pattern`, a dataflow pattern (from ir.dataflow_pattern import *); "
                         f"it defines {found}")
    return pattern


def _cmd_why(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    printed = {*node_names(mod).values(), "%result"}
    if args.node not in printed:
        numbered = sorted(int(n[1:]) for n in printed if n[1:].isdigit())
        raise UsageError(f"{args.model} has no node {args.node}; as `print(mod)` shows the program, its nodes are "
                         f"%0 to %{numbered[-1] if numbered else 0}, its variables, and %result (the value returned)")
    what = _load_pattern(args.pattern) if args.pattern else args.rule
    text = [t.strip() for t in ir.astext(mod["main"], show_types=False).splitlines()]
    line = f"%result = {text[-2]}" if args.node == "%result" else next(
        (t for t in text if t.startswith(f"{args.node} = ")), args.node)
    with _progress(args) as show:
        sat = saturate_program(mod, params, rules=_target(args).rules, limits=_limits(args), progress=show)
    print(sat.report.summary())
    print(f"node {line.rstrip(';')}")
    print(why_not(sat, what, args.node))
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    names = [args.set] if args.set else sorted(RULESETS)
    for name in names:
        if name not in RULESETS:
            raise EqsatError(f"unknown rule set {name!r}; choose from {sorted(RULESETS)}")
        print(f"{name}: {', '.join(RULESETS[name].names)}")
    if not args.set or args.set == "default":
        print(f"families recognised by default: {'; '.join(FAMILIES)}")
    return 0


def _cmd_check_rules(args: argparse.Namespace) -> int:
    verdicts = audit_rules(args.rules)
    for v in verdicts:
        detail = f"  {v.detail}" if v.detail else ""
        print(f"{v.rule:<34} {v.verdict:<10} fired {v.applied:>3}  programs {v.programs:>3}  "
              f"near misses {v.near_misses}  {v.seconds:5.2f} s{detail}")
    counts = Counter(v.verdict for v in verdicts)
    print(f"{args.rules.name}: {len(verdicts)} rules: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    random = audit_random(args.rules, args.random, args.seed) if args.random else None
    if random is not None:
        print(random.summary())
        for name, program in sorted(random.unsound.items()):
            print(f"{name} is unsound on:\n{program}")
    return 0 if counts["ok"] == len(verdicts) and not (random and random.unsound) else 1


def _cmd_bisect(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    with _progress(args) as show:
        found = bisect_unsound(mod, params, rules=_target(args).rules, limits=_limits(args), input_sets=args.input_sets,
                               progress=show)
    print(found)
    return 0


def _cmd_coverage(args: argparse.Namespace) -> int:
    mod, params = _load(args.model, args.small)
    cov = tuning_coverage(mod, args.target, _history(args.log), params)
    print(cov.summary())
    print(cov.table())
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    for name, entry in ir.models.MODELS.items():
        print(f"{name:<14} {entry.summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The `eqsat` argument parser: every value is checked here, before any work starts."""
    parser = Parser(prog="eqsat", description="Equality saturation for Relay-style tensor graphs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--debug", action="store_true",
                       help="on failure show the Python traceback instead of one line (or set EQSAT_DEBUG=1)")
        return p

    def program_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("model", type=model_name, help="a zoo model name (see `eqsat models`) or an .onnx file")
        p.add_argument("--small", action="store_true", help="the zoo model's tiny test configuration")
        p.add_argument("--rules", type=rule_sets, default=None,
                       help=f"rule sets joined by '+' ({', '.join(sorted(RULESETS))}) (default: the target's "
                            f"rules: default, plus layout for ort)")
        p.add_argument("--iterations", type=int_at_least(1), default=Limits.iterations,
                       help="saturation stops after this many iterations")
        p.add_argument("--nodes", type=int_at_least(1), default=Limits.nodes,
                       help="saturation stops when the e-graph has this many e-nodes")
        p.add_argument("--seconds", type=seconds, default=Limits.seconds,
                       help="saturation stops after this many seconds")
        p.add_argument("--ilp-seconds", type=seconds, default=60.0, help="time limit of the ILP extractor")
        p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show saturation progress on stderr: iteration, e-nodes, time left of the limits "
                            "(default: when stderr is a terminal)")
        p.add_argument("--quiet", dest="progress", action="store_false", default=None, help="the same as --no-progress")

    extractors = ", ".join(sorted(EXTRACTORS))
    opt = command("optimize", "saturate a model and extract the best program for a target")
    program_args(opt)
    opt.add_argument("output", nargs="?", type=output_file,
                     help="write the optimized program as ONNX to this file (the same as --onnx)")
    opt.add_argument("--target", type=target_kind(), default=None,
                     help="a strategies target (cpu, cuda, ort, ...) or 'ops' (default: ort for an .onnx model "
                          "written back as ONNX, else cpu)")
    opt.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS), help="how the program is extracted")
    opt.add_argument("--json", type=output_file, help="write the report as JSON to this file")
    opt.add_argument("--onnx", type=output_file, help="write the optimized program as ONNX to this file")
    opt.add_argument("--onnx-contrib", action="store_true",
                     help="with an output file, for a target other than ort: fused ops as ONNX Runtime "
                          "com.microsoft contrib ops where possible (the ort target always writes its own kernels)")
    opt.add_argument("--no-speed-check", dest="speed_check", action="store_false",
                     help="for the ort target, write ours without timing it against the input (by default the "
                          "input is written instead when ours is not faster)")
    opt.add_argument("--ort-optimizer", choices=("disabled", "basic", "extended", "all"), default="all",
                     help="ONNX Runtime's graph optimization level in the session the speed check times")
    opt.add_argument("--threads", type=int_at_least(1), default=1,
                     help="intra-op threads of the speed check's sessions (1: CPU time, steady under load)")
    opt.add_argument("--standard-onnx", action="store_true",
                     help="with an output file: standard ONNX ops only, no ONNX Runtime contrib ops or blocked "
                          "layout (the ort target then leaves the layout rules out)")
    opt.add_argument("--log", type=existing_file,
                     help="a tuning log (see `eqsat tune`) whose measurements the cost model uses")
    opt.add_argument("--explain", action="store_true", help="print what each rule and fused op changed and saved")
    verify_args(opt)
    opt.add_argument("--print", action="store_true",
                     help="print the optimized program, each rule-made node with the rules that made it")
    opt.set_defaults(run=_cmd_optimize)

    cmp_ = command("compare", "programs for several targets and extractors side by side")
    program_args(cmp_)
    cmp_.add_argument("--targets", type=comma_list(target_kind()), default="cpu", help="comma-separated targets")
    cmp_.add_argument("--extractors", type=comma_list(extractor_name), default="greedy",
                      help=f"comma-separated extractors: {extractors}")
    cmp_.add_argument("--diff", action="store_true", help="print each program's diff against the input")
    cmp_.add_argument("--json", type=output_file,
                      help="write the report and each candidate's program (as optimize --json does) to this file")
    verify_args(cmp_)
    cmp_.set_defaults(run=_cmd_compare)

    tune = command("tune", "measure the implementations of every workload and log the results")
    program_args(tune)
    tune.add_argument("--target", type=target_kind(ops=False, device=True), default="cpu",
                      help="a strategies target (cpu, cuda, ...) whose device this machine has")
    tune.add_argument("--log", type=output_file, default="tuning.jsonl", help="the JSON-lines tuning log to append to")
    tune.add_argument("--db", type=output_file,
                      help="a tuning database (SQLite, created when missing) to add to instead of --log: workloads it "
                           "holds for this kind of device are not measured again")
    tune.add_argument("--trials", type=int_at_least(1), default=8, help="measurements per workload, at most")
    tune.add_argument("--repeat", type=int_at_least(1), default=3, help="timed runs per measurement")
    tune.add_argument("--optimized", action="store_true",
                      help="tune the program `optimize` extracts for the target (fused calls included)")
    tune.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS),
                      help="how the program is extracted, with --optimized")
    tune.add_argument("--candidates", action="store_true",
                      help="tune every form extraction chooses from: each workload of the saturated e-graph "
                           "that the target can run")
    tune.add_argument("--threads", type=int_at_least(1),
                      help="intra-op threads of ONNX Runtime's sessions on an ort target "
                           "(default: the CPUs this process may use)")
    tune.set_defaults(run=_cmd_tune)

    many = command("batch", "optimize many models with the same options (or, with --tune, measure each distinct "
                            "workload once into a tuning database), one task per model on Ray or local processes")
    batch_args(many)
    verify_args(many)
    many.set_defaults(run=run_batch)

    show = command("show", "describe one e-class of the saturated e-graph and draw its neighbourhood")
    program_args(show)
    where = show.add_mutually_exclusive_group()
    where.add_argument("--eclass", type=int_at_least(0), help="the e-class id (default: the root)")
    where.add_argument("--op", help="an e-class holding an e-node of this op (one where the program uses it first)")
    show.add_argument("--depth", type=int_at_least(0), default=2, help="steps from the e-class")
    show.add_argument("--max-nodes", type=int_at_least(1), default=40, help="e-nodes drawn, at most")
    show.add_argument("--direction", default="operands", choices=DIRECTIONS, help="which edges a step follows")
    show.add_argument("--target", type=target_kind(), default="cpu",
                      help="costs and highlighted program for this target (or 'ops')")
    show.add_argument("--extractor", default="greedy", choices=sorted(EXTRACTORS),
                      help="how the highlighted program is extracted")
    show.add_argument("--dot", type=output_file, help="write the view as Graphviz DOT text to this file")
    show.add_argument("--render", type=output_file,
                      help="draw the view to this .svg/.png file (needs Graphviz's dot program)")
    show.set_defaults(run=_cmd_show)

    why = command("why", "why a rule (or a dataflow pattern) did not rewrite a node of the program")
    program_args(why)
    what = why.add_mutually_exclusive_group(required=True)
    what.add_argument("--rule", type=_rule_name, help="a library rule's name (see `eqsat rules`)")
    what.add_argument("--pattern", type=existing_file,
                      help="a Python file defining `pattern`, a dataflow pattern (ir.dataflow_pattern)")
    why.add_argument("--node", type=_node_name, required=True,
                     help="the node, as the input program prints it: %%12 (or 12), a variable %%x, or %%result")
    why.set_defaults(run=_cmd_why)

    rules = command("rules", "list the rule sets and their rules")
    rules.add_argument("set", nargs="?", help="one rule set")
    rules.set_defaults(run=_cmd_rules)

    check_rules = command("check-rules", "check every rule of a rule set on its example (every program of the "
                                         "e-graph against it, on typical and edge values) and its near misses")
    check_rules.add_argument("--rules", type=rule_sets, default="default",
                             help=f"rule sets joined by '+' ({', '.join(sorted(RULESETS))})")
    check_rules.add_argument("--random", type=int_at_least(0), default=0,
                             help="also check the whole set on this many seeded random programs (element-wise ops "
                                  "over broadcasting shapes, each dtype's edge constants, in float32, int32, float16, "
                                  "bfloat16, float64, int64 and uint8)")
    check_rules.add_argument("--seed", type=int, default=0, help="the random programs' seed")
    check_rules.set_defaults(run=_cmd_check_rules)

    bisect = command("bisect", "replay saturation and name the first rule application whose result computes "
                               "something else than the term it matched")
    program_args(bisect)
    bisect.add_argument("--input-sets", type=int_at_least(1), default=3,
                        help="the model's seeded input sets each result is checked on (typical, edge values, inf/NaN, ...)")
    bisect.set_defaults(run=_cmd_bisect)

    coverage = command("coverage", "per workload of a model: tuned by a log or not, the implementation that will "
                                   "run and why, and the untuned share of the cost")
    coverage.add_argument("model", type=model_name, help="a zoo model name (see `eqsat models`) or an .onnx file")
    coverage.add_argument("--small", action="store_true", help="the zoo model's tiny test configuration")
    coverage.add_argument("--log", type=existing_file, required=True, help="the tuning log (see `eqsat tune`)")
    coverage.add_argument("--target", type=target_kind(ops=False), default="cpu",
                          help="a strategies target (cpu, cuda, ort, ...)")
    coverage.set_defaults(run=_cmd_coverage)

    models = command("models", "list the model zoo")
    models.set_defaults(run=_cmd_models)
    return parser


def _debug(args: argparse.Namespace) -> bool:
    return args.debug or os.environ.get("EQSAT_DEBUG", "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `eqsat` console script; returns the exit status (see the module docstring)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, or a command line the parser rejected (already reported)
        return done.code if isinstance(done.code, int) else 2
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # NaN and inf are values here, not news
            warnings.simplefilter("ignore", RuntimeWarning)
            return args.run(args)
    except BrokenPipeError:  # whoever read stdout stopped (`eqsat rules | head -1`): stop quietly
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return EXIT_BROKEN_PIPE
    except (Exception, KeyboardInterrupt) as err:
        if _debug(args):
            raise
        status, message = failure(err)
        print(f"eqsat: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
