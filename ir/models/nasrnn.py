"""NasRNN: the recurrent cell found by neural architecture search (Zoph & Le, 2017), unrolled.

The graph follows the benchmark of TASO (jiazhihao/TASO, examples/nasrnn.py) and TENSAT
(uwplse/tensat, src/nasrnn.rs): hidden size 512, 5 time steps, batch 1, one input `[batch,
hidden]` per step and a learned initial state `[1, hidden]`. Each step computes eight
`dense(x, W_i) + dense(h, U_i)` projections of its input `x` and the previous state `h` (all 16
weights `[hidden, hidden]`, no bias; fresh weights for every step, as in those benchmarks, rather
than weights shared across steps), and combines them through relu/sigmoid/tanh, adds and
multiplies into the next state. Sixteen matmuls that share an operand per step are what rewrites
like "merge dense layers with a common input" feed on.
"""

from __future__ import annotations

import math

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, normal, require_positive
from .layers import dense

__all__ = ["nasrnn"]


def _cell(net: ModelBuilder, x: Expr, h: Expr, name: str, hidden: int) -> Expr:
    """One NasRNN step: the next state from input `x` and state `h`."""
    init = normal(1.0 / math.sqrt(2 * hidden))  # the two summed projections then have unit variance
    t = [dense(net, x, f"{name}_w{i}", hidden, hidden, bias=False, init=init)
         + dense(net, h, f"{name}_u{i}", hidden, hidden, bias=False, init=init) for i in range(8)]
    m0 = relay.nn.relu(t[0]) + relay.sigmoid(t[3])
    m1 = relay.sigmoid(t[1]) + relay.tanh(t[2])
    m2 = relay.sigmoid(t[4]) * relay.tanh(t[5])
    m3 = relay.sigmoid(t[6]) * relay.nn.relu(t[7])
    m4 = relay.sigmoid(m1) + relay.tanh(m2)
    m5 = relay.tanh(m0) * relay.tanh(m3)
    return relay.tanh(relay.tanh(m4) * relay.tanh(m5))


def nasrnn(*, batch: int = 1, seq_len: int = 5, hidden: int = 512, seed: int = 0,
           weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """NasRNN unrolled over `seq_len` steps (one cell per step): 20,972,032 parameters at the defaults.

    Inputs `x0 ... x{seq_len-1}`, each `[batch, hidden]`; the output is the final state
    `[batch, hidden]`. Parameters: 16 `hidden x hidden` matrices per step plus the initial state.
    """
    require_positive("nasrnn", batch=batch, seq_len=seq_len, hidden=hidden)
    net = ModelBuilder("nasrnn", seed=seed, weights=weights)
    xs = [relay.var(f"x{t}", shape=(batch, hidden)) for t in range(seq_len)]
    state: Expr = net.weight("initial_state", (1, hidden), normal(0.5))
    for t, x in enumerate(xs):
        state = _cell(net, x, state, f"step{t}", hidden)
    return net.finish(xs, state)
