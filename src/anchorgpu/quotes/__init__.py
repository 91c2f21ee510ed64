"""AnchorGPU quotes."""
