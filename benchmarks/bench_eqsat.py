"""E-graph benchmark: saturation, extraction and measured latency on the zoo, scaling, a large ILP.

    python -m benchmarks.bench_eqsat                  # full sizes -> results/eqsat.{json,md}
    python -m benchmarks.bench_eqsat --small          # the zoo's test configurations -> eqsat_small
    python -m benchmarks.bench_eqsat --scaling-only   # synthetic parts only -> eqsat_scaling(_small)
    python -m benchmarks.bench_eqsat --budget-only    # whole optimize calls against their budgets -> eqsat_budget

Parts:

- models (main table): each zoo model is built with its seeded weights (batch-norm folding and
  the latency runs need constant values), lowered and saturated once under the default rules and
  limits, then every extractor extracts a program for cpu, cuda and ort from that one e-graph
  (cuda is priced by its cost model; nothing runs on a GPU). One row per model and target.
- latency: the program greedy extracts for cpu against the input, on the numpy executor
  (`strategies.build(...).run`) and in ONNX Runtime: the input exported with `to_onnx` and run
  with ONNX Runtime's graph optimizations on, ours exported and run with them off, with the
  standard ops and with ONNX Runtime's contrib ops (`contrib=True`); and the program greedy
  extracts for the ort target, exported with contrib ops and run with the optimizations off.
- scaling: `benchmarks.synthetic.dl_dag` programs of growing size; each size runs in a fresh
  process, so its peak resident memory (VmHWM, egglog's native memory included) is its own.
- budget: whole `eqsat.optimize` calls (verification included) on ResNet-50, BERT-base and a ViT-B/16
  export, against their time budgets.
- ilp: a synthetic program grown by the default rules, and by those plus associativity and
  commutativity, up to a node limit, then extracted exactly within the ILP time limit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import eqsat
import ir
import strategies
from eqsat.optimize import Extracted, Saturated, extract_program, saturate_program
from eqsat.target import resolve_target
from ir.visitor import count_nodes
from strategies.values import random_value

from .report import Section, Stopwatch, write_results
from .synthetic import dl_dag

__all__ = ["MODELS", "TARGETS", "EXTRACTOR_NAMES", "Config", "FULL", "SMALL", "data_inputs", "medians_ms",
           "measure_latency", "measure_model", "synthetic_point", "in_fresh_process", "main"]

MODELS = ("resnet50", "bert", "nasrnn", "nasneta", "inception_v3", "resnext50", "squeezenet", "vgg19")
TARGETS = ("cpu", "cuda", "ort")
EXTRACTOR_NAMES = ("tree", "greedy", "ilp")
SCALING_RULES = "simplify+folding+fusion"
SCALING_LIMITS = eqsat.Limits(iterations=50, nodes=2_000_000, seconds=600)
ILP_RULES = ("default", "all")


@dataclass(frozen=True)
class Config:
    """Sizes of one benchmark run."""

    small: bool
    """the zoo's test configurations instead of the published sizes."""
    scaling_nodes: tuple[int, ...]
    """IR nodes of the synthetic programs of the scaling part."""
    ilp_program_nodes: int
    """IR nodes of the synthetic program the ILP part grows."""
    ilp_enodes: int
    """the node limit that program's e-graph grows to."""


FULL = Config(False, (1_000, 10_000, 100_000), 2_000, 20_000)
SMALL = Config(True, (300, 1_000), 500, 5_000)


# -- models --------------------------------------------------------------------------------------------------

def _ilp_status(info: Mapping[str, Any]) -> str:
    """HiGHS's model status in a word or two, and which program the ILP extractor returned."""
    found = re.search(r"HiGHS Status \d+: (?:model_status is )?([^;)]+)", str(info.get("status", "")))
    status = found.group(1).strip() if found else str(info.get("status", "-"))
    return status if info.get("source", "ilp") == "ilp" else f"{status}; greedy kept"


