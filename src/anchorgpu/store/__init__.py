"""AnchorGPU store."""
