"""The egglog side of the e-graph: the only module that imports egglog.

Everything goes through egglog's low-level bindings (see EGGLOG.md). E-nodes are added in
batches as plain rows: Python writes one tab-separated file per constructor (the new node's
handle, its payload, its children's handles) and egglog's `input` command reads it into a
load relation; one run of the load rules then makes each node and unions it with its handle
`H(k)`, so that Python can name its class later, and a second run empties the load relations.
This costs a few microseconds per node, where a rule with one action per node costs tens
(egglog compiles every action) and grows superlinearly with the batch.

Queries become rules that write their matches into a relation, which Python reads from a
frozen copy of the database and then clears. Rewrites themselves are applied by Python, so
egglog never creates a node on its own: every e-class owns at least one handle.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from egglog import bindings as B

from .query import Atom, QVar, Query, is_plain_literal
from .terms import MAX_CALL_ARITY, Handle, Kind, Term

__all__ = ["Backend", "Frozen", "ctor_name", "TERM_CTORS", "is_row_safe"]

_SP = B.RustSpan("eqsat", 0, 0)
_HANDLE = "H"
_FIXED = {
    Kind.VAR: ("Var", ["String"]),
    Kind.CONST: ("Const", ["String"]),
    Kind.FUNC: ("Fn", ["String"]),
    Kind.APPLY: ("Apply", ["T", "T"]),
    Kind.TUPLE: ("Tuple", ["T"]),
    Kind.NIL: ("Nil", []),
    Kind.CONS: ("Cons", ["T", "T"]),
    Kind.GETITEM: ("GetItem", ["T", "i64"]),
    Kind.IF: ("If", ["T", "T", "T"]),
    Kind.LET: ("Let", ["T", "T", "T"]),
}
TERM_CTORS: dict[str, tuple[Kind, list[str]]] = {name: (kind, sorts) for kind, (name, sorts) in _FIXED.items()}
for _n in range(MAX_CALL_ARITY + 1):
    TERM_CTORS[f"Call{_n}"] = (Kind.CALL, ["String", "String"] + ["T"] * _n)
_PAYLOAD_SORTS = {"String", "i64"}
_LOAD, _CLEAR, _UNION = "load", "load_clear", "L_union"
_DECODE_CHUNK = 4096  # match rows decoded between two checks of `stop`


def is_row_safe(text: str) -> bool:
    """Whether `text` survives a trip through a load file (no tab or line break, no outer blanks)."""
    return text == text.strip() and not any(c in text for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def ctor_name(kind: Kind, n_children: int) -> str:
    """The egglog constructor of an e-node of `kind` with `n_children` class children."""
    if kind is Kind.CALL:
        return f"Call{n_children}"
    return _FIXED[kind][0]


def _declarations() -> str:
    """The term sort, one constructor per e-node shape, handles, and the load relations and rules."""
    lines = ["(datatype T)", f"(constructor {_HANDLE} (i64) T :unextractable)", f"(ruleset {_LOAD})",
             f"(ruleset {_CLEAR})"]
    for name, (_, sorts) in TERM_CTORS.items():
        lines.append(f"(constructor {name} ({' '.join(sorts)}) T)")
        columns = ["h"] + [f"a{i}" for i in range(len(sorts))]
        row = f"(L_{name} {' '.join(columns)})"
        args = "".join(f" ({_HANDLE} a{i})" if sort == "T" else f" a{i}" for i, sort in enumerate(sorts))
        lines.append(f"(relation L_{name} (i64{''.join(' i64' if s == 'T' else ' ' + s for s in sorts)}))")
        lines.append(f"(rule ({row}) ((union ({_HANDLE} h) ({name}{args}))) :ruleset {_LOAD})")
        lines.append(f"(rule ({row}) ((delete {row})) :ruleset {_CLEAR})")
    lines.append(f"(relation {_UNION} (i64 i64))")
    lines.append(f"(rule (({_UNION} a b)) ((union ({_HANDLE} a) ({_HANDLE} b))) :ruleset {_LOAD})")
    lines.append(f"(rule (({_UNION} a b)) ((delete ({_UNION} a b))) :ruleset {_CLEAR})")
    return "\n".join(lines)


def _row(handle: Handle, term: Term) -> str:
    """The load-file line of `term` under `handle`: columns in the constructor's argument order."""
    if term.kind is Kind.GETITEM:  # the index comes after the tuple
        cells = (handle, term.children[0], term.payload[0])
    else:
        cells = (handle, *term.payload, *term.children)
    return "\t".join(map(str, cells))


