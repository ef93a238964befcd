"""wbc_control: whole-body torque control with strictly prioritized operational-space tasks.

The core (everything in this package except `wbc_control.nodes`) depends on numpy, scipy and
Pinocchio only; it never imports rclpy.
"""
