"""Transformer exports fused for ONNX Runtime: ours against ONNX Runtime's transformers optimizer and onnxscript's.

    python -m benchmarks.bench_llm                        # every LLM fixture -> results/llm.{json,md}
    python -m benchmarks.bench_llm --fixtures llama_torchscript_sdpa,gpt2_dynamo_eager_cache --repeat 3
    python -m benchmarks.bench_llm --config mid --name llm_mid   # mid-size Llama-like, prefill + decode
    python -m benchmarks.bench_llm --config mid --gains rotary,attention,rms_norm,activation   # + each kernel's gain

Per model (the fixtures of `tests/fixtures/llm`, made by `benchmarks.llm_models`, or with `--config
mid` one Llama-like model of hidden 1024 and 4 layers exported from `transformers` with random
weights: a prefill of 512 tokens and a decode step of one token after a 512-token past):

(a) the fused ops each optimizer writes, counted on the written model: ours
    (`eqsat.optimize(target="ort")`, `to_onnx(contrib=True)`), ONNX Runtime's transformers optimizer
    (`optimize_model` with the model type that fits the family; a crash is recorded, then `gpt2` is
    tried) and onnxscript's `ort_fusions.optimize_for_ort` (a failure is recorded);
(b) each output's largest difference from the original in ONNX Runtime (over the largest magnitude);
(c) latency with ONNX Runtime's optimizer fully on and one intra-op thread: the original, ours, each
    peer's output and a control (a second session of the original) take turns in rounds whose order
    alternates; per round the time ratios, reported as medians with their quartiles;
(d) with `--gains`, what each fused kernel gains: ours against ours made without the rules that
    form that kernel, in the same rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import itertools
import json
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter
from typing import Any, Callable, Mapping, Sequence
from unittest import mock

import numpy as np
import onnx

from benchmarks import llm_models
from benchmarks.report import Section, write_results
from strategies.ort_timing import timing_clock

FUSED = {
    "rope": ("RotaryEmbedding",),
    "attention": ("Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention",
                  "PackedMultiHeadAttention"),
    "norm": ("SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization", "RMSNormalization",
             "SkipLayerNormalization", "LayerNormalization", "EmbedLayerNormalization"),
    "gelu": ("FastGelu", "Gelu", "QuickGelu", "BiasGelu", "GemmFastGelu"),
}
"""fused op types by kind, counted in any domain (ONNX's own `Attention`, `RMSNormalization`, `Gelu` too)."""
FUSED_TYPES = {op: kind for kind, ops in FUSED.items() for op in ops}

MODEL_TYPES = {"llama": "gpt2", "qwen2": "qwen3", "phi3": "phi", "gemma": "gpt2", "gemma2": "gpt2", "gpt2": "gpt2", "gptj": "gpt2",
               "cohere": "gpt2", "glm": "gpt2", "bert": "bert"}
"""ONNX Runtime transformers optimizer's model type per family (`gpt2` is what its Llama and
Gemma scripts use); `gpt2` is the fallback when the fitting one crashes."""

PEERS = ("ort_optimizer", "onnxscript")
MID = dict(vocab=8192, hidden=1024, intermediate=2816, layers=4, heads=16, kv_heads=4, head_dim=64, seq=512,
           past=512)
"""the mid-size Llama-like config (`--config mid`)."""

COLUMNS = ["model", "ours", "ort_optimizer", "onnxscript", "optimize_s", "nodes"]
TIMING_COLUMNS = ["model", "err_ours", "err_ort_optimizer", "err_onnxscript", "ours_vs_orig", "ours_vs_ort_optimizer",
                  "ours_vs_onnxscript", "control", "orig_ms", "rounds"]
FAILURE_COLUMNS = ["model", "optimizer", "error"]


def available(peer: str) -> bool:
    """Whether `peer` ("ort_optimizer" or "onnxscript") is installed."""
    module = "onnxruntime.transformers.optimizer" if peer == "ort_optimizer" else "onnxscript.rewriter.ort_fusions"
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def fused_ops(model: onnx.ModelProto) -> Counter[str]:
    """Fused op types (see `FUSED`) among the nodes of `model`'s graph and its functions."""
    nodes = list(model.graph.node) + [n for f in model.functions for n in f.node]
    return Counter(n.op_type for n in nodes if n.op_type in FUSED_TYPES)


def histogram(ops: Mapping[str, int]) -> str:
    """`Op xN, ...` in kind order, or `-` for none."""
    order = list(FUSED_TYPES)
    parts = [op if n == 1 else f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda kv: order.index(kv[0]))]
    return ", ".join(parts) or "-"


