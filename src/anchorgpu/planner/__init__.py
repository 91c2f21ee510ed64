"""AnchorGPU planner."""
