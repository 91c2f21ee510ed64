"""AnchorGPU architectures."""
