"""A decode step's attention with its key/value cache fused or not, in ONNX Runtime: `nn.cached_attention`
exported as one `Attention` with past and present against the two `Concat`s and the `Attention` of its
spelled-out form, on mid-size shapes (16 query / 4 KV heads of 64, a 512-token past; fp32).

Both programs are exported by `ir.frontend.to_onnx` from IR, checked equal bit for bit, and timed
interleaved on one thread with ONNX Runtime's optimizer off (the ort target's setting), as
`bench_llm` times whole models. Writes `results/llm_kv_cache.{json,md}`.

    python -m benchmarks.bench_llm_cache [--repeat 200] [--seconds 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
from typing import Sequence

import numpy as np
import onnxruntime

import ir
from benchmarks.bench_llm import interleaved, session, spread
from benchmarks.report import write_results
from ir import relay
from ir.frontend import to_onnx

#: (batch, query heads, KV heads, new tokens, past tokens, head size)
SHAPES = ((1, 16, 4, 1, 512, 64), (4, 16, 4, 1, 512, 64), (1, 16, 4, 16, 512, 64))
COLUMNS = ("shape", "unfused_us", "fused_speedup", "q1", "q3", "rounds")


def programs(batch: int, heads: int, kv_heads: int, seq: int, past: int, size: int) -> dict[str, ir.IRModule]:
    """The decode step as `nn.cached_attention` ("fused") and as concatenations and attention ("unfused")."""
    shapes = {"q": (batch, heads, seq, size), "k": (batch, kv_heads, seq, size), "v": (batch, kv_heads, seq, size),
              "past_k": (batch, kv_heads, past, size), "past_v": (batch, kv_heads, past, size),
              "mask": (batch, 1, seq, past + seq)}
    args = {n: relay.var(n, shape=s) for n, s in shapes.items()}
    fused = relay.nn.cached_attention(*args.values(), scale=size ** -0.5, nan_rows="zero")
    caches = [relay.concatenate([args[f"past_{n}"], args[n]], axis=-2) for n in "kv"]
    plain = relay.nn.masked_attention(args["q"], *caches, args["mask"], scale=size ** -0.5, nan_rows="zero")
    return {name: ir.IRModule.from_expr(relay.Function(list(args.values()), body))
            for name, body in (("unfused", relay.Tuple([plain, *caches])), ("fused", fused))}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200, help="least timed rounds per shape")
    parser.add_argument("--seconds", type=float, default=2.0, help="least seconds the unfused form runs per shape")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for shape in SHAPES:
        mods = programs(*shape)
        feed = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype(np.float32)
                for p in mods["fused"]["main"].params}
        sessions = {name: session(to_onnx(mod), optimize=False) for name, mod in mods.items()}
        outputs = {name: s.run(None, feed) for name, s in sessions.items()}
        if not all(np.array_equal(a, b) for a, b in zip(outputs["unfused"], outputs["fused"])):
            raise SystemExit(f"{shape}: the fused and unfused programs differ")
        base, ratios = interleaved({n: (lambda s=s: s.run(None, feed)) for n, s in sessions.items()}, "unfused",
                                   args.repeat, args.seconds)
        s = spread(ratios["fused"])
        rows.append({"shape": "x".join(map(str, shape)), "unfused_us": round(statistics.median(base) * 1e6, 1),
                     "fused_speedup": round(s["median"], 3), "q1": round(s["q1"], 3), "q3": round(s["q3"], 3),
                     "rounds": len(base)})
        print(rows[-1], file=sys.stderr, flush=True)
    notes = (f"ONNX Runtime {onnxruntime.__version__}, CPU, one intra-op thread, optimizer off, "
             f"{multiprocessing.cpu_count()} cores (shared). shape: batch x query heads x KV heads x new tokens x past tokens x head size. "
             "unfused_us: median CPU time of the two Concats and Attention; fused_speedup: per-round ratio unfused / "
             "fused (median, quartiles q1-q3), rounds interleaved (order reversed every other round).")
    print(write_results("llm_kv_cache", rows, COLUMNS, notes).read_text())


if __name__ == "__main__":
    main()
