"""``torch.hub``: entrypoints of a ``hubconf.py`` (``list``, ``help``, ``load``), the hub's cache
directory (``get_dir``, ``set_dir``), and downloads (``download_url_to_file``,
``load_state_dict_from_url``).

jitgrad does no network access: ``load(dir, name, source="local")`` runs a local directory's
``hubconf.py``; a GitHub repo (``"owner/name[:ref]"``) is found only where torch caches it,
``<get_dir()>/owner_name_ref`` (the default ref: ``main``, else ``master``), with no download,
validation or trust prompt (the code is already on disk); ``list`` and ``help`` also take a
local directory. Downloads read ``file://`` URLs; any other URL raises a RuntimeError saying
so.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse
from urllib.request import urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_hub_dir: str | None = None


class _Faketqdm:
    """torch's progress "bar" without tqdm: the percentage written to stderr."""

    def __init__(self, total: int | None = None, disable: bool = False, **kwargs: Any) -> None:
        self.total = total
        self.disable = disable
        self.n = 0

    def update(self, n: int) -> None:
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def __enter__(self) -> _Faketqdm:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.disable:
            sys.stderr.write("\n")


tqdm = _Faketqdm


@contextlib.contextmanager
def _add_to_sys_path(path: str) -> Iterator[None]:
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(
        ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The hub's cache directory: ``set_dir``'s, else ``$TORCH_HOME/hub`` (``$TORCH_HOME``
    defaulting to ``$XDG_CACHE_HOME/torch``, that to ``~/.cache/torch``), as torch's."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Sets the hub's cache directory.

    Args:
        d: a local directory.
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def _repo_dir(github: str, force_reload: bool, verbose: bool) -> str:
    """The directory of ``github``: a local directory with a ``hubconf.py``, or the cached
    copy of a GitHub repo (no download: jitgrad does no network access)."""
    if os.path.isdir(github) and os.path.exists(os.path.join(github, MODULE_HUBCONF)):
        return github
    repo_info, ref = github.split(":") if ":" in github else (github, None)
    repo_owner, repo_name = repo_info.split("/")
    hub_dir = get_dir()
    for candidate in (ref,) if ref is not None else ("main", "master"):
        repo_dir = os.path.join(hub_dir, "_".join([repo_owner, repo_name,
                                                   candidate.replace("/", "_")]))
        if os.path.exists(repo_dir) and not force_reload:
            if verbose:
                sys.stderr.write(f"Using cache found in {repo_dir}\n")
            return repo_dir
    raise RuntimeError(
        f"jitgrad.hub cannot download {github!r}: jitgrad does no network access. Load a "
        f"local directory (source='local'), or put the repo in the hub's cache "
        f"({hub_dir}/{repo_owner}_{repo_name}_<ref>)")


def _hubconf(repo_dir: str) -> Any:
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _load_entry_from_hubconf(m: Any, model: Any) -> Callable:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    dependencies = getattr(m, VAR_DEPENDENCY, None)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(m, model, None) if model in dir(m) else None
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check", verbose: bool = True) -> builtins.list[str]:
    """The entrypoints (public callables) of a repo's ``hubconf.py``.

    Args:
        github: ``"owner/name[:ref]"`` (found in the hub's cache) or a local directory.
        force_reload: refuse the cache (an error: nothing can be downloaded).
        skip_validation: accepted (nothing is validated: no network).
        trust_repo: accepted (the code is already on disk).
        verbose: say when a cached repo is used.

    Returns:
        The entrypoints' names.
    """
    hub_module = _hubconf(_repo_dir(github, force_reload, verbose))
    return [f for f in dir(hub_module)
            if callable(getattr(hub_module, f)) and not f.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo: Any = "check") -> str | None:
    """The docstring of entrypoint ``model`` of a repo's ``hubconf.py`` (see ``list``)."""
    hub_module = _hubconf(_repo_dir(github, force_reload, True))
    return _load_entry_from_hubconf(hub_module, model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = "check", force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """Calls entrypoint ``model`` of a ``hubconf.py`` with ``*args, **kwargs``.

    Args:
        repo_or_dir: with ``source="local"``, a directory with a ``hubconf.py``; with
            ``source="github"``, ``"owner/name[:ref]"``, found in the hub's cache.
        model: the entrypoint's name.
        *args: its positional arguments.
        source: ``"github"`` or ``"local"``.
        trust_repo: accepted (the code is already on disk).
        force_reload: refuse the cache (an error: nothing can be downloaded).
        verbose: say when a cached repo is used.
        skip_validation: accepted (no network).
        **kwargs: its keyword arguments.

    Returns:
        What the entrypoint returns.
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _repo_dir(repo_or_dir, force_reload, verbose)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir: str, model: str, *args: Any, **kwargs: Any) -> Any:
    with _add_to_sys_path(hubconf_dir):
        hub_module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(hub_module, model)
        return entry(*args, **kwargs)


def _check_url(url: str) -> None:
    scheme = urlparse(url).scheme
    if scheme != "file":
        raise RuntimeError(
            f"jitgrad.hub cannot download {url!r}: jitgrad does no network access, so only "
            "file:// URLs can be read. Download the file yourself and pass its file:// URL "
            "(or load it with jitgrad.load)")


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Copies the object at ``url`` (a ``file://`` URL) to ``dst``, through a temporary file
    moved into place once complete.

    Args:
        url: the URL.
        dst: the destination path.
        hash_prefix: if given, the SHA256 of the content must start with it.
        progress: show the progress on stderr.
    """
    _check_url(url)
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(tmp_dst, "w+b")  # noqa: SIM115
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(url) as u:
            length = u.info().get_all("Content-Length")
            file_size = int(length[0]) if length else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=file_size, disable=not progress) as pbar:
                while True:
                    buffer = u.read(READ_DATA_CHUNK)
                    if len(buffer) == 0:
                        break
                    f.write(buffer)
                    if sha256 is not None:
                        sha256.update(buffer)
                    pbar.update(len(buffer))
            f.close()
            if sha256 is not None and hash_prefix is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(
                        f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip of one file that torch < 1.6 saved (not jitgrad's archive of an object without
    tensors: its one file is the manifest)."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir() \
            and infolist[0].filename != "manifest.json"
    return False


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """Loads the object saved at ``url`` (a ``file://`` URL), copied first into ``model_dir``
    (default ``<get_dir()>/checkpoints``) unless already there.

    Args:
        url: the URL.
        model_dir: where the copy goes.
        map_location: as ``jitgrad.load``'s.
        progress: show the copy's progress on stderr.
        check_hash: the file name is ``name-<sha256 prefix>.ext``: check the content's hash.
        file_name: the copy's name (default: the URL's).
        weights_only: as ``jitgrad.load``'s.

    Returns:
        The loaded object (a state dict).
    """
    from .serialization import load as _load

    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        _check_url(url)
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in "
                      "favor of default zipfile format introduced in 1.6. Please redo "
                      "torch.save() to save it in the new zipfile format.", FutureWarning,
                      stacklevel=2)
        with zipfile.ZipFile(cached_file) as f:
            member = f.infolist()[0]
            target = os.path.realpath(os.path.join(model_dir, member.filename))
            if not target.startswith(os.path.realpath(model_dir) + os.sep):
                raise ValueError(f"Archive entry has absolute path: {member.filename}")
            f.extract(member, model_dir)
        cached_file = target
    return _load(cached_file, map_location=map_location, weights_only=weights_only)
