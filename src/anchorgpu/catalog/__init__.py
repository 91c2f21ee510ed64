"""AnchorGPU catalog."""
