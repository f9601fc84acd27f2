"""The package's version: ``jitgrad.__version__``, and part of the kernel cache's key."""

__version__ = "0.1.0"