def _error_text(err: BaseException) -> str:
    frame = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
    where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
    return f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}{where}"


KERNELS: dict[str, Callable[[str], bool]] = {
    "rotary": lambda rule: rule.startswith("rotary-embedding"),
    "attention": lambda rule: "attention" in rule and "-through-" not in rule,
    "rms_norm": lambda rule: rule.startswith("rms-norm"),
    "activation": lambda rule: rule in ("silu", "quick-gelu", "gelu-erf", "gelu-tanh", "gelu-tanh-factored",
                                        "bias-gelu", "bias-gelu-tanh"),
}
"""fused kernel family -> whether a rule of the ort target's rules forms it (`--gains` leaves them out)."""


def rules_without(kernel: str) -> Any:
    """The ort target's rules less those that form `kernel` (one of `KERNELS`)."""
    from eqsat.rules.library import default_rules, resolve_rules
    from eqsat.rules.rule import ruleset
    return ruleset(f"without-{kernel}", [r for r in resolve_rules(default_rules("ort")) if not KERNELS[kernel](r.name)])


def ours(original: onnx.ModelProto, rules: Any = None) -> tuple[onnx.ModelProto, float]:
    """Our program for ONNX Runtime (with the target's rules, or `rules`) and the seconds import +
    optimize took (`original` unchanged)."""
    import eqsat
    from ir.frontend import from_onnx, to_onnx
    start = time.perf_counter()
    mod, params = from_onnx(original)
    result = eqsat.optimize(mod, params, target="ort", rules=rules)
    seconds = time.perf_counter() - start
    return to_onnx(result.mod, result.params, contrib=True), seconds


def ort_optimizer(original: onnx.ModelProto, model_type: str, heads: int, hidden: int) -> onnx.ModelProto:
    """ONNX Runtime's transformers optimizer (default options and level for `model_type`) on `original`
    saved to a file, as its command line takes it (given a dynamo export as a ModelProto, its level-1
    session fails on the constants it writes as external data)."""
    from onnxruntime.transformers.optimizer import optimize_model
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        path = os.path.join(folder, "model.onnx")
        onnx.save(original, path, save_as_external_data=original.ByteSize() > 2**30)
        return optimize_model(path, model_type=model_type, num_heads=heads, hidden_size=hidden).model


def onnxscript_fused(original: onnx.ModelProto) -> onnx.ModelProto:
    """onnxscript's `ort_fusions.optimize_for_ort` on a copy of `original` (its IR shares the proto's
    nodes and changes them in place)."""
    import onnx_ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort
    copy = onnx.ModelProto()
    copy.CopyFrom(original)
    model = onnx_ir.from_proto(copy)
    with contextlib.redirect_stdout(io.StringIO()):
        model, _ = optimize_for_ort(model)
    return onnx_ir.to_proto(model)


def session(model: onnx.ModelProto, optimize: bool = True) -> Any:
    """An ONNX Runtime CPU session: one intra-op thread without spinning, its optimizer all on (or off)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def normalized_error(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> float:
    """Largest |got - want| over the largest |want| (at least 1), worst output (matched by position)."""
    if len(got) != len(want):
        return float("inf")
    return max(float(np.max(np.abs(g.astype(np.float64) - w))) / max(1.0, float(np.max(np.abs(w))))
               for g, w in zip(got, want))


def interleaved(runs: Mapping[str, Callable[[], Any]], baseline: str, repeat: int, min_seconds: float,
                max_rounds: int = 2000) -> tuple[list[float], dict[str, list[float]]]:
    """Per-round times of `baseline` and per-round ratios (baseline time / run time) of the others.

    One warm-up each; then rounds that call every run once, the order reversed every other round,
    timed with the calling thread's CPU clock (one intra-op thread: all work is on it). At least
    `repeat` rounds, more until `baseline` has run `min_seconds` (at most `max_rounds`)."""
    for run in runs.values():
        run()
    _, clock = timing_clock(1)
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    while len(times[baseline]) < repeat or (sum(times[baseline]) < min_seconds and len(times[baseline]) < max_rounds):
        for name in (names if len(times[baseline]) % 2 == 0 else names[::-1]):
            start = clock()
            runs[name]()
            times[name].append(clock() - start)
    ratios = {name: [b / max(t, 1e-9) for b, t in zip(times[baseline], ts)]
              for name, ts in times.items() if name != baseline}
    return times[baseline], ratios


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median and quartiles of `values`."""
    if len(values) < 2:
        return {"median": values[0], "q1": values[0], "q3": values[0]}
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": median, "q1": q1, "q3": q3}


