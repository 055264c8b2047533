"""Test groups: `slow` marks the fuzz, scale, benchmark and notebook tests.

    python -m pytest -m "not slow"     # the quick group
    python -m pytest -m slow           # the rest; `python -m pytest` runs both
"""

from __future__ import annotations

from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
#: files (or folders) whose every test is slow, relative to tests/
SLOW = ("benchmarks", "test_notebooks.py", "test_readme.py", "eqsat/extract/test_extract_scale.py",
        "eqsat/soundness/test_soundness_property.py", "eqsat/test_determinism.py",
        "ir/dataflow_pattern/test_properties.py", "ir/test_structural_props.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(item.fspath).resolve().relative_to(_TESTS).as_posix()
        if any(relative == s or relative.startswith(s + "/") for s in SLOW):
            item.add_marker(pytest.mark.slow)
