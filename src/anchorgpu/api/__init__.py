"""AnchorGPU api."""
