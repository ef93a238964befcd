"""The PM QoS CPU latency request (`wbc_control.cpu_latency`) on this machine's kernel."""

import os
from pathlib import Path

import pytest

from wbc_control.cpu_latency import (
    DEVICE,
    CpuLatencyRequest,
    CpuLatencyUnavailable,
    current_latency_us,
)

writable = pytest.mark.skipif(
    not (DEVICE.exists() and os.access(DEVICE, os.W_OK)),
    reason=f'{DEVICE} is not writable by this user',
)


@writable
def test_the_bound_holds_while_the_request_is_open_and_goes_with_it() -> None:
    before = current_latency_us()
    with CpuLatencyRequest(0) as request:
        assert request.held
        assert current_latency_us() == 0  # the tightest request in force: ours
    assert not request.held
    assert current_latency_us() == before
    request.release()  # twice is harmless


def test_a_device_that_cannot_be_written_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(CpuLatencyUnavailable, match=f'cannot open {tmp_path} for writing'):
        CpuLatencyRequest(0, tmp_path)  # a directory
    with pytest.raises(CpuLatencyUnavailable, match='No such file'):
        CpuLatencyRequest(0, tmp_path / 'absent')


def test_a_negative_latency_is_refused() -> None:
    with pytest.raises(ValueError, match='>= 0'):
        CpuLatencyRequest(-1)
