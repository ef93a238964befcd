"""Configuration: parameter values to validated controller settings and task specifications."""
