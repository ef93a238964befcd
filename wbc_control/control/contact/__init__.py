"""Rigid contacts: constraint Jacobians, contact forces and their reports."""