def _extraction_row(sat: Saturated, target: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Seconds and cost of every extractor for one target, and the extracted programs by extractor."""
    model = resolve_target(target).model
    row: dict[str, Any] = {"target": target}
    programs = {}
    for name in EXTRACTOR_NAMES:
        out = extract_program(sat, model, name)
        programs[name] = out
        row["cost_before"] = out.cost_before
        row[f"{name}_s"] = out.seconds
        row[f"cost_{name}"] = out.cost_after
    ilp_info = programs["ilp"].choice.info
    row["ilp_gap"] = ilp_info.get("gap")
    row["ilp_status"] = _ilp_status(ilp_info)
    row["gain_greedy"] = row["cost_before"] / row["cost_greedy"] if row["cost_greedy"] else None
    return row, programs


def data_inputs(mod: ir.IRModule, params: Mapping[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random values for the inputs of `main` that are not weights (integer ids in [0, 2))."""
    rng = np.random.default_rng(seed)
    return {p.name_hint: random_value(p.type_annotation, rng) for p in mod["main"].params if p.name_hint not in params}


def medians_ms(runs: Mapping[str, Callable[[], Any]], repeat: int, min_seconds: float = 0.5,
               max_rounds: int = 500) -> dict[str, float]:
    """Median wall-clock milliseconds of each call, measured in alternation after one warm-up each.

    Every round calls each function once, so a change of load on a shared machine hits all of them
    alike. At least `repeat` rounds; fast calls go on until the quickest has run `min_seconds` in all
    (at most `max_rounds` rounds), which steadies their medians.
    """
    for run in runs.values():
        run()
    stopwatch = Stopwatch()
    times: dict[str, list[float]] = {name: [] for name in runs}
    rounds = 0
    while rounds < repeat or (min(map(sum, times.values())) < min_seconds * 1e3 and rounds < max_rounds):
        for name, run in runs.items():
            with stopwatch(name):
                run()
            times[name].append(stopwatch.seconds[name] * 1e3)
        rounds += 1
    return {name: statistics.median(ts) for name, ts in times.items()}


def _ort_session(model: Any, optimize_graph: bool) -> Any:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle sessions leave the cores free
    if not optimize_graph:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _outputs(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in (value if isinstance(value, (tuple, list)) else [value])]


def measure_latency(mod: ir.IRModule, params: Mapping[str, Any], ours: Extracted, ours_ort: Extracted,
                    repeat: int) -> dict[str, Any]:
    """Median milliseconds of the input and our programs, numpy executor and ONNX Runtime.

    `ours` is extracted for cpu: it runs on the numpy executor and, exported with the standard
    ops and with ONNX Runtime's contrib ops, in ONNX Runtime. `ours_ort` is extracted for the ort
    target and runs in ONNX Runtime exported with contrib ops (the program shipped to it).
    """
    inputs = data_inputs(mod, params)
    original, built = strategies.build(mod, "cpu", params), strategies.build(ours.mod, "cpu", ours.params)
    row: dict[str, Any] = medians_ms({"numpy_input_ms": partial(original.run, **inputs),
                                      "numpy_ours_ms": partial(built.run, **inputs)}, repeat)
    row["numpy_speedup"] = row["numpy_input_ms"] / row["numpy_ours_ms"]
    exported = {"input": ir.frontend.to_onnx(mod, params), "ours": ir.frontend.to_onnx(ours.mod, ours.params)}
    sessions = {f"ort_{program}_{'on' if on else 'off'}_ms": _ort_session(model, on)
                for program, model in exported.items() for on in (True, False)}
    sessions["ort_ours_contrib_off_ms"] = _ort_session(ir.frontend.to_onnx(ours.mod, ours.params, contrib=True), False)
    sessions["ort_ours_ort_contrib_off_ms"] = _ort_session(
        ir.frontend.to_onnx(ours_ort.mod, ours_ort.params, contrib=True), False)
    row.update(medians_ms({name: partial(session.run, None, inputs) for name, session in sessions.items()}, repeat))
    row["ort_speedup"] = row["ort_input_on_ms"] / row["ort_ours_off_ms"]
    row["ort_contrib_speedup"] = row["ort_input_on_ms"] / row["ort_ours_contrib_off_ms"]
    row["ort_target_speedup"] = row["ort_input_on_ms"] / row["ort_ours_ort_contrib_off_ms"]
    want = _outputs(original.run(**inputs))
    for column, session in (("max_abs_diff", "ort_ours_off_ms"), ("max_abs_diff_contrib", "ort_ours_contrib_off_ms"),
                            ("max_abs_diff_ort_target", "ort_ours_ort_contrib_off_ms")):
        got = _outputs(sessions[session].run(None, inputs))
        row[column] = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
    return row


def measure_model(name: str, small: bool, repeat: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Extraction rows (one per target) and the latency row of one zoo model."""
    label = name + (" (small)" if small else "")
    stopwatch = Stopwatch()
    with stopwatch("build"):
        mod, params = ir.models.get(name, small=small)
    with stopwatch("pipeline"):
        sat = saturate_program(mod, params)
    report = sat.report
    common = {"model": label, "ir_nodes": count_nodes(mod["main"]), "enodes": report.enodes,
              "eclasses": report.eclasses, "iterations": report.iterations, "stop": str(report.stop_reason),
              "lower_s": stopwatch.seconds["pipeline"] - report.seconds, "saturate_s": report.seconds}
    rows, greedy = [], {}
    for target in TARGETS:
        row, programs = _extraction_row(sat, target)
        row["saturate_greedy_s"] = report.seconds + row["greedy_s"]
        rows.append({**common, **row})
        greedy[target] = programs["greedy"]
    latency = {"model": label, **measure_latency(mod, params, greedy["cpu"], greedy["ort"], repeat)}
    print(f"{label}: {report.summary()}", file=sys.stderr, flush=True)
    return rows, latency


# -- synthetic programs ----------------------------------------------------------------------------------------

def _memory_mb(field: str) -> float | None:
    """`VmRSS` (resident now) or `VmHWM` (peak resident) of this process in MiB; None without /proc.

    Unlike `ru_maxrss`, VmHWM starts afresh in an exec'd process, so a child's peak is its own.
    """
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    line = next(line for line in status.read_text().splitlines() if line.startswith(f"{field}:"))
    return int(line.split()[1]) / 1024  # reported in kB


def synthetic_point(n_nodes: int, rules: str, limits: eqsat.Limits, extractors: Sequence[str]) -> dict[str, Any]:
    """Generate, lower, saturate and extract (cpu costs) one `dl_dag`; times, sizes and peak memory.

    Peak memory is the process's, so call it in a fresh process (`in_fresh_process`) to measure
    one size alone.
    """
    baseline_mb = _memory_mb("VmRSS")
    stopwatch = Stopwatch()
    with stopwatch("generate"):
        mod = dl_dag(n_nodes)
    with stopwatch("lower"):
        lowered = eqsat.lower(mod)
    report = eqsat.saturate(lowered.egraph, eqsat.resolve_rules(rules), limits)
    with stopwatch("view"):
        view = lowered.view()
    with stopwatch("costs"):
        costs = eqsat.node_costs(view, strategies.CostModel("cpu"))
    row: dict[str, Any] = {"ir_nodes": count_nodes(mod["main"]), "rules": rules, "enodes": report.enodes,
                           "eclasses": report.eclasses, "iterations": report.iterations,
                           "stop": str(report.stop_reason), "generate_s": stopwatch.seconds["generate"],
                           "lower_s": stopwatch.seconds["lower"], "saturate_s": report.seconds,
                           "view_s": stopwatch.seconds["view"], "costs_s": stopwatch.seconds["costs"]}
    for name in extractors:
        with stopwatch(name):
            choice = eqsat.get_extractor(name).extract(view, view.roots, costs)
        row[f"{name}_s"] = stopwatch.seconds[name]
        row[f"cost_{name}"] = choice.dag_cost(view, costs)
        if name == "ilp":
            row.update(ilp_gap=choice.info.get("gap"), ilp_status=_ilp_status(choice.info),
                       ilp_variables=choice.info.get("variables"), ilp_constraints=choice.info.get("constraints"))
    row.update(baseline_rss_mb=baseline_mb, peak_rss_mb=_memory_mb("VmHWM"))
    return row


def in_fresh_process(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """`fn(*args)` in a newly spawned interpreter (nothing inherited, so its peak memory is its own)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def scaling_rows(config: Config) -> list[dict[str, Any]]:
    rows = []
    for n in config.scaling_nodes:
        row = {"size": n, **in_fresh_process(synthetic_point, n, SCALING_RULES, SCALING_LIMITS, EXTRACTOR_NAMES)}
        print(f"scaling {n}: {row['enodes']} e-nodes, saturated in {row['saturate_s']:.2f} s", file=sys.stderr,
              flush=True)
        rows.append(row)
    return rows


def ilp_rows(config: Config) -> list[dict[str, Any]]:
    limits = eqsat.Limits(nodes=config.ilp_enodes, seconds=60)
    return [in_fresh_process(synthetic_point, config.ilp_program_nodes, rules, limits, ("greedy", "ilp"))
            for rules in ILP_RULES]


# -- report ----------------------------------------------------------------------------------------------------

MODEL_COLUMNS = ("model", "target", "ir_nodes", "enodes", "eclasses", "iterations", "stop", "lower_s", "saturate_s",
                 "tree_s", "greedy_s", "ilp_s", "saturate_greedy_s", "cost_before", "cost_tree", "cost_greedy",
                 "cost_ilp", "gain_greedy", "ilp_gap", "ilp_status")
LATENCY_COLUMNS = ("model", "numpy_input_ms", "numpy_ours_ms", "numpy_speedup", "ort_input_on_ms", "ort_ours_off_ms",
                   "ort_speedup", "ort_ours_contrib_off_ms", "ort_contrib_speedup", "ort_ours_ort_contrib_off_ms",
                   "ort_target_speedup", "ort_input_off_ms", "ort_ours_on_ms", "max_abs_diff", "max_abs_diff_contrib",
                   "max_abs_diff_ort_target")
SCALING_COLUMNS = ("size", "ir_nodes", "enodes", "eclasses", "iterations", "stop", "generate_s", "lower_s",
                   "saturate_s", "view_s", "costs_s", "tree_s", "greedy_s", "ilp_s", "ilp_status", "baseline_rss_mb",
                   "peak_rss_mb")
ILP_COLUMNS = ("ir_nodes", "rules", "enodes", "eclasses", "stop", "saturate_s", "greedy_s", "cost_greedy", "ilp_s",
               "cost_ilp", "ilp_gap", "ilp_status", "ilp_variables", "ilp_constraints", "peak_rss_mb")

# Yang et al., "Equality Saturation for Tensor Graph Superoptimization", MLSys 2021 (arXiv:2101.01332),
# table of search time and runtime speedup against TASO, as listed on https://mwillsey.com/papers/tensat
TENSAT_PUBLISHED = (
    ("bert", 13.6, 1.4, 8.5, 9.2), ("resnext50", 25.3, 0.7, 5.5, 8.8), ("nasneta", 1226, 10.6, 1.9, 7.3),
    ("nasrnn", 177.3, 0.5, 45.4, 68.9), ("inception_v3", 68.6, 5.1, 6.3, 10.0), ("squeezenet", 16.4, 0.3, 6.7, 24.5),
    ("vgg19", 8.9, 0.4, 8.9, 8.9),
)
TENSAT_COLUMNS = ("model", "taso_search_s", "tensat_search_s", "taso_speedup_pct", "tensat_speedup_pct")

GENERAL_NOTES = """\
Wall-clock seconds on a machine with {cores} cores shared with other work (timings vary from run
to run by tens of percent); one run each unless stated."""

MODEL_NOTES = """\
Models: default rules (simplify, folding, fusion, merge), default limits ({limits}).
`lower_s`: lowering plus the two e-graph snapshots (`saturate_program` minus saturation);
`saturate_s`: the runner's own clock. `*_s` per extractor: extraction alone
(per-node costs excluded). Costs are µs from `strategies.CostModel(target)` (roofline
estimates, no tuning log; ort is the cpu roofline plus ONNX Runtime's fused contrib forms);
`cost_before` is the input program, `cost_<extractor>` the extracted
one (never worse: the input is kept when an extractor loses to it); `gain_greedy` = cost_before /
cost_greedy. `ilp_gap`: HiGHS's relative MIP gap (0 = proven optimal); `greedy kept` means the
ILP stopped without a better solution."""

LATENCY_NOTES = """\
Median of at least {repeat} runs (fast programs: of 0.5 s of runs) after a warm-up, in ms, the
programs of one row run in alternation; "ours" is the program greedy extracts for cpu. numpy:
`strategies.build(mod, "cpu")`, input vs ours. ONNX Runtime {ort}, CPU provider, default
threads without spinning: `ort_input_on_ms` runs the input exported by `to_onnx` with ONNX
Runtime's graph optimizations on (its own fusions), `ort_ours_off_ms` runs ours exported with
standard ONNX ops with them off, so `ort_speedup` = input-on / ours-off compares our rewrites
with ONNX Runtime's. `ort_ours_contrib_off_ms`: ours exported with `contrib=True` (fused forms
as ONNX Runtime's com.microsoft ops: FusedConv, FusedGemm, FusedMatMul, BiasGelu,
SkipLayerNormalization), optimizations off; `ort_contrib_speedup` = input-on / that.
`ort_ours_ort_contrib_off_ms`: the program greedy extracts for the ort target (whose cost model
prices those contrib forms) from the same e-graph, exported with `contrib=True`, optimizations
off; `ort_target_speedup` = input-on / that. `ort_input_off_ms` and `ort_ours_on_ms` (ours,
standard ops, optimizations on) are for context. `max_abs_diff`, `max_abs_diff_contrib`,
`max_abs_diff_ort_target`: largest absolute difference of the outputs of the three
optimizations-off runs of ours against the input on the numpy executor."""

SCALING_NOTES = """\
`dl_dag` programs (benchmarks/synthetic.py: conv/batch-norm/relu, conv/bias/relu, 1x1 and 3x3
convolutions sharing an input, residual adds, swish and tanh gates on a [1, 4, 4, 4] map),
each size in a fresh process. Rules `{rules}`, limits {limits}.
Costs: cpu cost model; the ILP has a 60 s limit. Memory, MiB from /proc/self/status: resident
before generating (`baseline_rss_mb`: the interpreter with numpy, scipy and egglog loaded) and
the peak (`peak_rss_mb`, VmHWM, egglog's native memory included). The `merge` rules are left
out: on these programs `merge-parallel-conv` grows without bound (every merged convolution
shares its input with the others again), so the default set would measure the node limit."""

ILP_NOTES = """\
A {nodes}-node `dl_dag` grown until the node limit of {limit} e-nodes, under the default rules
(where `merge-parallel-conv` keeps merging) and under `all` (default plus associativity and
commutativity of add and multiply), then extracted for cpu by greedy and by the ILP extractor
(60 s limit). Aim: ILP within 60 s on about 20k e-nodes."""

TENSAT_NOTES = """\
Published figures, not measured here: Yang et al., "Equality Saturation for Tensor Graph
Superoptimization", MLSys 2021 (arXiv:2101.01332), as listed on https://mwillsey.com/papers/tensat.
Search time in seconds and runtime speedup in percent of TASO and TENSAT with TASO's rewrite
rules and cost model, measured on a GPU; our rule set, cost model and hardware differ, so these
numbers are context, not a comparison."""


#: (model, target) pairs whose whole `eqsat.optimize`, verification included, has a time budget (s)
BUDGETS = (("resnet50", "cpu", 5.0), ("resnet50", "ort", 5.0), ("bert", "cpu", 5.0), ("bert", "ort", 5.0),
           ("vit_b16", "ort", 10.0))


def _budget_model(name: str) -> tuple[ir.IRModule, dict[str, Any]] | None:
    """A zoo model at full size, or an export (`benchmarks.torch_models`) imported; None without torch."""
    if name in ir.models.MODELS:
        return ir.models.get(name)
    from .torch_models import Unavailable, export
    try:
        return ir.frontend.from_onnx(export(name))
    except Unavailable:
        return None


def budget_rows(runs: int) -> list[dict[str, Any]]:
    """Each `BUDGETS` pair optimized `runs` times end to end (default options): the median seconds of
    the whole call and of its parts, and the spread of the whole across runs."""
    rows = []
    for name, target, budget in BUDGETS:
        loaded = _budget_model(name)
        if loaded is None:
            continue
        mod, params = loaded
        totals, parts = [], []
        for _ in range(runs):
            watch = Stopwatch()
            with watch("total"):
                res = eqsat.optimize(mod, params, target=target)
            totals.append(watch.seconds["total"])
            parts.append((res.report.seconds, res.extract_seconds, res.verification.seconds))
        saturate, extract, verify = (statistics.median(p[k] for p in parts) for k in range(3))
        total = statistics.median(totals)
        rows.append({"model": name, "target": target, "total_s": round(total, 2),
                     "spread_s": f"{min(totals):.2f}-{max(totals):.2f}", "saturate_s": round(saturate, 2),
                     "extract_s": round(extract, 2), "verify_s": round(verify, 2),
                     "other_s": round(total - saturate - extract - verify, 2), "budget_s": budget,
                     "met": "yes" if total <= budget else "no", "stop": str(res.report.stop_reason),
                     "verified_on": res.verification.runner})
    return rows


BUDGET_COLUMNS = ["model", "target", "total_s", "spread_s", "saturate_s", "extract_s", "verify_s", "other_s",
                  "budget_s", "met", "stop", "verified_on"]
BUDGET_NOTES = """\
`eqsat.optimize(mod, params, target=...)` with its defaults (the target's rules, greedy extraction,
verification on 3 input sets where the target runs: the numpy executor for cpu, ONNX Runtime for
ort), {runs} runs per row, one after another in one process: the median of the whole call and of
its parts (saturation, extraction, verification; "other" is lowering, lifting and type
inference), and the spread of the whole. `vit_b16` is transformers' ViT-B/16 (random weights) as
torch's TorchScript exporter writes it, imported from ONNX. The budget is this machine's: 2 cores."""


def _limits_text(limits: eqsat.Limits) -> str:
    return f"{limits.iterations} iterations, {limits.nodes} e-nodes, {limits.seconds:g} s"


def _aims(models: Sequence[dict[str, Any]], synthetic: Sequence[dict[str, Any]]) -> str:
    """One line per aim of the e-graph issue, with the measured value and whether it was met."""
    lines = []
    resnet = next((r for r in models if r.get("model") == "resnet50" and r.get("target") == "cpu"), None)
    if resnet is not None:
        verdict = "met" if resnet["saturate_greedy_s"] < 5 else "missed"
        lines.append(f"- Aim, ResNet-50 saturation + greedy extraction under 5 s: {resnet['saturate_greedy_s']:.2f} s "
                     f"({verdict}).")
    for r in synthetic:
        if "ilp_s" in r and 15_000 <= r["enodes"] <= 25_000:
            verdict = "met" if r["ilp_s"] <= 60 * 1.05 and r["ilp_status"] == "Optimal" else "missed"
            lines.append(f"- Aim, ILP within 60 s on about 20k e-nodes: {r['ilp_s']:.1f} s on {r['enodes']} e-nodes "
                         f"({r['rules']}), {r['ilp_status']} ({verdict}).")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="the zoo's test configurations, smaller synthetic runs")
    parser.add_argument("--scaling-only", action="store_true", help="only the scaling and ILP parts")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per latency measurement; the median is kept")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models")
    parser.add_argument("--budget-only", action="store_true",
                        help="only the time budgets of whole optimize calls -> results/eqsat_budget")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.budget_only:
        runs = min(args.repeat, 3)
        path = write_results("eqsat_budget", budget_rows(runs), BUDGET_COLUMNS,
                             f"{GENERAL_NOTES.format(cores=multiprocessing.cpu_count())}\n\n"
                             f"{BUDGET_NOTES.format(runs=runs)}")
        print(path.read_text())
        return
    config = SMALL if args.small else FULL
    import onnxruntime

    parts: list[Section] = []
    if not args.scaling_only:
        rows, latency = [], []
        for name in args.models.split(","):
            model_rows, latency_row = measure_model(name, config.small, args.repeat)
            rows += model_rows
            latency.append(latency_row)
        parts += [Section("Models", rows, MODEL_COLUMNS, MODEL_NOTES.format(limits=_limits_text(eqsat.Limits()))),
                  Section("Measured latency", latency, LATENCY_COLUMNS,
                          LATENCY_NOTES.format(repeat=args.repeat, ort=onnxruntime.__version__))]
    scaling, ilp = scaling_rows(config), ilp_rows(config)
    parts += [Section("Scaling", scaling, SCALING_COLUMNS,
                      SCALING_NOTES.format(rules=SCALING_RULES, limits=_limits_text(SCALING_LIMITS))),
              Section("ILP on a large e-graph", ilp, ILP_COLUMNS,
                      ILP_NOTES.format(nodes=config.ilp_program_nodes, limit=config.ilp_enodes))]
    if not args.scaling_only:
        parts.append(Section("TENSAT, published", [dict(zip(TENSAT_COLUMNS, r)) for r in TENSAT_PUBLISHED],
                             TENSAT_COLUMNS, TENSAT_NOTES))
    first, rest = parts[0], parts[1:]
    aims = _aims(first.rows, [*scaling, *ilp])
    notes = GENERAL_NOTES.format(cores=multiprocessing.cpu_count()) + (f"\n{aims}" if aims else "")
    name = "eqsat" + ("_scaling" if args.scaling_only else "") + ("_small" if args.small else "")
    path = write_results(name, first.rows, first.columns, f"{notes}\n\n{first.notes}", rest)
    print(path.read_text())


if __name__ == "__main__":
    main()
