"""What every level keeps: joint-limit bounds, torque limits, friction pyramids, soles."""
