"""Fixtures of the core tests."""

import pytest

from wbc_control.control.hierarchy import stack_problem
from wbc_control.control.hierarchy.level_kernel import weak_stiffness


@pytest.fixture
def weak_stiffness_calls(monkeypatch) -> list[tuple[float, float]]:
    """(squared_speed, rate_share) of every `weak_stiffness` call the stack makes, in order."""
    calls = []

    def recorded(squared_speed: float, rate_share: float = 0.0) -> float:
        calls.append((squared_speed, rate_share))
        return weak_stiffness(squared_speed, rate_share)

    monkeypatch.setattr(stack_problem, 'weak_stiffness', recorded)
    return calls
