"""`wbc_bench`: how fast is the controller on this machine, and where does the time go.

One run measures three things, so that their ratios are meaningful on a noisy machine
(the JSON keys are documented in docs/performance.md):

1. **Tick** (:mod:`.tick`): the core's per-tick cost, joint state in numpy -> torque out
   (no ROS), interleaved with the unavoidable Pinocchio floor, so that tick / floor does not
   depend on how loaded the machine is. The robots and controllers timed are the scenarios
   of :mod:`.scenarios`.
2. **DDS** (:mod:`.dds`): the controller node `wbc_controller` as a subprocess on loopback, fed
   `joint_states` at 1 kHz and 500 Hz; latency from the state's stamp to the receipt of its
   command, missed and late commands, and the node's CPU share. Skipped when `wbc_controller`
   is not installed.
3. **Conditioning** (:mod:`.conditioning_cost`): the cost of the exact κ₂(M) (eigvalsh) against
   the diagonal ratio and the scaled diagonal ratio (Shah & Saha 2013) for serial chains and the
   shipped robots, and the estimator's relative error along the rod-chain swing, as a table and a
   PNG plot.

The targets, tables and plot are in :mod:`.report`; the command line in :mod:`.cli`.

The core modules never import rclpy; this package does so only inside the DDS measurement, and
imports matplotlib only to draw the plot.
"""

from wbc_control.benchmark.cli import main

__all__ = ['main']
