"""AnchorGPU: will this ML workload fit, on which GPUs, how fast, at what cost — then book it once."""

__version__ = "0.1.0"
