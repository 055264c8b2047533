"""E-node shapes shared by lowering, rules and the e-graph view (plain Python data).

Every IR node becomes one e-node of a single egglog sort. `Term` is an e-node as Python sees it:
its kind, a payload of primitive values, and the handles of its child e-classes.

| kind      | IR node                        | payload               | children                |
|-----------|--------------------------------|-----------------------|-------------------------|
| `var`     | `Var`                          | unique name           | -                       |
| `const`   | `Constant` (hash-consed)       | content digest        | -                       |
| `func`    | inner `Function` (atomic)      | structural digest     | -                       |
| `call`    | `Call` of an `Op`              | op name, attrs key    | arguments               |
| `apply`   | `Call` of a function value     | -                     | callee, argument list   |
| `tuple`   | `Tuple`                        | -                     | field list              |
| `nil`/`cons` | argument and field lists    | -                     | head, tail (cons)       |
| `getitem` | `TupleGetItem`                 | index                 | tuple                   |
| `if`      | `If`                           | -                     | cond, then, else        |
| `let`     | `Let`                          | -                     | var, value, body        |

Inner functions (e.g. the composites that partitioning makes) are atomic: rules never look
inside them, and the function object comes back unchanged when the program is lifted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Kind", "Term", "Handle", "MAX_CALL_ARITY"]

Handle = int
"""A Python-side name for an e-class: every e-node Python adds gets one; merged classes share them."""

MAX_CALL_ARITY = 8
"""Op calls are fixed-arity e-nodes `Call0` ... `Call8`; no registered op takes more inputs."""


class Kind(str, enum.Enum):
    VAR = "var"
    CONST = "const"
    FUNC = "func"
    CALL = "call"
    APPLY = "apply"
    TUPLE = "tuple"
    NIL = "nil"
    CONS = "cons"
    GETITEM = "getitem"
    IF = "if"
    LET = "let"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Term:
    """One e-node: `kind`, primitive `payload` (see the module table) and child handles."""

    kind: Kind
    payload: tuple = ()
    children: tuple[Handle, ...] = ()
