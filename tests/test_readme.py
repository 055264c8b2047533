"""The README's samples run as shown and print what it says (numbers aside), and its Python blocks run."""

from __future__ import annotations

import pytest

from benchmarks.readme_samples import README, blocks, masked, run_python, run_sample, scratch_dir

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

BLOCKS = blocks(README.read_text())
SAMPLES = [b for b in BLOCKS if b.is_sample]
PYTHON = [b for b in BLOCKS if b.lang == "python"]


@pytest.fixture(scope="module")
def scratch():
    with scratch_dir() as path:
        yield path


def test_the_readme_has_samples_and_python_blocks():
    assert len(SAMPLES) >= 8 and len(PYTHON) >= 3


@pytest.mark.parametrize("block", SAMPLES, ids=lambda b: b.text.split("\n", 1)[0][:60])
def test_a_sample_prints_what_the_readme_shows(block, scratch):
    assert masked(run_sample(block.text, scratch)) == masked(block.text), \
        "regenerate with: python -m benchmarks.readme_samples"


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.text.split("\n", 1)[0][:60])
def test_a_python_block_runs_as_pasted(block, scratch):
    run_python(block.text, scratch)


def test_a_batch_rows_speed_verdict_is_timed_so_not_compared_but_the_rest_is():
    row = "gpt2_dynamo_sdpa   ok   saturated   1.21e+04   9130  1.33x {}   1.9"
    verdicts = ["ours", "ours without nn.masked_attention", "ours without nn.masked_attention, nn.rms_norm", "input"]
    assert len({tuple(masked(row.format(v))) for v in verdicts}) == 1
    assert masked(row.format("ours")) != masked(row.replace(" ok ", " failed ").format("ours"))
