"""Pattern-matching benchmark: match, rewrite and partition on ResNet-50 and BERT-base, with TVM as a peer.

    python -m benchmarks.bench_patterns            # full sizes -> results/patterns.{json,md}
    python -m benchmarks.bench_patterns --small    # the zoo's test configurations -> patterns_small
    python -m benchmarks.bench_patterns --no-tvm   # leave the TVM peer out

Rows, per model:

- `match`: `pattern.match(node)` for every node of `ir.post_order(mod["main"])` (a fresh matcher
  per call, as users call it), and `find_matches` (one matcher, one graph index for all nodes).
  The peer asks TVM's C++ matcher about every Relax binding value, once per binding through
  Python like ours, and once in a single C++ traversal (`rewrite_call` keeping every match).
- `rewrite`: `ir.dataflow_pattern.rewrite` with each callback of `fusion_patterns`, and with all of
  them; `matches` counts the fused calls in the result.
- `partition`: `ir.dataflow_pattern.partition` per fusion pattern; the peer runs Relax's
  `FuseOpsByPattern`. `matches` counts the calls of partitioned functions.

Times are the best of `--repeat` runs. `ours_over_tvm` divides our time by TVM's for the same
model and pattern (per-call loops against per-call loops; partition against `FuseOpsByPattern`).
"""

from __future__ import annotations

import argparse
import gc
import math
from collections.abc import Callable, Sequence
from functools import partial
from types import ModuleType
from typing import Any, TypeVar

import ir
from ir.dataflow_pattern import DFPattern, find_matches, partition, rewrite
from ir.dataflow_pattern.grouping import is_partitioned
from ir.expr import Call, Expr
from ir.op.registry import Op
from ir.visitor import count_nodes

from .fusion_patterns import FUSED_OPS, match_patterns, partition_patterns, rewrite_callbacks
from .report import Stopwatch, write_results

__all__ = ["MODELS", "COLUMNS", "best_of", "load_peer", "measure", "main"]

MODELS = ("resnet50", "bert")
COLUMNS = ("model", "task", "pattern", "nodes", "matches", "ours_s", "ours_us_per_node", "ours_one_index_s",
           "tvm_nodes", "tvm_matches", "tvm_s", "tvm_us_per_node", "tvm_one_pass_s", "ours_over_tvm",
           "nodes_after", "tvm")

T = TypeVar("T")


