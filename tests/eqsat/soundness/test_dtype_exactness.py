"""Rules exact in every dtype they accept (issue 24, item 5).

Constant folding and guards compute in the op's own dtype (float16, bfloat16, float64, integers)
and refuse where a folded value would overflow or underflow where the program it replaces does
not; integer constants are read as integers; a rule produces an op only for dtypes the op (and, for
the ort target, ONNX Runtime's CPU kernels) accepts; `to_onnx` checks ONNX's type constraints;
`check_rule` / `audit_random` cover those dtypes and extreme constants; random programs in
float16 / bfloat16 / int64 / uint8 optimized with the default rules agree with the original in
ONNX Runtime. Each test failed before its fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
import strategies
from ir import relay
from ir.dtype_info import numpy_dtype
from ir.expr import Constant
from ir.types import TensorType

from eqsat.rules.library import ALGEBRA, FOLDING, IDIOMS, RULESETS, SIMPLIFY
from eqsat.rules.match import Match
from eqsat.rules.pattern import call, const_pat, pvars
from eqsat.rules.rule import rule
from eqsat.soundness.audit import audit_random, audit_rules, fires_on
from eqsat.soundness.check import check_rule, output_difference
from eqsat.soundness.random_programs import edge_constants, random_programs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ir.frontend import to_onnx  # noqa: E402  (needs onnx)
from ir.frontend.errors import FrontendError  # noqa: E402
from strategies.dtype_legality import ORT_CPU_DTYPES  # noqa: E402

_RULES = {r.name: r for r in (*ALGEBRA, *FOLDING, *IDIOMS, *SIMPLIFY)}
x_, = pvars("x")


def _mod(body: ir.Expr) -> ir.IRModule:
    mod = ir.IRModule.from_expr(body)
    ir.infer_type(mod)
    return mod


def _c(value, dtype: str) -> Constant:
    return Constant(np.asarray(value).astype(numpy_dtype(dtype)))


def _v(name: str, shape: tuple[int, ...], dtype: str) -> ir.Var:
    numpy_dtype(dtype)  # registers bfloat16
    return relay.var(name, shape=shape, dtype=dtype)


def _session(model):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _run_ort(mod: ir.IRModule, inputs: dict[str, np.ndarray], params=None) -> list[np.ndarray]:
    model = to_onnx(mod, params, contrib=True)
    names = {i.name for i in model.graph.input}
    return _session(model).run(None, {k: v for k, v in inputs.items() if k in names})


def _issue_program(dtype: str = "float16") -> ir.IRModule:
    """((tanh(x) * 3e4) * 1e-4) * 1e-4 beside 1000 * x, in one output tensor."""
    x = _v("x", (2, 3), dtype)
    small = relay.multiply(relay.multiply(relay.multiply(relay.tanh(x), _c(3e4, dtype)), _c(1e-4, dtype)),
                           _c(1e-4, dtype))
    return _mod(relay.concatenate([small, relay.multiply(x, _c(1000.0, dtype))], axis=0))


# -- 1. folding and guards in the op's dtype ---------------------------------------------------------

def test_float16_scalar_product_is_not_folded_to_zero():
    mod = _issue_program()
    res = eqsat.optimize(mod, target="ort", verify=False)
    assert "fold-scalar-factors" not in res.report.applied_per_rule
    x = np.linspace(-2, 2, 6, dtype=np.float16).reshape(2, 3)
    want, got = _run_ort(mod, {"x": x})[0], _run_ort(res.mod, {"x": x}, res.params)[0]
    assert np.all(got[:2] != 0) and not output_difference(want[:2], got[:2], exact=False)


@pytest.mark.parametrize("dtype,c1,c2,fires", [
    ("float16", 1e-4, 1e-4, False),         # 1e-8 is 0 in float16
    ("float16", 0.25, 0.5, True),
    ("bfloat16", 1e-20, 1e-20, False),      # 1e-40 is subnormal in bfloat16
    ("float32", 1e-20, 1e-20, False),
    ("float64", 1e-20, 1e-20, True),        # float64 holds 1e-40
])
def test_scalar_factors_fold_in_the_op_dtype(dtype, c1, c2, fires):
    body = relay.multiply(relay.multiply(_v("x", (2, 3), dtype), _c(c1, dtype)), _c(c2, dtype))
    assert bool(fires_on(_RULES["fold-scalar-factors"], body)) is fires


@pytest.mark.parametrize("dtype,c", [("float16", 6e-8), ("float16", 1e-5), ("float32", 1e-45), ("bfloat16", 1e-39)])
def test_division_by_a_constant_whose_reciprocal_overflows_is_kept(dtype, c):
    body = relay.divide(_v("x", (2, 3), dtype), _c(c, dtype))
    assert fires_on(_RULES["divide-by-constant"], body) == 0
    assert fires_on(_RULES["divide-by-constant"], relay.divide(_v("x", (2, 3), dtype), _c(4.0, dtype))) == 1


def test_constant_sums_and_products_that_overflow_are_not_folded():
    a = _v("a", (2, 3), "float16")

    def addends(c1: float, c2: float) -> ir.Expr:
        return relay.add(relay.add(a, _c(c1, "float16")), _c(c2, "float16"))
    assert fires_on(_RULES["fold-constant-addends"], addends(6e4, 6e4)) == 0   # 1.2e5 is inf in float16
    assert fires_on(_RULES["fold-constant-addends"], addends(3.0, -3.0)) == 0  # (a + 3) - 3 rounds a first
    assert fires_on(_RULES["fold-constant-addends"], addends(1.0, 2.0)) == 1
    spread = relay.multiply(relay.add(a, _c(300.0, "float16")), _c(300.0, "float16"))
    assert fires_on(_RULES["distribute-constant-scale"], spread) == 0


def _bn_conv(dtype: str, weight: float, gamma: float, layout_scale: bool = False) -> ir.Expr:
    x = _v("x", (1, 3, 5, 5), dtype)
    conv = relay.nn.conv2d(x, _c(np.full((4, 3, 3, 3), weight), dtype), padding=(1, 1))
    if layout_scale:
        return relay.multiply(conv, _c(np.full((1, 4, 1, 1), gamma), dtype))
    stats = [_c(np.full(4, v), dtype) for v in (gamma, 0.0, 0.0, 1.0)]
    return relay.nn.batch_norm(conv, *stats)[0]


def test_batch_norm_and_scale_folds_that_overflow_are_refused():
    # float16 weight 100 * scale 1000 is 1e5 > 65504: the folded weight would be inf
    assert fires_on(_RULES["fold-batch-norm-into-conv"], _bn_conv("float16", 100.0, 1000.0)) == 0
    assert fires_on(_RULES["fold-batch-norm-into-conv"], _bn_conv("float16", 0.5, 2.0)) == 1
    assert fires_on(_RULES["fold-batch-norm-into-conv"], _bn_conv("float32", 100.0, 1000.0)) == 1
    assert fires_on(_RULES["conv-channel-scale"], _bn_conv("float16", 100.0, 1000.0, layout_scale=True)) == 0
    assert fires_on(_RULES["conv-channel-scale"], _bn_conv("float16", 0.5, 2.0, layout_scale=True)) == 1
    mod = _mod(_bn_conv("float16", 100.0, 1000.0))
    res = eqsat.optimize(mod, target="cpu", verify=False)  # refused, never a crash or an inf weight
    assert all(np.isfinite(np.asarray(c.data, np.float64)).all() for c in ir.post_order(res.mod["main"])
               if isinstance(c, Constant)) and all(np.isfinite(v.astype(np.float64)).all() for v in res.params.values())


def test_int64_clip_bounds_are_read_as_integers():
    big = 2 ** 53 + 1  # a float64 holds 2^53, not 2^53 + 1
    x = _v("x", (4,), "int64")
    body = relay.minimum(relay.maximum(x, _c(-big, "int64")), _c(big, "int64"))
    assert fires_on(_RULES["min-of-max-as-clip"], body) == 0
    small = relay.minimum(relay.maximum(x, _c(-7, "int64")), _c(9, "int64"))
    assert fires_on(_RULES["min-of-max-as-clip"], small) == 1
    mod = _mod(body)
    res = eqsat.optimize(mod, target="cpu", verify=False)
    v = np.array([big + 10, big, -big - 10, 2 ** 60], np.int64)
    assert np.array_equal(strategies.evaluate(res.mod, {"x": v}), strategies.evaluate(mod, {"x": v}))


def test_float64_clip_bound_that_float32_cannot_hold_is_kept():
    x = _v("x", (4,), "float64")
    body = relay.minimum(relay.maximum(x, _c(0.1, "float64")), _c(0.7, "float64"))
    assert fires_on(_RULES["min-of-max-as-clip"], body) == 0  # the float32 attribute would be 0.10000000149


def test_lifted_constants_fold_in_their_own_dtype():
    """The folding at lift (`strategies.constants.folded`) computes as ONNX Runtime does unfolded."""
    from strategies.constants import folded
    cases = [("float16", 1e-4, 1e-4, relay.multiply), ("int64", 2 ** 62, 4, relay.multiply),
             ("uint8", 200, 100, relay.add), ("int8", -128, -1, relay.multiply), ("float16", 6e4, 6e4, relay.add)]
    for dtype, a, b, op in cases:
        node = op(_c(a, dtype), _c(b, dtype))
        x = _v("x", (), dtype)
        want = _run_ort(_mod(relay.add(op(_c(a, dtype), _c(b, dtype)), x)), {"x": np.zeros((), dtype)})[0]
        got = folded(ir.infer_type(node)).data
        assert got.dtype == numpy_dtype(dtype) and np.array_equal(got, want, equal_nan=True), (dtype, got, want)


# -- 2. a rule produces an op only for dtypes it accepts; legality per dtype ---------------------------

@pytest.mark.parametrize("dtype,fires", [("uint8", False), ("uint64", False), ("int8", True), ("int64", True),
                                         ("float16", True), ("bfloat16", True)])
def test_max_zero_as_relu_only_where_relu_takes_the_dtype(dtype, fires):
    body = relay.maximum(_v("x", (2, 3), dtype), _c(0, dtype))
    assert bool(fires_on(_RULES["max-zero-as-relu"], body)) is fires


def test_ort_legality_is_per_dtype():
    model = strategies.CostModel("ort")
    for dtype, legal in (("int64", False), ("int16", False), ("uint8", False), ("int32", True), ("float16", True),
                         ("bfloat16", False)):
        t = TensorType((2, 3), dtype)
        assert model.is_legal("nn.relu", None, [t], t) is legal, dtype
    t8 = TensorType((2, 4), "int8")
    assert not model.is_legal("nn.matmul", None, [t8, TensorType((4, 3), "int8")], TensorType((2, 3), "int8"))
    assert strategies.CostModel("cpu").is_legal("nn.relu", None, [TensorType((2,), "int64")], TensorType((2,), "int64"))


def test_cpu_legality_knows_numpy_has_no_bfloat16_contraction():
    mod = _mod(relay.nn.dense(_v("a", (2, 4), "bfloat16"), _v("w", (3, 4), "bfloat16")))
    with pytest.raises(TypeError):  # the kernel the table describes
        strategies.evaluate(mod, {"a": np.ones((2, 4), "bfloat16"), "w": np.ones((3, 4), "bfloat16")})
    a, w, out = TensorType((2, 4), "bfloat16"), TensorType((3, 4), "bfloat16"), TensorType((2, 3), "bfloat16")
    assert not strategies.CostModel("cpu").is_legal("nn.dense", None, [a, w], out)
    assert strategies.CostModel("cpu").is_legal("nn.matmul", None, [a, TensorType((4, 3), "bfloat16")], out)


def test_int64_max_zero_stays_maximum_for_ort_and_runs():
    mod = _mod(relay.maximum(_v("x", (2, 3), "int64"), _c(0, "int64")))
    res = eqsat.optimize(mod, target="ort", verify=False)
    assert "nn.relu" not in res.op_counts_after
    v = np.array([[-(2 ** 62), -1, 0], [1, 2 ** 62, 5]], np.int64)
    assert np.array_equal(_run_ort(res.mod, {"x": v})[0], np.maximum(v, 0))


def _one_op(op: str, dtype: str) -> tuple[ir.IRModule, dict[str, np.ndarray]] | None:
    from ir.op.registry import make_call
    shapes = {"nn.dense": ((2, 4), (3, 4)), "nn.bias_gelu": ((2, 4), (4,)), "nn.matmul": ((2, 4), (4, 3)),
              "nn.fused_matmul": ((2, 4), (4, 3)), "nn.batch_matmul": ((2, 3, 4), (2, 5, 4))}
    binary = {"maximum", "minimum", "power", *shapes}
    attrs = {"clip": {"a_min": 0, "a_max": 6}, **{r: {"axis": [-1]} for r in ("sum", "mean", "max", "min", "prod")}}
    arg_shapes = shapes.get(op, ((2, 4), (2, 4)) if op in binary else ((2, 4),))
    args = [_v(f"x{i}", s, dtype) for i, s in enumerate(arg_shapes)]
    try:
        mod = _mod(make_call(op, args, attrs.get(op, {})))
    except ir.IRError:
        return None
    return mod, {f"x{i}": np.ones(s, dtype) for i, s in enumerate(arg_shapes)}


def test_ort_dtype_table_matches_onnxruntime(monkeypatch):
    """Every (op, dtype) the table allows runs in ONNX Runtime's own kernels; every one it refuses
    does not (the export's widened forms left out: they are not ORT's kernels)."""
    import ir.frontend.onnx_export as onnx_export
    monkeypatch.setattr(onnx_export, "legalize_types", lambda model: None)
    wrong = []
    for op, allowed in ORT_CPU_DTYPES.items():
        for dtype in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32"):
            built = _one_op(op, dtype)
            if built is None:
                continue
            try:
                _run_ort(*built)
                runs = True
            except Exception:  # noqa: BLE001 (no kernel, or an export the type check refuses)
                runs = False
            if runs != (dtype in allowed):
                wrong.append((op, dtype, runs))
    assert not wrong


# -- 3. to_onnx checks ONNX's type constraints ---------------------------------------------------------

@pytest.mark.parametrize("build", [
    lambda: relay.nn.matmul(_v("a", (2, 4), "int8"), _v("b", (4, 3), "int8")),
    lambda: relay.sum(_v("a", (2, 4), "int8"), axis=[-1]),
    lambda: relay.sum(_v("a", (2, 4), "uint16"), axis=[-1]),
    lambda: relay.nn.relu(_v("a", (2, 4), "uint8")),
])
def test_to_onnx_writes_a_legal_widened_form(build):
    mod = _mod(build())
    model = to_onnx(mod)
    assert "Cast" in [n.op_type for n in model.graph.node]
    rng = np.random.default_rng(0)
    inputs = {p.name_hint: rng.integers(0, 100, p.checked_type.concrete_shape).astype(p.checked_type.dtype)
              for p in mod["main"].params}
    assert np.array_equal(_session(model).run(None, inputs)[0], strategies.evaluate(mod, inputs))


def test_to_onnx_names_the_node_op_and_dtype_it_cannot_write():
    mod = _mod(relay.power(_v("a", (2, 4), "int8"), _v("b", (2, 4), "int8")))
    with pytest.raises(FrontendError, match=r"Pow.*int8"):
        to_onnx(mod)


# -- 4. check_rule and the audits cover the dtypes and extreme constants --------------------------------

def _float32_fold(m: Match):
    """The old `fold-scalar-factors`: the product computed in float32, then cast to the op's dtype."""
    product = np.float32(m.scalar("k1")) * np.float32(m.scalar("k2"))
    return relay.multiply(m.expr("x"), Constant(np.asarray(product).astype(numpy_dtype(m.dtype("x")))))


