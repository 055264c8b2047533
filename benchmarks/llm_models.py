"""Small decoder LLMs and a BERT-like encoder from `transformers`, exported by both of torch's exporters:
the fixtures in `tests/fixtures/llm` (run `python -m benchmarks.llm_models` to regenerate them).
Families: Llama, Qwen2, Phi-3 (partial rotary), Gemma (one KV head, GeGLU), Gemma-2 (soft-capped
attention scores and logits, a sliding-window layer; eager attention only: transformers refuses
sdpa for it), GPT-2, GPT-J (interleaved rotary on (batch, sequence, heads, head size), from a
sin/cos table gathered at the positions), Cohere (interleaved rotary on (batch, heads, sequence, head
size), its angles repeated per pair before cos and sin; layer norm without bias; attention and MLP
in parallel), GLM (interleaved partial rotary, the first half of a half-rotation table repeated per
pair) and BERT. Cohere and GLM come from the dynamo exporter only (`exporters`): torch's TorchScript
exporter writes a Cohere graph that ONNX Runtime rejects (a Reshape to traced sizes) and fails on
GLM ("All tensors must have the same rank").

Each family is built from its config object (no hub download): hidden 64, one layer, 4 query heads,
grouped-query KV heads where the family has them, a 128-token vocabulary with tied embeddings, and
random weights at a scale that makes attention scores matter (`initializer_range` 0.2; norm weights
drawn too), rounded to multiples of 1/64 so the committed files compress. Every variant has symbolic
batch and sequence lengths: `ids` and `mask` (int64) in, `logits` (decoders) or `hidden` (encoder)
out; a decode-step variant adds `past.{layer}.key`/`.value` inputs (batch, kv heads, past, head
dim) and `present.{layer}.key`/`.value` outputs, its mask covering past and new tokens.

The exporters are `torchscript` (`dynamo=False`, opset 17, `dynamic_axes`) and `dynamo`
(`torch.export` + onnxscript, opset 18, `dynamic_shapes`; the mask's length with a cache is
`Dim.AUTO`, since it is the sum of two dims); attention is `sdpa` or `eager`. Each export is checked
against torch in ONNX Runtime at its example sizes and at a second size; `manifest.json` lists every
fixture with what its model has (rope, gqa, norm, activation, packed qkv) and every variant that
failed, with the error. Needs torch, transformers and onnxscript (the `exports` extra);
`python -m benchmarks.llm_models gemma2` exports only the families named, keeping the others'
manifest entries. One more fixture has two layers (`DEEP`: Llama, dynamo, sdpa, a prefill), so that
tests see fusions reach a layer whose shapes were computed at run time by the layer before, and
one has float16 weights (`HALF`: the same, one layer), as half-precision models are exported.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import warnings
from typing import Any

import numpy as np
import onnx

__all__ = ["FAMILIES", "EXPORTERS", "ATTENTIONS", "FIXTURE_DIR", "NOTES", "build", "export", "feed",
           "sizes_to_check", "main"]

FIXTURE_DIR = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "llm")
EXPORTERS = {"torchscript": 17, "dynamo": 18}
ATTENTIONS = ("sdpa", "eager")
VOCAB, HIDDEN, HEADS, HEAD_DIM, LAYERS = 128, 64, 4, 16, 1
EXAMPLE = {"batch": 2, "seq": 6, "step": 2, "past": 5}
"""example sizes for export (above 1, which torch.export would specialize); `step` is the decode
variant's new-token count."""

NOTES = [
    "Both exporters take a transformers DynamicCache built inside forward from tensor inputs (cache.update per "
    "layer) and return the present keys/values from out.past_key_values.layers[i].keys/.values.",
    "torch.export needs example sizes above 1 (it specializes 0/1) and Dim.AUTO for the mask's length with a "
    "cache (past + new tokens: a sum of dims is not accepted as a Dim).",
    "dynamo + sdpa, no cache: the query rows of left-padded positions (every key masked) differ from torch "
    "(torch_vs_ort.second); every other row matches. The TorchScript export matches torch there.",
]
"""what exporting showed (also in the manifest)."""

_COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=LAYERS,
               num_attention_heads=HEADS, max_position_embeddings=64, tie_word_embeddings=True,
               initializer_range=0.2)

