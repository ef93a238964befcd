"""Decoding and validation of the robot-state inputs: joint states and base odometry."""