_PLANTED = rule("float32-fold", call("multiply", call("multiply", x_, const_pat("k1")), const_pat("k2")), _float32_fold,
                dtypes="float", exact=False,
                example=lambda: _issue_program("float32")["main"].body.args[0])


def test_check_rule_finds_a_fold_that_is_wrong_in_float16_only():
    check_rule(_PLANTED, _PLANTED.example)  # right in float32
    with pytest.raises(AssertionError, match="unsound"):
        check_rule(_PLANTED, _PLANTED.example, dtype="float16")
    verdict, = audit_rules([_PLANTED])
    assert verdict.verdict == "unsound" and "float16" in verdict.detail


def test_library_rules_hold_in_every_checked_dtype():
    names = ("fold-scalar-factors", "divide-by-constant", "max-zero-as-relu", "min-of-max-as-clip", "add-zero",
             "multiply-one", "fold-constant-addends", "distribute-constant-scale", "batch-norm-to-affine",
             "fold-batch-norm-into-conv")
    bad = [v for v in audit_rules([_RULES[n] for n in names]) if not v.ok]
    assert not bad


def _exact_rule_in_ort(r, dtype: str) -> str:
    """'' when every program of `r`'s e-graph on its example (in `dtype`) gives the original's bits
    in ONNX Runtime, else the first difference."""
    from eqsat.egraph.lower import lower
    from eqsat.limits import Limits
    from eqsat.rules.rule import ruleset
    from eqsat.runner import saturate
    from eqsat.soundness.check import _every_alternative, edge_inputs, in_dtype
    try:
        mod = _mod(in_dtype(r.example(), dtype))
        low = lower(mod)
        saturate(low.egraph, ruleset(r.name, [r]), Limits(iterations=2))
        inputs = edge_inputs(mod, extreme=True)
        wants = [_run_ort(mod, i) for i in inputs]
    except (ir.IRError, FrontendError, ort.capi.onnxruntime_pybind11_state.NotImplemented):
        return ""  # not in this dtype, or not an ONNX Runtime program
    for program in _every_alternative(low):
        for i, want in zip(inputs, wants):
            for w, g in zip(want, _run_ort(program, i)):
                problem = output_difference(w, g, exact=True)
                if problem:
                    return f"{r.name} in {dtype}: {problem}"
    return ""


