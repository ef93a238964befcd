"""Changes over time: task fades and contact transitions."""
