"""Robot model (URDF to Pinocchio, joint and frame maps) and the per-tick robot state."""
