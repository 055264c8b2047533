"""Blocked layouts on the ort target: ResNet-50 with and without the `layout` rules, in ONNX Runtime.

    python -m benchmarks.bench_nchwc                 # full-size ResNet-50 -> results/nchwc.{json,md}
    python -m benchmarks.bench_nchwc --small --rounds 3

Programs, each exported with `to_onnx(contrib=True)` and run in ONNX Runtime on the CPU with
`--threads` intra-op threads:

- `original, ORT all`: the input with ONNX Runtime's optimizer fully on (which converts
  convolutions to its NCHWc kernels itself): the reference every ratio divides.
- `before` / `after`: ours, saturated under `default` / `default+layout` and extracted (greedy) for
  the ort target under its roofline costs, with ONNX Runtime's optimizer off (`after` also on).
- `after, tuned`: the `default+layout` e-graph extracted under costs measured in ONNX Runtime
  (every candidate workload of the e-graph timed, `strategies.tuning.tune_workloads`).

Timing: `--rounds` rounds; in each round every session runs once untimed, then `--runs` timed runs
in a row, sessions in turn, so a change of load hits all alike. With one thread the clock is the
calling thread's CPU time (ONNX Runtime computes on it; foreign load on a shared machine barely
moves it), else wall-clock time (`strategies.ort_timing.timing_clock`). A program's latency is its median
over all timed runs; its ratio is the median over rounds of (reference's round median / its round
median): above 1 is faster than the reference. The outputs of every program are checked against
the reference's (1e-4, relative to the largest output).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import eqsat
import ir
import strategies
from ir import relay
from eqsat.candidates import candidate_workloads
from eqsat.optimize import Saturated, extract_program, saturate_program
from ir.frontend import to_onnx
from ir.frontend.ort_nchwc import NCHWC_DOMAIN, ort_nchwc_block_size
from strategies.kernels.nchwc import transform_layout
from strategies.ort_timing import bound_run, default_threads, ort_session, timing_clock
from strategies.tuning import tune_workloads

from .report import Section, write_results

LIMITS = eqsat.Limits(iterations=30, nodes=200_000, seconds=120)
#: ResNet-50's convolution layers: (in channels, out channels, rows = columns, kernel)
LAYERS = ((64, 64, 56, 1), (64, 64, 56, 3), (256, 64, 56, 1), (128, 128, 28, 3), (256, 256, 14, 3),
          (1024, 256, 14, 1), (512, 512, 7, 3))


def _export(sat: Saturated, seconds: float, cost: strategies.CostModel) -> tuple[Any, dict[str, Any]]:
    out = extract_program(sat, cost, "greedy")
    model = to_onnx(out.mod, out.params, contrib=True)
    kinds = collections.Counter(n.op_type for n in model.graph.node if n.domain == NCHWC_DOMAIN)
    return model, {"optimize_s": round(seconds, 1), "stop": sat.report.stop_reason.value,
                   "nchwc_convs": kinds.get("Conv", 0), "reorders": kinds.get("ReorderInput", 0) + kinds.get(
                       "ReorderOutput", 0)}


def _saturate(mod: ir.IRModule, params: dict, rules: str) -> tuple[Saturated, float]:
    start = time.perf_counter()
    return saturate_program(mod, params, rules=rules, limits=LIMITS), time.perf_counter() - start


def _time(sessions: dict[str, Any], feeds: dict[str, np.ndarray], rounds: int, runs: int,
          threads: int) -> dict[str, list[float]]:
    """Per session, the median latency (ms) of each round on `timing_clock`; sessions take turns in a round."""
    _, clock = timing_clock(threads)
    medians: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(rounds):
        for name, session in sessions.items():
            run = bound_run(session, feeds)
            run()
            samples = []
            for _ in range(runs):
                start = clock()
                run()
                samples.append((clock() - start) * 1e3)
            medians[name].append(statistics.median(samples))
    return medians


def _layers(layers, block: int, threads: int, rounds: int, runs: int) -> list[dict[str, Any]]:
    """Per layer: ONNX Runtime's FusedConv (conv + bias + relu) against its NCHWc Conv on blocked data."""
    rng = np.random.default_rng(0)
    kernel_layout = f"OIHW{block}i{block}o"
    rows = []
    for in_c, out_c, size, k in layers:
        weight = (rng.standard_normal((out_c, in_c, k, k)) * 0.1).astype("float32")
        bias = relay.const(rng.standard_normal(out_c).astype("float32"))
        x, xb = relay.var("x", shape=(1, in_c, size, size)), relay.var("x", shape=(1, in_c // block, size, size, block))
        plain = relay.nn.conv2d_bias_act(x, relay.const(weight), bias, padding=k // 2, activation="relu")
        blocked = relay.nn.contrib_conv2d_NCHWc_bias_act(
            xb, relay.const(transform_layout(weight, "OIHW", kernel_layout)), bias, padding=k // 2, activation="relu",
            data_layout=f"NCHW{block}c", kernel_layout=kernel_layout, out_layout=f"NCHW{block}c")
        data = rng.standard_normal((1, in_c, size, size)).astype("float32")
        sessions = {"FusedConv": ort_session(to_onnx(ir.IRModule.from_expr(plain), contrib=True), threads, "disabled"),
                    "NCHWc": ort_session(to_onnx(ir.IRModule.from_expr(blocked), contrib=True), threads, "disabled")}
        feeds = {"FusedConv": {"x": data}, "NCHWc": {"x": transform_layout(data, "NCHW", f"NCHW{block}c")}}
        medians = {name: statistics.median(_time({name: s}, feeds[name], rounds, runs, threads)[name])
                   for name, s in sessions.items()}
        rows.append({"layer": f"{in_c}->{out_c}, {size}x{size}, {k}x{k}", "fused_conv_ms": medians["FusedConv"],
                     "nchwc_ms": medians["NCHWc"], "speedup": medians["FusedConv"] / medians["NCHWc"]})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the small ResNet-50 configuration")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tune-rounds", type=int, default=3, help="interleaved rounds of workload timing")
    parser.add_argument("--threads", type=int, default=default_threads())
    args = parser.parse_args(argv)

    mod, params = ir.models.get("resnet50", small=True) if args.small else ir.models.resnet50()
    block = ort_nchwc_block_size()
    original = to_onnx(mod, params)
    roofline = strategies.CostModel("ort")
    before, before_info = _export(*_saturate(mod, params, "default"), roofline)
    sat, seconds = _saturate(mod, params, "default+layout")
    after, after_info = _export(sat, seconds, roofline)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        records = tune_workloads(candidate_workloads(sat.view, "ort"), "ort", log=Path(tmp) / "ort.jsonl",
                                 repeat=args.tune_rounds, threads=args.threads)
        tune_s = time.perf_counter() - start
    tuned, tuned_info = _export(sat, seconds, strategies.CostModel("ort", records))
    tuned_info.update(tune_s=round(tune_s, 1), workloads=len(records))
    sessions = {"original, ORT all": ort_session(original, args.threads, "all"),
                "before (default), ORT off": ort_session(before, args.threads, "disabled"),
                "after (default+layout), ORT off": ort_session(after, args.threads, "disabled"),
                "after (default+layout), ORT all": ort_session(after, args.threads, "all"),
                "after, tuned, ORT off": ort_session(tuned, args.threads, "disabled")}
    info = {"before (default), ORT off": before_info, "after (default+layout), ORT off": after_info,
            "after (default+layout), ORT all": after_info, "after, tuned, ORT off": tuned_info}

    shape = [d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim]
    feeds = {original.graph.input[0].name: np.random.default_rng(0).standard_normal(shape).astype("float32")}
    want = sessions["original, ORT all"].run(None, feeds)[0]
    for name, session in sessions.items():
        got = session.run(None, feeds)[0]
        error = float(np.abs(got - want).max() / np.abs(want).max())
        if error > 1e-4:
            raise AssertionError(f"{name}: outputs differ from the original's by {error:.2e} (relative)")

    medians = _time(sessions, feeds, args.rounds, args.runs, args.threads)
    reference = medians["original, ORT all"]
    rows = []
    for name, per_round in medians.items():
        ratios = [r / m for r, m in zip(reference, per_round)]
        rows.append({"program": name, "median_ms": statistics.median(per_round),
                     "ratio_vs_original_all": statistics.median(ratios),
                     "ratio_range": f"{min(ratios):.3f}-{max(ratios):.3f}", **info.get(name, {})})
    notes = (f"ResNet-50 ({'small' if args.small else '224x224, batch 1'}), ONNX Runtime on the CPU with "
             f"{args.threads} intra-op thread(s), clock: {timing_clock(args.threads)[0]}; NCHWc block size of this "
             f"machine's ONNX Runtime: {block}. {args.rounds} rounds x {args.runs} runs, interleaved; ratio = "
             f"original-with-ORT-all latency / program latency (median of per-round ratios; above 1 is faster). "
             f"Outputs equal the original's within 1e-4. `nchwc_convs` / `reorders`: ONNX Runtime NCHWc Conv and "
             f"Reorder nodes in our export (one ReorderInput is the block-size guard).")
    measured = _layers(LAYERS[:2] if args.small else LAYERS, block, args.threads, args.rounds, args.runs)
    layers = Section("Layers: ONNX Runtime's FusedConv against its NCHWc Conv", measured,
                     ["layer", "fused_conv_ms", "nchwc_ms", "speedup"],
                     "One convolution with bias and relu, its data already blocked for the NCHWc kernel (no "
                     "reorders), ORT's optimizer off; same rounds and clock as above.")
    path = write_results("nchwc_small" if args.small else "nchwc", rows,
                         ["program", "median_ms", "ratio_vs_original_all", "ratio_range", "nchwc_convs", "reorders",
                          "optimize_s", "stop", "workloads", "tune_s"], notes, sections=[layers])
    print(path.read_text())


if __name__ == "__main__":
    main()
