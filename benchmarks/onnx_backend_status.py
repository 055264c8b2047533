"""Run every case of ONNX's backend test data (see tests/ir/frontend/test_onnx_backend_data.py) and
print the `EXPECTED_FAILURES` dict those that fail today make, plus a summary by stage.

    python -m benchmarks.onnx_backend_status            # print the dict and the summary
    python -m benchmarks.onnx_backend_status --write    # also rewrite the dict in the test file
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import textwrap
import time

import onnx

from tests.ir.frontend import test_onnx_backend_data as walker


def status() -> tuple[dict[str, str], collections.Counter]:
    """The failing cases with their reasons, and how many cases ended at each stage."""
    failures: dict[str, str] = {}
    stages: collections.Counter = collections.Counter()
    for case in walker.case_dirs():
        reason = walker.left_out(onnx.load(os.path.join(walker.DATA, case, "model.onnx"), load_external_data=False))
        if reason is not None:
            stages[f"left out ({reason})"] += 1
            continue
        outcome = walker.check_case(case)
        stages[outcome.stage] += 1
        if not outcome.passed:
            failures[case] = f"{outcome.stage}: {outcome.detail}"
    return failures, stages


def as_source(failures: dict[str, str]) -> str:
    """The dict as Python source, each reason wrapped to fit 120 columns."""
    lines = []
    for case, reason in sorted(failures.items()):
        lines.append(f"    {case!r}:")
        lines.extend(f"        {part!r}" for part in textwrap.wrap(reason, 100, drop_whitespace=False))
        lines[-1] += ","
    return "EXPECTED_FAILURES: dict[str, str] = {\n" + "".join(line + "\n" for line in lines) + "}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite EXPECTED_FAILURES in the test file")
    args = parser.parse_args()
    start = time.perf_counter()
    failures, stages = status()
    source = as_source(failures)
    print(source)
    print(f"\n{sum(stages.values())} cases in {time.perf_counter() - start:.1f} s: "
          + ", ".join(f"{stage} {count}" for stage, count in sorted(stages.items())))
    if args.write:
        path = walker.__file__
        text = open(path).read()
        text = re.sub(r"EXPECTED_FAILURES: dict\[str, str\] = \{.*?\n\}", lambda _: source, text, flags=re.S)
        with open(path, "w") as file:
            file.write(text)


if __name__ == "__main__":
    main()