#: family -> (config class, model class, config kwargs, what the model has)
FAMILIES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(_COMMON, num_key_value_heads=2),
              dict(decoder=True, rope="half", rotary_dim=16, kv_heads=2, norm="rmsnorm", activation="silu-gated",
                   qkv="separate")),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(_COMMON, num_key_value_heads=2),
              dict(decoder=True, rope="half", rotary_dim=16, kv_heads=2, norm="rmsnorm", activation="silu-gated",
                   qkv="separate+bias")),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             dict(_COMMON, num_key_value_heads=2, pad_token_id=0, partial_rotary_factor=0.5),
             dict(decoder=True, rope="half", rotary_dim=8, kv_heads=2, norm="rmsnorm", activation="silu-gated",
                  qkv="packed")),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(_COMMON, num_key_value_heads=1, head_dim=HEAD_DIM, hidden_activation="gelu_pytorch_tanh"),
              dict(decoder=True, rope="half", rotary_dim=16, kv_heads=1, norm="rmsnorm(1+w)",
                   activation="gelu-tanh-gated", qkv="separate", embedding_scale=True)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
               dict(_COMMON, num_key_value_heads=1, head_dim=HEAD_DIM, hidden_activation="gelu_pytorch_tanh",
                    attn_logit_softcapping=50.0, final_logit_softcapping=30.0, sliding_window=4,
                    query_pre_attn_scalar=HEAD_DIM),
               dict(decoder=True, rope="half", rotary_dim=16, kv_heads=1, norm="rmsnorm(1+w)",
                    activation="gelu-tanh-gated", qkv="separate", embedding_scale=True, softcap=50.0,
                    sliding_window=4, attentions=["eager"])),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(vocab_size=VOCAB, n_embd=HIDDEN, n_inner=128, n_layer=LAYERS, n_head=HEADS, n_positions=64,
                  tie_word_embeddings=True, initializer_range=0.2, activation_function="gelu_new"),
             dict(decoder=True, rope=None, kv_heads=HEADS, norm="layernorm", activation="gelu-tanh",
                  qkv="packed-conv1d", positions="learned")),
    "gptj": ("GPTJConfig", "GPTJForCausalLM",
             dict(vocab_size=VOCAB, n_embd=HIDDEN, n_inner=128, n_layer=LAYERS, n_head=HEADS, n_positions=64,
                  rotary_dim=8, tie_word_embeddings=True, initializer_range=0.2),
             dict(decoder=True, rope="interleaved", rotary_dim=8, kv_heads=HEADS, norm="layernorm",
                  activation="gelu-tanh", qkv="separate", rope_layout="(B, S, N, H)", parallel_block=True)),
    "cohere": ("CohereConfig", "CohereForCausalLM", dict(_COMMON, num_key_value_heads=2),
               dict(decoder=True, rope="interleaved", rotary_dim=16, kv_heads=2, norm="layernorm(no bias)",
                    activation="silu-gated", qkv="separate", parallel_block=True, exporters=["dynamo"])),
    "glm": ("GlmConfig", "GlmForCausalLM", dict(_COMMON, num_key_value_heads=2, head_dim=HEAD_DIM, pad_token_id=0),
            dict(decoder=True, rope="interleaved", rotary_dim=8, kv_heads=2, norm="rmsnorm", activation="silu-gated",
                 qkv="separate+bias", mlp="packed gate-up", exporters=["dynamo"])),
    "bert": ("BertConfig", "BertModel",
             dict(_COMMON, max_position_embeddings=64),
             dict(decoder=False, rope=None, kv_heads=HEADS, norm="layernorm", activation="gelu-erf",
                  qkv="separate+bias", positions="learned")),
}


def build(family: str, attention: str, layers: int | None = None) -> tuple[Any, Any]:
    """(model, config) of `family` with `attention` ("sdpa" or "eager") and `layers` decoder or encoder
    layers (default: the family's), random weights, eval mode."""
    import torch
    import transformers
    config_name, model_name, kwargs, _ = FAMILIES[family]
    if layers is not None:
        kwargs = dict(kwargs, **{"n_layer" if "n_layer" in kwargs else "num_hidden_layers": layers})
    config = getattr(transformers, config_name)(attn_implementation=attention, **kwargs)
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(config).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:  # fresh norm weights and biases are constants (1 or 0)
                p.add_(torch.randn(p.shape, generator=generator) * 0.2)
            p.copy_(torch.round(p * 64) / 64)
    return model, config


