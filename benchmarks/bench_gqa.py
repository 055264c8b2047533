"""Which attention kernel of the installed ONNX Runtime runs grouped-query attention fastest: ONNX's
`Attention` (opset 23, `q_num_heads`/`kv_num_heads`, `is_causal`, past and present keys/values),
which our ort target writes, or ONNX Runtime's `com.microsoft.GroupQueryAttention` (3-D Q/K/V,
BNSH caches, `seqlens_k` and `total_sequence_length`).

    python -m benchmarks.bench_gqa            # -> benchmarks/results/gqa.md

Each kernel alone in a one-node model, on the mid-size Llama-like shapes of `bench_llm --config mid`
(16 query heads, 4 KV heads, head size 64): a causal prefill of 512 tokens, and a decode step of one
token after a 512-token past (both read the past and write the present keys/values). Their outputs
are compared first (the same function: the largest difference over the largest magnitude), then
timed interleaved with one intra-op thread. GroupQueryAttention's Q, K and V are the 4-D ones moved
to (batch, tokens, heads x size), as a model would give them from its projections.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from benchmarks.bench_llm import MID, interleaved, normalized_error, spread
from benchmarks.report import write_results
from strategies.ort_timing import ort_session

CASES = {"prefill": dict(seq=MID["seq"], past=0), "decode": dict(seq=1, past=MID["past"])}
DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}
COLUMNS = ["case", "dtype", "error", "gqa_vs_attention", "attention_ms", "gqa_ms", "rounds", "faster"]


def _attention(dtype: int, past: bool) -> onnx.ModelProto:
    """ONNX `Attention` on 4-D (batch, heads, tokens, size) Q/K/V, causal, with past and present."""
    heads, kv = MID["heads"], MID["kv_heads"]
    inputs = [helper.make_tensor_value_info(n, dtype, ["b", h, s, MID["head_dim"]])
              for n, h, s in (("q", heads, "s"), ("k", kv, "s"), ("v", kv, "s"))]
    names = ["q", "k", "v", ""]
    if past:
        inputs += [helper.make_tensor_value_info(n, dtype, ["b", kv, "p", MID["head_dim"]]) for n in ("pk", "pv")]
        names += ["pk", "pv"]
    outputs = [helper.make_tensor_value_info(n, dtype, None) for n in ("y", "present_k", "present_v")]
    node = helper.make_node("Attention", names, ["y", "present_k", "present_v"], is_causal=1,
                            q_num_heads=heads, kv_num_heads=kv)
    graph = helper.make_graph([node], "attention", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def _gqa(dtype: int) -> onnx.ModelProto:
    """`com.microsoft.GroupQueryAttention` on 3-D Q/K/V with BNSH past and present keys/values."""
    heads, kv, size = MID["heads"], MID["kv_heads"], MID["head_dim"]
    inputs = [helper.make_tensor_value_info("q", dtype, ["b", "s", heads * size]),
              helper.make_tensor_value_info("k", dtype, ["b", "s", kv * size]),
              helper.make_tensor_value_info("v", dtype, ["b", "s", kv * size]),
              helper.make_tensor_value_info("pk", dtype, ["b", kv, "p", size]),
              helper.make_tensor_value_info("pv", dtype, ["b", kv, "p", size]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["b"]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    outputs = [helper.make_tensor_value_info(n, dtype, None) for n in ("y", "present_k", "present_v")]
    node = helper.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "seqlens_k", "total"],
                            ["y", "present_k", "present_v"], domain="com.microsoft", num_heads=heads,
                            kv_num_heads=kv)
    graph = helper.make_graph([node], "gqa", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


def _feeds(case: dict[str, int], dtype: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The Attention model's inputs and the same values laid out for GroupQueryAttention."""
    rng = np.random.default_rng(0)
    heads, kv, size, seq, past = MID["heads"], MID["kv_heads"], MID["head_dim"], case["seq"], case["past"]

    def draw(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)
    q, k, v = draw(1, heads, seq, size), draw(1, kv, seq, size), draw(1, kv, seq, size)
    pk, pv = draw(1, kv, past, size), draw(1, kv, past, size)
    attention = {"q": q, "k": k, "v": v, **({"pk": pk, "pv": pv} if past else {})}
    flat = {n: a.transpose(0, 2, 1, 3).reshape(1, seq, -1) for n, a in (("q", q), ("k", k), ("v", v))}
    gqa = {**flat, "pk": pk, "pv": pv, "seqlens_k": np.array([past + seq - 1], np.int32),
           "total": np.array(past + seq, np.int32)}
    return attention, gqa


