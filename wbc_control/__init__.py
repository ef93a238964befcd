"""wbc_control: whole-body torque control with strictly prioritized operational-space tasks.

The core (model, tasks, control, conditioning, inputs, config) depends on numpy, scipy and
Pinocchio only; it never imports rclpy.
"""
