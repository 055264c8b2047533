"""The rule library: named rule sets, and `resolve_rules` to turn names or callbacks into one set.

| name       | what                                                                  |
|------------|-----------------------------------------------------------------------|
| `simplify` | idempotence, cancellation (transpose, reshape, negation), x + (-0.0), x * 1 |
| `algebra`  | axioms: x / c, powers and roots, rsqrt forms, a + (-b), max/min as relu/clip, scalar factors |
| `layout-commute` | element-wise ops commute with transpose and reshape, so layout pairs meet and cancel |
| `commute`  | commutativity of add and multiply (one swapped twin per node: bounded)  |
| `idioms`   | layer norm, RMS norm, exact GELU, SiLU, hard sigmoid/swish, softmax, matmul as dense, conv scale/shift, attention |
| `activations` | tanh GELU (+ bias: FastGelu), QuickGelu, leaky relu / clip / hard sigmoid into FusedConv / FusedGemm; pow(x, 3) as a product |
| `rotary`   | rotary position embedding (half rotation, split or sliced halves, partial rotary) |
| `shape-values` | `dyn.reshape` / `dyn.expand` whose target the e-graph computes from typed shapes become static |
| `grouped-attention` | `repeat_kv`'s copies of K and V fold into attention with fewer KV heads |
| `kv-cache` | a decode step's concatenations with the past K/V fold into attention with past and present |
| `softcap`  | attention whose scores are soft-capped, tanh(s / c) * c (Gemma-2) |
| `folding`  | inference batch norm into an affine map, or into the preceding conv2d |
| `fusion`   | conv/dense + bias + activation, bias + gelu, add + layer norm, scaled matmul; bias_add as add |
| `merge`    | two conv2d / dense sharing an input become one wider op and a split   |
| `ac`       | commute + associativity of add and multiply (grows without bound)     |
| `default`  | simplify + algebra + shape-values + layout-commute + commute + idioms + grouped-attention + kv-cache + softcap + activations + rotary + folding + fusion + merge |
| `layout`   | convolutions in ONNX Runtime's NCHW{B}c blocks; layout transforms moved outward and cancelled; activations through a channel crop |
| `taso`     | TASO's substitutions: merges through concat and split, relu / bias add across a concat, matmul re-association |
| `all`      | default + associativity + layout + taso                               |

Families recognised by `default` (each from any spelling the axioms relate): LayerNorm (with or
without affine parts, + residual as SkipLayerNorm), RMSNorm, exact GELU (+ bias as BiasGelu),
tanh GELU (+ bias as FastGelu), QuickGelu (x * sigmoid(a x)), SiLU, HardSigmoid, HardSwish, ReLU6
(clip), stable softmax, linear layers (MatMul with a constant or transposed weight + bias, +
activation), conv + batch norm (as an op or as Mul/Add) + activation,
scaled dot-product attention, rotary position embedding.
"""

from __future__ import annotations

from typing import Iterable

from ir.dataflow_pattern import DFPatternCallback

from ...errors import RuleError
from ..callback import CallbackRule
from ..rule import Rule, RuleSet, ruleset
from .ac import AC, COMMUTE
from .activations import ACTIVATION_LAYOUT, ACTIVATIONS
from .algebra import ALGEBRA
from .folding import FOLDING
from .grouped_attention import GROUPED_ATTENTION
from .fusion import FUSION
from .idioms import IDIOMS
from .kv_cache import KV_CACHE
from .layout import LAYOUT as _BLOCKED
from .layout_commute import LAYOUT_COMMUTE
from .merge import MERGE
from .rotary import ROTARY
from .shape_values import SHAPE_VALUES
from .simplify import SIMPLIFY
from .softcap import SOFTCAP
from .taso import TASO

__all__ = ["FAMILIES", "RULESETS", "resolve_rules", "AC", "ACTIVATIONS", "ALGEBRA", "COMMUTE", "FOLDING", "FUSION",
           "IDIOMS", "LAYOUT", "LAYOUT_COMMUTE", "MERGE", "ROTARY", "SIMPLIFY", "TASO", "TARGET_RULES", "default_rules",
           "targets_rules"]

