"""wbc_demo: the controller, the simulator and the diagnostics node on a moving target."""