def _wrapper(torch: Any, model: Any, config: Any, decoder: bool, layers: int) -> Any:
    """`forward(ids, mask, *past)` -> logits (decoder) or last hidden state, then the present K/V."""
    from transformers import DynamicCache

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any, *past: Any) -> Any:
            if not decoder:
                return self.model(input_ids=ids, attention_mask=mask).last_hidden_state
            if not past:
                return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            cache = DynamicCache(config=config)
            for layer in range(layers):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
            present = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
            return (out.logits, *present)

    return Step().eval()


def _names(cache: bool, decoder: bool) -> tuple[list[str], list[str]]:
    past = [f"past.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]
    present = [p.replace("past", "present") for p in past]
    return (["ids", "mask"] + (past if cache else []),
            ["logits" if decoder else "hidden"] + (present if cache else []))


def feed(family: str, cache: bool, batch: int, seq: int, past: int = 0, pad: int = 0,
         seed: int = 0, dtype: str = "float32") -> dict[str, np.ndarray]:
    """Inputs for a fixture: token ids, a mask whose last batch row has `pad` leading zeros (left
    padding), and for a cache `past` random keys/values (of `dtype`) per layer."""
    rng = np.random.default_rng(seed)
    past = past if cache else 0
    mask = np.ones((batch, seq + past), np.int64)
    mask[-1, :pad] = 0
    out = {"ids": rng.integers(0, VOCAB, (batch, seq)).astype(np.int64), "mask": mask}
    kv_heads = FAMILIES[family][3]["kv_heads"]
    for name in _names(cache, True)[0][2:]:
        out[name] = rng.standard_normal((batch, kv_heads, past, HEAD_DIM)).astype(dtype)
    return out


def _strip(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop the exporter's per-node metadata (stack traces with local paths) and doc strings."""
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    model.graph.doc_string = ""
    return model


def export(family: str, exporter: str, attention: str, cache: bool, layers: int | None = None,
           dtype: str = "float32") -> onnx.ModelProto:
    """The ONNX export of one fixture variant (see the module docstring); another number of `layers`
    for a prefill (no cache) only; `dtype` "float16" for half-precision weights and past values."""
    import torch
    if cache and layers not in (None, LAYERS):
        raise ValueError("a decode step's past inputs are named for the fixtures' own number of layers")
    model, config = build(family, attention, layers)
    layers = LAYERS if layers is None else layers
    model = model.to(getattr(torch, dtype))
    decoder = FAMILIES[family][3]["decoder"]
    step = _wrapper(torch, model, config, decoder, layers)
    sizes = sizes_to_check(cache)["example"]
    args = tuple(torch.from_numpy(v) for v in feed(family, cache, **sizes, dtype=dtype).values())
    inputs, outputs = _names(cache, decoder)
    buffer = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            batch, seq, past = (torch.export.Dim(n) for n in ("batch", "seq", "past"))
            shapes: dict[str, Any] = {"ids": {0: batch, 1: seq},
                                      "mask": {0: batch, 1: torch.export.Dim.AUTO if cache else seq}}
            if cache:
                shapes["past"] = tuple({0: batch, 2: past} for _ in inputs[2:])
            proto = torch.onnx.export(step, args, dynamo=True, opset_version=EXPORTERS[exporter], input_names=inputs,
                                      output_names=outputs, dynamic_shapes=shapes).model_proto
        else:
            axes = {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "total" if cache else "seq"}}
            axes.update({n: {0: "batch", 2: "past"} for n in inputs[2:]})
            axes.update({n: {0: "batch", 2: "total"} for n in outputs[1:]})
            torch.onnx.export(step, args, buffer, dynamo=False, opset_version=EXPORTERS[exporter], input_names=inputs,
                              output_names=outputs, dynamic_axes=axes)
            proto = onnx.load_from_string(buffer.getvalue())
    return _strip(proto)


def sizes_to_check(cache: bool) -> dict[str, dict[str, int]]:
    """`feed` sizes a fixture is checked at: its example sizes, and a second size (batch 1, a decode
    step of one token after 7 past ones, or 3 tokens left-padded by 1)."""
    return {"example": dict(batch=EXAMPLE["batch"], seq=EXAMPLE["step"] if cache else EXAMPLE["seq"],
                            past=EXAMPLE["past"]),
            "second": dict(batch=1, seq=1, past=7) if cache else dict(batch=1, seq=3, pad=1)}


def _check(proto: onnx.ModelProto, family: str, attention: str, cache: bool) -> dict[str, float]:
    """Max |ORT - torch| relative to the output scale at each of `sizes_to_check`."""
    import onnxruntime as ort
    import torch
    model, config = build(family, attention)
    decoder = FAMILIES[family][3]["decoder"]
    step = _wrapper(torch, model, config, decoder, LAYERS)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    errors = {}
    for label, sizes in sizes_to_check(cache).items():
        inputs = feed(family, cache, **sizes)
        with torch.no_grad():
            want = step(*(torch.from_numpy(v) for v in inputs.values()))
        want = [t.numpy() for t in (want if isinstance(want, tuple) else (want,))]
        got = session.run(None, inputs)
        errors[label] = max(float(np.max(np.abs(w - g)) / max(1.0, np.max(np.abs(w)))) for w, g in zip(want, got))
    return errors


def _fixture(directory: str, family: str, exporter: str, attention: str, cache: bool) -> tuple[dict, str | None]:
    """One variant exported into `directory` and checked: (its manifest entry, None), or (the entry, the error)."""
    has = FAMILIES[family][3]
    name = f"{family}_{exporter}_{attention}{'_cache' if cache else ''}"
    entry: dict[str, Any] = dict(name=name, file=f"{name}.onnx", family=family, exporter=exporter,
                                 opset=EXPORTERS[exporter], attention=attention, cache=cache)
    try:
        proto = export(family, exporter, attention, cache)
        entry["torch_vs_ort"] = _check(proto, family, attention, cache)
    except Exception as e:  # noqa: BLE001 - a failing export is recorded, not fatal
        return entry, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    onnx.save(proto, os.path.join(directory, entry["file"]))
    entry.update(has=has, inputs=[i.name for i in proto.graph.input], outputs=[o.name for o in proto.graph.output],
                 bytes=os.path.getsize(os.path.join(directory, entry["file"])))
    return entry, None


def main(directory: str = FIXTURE_DIR, families: list[str] | None = None) -> dict[str, Any]:
    """Export every variant of `families` (default: all) into `directory` with `manifest.json`, keeping
    the manifest's entries of the other families; returns the manifest."""
    os.makedirs(directory, exist_ok=True)
    chosen = list(FAMILIES) if not families else families
    fixtures: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    path = os.path.join(directory, "manifest.json")
    if families and os.path.exists(path):
        with open(path) as f:
            kept = json.load(f)
        fixtures = [e for e in kept["fixtures"] if e["family"] not in chosen]
        failed = [e for e in kept["failed"] if e["family"] not in chosen]
    for family in chosen:
        has = FAMILIES[family][3]
        for exporter in has.get("exporters", EXPORTERS):
            for attention in has.get("attentions", ATTENTIONS):
                for cache in ((False, True) if has["decoder"] else (False,)):
                    entry, error = _fixture(directory, family, exporter, attention, cache)
                    if error is None:
                        fixtures.append(entry)
                        print(f"{entry['name']}: {entry['bytes']} bytes, torch vs ORT {entry['torch_vs_ort']}")
                    else:
                        failed.append(dict(entry, error=error))
                        print(f"{entry['name']}: FAILED {error}")
    manifest = dict(sizes=dict(vocab=VOCAB, hidden=HIDDEN, heads=HEADS, head_dim=HEAD_DIM, layers=LAYERS),
                    example=EXAMPLE, checked_at=dict(prefill=sizes_to_check(False), decode=sizes_to_check(True)),
                    notes=NOTES, fixtures=fixtures, failed=failed)
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


DEEP = ("llama", "dynamo", "sdpa", 2)
"""the one fixture of more than one layer (family, exporter, attention, layers): fusions must reach
every layer, where shapes computed at run time have passed through the layers before."""
HALF = ("llama", "dynamo", "sdpa", "float16")
"""the one fixture of half-precision weights (family, exporter, attention, dtype): its tables are
computed in float32 and cast, its norms cast to float32 and back."""


def deep_fixture(directory: str = FIXTURE_DIR) -> str:
    """Export `DEEP` (a prefill) into `directory`; its path."""
    family, exporter, attention, layers = DEEP
    path = os.path.join(directory, f"{family}_{exporter}_{attention}_{layers}layers.onnx")
    onnx.save(export(family, exporter, attention, False, layers), path)
    return path


def half_fixture(directory: str = FIXTURE_DIR) -> str:
    """Export `HALF` (a prefill) into `directory`; its path."""
    family, exporter, attention, dtype = HALF
    path = os.path.join(directory, f"{family}_{exporter}_{attention}_fp16.onnx")
    onnx.save(export(family, exporter, attention, False, dtype=dtype), path)
    return path


if __name__ == "__main__":
    main(families=sys.argv[1:])
    deep_fixture()
    half_fixture()