def _render_arg(arg: QVar | str | int) -> str:
    if isinstance(arg, QVar):
        return arg.name
    if isinstance(arg, int):
        return str(arg)
    if not is_plain_literal(arg):
        raise ValueError(f"string literal {arg!r} cannot appear in a query")
    return f'"{arg}"'


def _render_atom(atom: Atom) -> str:
    payload = [_render_arg(p) for p in atom.payload]
    children = [c.name for c in atom.children]
    if atom.kind is Kind.GETITEM:
        args = children + payload
    else:
        args = payload + children
    call = ctor_name(atom.kind, len(atom.children))
    return f"(= {atom.out.name} ({call}{''.join(' ' + a for a in args)}))"


@dataclass(frozen=True)
class Frozen:
    """One read of the database: canonical handle per class value, term rows and match rows."""

    class_of: Mapping[object, Handle]
    """egglog class value -> smallest handle in that class (a stable, deterministic class id)."""
    handles: Mapping[Handle, Handle]
    """every handle -> the smallest handle of its class."""
    terms: tuple[Term, ...]
    """every e-node once, children given as canonical handles; `term_class[i]` is its class."""
    term_class: tuple[Handle, ...]
    matches: Mapping[str, list[tuple]]
    """query name -> decoded rows (classes as canonical handles, strings, ints)."""
    truncated: bool = False
    """`stop` said to stop before every match row was decoded: `matches` holds only a prefix."""