def _exact_in_ort(rules) -> None:
    exact = [r for r in rules if r.exact and r.example is not None]
    problems = [p for r in exact for d in ("float16", "float32", "float64") if (p := _exact_rule_in_ort(r, d))]
    assert len(exact) > 5 and not problems, problems


def test_exact_rules_are_exact_in_onnxruntime():
    """An exact rule gives the same bits as the original in ONNX Runtime too (signed zeros of
    max / relu / clip, and log or tanh moved through a transpose, are not: those say exact=False)."""
    _exact_in_ort((*SIMPLIFY, *ALGEBRA, *RULESETS["layout-commute"]))


@pytest.mark.slow
def test_every_exact_rule_of_the_ort_rules_is_exact_in_onnxruntime():
    _exact_in_ort((*RULESETS["default"], *RULESETS["layout"]))


def test_random_programs_cover_the_dtypes_and_their_edges():
    mods = list(random_programs(60, seed=3))
    dtypes = {m["main"].params[0].type_annotation.dtype for m in mods}
    assert {"float16", "bfloat16", "float64", "int64", "uint8"} <= dtypes
    seen = {float(np.asarray(c.data, np.float64).reshape(-1)[0]) for m in mods for c in ir.post_order(m["main"])
            if isinstance(c, Constant) and c.data.dtype == np.float16}
    assert float(np.finfo(np.float16).max) in seen or -float(np.finfo(np.float16).max) in seen
    assert 2 ** 53 + 1 in edge_constants("int64") and 255 in edge_constants("uint8")


