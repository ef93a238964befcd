"""Conditioning of the joint-space inertia matrix: the exact and cheap estimators."""
