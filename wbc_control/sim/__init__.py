"""The embedded MuJoCo simulator: the only package that imports mujoco."""
