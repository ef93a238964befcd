"""The control law: priority recursion, task inertia, contacts and constrained dynamics, limits."""
