"""The engines: which one the command line gets, and a task that raises coming back as `TaskLost`."""

from __future__ import annotations

import math

import pytest

from eqsat.fleet import ProcessPool, RayCluster, TaskLost, choose_engine, ray_available


def test_a_task_that_raises_comes_back_as_task_lost():
    with ProcessPool(2) as pool:
        numbers = {pool.submit(math.sqrt, 4.0): "good", pool.submit(math.sqrt, -1.0): "bad"}
        results = {}
        while pool.running:
            number, result = pool.next_done()
            results[numbers[number]] = result
    assert results["good"] == 2.0
    assert results["bad"] == TaskLost("ValueError: math domain error")


def test_choose_engine_follows_the_command_line(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert isinstance(choose_engine(workers=3), ProcessPool) and choose_engine(workers=3).workers == 3
    assert isinstance(choose_engine(), RayCluster if ray_available() else ProcessPool)
    with pytest.raises(ValueError, match="not both"):
        choose_engine(workers=2, address="ray://head:10001")
    with pytest.raises(ValueError, match="workers must be >= 1"):
        ProcessPool(0)


def test_ray_address_comes_from_the_environment(monkeypatch):
    if not ray_available():
        pytest.skip("Ray is not installed")
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    engine = choose_engine()
    assert isinstance(engine, RayCluster) and engine.address == "ray://head:10001"