class Backend:
    """An egglog e-graph driven through the low-level bindings."""

    def __init__(self) -> None:
        self._eg = B.EGraph()
        self._eg.run_program(*self._eg.parse_program(_declarations()))
        self._queries: dict[str, Query] = {}
        self._rulesets: dict[str, str] = {}
        self._strings: dict[object, str] = {}

    # -- adding ------------------------------------------------------------------------------
    def insert(self, terms: Sequence[tuple[Handle, Term]], unions: Sequence[tuple[Handle, Handle]]) -> bool:
        """Add e-nodes (each under its new handle) and merge classes in one step; True if anything changed.

        String payloads must be `is_row_safe`.
        """
        if not terms and not unions:
            return False
        rows: dict[str, list[str]] = {}
        for h, t in terms:
            rows.setdefault(f"L_{ctor_name(t.kind, len(t.children))}", []).append(_row(h, t))
        if unions:
            rows[_UNION] = [f"{a}\t{b}" for a, b in unions]
        with tempfile.TemporaryDirectory(prefix="eqsat-load-") as folder:
            commands = []
            for relation, lines in rows.items():
                path = os.path.join(folder, relation)
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                commands.append(B.Input(_SP, relation, path))
            out = self._eg.run_program(*commands, B.RunSchedule(B.Run(_SP, B.RunConfig(_LOAD, None))),
                                       B.RunSchedule(B.Run(_SP, B.RunConfig(_CLEAR, None))))
        return bool(out[-2].report.updated)

    # -- queries -----------------------------------------------------------------------------
    def add_rule_queries(self, rule: str, queries: Mapping[str, Query]) -> None:
        """Register the queries of one rule (as one ruleset, so the rule can be banned as a unit)."""
        ruleset = f"rs_{len(self._rulesets)}"
        program = [f"(ruleset {ruleset})"]
        for qname, query in queries.items():
            if qname in self._queries:
                raise ValueError(f"query {qname!r} is already registered")
            rel = f"M_{qname}"
            sorts = " ".join(c.sort for c in query.columns)
            cols = " ".join(c.name for c in query.columns)
            body = " ".join(_render_atom(a) for a in query.atoms)
            program.append(f"(relation {rel} ({sorts}))")
            program.append(f'(rule ({body}) (({rel} {cols})) :ruleset {ruleset} :name "{qname}")')
            program.append(f"(rule (({rel} {cols})) ((delete ({rel} {cols}))) :ruleset clear_{ruleset})")
            self._queries[qname] = query
        program.insert(1, f"(ruleset clear_{ruleset})")
        self._eg.run_program(*self._eg.parse_program("\n".join(program)))
        self._rulesets[rule] = ruleset

    def search(self, rules: Iterable[str], stop: Callable[[], bool] | None = None) -> bool:
        """Run the queries of `rules` once over the current database (their matches are stored).

        egglog cannot interrupt one rule's search, so the rules run one call each and `stop` is
        asked before every rule but the first; True when all ran, False when `stop` ended the search.
        """
        for i, r in enumerate(rules):
            if i and stop is not None and stop():
                return False
            self._eg.run_program(B.RunSchedule(B.Run(_SP, B.RunConfig(self._rulesets[r], None))))
        return True

    def clear_matches(self, rules: Iterable[str]) -> None:
        runs = [B.Run(_SP, B.RunConfig("clear_" + self._rulesets[r], None)) for r in rules]
        if runs:
            self._eg.run_program(B.RunSchedule(B.Sequence(_SP, runs)))

    # -- reading -----------------------------------------------------------------------------
    def enode_count(self) -> int:
        """Number of e-nodes (term rows; handles and match relations excluded); about 0.1 ms."""
        return sum(n for name, n in self._sizes() if name in TERM_CTORS)

    def match_count(self, queries: Iterable[str]) -> int:
        """Number of match rows the last search stored for `queries`."""
        relations = {f"M_{q}" for q in queries}
        return sum(n for name, n in self._sizes() if name in relations)

    def _sizes(self) -> list[tuple[str, int]]:
        return self._eg.run_program(B.PrintSize(_SP, None))[0].sizes

    def _string(self, value) -> str:
        s = self._strings.get(value)
        if s is None:
            s = self._strings[value] = self._eg.value_to_string(value)
        return s

    def freeze(self, read_terms: bool, queries: Iterable[str] = (), stop: Callable[[], bool] | None = None) -> Frozen:
        """Read the database once: class ids, optionally all e-nodes, and the rows of `queries`.

        Decoding match rows is the slow part of a read (about 3 µs a row); `stop` is asked every
        few thousand rows and, when it returns True, decoding ends early (`Frozen.truncated`).
        """
        eg = self._eg
        functions = eg.freeze().functions  # each `.functions` read converts the whole database: read it once
        to_int = eg.value_to_i64
        class_of: dict[object, Handle] = {}
        handles: dict[Handle, Handle] = {}
        pairs = [(to_int(r.inputs[0]), r.output) for r in functions[_HANDLE].rows]
        for h, out in pairs:
            known = class_of.get(out)
            if known is None or h < known:
                class_of[out] = h
        for h, out in pairs:
            handles[h] = class_of[out]
        terms: list[Term] = []
        term_class: list[Handle] = []
        if read_terms:
            for name, (kind, sorts) in TERM_CTORS.items():
                n_payload = sum(1 for s in sorts if s in _PAYLOAD_SORTS)
                for row in functions[name].rows:
                    ins = row.inputs
                    if kind is Kind.GETITEM:
                        payload, kids = (to_int(ins[1]),), (class_of[ins[0]],)
                    else:
                        payload = tuple(self._string(v) for v in ins[:n_payload])
                        kids = tuple(class_of[v] for v in ins[n_payload:])
                    terms.append(Term(kind, payload, kids))
                    term_class.append(class_of[row.output])
        matches: dict[str, list[tuple]] = {}
        truncated = False
        for qname in queries:
            decoded = matches[qname] = []
            if truncated:  # even reading `.rows` converts every row
                continue
            decoders = [self._decoder(c.sort, class_of) for c in self._queries[qname].columns]
            rows = functions[f"M_{qname}"].rows
            for start in range(0, len(rows), _DECODE_CHUNK):
                if truncated or (stop is not None and stop()):
                    truncated = True
                    break
                decoded.extend(tuple(d(v) for d, v in zip(decoders, row.inputs))
                               for row in rows[start:start + _DECODE_CHUNK])
        return Frozen(class_of, handles, tuple(terms), tuple(term_class), matches, truncated)

    def _decoder(self, sort: str, class_of: Mapping[object, Handle]):
        if sort == "T":
            return class_of.__getitem__
        if sort == "String":
            return self._string
        return self._eg.value_to_i64
