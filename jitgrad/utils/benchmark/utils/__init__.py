"""The modules of ``jitgrad.utils.benchmark`` (laid out as torch's)."""
