"""AnchorGPU glossary."""