LAYOUT = ruleset("layout", [*_BLOCKED, *ACTIVATION_LAYOUT])
_DEFAULT = ruleset("default", [*SIMPLIFY, *ALGEBRA, *SHAPE_VALUES, *LAYOUT_COMMUTE, *COMMUTE, *IDIOMS,
                               *GROUPED_ATTENTION, *KV_CACHE, *SOFTCAP, *ACTIVATIONS, *ROTARY, *FOLDING, *FUSION, *MERGE])
RULESETS: dict[str, RuleSet] = {
    "simplify": SIMPLIFY, "algebra": ALGEBRA, "layout-commute": LAYOUT_COMMUTE, "commute": COMMUTE,
    "idioms": IDIOMS, "activations": ACTIVATIONS, "rotary": ROTARY, "folding": FOLDING, "fusion": FUSION,
    "merge": MERGE, "ac": AC, "shape-values": SHAPE_VALUES, "grouped-attention": GROUPED_ATTENTION, "kv-cache": KV_CACHE, "softcap": SOFTCAP,
    "layout": LAYOUT, "taso": TASO,
    "default": _DEFAULT,
    "all": ruleset("all", [*_DEFAULT, *(r for r in AC if r.name not in COMMUTE.names), *LAYOUT, *TASO]),
}


FAMILIES = ("layer norm (with or without affine; + residual: skip layer norm)", "RMS norm", "exact GELU (+ bias)",
            "tanh GELU (+ bias)", "QuickGelu", "SiLU", "hard sigmoid", "hard swish", "ReLU6 (clip)", "stable softmax",
            "linear (MatMul with a constant or transposed weight, + bias, + activation)",
            "conv + batch norm (as an op or as per-channel Mul/Add) + activation",
            "scaled dot-product attention (any scale placement, with or without an additive mask, "
            "K transposed anywhere, Einsum products; torch SDPA's where(isnan(p), 0, p) guard; "
            "grouped/multi-query K and V copied by repeat_kv; a decode step's K/V cache concatenations; soft-capped scores)", "rotary position embedding (x * cos + rotate_half(x) * sin)")
"""the op families `default` recognises from any spelling the axioms relate."""


#: rule sets a target gains over `default` when it is given no rules: only ONNX Runtime runs the
#: blocked (NCHWc) convolutions the `layout` rules introduce
TARGET_RULES = {"ort": "default+layout"}


def default_rules(target: str, standard_onnx: bool = False) -> str:
    """The rules a run for the target named `target` saturates with when none are given: `default`,
    plus `layout` for ort unless the program is for `standard_onnx` (blocked layouts are ONNX
    Runtime's own kernels)."""
    return "default" if standard_onnx else TARGET_RULES.get(target, "default")


def targets_rules(targets: Iterable[str]) -> str:
    """The rule sets a run that extracts for every target in `targets` saturates with: the union of
    their `default_rules`, so each target's program is the one `optimize` would extract for it."""
    names = dict.fromkeys(n for t in targets for n in default_rules(t).split("+"))
    return "+".join(names) or "default"


def resolve_rules(rules: str | RuleSet | Rule | DFPatternCallback | Iterable[Rule | DFPatternCallback]) -> RuleSet:
    """One rule set from a library name (`"fusion+ac"` joins sets), a rule set, rules or callbacks."""
    if isinstance(rules, RuleSet):
        return rules
    if isinstance(rules, str):
        names = [n.strip() for n in rules.split("+")]
        unknown = [n for n in names if n not in RULESETS]
        if unknown:
            raise RuleError(f"unknown rule set(s) {unknown}; choose from {sorted(RULESETS)} (join with '+')")
        return ruleset(rules, [r for n in names for r in RULESETS[n]])
    items = [rules] if isinstance(rules, (Rule, DFPatternCallback)) else list(rules)
    out = []
    for item in items:
        if isinstance(item, DFPatternCallback):
            out.append(CallbackRule(item))
        elif isinstance(item, Rule):
            out.append(item)
        else:
            raise RuleError(f"expected rules or DFPatternCallback objects, got {type(item).__name__} {item!r}")
    return ruleset("custom", out)