def _ratio_text(s: Mapping[str, float] | None) -> str:
    return "" if not s else f"{s['median']:.3f} ({s['q1']:.3f}-{s['q3']:.3f})"


def measure(name: str, original: onnx.ModelProto, family: str, heads: int, hidden: int,
            check: Sequence[dict[str, np.ndarray]], timed: dict[str, np.ndarray], repeat: int, min_seconds: float,
            peers: Sequence[str] = PEERS, gains: Sequence[str] = ()) -> dict[str, Any]:
    """One row: fused ops, errors and interleaved ratios of ours and each available peer on `original`.

    Errors are over the `check` feeds against the original with ONNX Runtime's optimizer off;
    `timed` is the feed of the timing rounds. For each kernel of `gains` (`KERNELS`), our program
    made without the rules that form it runs in the same rounds: `gain_<kernel>` is its time over ours."""
    models: dict[str, onnx.ModelProto] = {}
    row: dict[str, Any] = {"model": name, "family": family, "failures": {}}
    try:
        models["ours"], row["optimize_s"] = ours(original)
        for kernel in gains:
            models[f"without_{kernel}"] = ours(original, rules_without(kernel))[0]
    except Exception as err:  # noqa: BLE001 - our failure is a result too
        row["failures"]["ours"] = _error_text(err)
    for peer in PEERS:
        if peer not in peers or not available(peer):
            row["failures"][peer] = "absent"
            continue
        try:
            if peer == "onnxscript":
                models[peer] = onnxscript_fused(original)
                continue
            model_type = MODEL_TYPES[family]
            try:
                models[peer] = ort_optimizer(original, model_type, heads, hidden)
            except Exception as err:  # noqa: BLE001 - a crashing peer is a result
                row["failures"][peer] = f"model_type={model_type}: {_error_text(err)}"
                if model_type == "gpt2":
                    continue
                model_type = "gpt2"
                models[peer] = ort_optimizer(original, model_type, heads, hidden)
            row["ort_model_type"] = model_type
        except Exception as err:  # noqa: BLE001
            row["failures"][peer] = "; ".join(filter(None, [row["failures"].get(peer), _error_text(err)]))
    row["fused"] = {key: dict(fused_ops(m)) for key, m in [("original", original), *models.items()]}
    row["node_counts"] = {key: len(m.graph.node) for key, m in [("original", original), *models.items()]}
    reference = session(original, optimize=False)
    want = [reference.run(None, feed) for feed in check]
    sessions: dict[str, Any] = {"orig": session(original)}
    row["errors"] = {}
    for key, model in models.items():
        try:
            sessions[key] = session(model)
            row["errors"][key] = max(normalized_error(sessions[key].run(None, feed), w) for feed, w in zip(check, want))
        except Exception as err:  # noqa: BLE001 - a peer's model ONNX Runtime rejects is a result
            sessions.pop(key, None)
            row["failures"][key] = "; ".join(filter(None, [row["failures"].get(key), f"in ORT: {_error_text(err)}"]))
    sessions["control"] = session(original)
    runs = {key: (lambda s=s: s.run(None, timed)) for key, s in sessions.items()}
    base, ratios = interleaved(runs, "orig", repeat, min_seconds)
    row["orig_ms"], row["rounds"] = statistics.median(base) * 1e3, len(base)
    row["control"] = spread(ratios["control"])
    for key in ("ours", *PEERS):
        if key in ratios:  # orig time / its time: above 1, it is faster than the original
            row[f"{key}_vs_orig"] = spread(ratios[key])
    for other in (*PEERS, *(f"without_{k}" for k in gains)):
        if other in ratios and "ours" in ratios:  # its time / ours time, per round
            ratio = spread([o / p for o, p in zip(ratios["ours"], ratios[other])])
            row[f"ours_vs_{other}" if other in PEERS else f"gain_{other.removeprefix('without_')}"] = ratio
    return row


