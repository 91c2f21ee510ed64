"""AnchorGPU hardware."""
