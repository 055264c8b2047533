"""Relay-like text: one numbered `%n = ...` line per node, shared nodes printed once.

    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
      nn.relu(%0) /* ty=Tensor[(1, 4, 8, 8), float32] */
    }

Attributes equal to the op's defaults are left out. Scalar constants print inline (`1f`, `3`),
other constants as `meta[relay.Constant][k]`. Given `provenance` (node -> the rules that made
it, e.g. `Optimized.provenance`), a node that rules made says so in a second comment:

      %3 = nn.dense_bias_act(%2, %w, %b) /* ty=... */ /* rules: bias-add-as-add, dense-bias */;

`node_names` gives the name each node prints under (`%3`, `%x`), which is how `eqsat why` and
`explain_match` refer to nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .attrs import Attrs
from .expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from .op.registry import Op
from .visitor import children, free_vars, post_order

if TYPE_CHECKING:
    from .module import IRModule

__all__ = ["astext", "node_names"]


def _value(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return f"{v:g}f"
    if isinstance(v, tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Attrs):
        return "{" + ", ".join(f"{k}={_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def _scalar(c: Constant) -> str | None:
    if c.data.ndim != 0:
        return None
    v = c.data.item()
    if c.dtype == "float32":
        return f"{v:g}f"
    if c.dtype == "int32":
        return str(v)
    if c.dtype == "bool":
        return "True" if v else "False"
    return f"{v}{'f' if isinstance(v, float) else ''}{c.dtype.replace('float', '').replace('int', 'i')}"


class _Printer:
    def __init__(self, show_types: bool, provenance: Mapping[Expr, Sequence[str]] | None = None):
        self.show_types = show_types
        self.provenance = provenance or {}
        self.names: dict[Expr, str] = {}
        """every node printed under a name (numbered locals and variables) -> that name."""
        self.counter = 0
        self.meta: dict[int, int] = {}
        self.var_names: dict[int, str] = {}
        self.used_names: set[str] = set()

    def var_name(self, v: Var) -> str:
        if id(v) not in self.var_names:
            base = v.name_hint or "v"
            name, k = base, 0
            while name in self.used_names:
                k += 1
                name = f"{base}_{k}"
            self.used_names.add(name)
            self.var_names[id(v)] = "%" + name
        return self.var_names[id(v)]

    def var_decl(self, v: Var) -> str:
        ty = v.type_annotation or (v.checked_type if v.type_inferred else None)
        return self.var_name(v) + (f": {ty}" if ty is not None else "")

    def comments(self, e: Expr) -> str:
        ty = f" /* ty={e.checked_type} */" if self.show_types and e.type_inferred else ""
        rules = self.provenance.get(e)
        return ty + (f" /* rules: {', '.join(rules)} */" if rules else "")

    def leaf(self, e: Expr) -> str | None:
        if isinstance(e, Var):
            return self.var_name(e)
        if isinstance(e, Op):
            return e.name
        if isinstance(e, Constant):
            inline = _scalar(e)
            if inline is not None:
                return inline
            k = self.meta.setdefault(id(e), len(self.meta))
            return f"meta[relay.Constant][{k}]"
        return None

    def rhs(self, e: Expr, names: dict[Expr, str], indent: str) -> str:
        ref = lambda x: names[x]  # noqa: E731
        if isinstance(e, Call):
            head = e.op.name if isinstance(e.op, Op) else ref(e.op)
            parts = [ref(a) for a in e.args]
            if isinstance(e.op, Op):
                defaults = e.op.attr_defaults()
                parts += [f"{k}={_value(v)}" for k, v in e.attrs.items() if defaults.get(k, object()) != v]
            else:
                parts += [f"{k}={_value(v)}" for k, v in e.attrs.items()]
            return f"{head}({', '.join(parts)})"
        if isinstance(e, Tuple):
            return "(" + ", ".join(ref(f) for f in e.fields) + ("," if len(e.fields) == 1 else "") + ")"
        if isinstance(e, TupleGetItem):
            return f"{ref(e.tuple_value)}.{e.index}"
        if isinstance(e, If):
            return f"if ({ref(e.cond)}) {{ {ref(e.true_branch)} }} else {{ {ref(e.false_branch)} }}"
        if isinstance(e, Let):
            return f"let {self.var_decl(e.var)} = {ref(e.value)}; {ref(e.body)}"
        if isinstance(e, Function):
            return self.function(e, "fn ", names, indent)
        raise TypeError(f"cannot print {type(e).__name__}")

    def block(self, root: Expr, outer: dict[Expr, str], indent: str) -> list[str]:
        """Lines computing `root` in a scope that already knows `outer`; the last line is its value."""
        names = dict(outer)
        lines: list[str] = []
        # inner functions' bodies are printed in their own blocks; nodes named outside are not repeated
        for node in post_order(root, _outside_functions, stop=names):
            leaf = self.leaf(node)
            if leaf is not None:
                names[node] = leaf
                if isinstance(node, Var):
                    self.names[node] = leaf
                continue
            text = self.rhs(node, names, indent)
            if node is root:
                lines.append(f"{indent}{text}{self.comments(node)}")
            else:
                name = f"%{self.counter}"
                self.counter += 1
                names[node] = self.names[node] = name
                lines.append(f"{indent}{name} = {text}{self.comments(node)};")
        if not lines:
            lines.append(indent + names[root])
        return lines

    def function(self, f: Function, head: str, outer: dict[Expr, str], indent: str) -> str:
        params = [self.var_decl(p) for p in f.params]
        params += [f"{k}={_value(v)}" for k, v in f.attrs.items()]
        ret = f.ret_type or (f.checked_type.ret_type if f.type_inferred else None)
        if len(params) > 4:  # long signatures (e.g. every weight of a model): one parameter per line
            inner = indent + "    "
            joined = "\n" + ",\n".join(inner + p for p in params) + "\n" + indent
        else:
            joined = ", ".join(params)
        sig = f"{head}({joined})" + (f" -> {ret}" if ret is not None else "")
        scope = dict(outer)
        scope.update({p: self.var_name(p) for p in f.params})
        self.names.update((p, scope[p]) for p in f.params)
        body = self.block(f.body, scope, indent + "  ")
        return sig + " {\n" + "\n".join(body) + "\n" + indent + "}"


def _outside_functions(e: Expr) -> tuple[Expr, ...]:
    return () if isinstance(e, Function) else children(e)


def _print(p: _Printer, obj: "Expr | IRModule") -> str:
    from .module import IRModule
    if isinstance(obj, IRModule):
        chunks = []
        for name, func in obj.functions.items():
            chunks.append(p.function(func, f"def @{name}", {}, ""))
        return "\n\n".join(chunks) + "\n"
    lines = [f"free_var {p.var_decl(v)};" for v in free_vars(obj)]
    if isinstance(obj, Function):
        lines.append(p.function(obj, "fn ", {}, ""))
    else:
        lines += p.block(obj, {}, "")
    return "\n".join(lines)


def astext(obj: "Expr | IRModule", show_types: bool = True,
           provenance: Mapping[Expr, Sequence[str]] | None = None) -> str:
    """The program as Relay-like text; with `provenance`, rule-made nodes name their rules (see the
    module docstring)."""
    return _print(_Printer(show_types, provenance), obj)


def node_names(obj: "Expr | IRModule") -> dict[Expr, str]:
    """Each node `astext(obj)` names -> its name there (`%3`, `%x`); the last value of each block
    (e.g. a function's result) is printed unnamed and is left out."""
    p = _Printer(show_types=False)
    _print(p, obj)
    return p.names
