"""What the controller shows in RViz, as plain data: a snapshot of a tick and its markers."""
