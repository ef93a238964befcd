"""Keep the CPUs out of deep idle states while a node runs: a PM QoS CPU latency request.

Between two joint states at 1 kHz the controller's CPU is idle for most of a millisecond. An
idle CPU halts (on a virtual machine the halt also leaves the guest), and the next state then
waits for it to wake (docs/performance.md has the figures). Linux's PM QoS interface bounds how
long a CPU may take to wake: a process that opens `/dev/cpu_dma_latency` and writes a latency
in µs holds that bound for every CPU until it closes the file; at 0 the idle loop polls instead
of halting, as real-time guides for robot computers recommend and `cyclictest` does by default.
The price is power: idle CPUs stay busy polling while the request is held. Writing the file
needs root or write access given to the controller's user (a udev rule,
docs/on_a_real_robot.md).
"""

import os
from pathlib import Path
import struct

#: The kernel's PM QoS CPU latency device (Documentation/power/pm_qos_interface.rst).
DEVICE = Path('/dev/cpu_dma_latency')


class CpuLatencyUnavailable(OSError):
    """The latency request could not be made (no such device, or no permission)."""


class CpuLatencyRequest:
    """Hold CPU wake-up latency at or below `microseconds` until :meth:`release`.

    Raises:
        CpuLatencyUnavailable: the device cannot be opened for writing or refuses the value.
        ValueError: a negative latency.
    """

    def __init__(self, microseconds: int, device: Path = DEVICE) -> None:
        if microseconds < 0:
            raise ValueError(f'a CPU latency must be >= 0 µs, got {microseconds}')
        self.microseconds = int(microseconds)
        try:
            self._descriptor: int | None = os.open(device, os.O_WRONLY)
        except OSError as error:
            raise CpuLatencyUnavailable(
                f'cannot open {device} for writing: {error.strerror}'
            ) from error
        try:
            os.write(self._descriptor, struct.pack('i', self.microseconds))
        except OSError as error:
            self.release()
            raise CpuLatencyUnavailable(
                f'{device} refused {microseconds} µs: {error.strerror}'
            ) from error

    @property
    def held(self) -> bool:
        """Whether the request is still in force."""
        return self._descriptor is not None

    def release(self) -> None:
        """Drop the request (the kernel drops it too when the process exits)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> 'CpuLatencyRequest':
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def current_latency_us(device: Path = DEVICE) -> int:
    """The bound in force now, the tightest of all requests held (2e9 µs: none)."""
    descriptor = os.open(device, os.O_RDONLY)
    try:
        return struct.unpack('i', os.read(descriptor, 4))[0]
    finally:
        os.close(descriptor)
