"""The priority levels as hierarchical least squares: the cascade, generic ranks, level reports."""