def test_random_audit_of_the_default_rules_in_every_dtype():
    found = audit_random(RULESETS["default"], 40, seed=1)
    assert found.fired > 20 and not found.unsound, found.unsound


# -- 5. property: random programs, default rules, ONNX Runtime as the reference ---------------------------

_PROPERTY_DTYPES = ("float16", "bfloat16", "int64", "uint8")


def _inputs(mod: ir.IRModule, seed: int) -> list[dict[str, np.ndarray]]:
    from eqsat.soundness.check import edge_inputs
    return edge_inputs(mod, extreme=False, seed=seed)


def _exact(res) -> bool:
    """True when every rule that applied is exact (the result must then match bit for bit)."""
    rules = {r.name: r for r in (*RULESETS["default"], *RULESETS["layout"])}
    return all(getattr(rules.get(name), "exact", True) for name in res.report.applied_per_rule)


def _property_run(seed: int, dtype: str) -> tuple[bool, str]:
    """Optimize one random program in `dtype`; compare it with the original (ONNX Runtime for the
    dtypes ONNX has, the reference kernels for bfloat16). Returns (compared, problem)."""
    mod, = random_programs(1, seed=seed, dtypes=(dtype,))
    ir.infer_type(mod)
    target = "cpu" if dtype == "bfloat16" else "ort"
    model = strategies.CostModel(target)
    if not np.isfinite(model.program_cost(mod)):  # the original uses an op ORT cannot run in this dtype
        return False, ""
    res = eqsat.optimize(mod, target=target, verify=False)
    exact = _exact(res)
    from eqsat.soundness.check import intermediate_scale
    for inputs in _inputs(mod, seed):
        if target == "ort":
            want, got = _run_ort(mod, inputs), _run_ort(res.mod, inputs, res.params)
        else:
            with np.errstate(all="ignore"):
                want = eqsat.soundness.verify.flat_outputs(strategies.evaluate(mod, inputs))
                got = eqsat.soundness.verify.flat_outputs(strategies.evaluate(res.mod, {**inputs, **res.params}))
        scale = 0.0 if exact else intermediate_scale(mod, inputs)
        for w, g in zip(want, got):
            problem = output_difference(np.asarray(w), np.asarray(g), exact, scale)
            if problem:
                return True, f"seed {seed} ({dtype}, exact={exact}): {problem}\n{ir.astext(mod)}\n{ir.astext(res.mod)}"
    return True, ""


def _property(seeds: range) -> None:
    compared, problems = 0, []
    with np.errstate(all="ignore"):
        for seed in seeds:
            for dtype in _PROPERTY_DTYPES:
                ran, problem = _property_run(seed, dtype)
                compared += ran
                if problem:
                    problems.append(problem)
    assert compared >= len(seeds) * len(_PROPERTY_DTYPES) // 2 and not problems, "\n\n".join(problems[:3])


def test_default_rules_agree_with_onnxruntime_on_random_programs_in_narrow_dtypes():
    _property(range(4))


@pytest.mark.slow
@pytest.mark.parametrize("first", range(100, 200, 10))
def test_default_rules_agree_with_onnxruntime_on_100_random_programs(first):
    """In ten parts of ten programs, which the test workers share out."""
    _property(range(first, first + 10))
