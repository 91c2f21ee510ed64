"""Versioned catalog data files (``catalog.toml``, ``offerings.csv``, ``options.csv``, ``stock.csv``), read by :mod:`anchorgpu.catalog.loader`."""