def measure(name: str, case: dict[str, int], dtype: str, repeat: int, seconds: float) -> dict[str, Any]:
    """One row: both kernels' agreement and their interleaved times."""
    row: dict[str, Any] = {"case": name, "dtype": dtype}
    attention_feed, gqa_feed = _feeds(case, dtype)
    try:
        attention = ort_session(_attention(DTYPES[dtype], bool(case["past"])), threads=1)
        gqa = ort_session(_gqa(DTYPES[dtype]), threads=1)
    except Exception as err:  # noqa: BLE001 - a kernel this build of ONNX Runtime lacks is the answer
        row["error"] = f"not run: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
        return row
    want, got = attention.run(None, attention_feed), gqa.run(None, gqa_feed)
    y = got[0].reshape(1, case["seq"], MID["heads"], MID["head_dim"]).transpose(0, 2, 1, 3)
    row["error"] = f"{normalized_error([y, *got[1:]], [w.astype(np.float64) for w in want]):.1e}"
    runs: dict[str, Callable[[], Any]] = {"attention": lambda: attention.run(None, attention_feed),
                                          "gqa": lambda: gqa.run(None, gqa_feed)}
    base, ratios = interleaved(runs, "attention", repeat, seconds)
    ratio = spread(ratios["gqa"])
    row.update(gqa_vs_attention=f"{ratio['median']:.3f} ({ratio['q1']:.3f}-{ratio['q3']:.3f})",
               attention_ms=round(1e3 * spread(base)["median"], 4),
               gqa_ms=round(1e3 * spread([b / r for b, r in zip(base, ratios["gqa"])])["median"], 4),
               rounds=len(base), faster="GroupQueryAttention" if ratio["q1"] > 1 else
               "Attention" if ratio["q3"] < 1 else "neither (within the noise)")
    return row


NOTES = """\
ONNX Runtime {ort}, CPU provider, one intra-op thread. Shapes: batch 1, {heads} query heads, {kv} KV heads,
head size {size}; prefill: {seq} tokens, causal, no past; decode: one token after a {past}-token past.
`error`: the largest difference between the two kernels' outputs (attention output and present keys/values)
over the largest magnitude. `gqa_vs_attention`: per round, Attention's time over GroupQueryAttention's
(above 1: GroupQueryAttention is faster), median and quartiles over rounds that alternate their order;
`faster` names a kernel only where the quartiles are on one side of 1. The machine has {cores} cores and is
shared with other work."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="least timed rounds per case")
    parser.add_argument("--seconds", type=float, default=2.0, help="least seconds Attention runs per case")
    args = parser.parse_args(argv)
    import onnxruntime
    rows = []
    for dtype in DTYPES:
        for name, case in CASES.items():
            rows.append(measure(name, case, dtype, args.repeat, args.seconds))
            print(rows[-1], file=sys.stderr, flush=True)
    notes = NOTES.format(ort=onnxruntime.__version__, heads=MID["heads"], kv=MID["kv_heads"], size=MID["head_dim"],
                         seq=MID["seq"], past=MID["past"], cores=multiprocessing.cpu_count())
    print(write_results("gqa", rows, COLUMNS, notes).read_text())


if __name__ == "__main__":
    main()
