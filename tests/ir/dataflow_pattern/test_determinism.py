"""Matching, partitioning and rewriting give the same results in every process, whatever the hash seed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import ir
    from ir import relay
    from ir.dataflow_pattern import DFPatternCallback, find_matches, is_op, rewrite, wildcard
    from ir.visitor import post_order
    from tests.ir.dataflow_pattern.fusion_patterns import fusion_patterns
    from tests.ir.dataflow_pattern.graphs import resnet_like

    _, graph = resnet_like(blocks=2)
    graph = ir.infer_type(graph)
    index = {node: i for i, node in enumerate(post_order(graph))}
    for name, pattern in fusion_patterns().items():
        print(name, [index[n] for n in find_matches(pattern, graph) if n in index])
        print(pattern.partition(graph, {"Composite": name}))

    class Unfuse(DFPatternCallback):
        def __init__(self):
            super().__init__(require_type=True)
            self.pattern = is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))

        def callback(self, pre, post, node_map):
            return relay.maximum(post.args[0], relay.const(0.0))

    print(rewrite(Unfuse(), graph))
""")


def run_with_seed(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_outputs_do_not_depend_on_the_hash_seed():
    outputs = [run_with_seed(seed) for seed in ("0", "1", "4242")]
    assert "PartitionedFromPattern" in outputs[0] and "maximum" in outputs[0]
    assert outputs[0] == outputs[1] == outputs[2]