def table_rows(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict]]:
    """The markdown's rows: fused ops, errors and ratios, peer failures."""
    fused, timing, failures = [], [], []
    for row in rows:
        cell = {key: histogram(row["fused"][key]) if key in row["fused"] else "(failed)" for key in ("ours", *PEERS)}
        for peer in PEERS:
            if row["failures"].get(peer) == "absent":
                cell[peer] = "(absent)"
            elif peer in row["fused"] and peer not in row["errors"]:
                cell[peer] += " (ORT rejects it)"
        if "ort_model_type" in row and row["ort_model_type"] != MODEL_TYPES[row["family"]]:
            cell["ort_optimizer"] += f" ({row['ort_model_type']}, after a crash)"
        nodes = "/".join(str(row["node_counts"].get(k, "-")) for k in ("original", "ours", *PEERS))
        fused.append({"model": row["model"], **cell, "optimize_s": row.get("optimize_s", "-"), "nodes": nodes})
        errors = {f"err_{k}": f"{row['errors'][k]:.1e}" if k in row["errors"] else "-" for k in ("ours", *PEERS)}
        timing.append({"model": row["model"], **errors, **{c: _ratio_text(row.get(c)) for c in (
            "ours_vs_orig", "ours_vs_ort_optimizer", "ours_vs_onnxscript", "control")},
            "orig_ms": row["orig_ms"], "rounds": row["rounds"]})
        failures += [{"model": row["model"], "optimizer": p, "error": e.replace("|", "/")}
                     for p, e in row["failures"].items() if e != "absent"]
    return fused, timing, failures


def fixture_cases(names: Sequence[str] | None) -> list[tuple[str, onnx.ModelProto, str, list[dict], dict]]:
    """(name, model, family, check feeds, timed feed) per fixture of the manifest (all, or `names`)."""
    with open(os.path.join(llm_models.FIXTURE_DIR, "manifest.json")) as f:
        manifest = json.load(f)
    entries = {e["name"]: e for e in manifest["fixtures"]}
    unknown = set(names or ()) - set(entries)
    if unknown:
        raise SystemExit(f"unknown fixtures {sorted(unknown)}")
    cases = []
    for name in names or list(entries):
        entry = entries[name]
        model = onnx.load(os.path.join(llm_models.FIXTURE_DIR, entry["file"]))
        sizes = llm_models.sizes_to_check(entry["cache"])
        check = [llm_models.feed(entry["family"], entry["cache"], **s) for s in sizes.values()]
        cases.append((name, model, entry["family"], check, check[0]))
    return cases


@contextlib.contextmanager
def _mid_sized() -> Any:
    """`llm_models` building the mid-size Llama-like config instead of its tiny one."""
    kwargs = dict(vocab_size=MID["vocab"], hidden_size=MID["hidden"], intermediate_size=MID["intermediate"],
                  num_hidden_layers=MID["layers"], num_attention_heads=MID["heads"],
                  num_key_value_heads=MID["kv_heads"], max_position_embeddings=2048, tie_word_embeddings=True,
                  initializer_range=0.02)
    config, model, _, has = llm_models.FAMILIES["llama"]
    family = (config, model, kwargs, dict(has, kv_heads=MID["kv_heads"], rotary_dim=MID["head_dim"]))
    with mock.patch.dict(llm_models.FAMILIES, {"llama": family}), \
            mock.patch.multiple(llm_models, LAYERS=MID["layers"], HEAD_DIM=MID["head_dim"], VOCAB=MID["vocab"]):
        yield


