"""AnchorGPU allocations."""
