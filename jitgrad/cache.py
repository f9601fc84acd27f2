"""``python -m jitgrad.cache info|clear``: inspect or empty the persistent kernel cache.

``info`` prints the directory, the number of kernel modules, the bytes on disk (modules and
Numba's compiled code) and the hit rate the processes that used the cache recorded (kernels
loaded from it against kernels compiled) and how many of the loads skipped Numba's context
refresh (``kernel_cache.load_overload``). ``clear`` deletes the kernels and the statistics.
The directory is ``JITGRAD_CACHE_DIR``, else the user's cache directory (see
``jitgrad.jit.cache_dir()``).
"""

from __future__ import annotations

import argparse
import sys

from .backends.kernel_cache import cache_dir, clear, info

__all__ = ["cache_dir", "clear", "info", "main"]


def main(argv: list[str] | None = None) -> int:
    """The command line: ``info`` (the default) or ``clear``."""
    parser = argparse.ArgumentParser(prog="python -m jitgrad.cache",
                                     description="jitgrad's persistent kernel cache")
    parser.add_argument("command", nargs="?", default="info", choices=("info", "clear"))
    ns = parser.parse_args(argv)
    if ns.command == "clear":
        freed = clear()
        print(f"cleared {cache_dir()} ({freed} bytes)")
        return 0
    stats = info()
    rate = "n/a" if stats["hit_rate"] is None else f"{100 * stats['hit_rate']:.1f}%"
    print(f"directory: {stats['directory']}")
    print(f"entries:   {stats['entries']}")
    print(f"bytes:     {stats['bytes']}")
    print(f"hit rate:  {rate} ({stats['loaded']} kernels loaded, {stats['compiled']} compiled)")
    print(f"fast:      {stats['fast']} of the loads skipped Numba's context refresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