def mid_cases(exporter: str, dtypes: Sequence[str]) -> list[tuple[str, onnx.ModelProto, str, list[dict], dict]]:
    """The mid-size config's prefill (512 tokens) and decode step (1 token after 512) with weights
    (and past values) of each of `dtypes`."""
    cases = []
    with _mid_sized():
        for dtype, cache in itertools.product(dtypes, (False, True)):
            model = llm_models.export("llama", exporter, "sdpa", cache, dtype=dtype)
            sizes = dict(batch=1, seq=1, past=MID["past"]) if cache else dict(batch=1, seq=MID["seq"])
            feed = llm_models.feed("llama", cache, **sizes, dtype=dtype)
            suffix = "" if dtype == "float32" else "_fp16"
            name = f"mid_llama_{exporter}_sdpa_{'decode' if cache else 'prefill'}{suffix}"
            cases.append((name, model, "llama", [feed], feed))
    return cases


NOTES = """\
ONNX Runtime {ort}, CPU provider, one intra-op thread without spinning; onnxscript {onnxscript}. {what}
The machine has {cores} cores and is shared with other work and loaded while this ran, so single
times wander; each round is timed on the calling thread's CPU clock (with one intra-op thread all
work runs on it), which other processes disturb less than wall time.

Fused ops: counted on the written models (before ONNX Runtime's own graph optimization), any domain:
rotary (`RotaryEmbedding`), attention (`Attention`, `MultiHeadAttention`, `GroupQueryAttention`),
norms (`SimplifiedLayerNormalization`, `SkipSimplifiedLayerNormalization`, `RMSNormalization`,
`SkipLayerNormalization`, `LayerNormalization`, `EmbedLayerNormalization`), GELUs (`FastGelu`,
`Gelu`, `QuickGelu`, `BiasGelu`). `ours`: `eqsat.optimize(target="ort")` then
`to_onnx(contrib=True)`; `ort_optimizer`: `onnxruntime.transformers.optimizer.optimize_model` with
the family's model type (llama, gemma, gpt2, gptj: gpt2; qwen2: qwen3; phi3: phi; bert: bert;
`gpt2` again when that one crashes, marked "after a crash"; a model ONNX Runtime does not load is
marked "ORT rejects it"), its default options and level;
`onnxscript`: `onnxscript.rewriter.ort_fusions.optimize_for_ort`. Ours writes `Attention`,
`RMSNormalization`, `LayerNormalization` and `Gelu` as ONNX ops (opsets 23 and 20) and
`RotaryEmbedding` and `QuickGelu` (x * sigmoid(x), SiLU) in com.microsoft. "(failed)": no model was
written (see Failures). `nodes`: original/ours/ort_optimizer/onnxscript.

Errors: each output in ONNX Runtime (optimizer all on) against the original with the optimizer off,
largest difference over the largest magnitude (at least 1), worst output, over {feeds}.
Ratios: the original, ours, each peer's output and a control (a second session of the original),
all with ONNX Runtime's optimizer all on, take turns in rounds whose order reverses every other
round ({rounds}); per round `ours_vs_orig` = original time / ours time and `ours_vs_<peer>` = peer
time / ours time (above 1: ours is faster), `control` = original time / its second session's (1 on
a quiet machine: its distance from 1 is the noise); cells are medians over rounds with the
quartiles in parentheses. `orig_ms`: the original's median time.

{scale}"""
SCALE = {
    "fixtures": "At the fixtures' sizes (hidden 64, one layer, at most 7 tokens; about 0.1-0.25 ms a run) the time "
                "is per-node overhead, not kernel work: the ratios tell how many kernels run, not what a fused "
                "kernel saves at real sizes (`--config mid`).",
    "mid": "Errors and ratios at the sizes above; each prefill round runs every model once, so rounds are few.",
}
"""a remark on what the timed sizes can show, per `--config`."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", help="comma-separated fixture names (default: every fixture)")
    parser.add_argument("--config", choices=("fixtures", "mid"), default="fixtures",
                        help="the committed fixtures, or the mid-size Llama-like config (needs torch)")
    parser.add_argument("--exporter", choices=sorted(llm_models.EXPORTERS), default="dynamo",
                        help="torch exporter of the mid config")
    parser.add_argument("--dtypes", default="float32,float16",
                        help="comma-separated weight dtypes of the mid config (float32, float16)")
    parser.add_argument("--repeat", type=int, default=10, help="least timed rounds per model")
    parser.add_argument("--seconds", type=float, default=1.0, help="least seconds the original runs per model")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated peers to run (may be empty)")
    parser.add_argument("--name", help="results file name (default llm, llm_mid with --config mid)")
    parser.add_argument("--gains", default="",
                        help=f"comma-separated fused kernels whose gain to measure by leaving out the rules that "
                             f"form them ({', '.join(KERNELS)})")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not args.dtypes or set(args.dtypes.split(",")) - {"float32", "float16"}:
        parser.error(f"--dtypes takes float32 and float16, not {args.dtypes!r}")
    gains = [k for k in args.gains.split(",") if k]
    if set(gains) - set(KERNELS):
        parser.error(f"unknown kernels {sorted(set(gains) - set(KERNELS))}; choose from {', '.join(KERNELS)}")
    peers = [p for p in args.peers.split(",") if p]
    if set(peers) - set(PEERS):
        parser.error(f"unknown peers {sorted(set(peers) - set(PEERS))}; choose from {', '.join(PEERS)}")
    import onnxruntime
    if args.config == "mid":
        dtypes = args.dtypes.split(",")
        cases = mid_cases(args.exporter, dtypes)
        heads, hidden = MID["heads"], MID["hidden"]
        what = (f"Mid-size Llama-like model (random weights, {' and '.join(dtypes)} (`_fp16`: weights and past "
                f"values in float16), {args.exporter} exporter, sdpa): hidden "
                f"{MID['hidden']}, {MID['layers']} layers, {MID['heads']} query / {MID['kv_heads']} KV heads, "
                f"intermediate {MID['intermediate']}, vocabulary {MID['vocab']}; prefill: batch 1, {MID['seq']} "
                f"tokens; decode: batch 1, one token after a {MID['past']}-token past.")
        feeds = "the timed feed"
    else:
        cases = fixture_cases(args.fixtures.split(",") if args.fixtures else None)
        heads, hidden = llm_models.HEADS, llm_models.HIDDEN
        what = ("Models: the committed fixtures of tests/fixtures/llm (hidden 64, one layer, 4 query heads; "
                "see benchmarks/llm_models.py), timed at their example sizes (batch 2; 6 tokens, or a "
                "2-token step after a 5-token past).")
        feeds = "the example sizes and the second size of `llm_models.sizes_to_check` (left padding by one)"
    rows = []
    for name, model, family, check, timed in cases:
        row = measure(name, model, family, heads, hidden, check, timed, args.repeat, args.seconds, peers, gains)
        rows.append(row)
        print(f"{name}: ours {histogram(row['fused'].get('ours', {}))}; "
              f"vs orig {_ratio_text(row.get('ours_vs_orig'))}, "
              f"failures {row['failures']}", file=sys.stderr, flush=True)
    try:
        import onnxscript
        onnxscript_version = onnxscript.__version__
    except ImportError:
        onnxscript_version = "absent"
    notes = NOTES.format(ort=onnxruntime.__version__, onnxscript=onnxscript_version, what=what,
                         cores=multiprocessing.cpu_count(), feeds=feeds, scale=SCALE[args.config],
                         rounds=f"at least {args.repeat}, more until the original has run {args.seconds:g} s")
    fused, timing, failures = table_rows(rows)
    sections = [Section("Correctness and latency", timing, TIMING_COLUMNS),
                Section("Failures", failures, FAILURE_COLUMNS,
                        "What crashed or failed (ours or a peer), and where (the innermost frame); `in ORT`: ONNX "
                        "Runtime rejected the written model.")]
    if gains:
        sections.insert(1, Section(
            "Gain per fused kernel", [{"model": r["model"], **{k: _ratio_text(r.get(f"gain_{k}")) for k in gains}}
                                      for r in rows], ["model", *gains],
            "Per kernel, our program made without the rules that form it (`bench_llm.KERNELS`: the rotary "
            "embedding, attention with its grouped and cached forms, the RMS norm, the activations) ran in the "
            "same rounds as ours: its time over ours per round (above 1: the kernel makes ours faster), median "
            "and quartiles. A kernel that is not formed (see the fused ops) shows the noise."))
    for row, shown in zip(rows, fused):  # the JSON rows carry the table's fused-op strings too
        row.update({k: shown[k] for k in ("ours", *PEERS, "nodes")})
    path = write_results(args.name or ("llm_mid" if args.config == "mid" else "llm"), rows, COLUMNS, notes, sections)
    print(path.read_text())


if __name__ == "__main__":
    main()
