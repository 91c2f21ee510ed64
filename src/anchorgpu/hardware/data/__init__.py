"""Versioned GPU data files (``gpus.toml``, ``sources.toml``), read by :mod:`anchorgpu.hardware.loader`."""
