"""AnchorGPU web."""