def best_of(run: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The fastest of `repeat` runs of `run`, in seconds, and its result (garbage collected before each)."""
    stopwatch, best, result = Stopwatch(), math.inf, None
    for _ in range(repeat):
        gc.collect()
        with stopwatch("run"):
            result = run()
        best = min(best, stopwatch.seconds["run"])
    return best, result


def load_peer() -> tuple[ModuleType | None, str]:
    """`benchmarks.tvm_peer` and its TVM version, or None and why TVM cannot be used here."""
    try:
        from . import tvm_peer
    except (ImportError, OSError, RuntimeError) as err:  # not installed, or its native library fails to load
        return None, f"unavailable ({type(err).__name__}: {err})"
    return tvm_peer, tvm_peer.VERSION


def _match_each(pattern: DFPattern, nodes: Sequence[Expr]) -> int:
    return sum(pattern.match(node) for node in nodes)


def _count_calls(expr: Expr, accept: Callable[[Call], bool]) -> int:
    return sum(isinstance(node, Call) and accept(node) for node in ir.post_order(expr))


def _is_fused_call(call: Call) -> bool:
    return isinstance(call.op, Op) and call.op.name in FUSED_OPS


def _per_node_us(seconds: float, nodes: int) -> float:
    return seconds / nodes * 1e6


class _Peer:
    """The model imported into TVM Relax (or why it is not); `*_columns` give a row's peer cells."""

    def __init__(self, module: ModuleType | None, status: str, mod: ir.IRModule, params: dict, repeat: int):
        self.module, self.status, self.repeat = module, status, repeat
        self.graph: Any = None
        self.patterns: dict[str, Any] = {}
        if module is not None:
            try:
                self.graph = module.import_model(mod, params)
                self.patterns = module.relax_patterns()
            except Exception as err:  # the peer's importer may reject a model; record why and go on
                self.status = f"import failed ({type(err).__name__}: {str(err).splitlines()[0]})"

    def _unsupported(self, name: str) -> dict[str, Any] | None:
        if self.graph is None:
            return {"tvm": self.status}
        if name not in self.patterns:
            return {"tvm": f"n/a ({self.module.UNSUPPORTED.get(name, 'no Relax form')})"}
        return None

    def match_columns(self, name: str, ours_s: float) -> dict[str, Any]:
        skipped = self._unsupported(name)
        if skipped is not None:
            return skipped
        pattern = self.patterns[name]
        seconds, matches = best_of(partial(self.module.count_matches, self.graph, pattern), self.repeat)
        one_pass_s, _ = best_of(partial(self.module.count_single_pass_matches, self.graph, pattern), self.repeat)
        bindings = len(self.graph.values)
        return {"tvm_nodes": bindings, "tvm_matches": matches, "tvm_s": seconds,
                "tvm_us_per_node": _per_node_us(seconds, bindings), "tvm_one_pass_s": one_pass_s,
                "ours_over_tvm": ours_s / seconds, "tvm": self.status}

    def partition_columns(self, name: str, ours_s: float) -> dict[str, Any]:
        skipped = self._unsupported(name)
        if skipped is not None:
            return skipped
        pattern = self.patterns[name]
        seconds, calls = best_of(partial(self.module.count_partitions, self.graph, name, pattern), self.repeat)
        return {"tvm_nodes": len(self.graph.values), "tvm_matches": calls, "tvm_s": seconds,
                "ours_over_tvm": ours_s / seconds, "tvm": self.status}


def measure(name: str, small: bool, peer: tuple[ModuleType | None, str], repeat: int) -> list[dict[str, Any]]:
    """Every row for one model (see the module docstring)."""
    module, status = peer
    mod, params = ir.models.get(name, small=small, weights=module is not None)  # ONNX export needs weights
    tvm = _Peer(module, status, mod, params, repeat)
    main = mod["main"]
    nodes = tuple(ir.post_order(main))
    model = name + (" (small)" if small else "")
    rows = []
    for pattern_name, pattern in match_patterns().items():
        seconds, matches = best_of(partial(_match_each, pattern, nodes), repeat)
        one_index_s, _ = best_of(partial(find_matches, pattern, main), repeat)
        rows.append({"model": model, "task": "match", "pattern": pattern_name, "nodes": len(nodes),
                     "matches": matches, "ours_s": seconds, "ours_us_per_node": _per_node_us(seconds, len(nodes)),
                     "ours_one_index_s": one_index_s, **tvm.match_columns(pattern_name, seconds)})
    for callbacks_name, callbacks in rewrite_callbacks().items():
        seconds, result = best_of(partial(rewrite, callbacks, main), repeat)
        rows.append({"model": model, "task": "rewrite", "pattern": callbacks_name, "nodes": len(nodes),
                     "matches": _count_calls(result, _is_fused_call), "ours_s": seconds,
                     "nodes_after": count_nodes(result)})
    for pattern_name, pattern in partition_patterns().items():
        seconds, result = best_of(partial(partition, pattern, main), repeat)
        rows.append({"model": model, "task": "partition", "pattern": pattern_name, "nodes": len(nodes),
                     "matches": _count_calls(result, lambda call: is_partitioned(call.op)), "ours_s": seconds,
                     "nodes_after": count_nodes(result), **tvm.partition_columns(pattern_name, seconds)})
    return rows


NOTES = """\
Wall-clock seconds, best of {repeat} runs, on a machine shared with other work. `nodes`: nodes of
`ir.post_order(mod["main"])` (variables, constants and the function included); `tvm_nodes`: binding
values of the Relax import (`to_onnx` -> `tvm.relax.frontend.onnx.from_onnx`, weights kept as
parameters, unused bindings removed). match: `ours_s` calls `pattern.match(node)` per node,
`ours_one_index_s` runs `find_matches` (one matcher for the graph); `tvm_s` calls the Relax
pattern's `match(value, var2val)` per binding, `tvm_one_pass_s` is one `rewrite_call` traversal.
rewrite: `matches` = fused calls in the result. partition: `matches` = partitioned calls; TVM runs
`FuseOpsByPattern`. `ours_over_tvm` = ours_s / tvm_s. TVM: {tvm}."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="the zoo's small test configurations")
    parser.add_argument("--no-tvm", action="store_true", help="leave out the TVM Relax peer")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best is kept")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    peer = (None, "skipped (--no-tvm)") if args.no_tvm else load_peer()
    rows = [row for name in MODELS for row in measure(name, args.small, peer, args.repeat)]
    path = write_results("patterns_small" if args.small else "patterns", rows, COLUMNS,
                         NOTES.format(repeat=args.repeat, tvm=peer[1]))
    print(path.read_text())


if __name__ == "__main__":
    main()
