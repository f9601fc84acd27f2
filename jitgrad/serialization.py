"""``jitgrad.save`` / ``jitgrad.load``: tensors, state_dicts and optimizer states in a zip file.

The format (version 1) is a ZIP archive (uncompressed) holding:

* ``manifest.json``: ``{"format": "jitgrad", "version": 1, "root": <value>}``, where a value
  is JSON (``null``, booleans, strings, integers and finite floats as themselves) or an object
  tagged by its one key: ``{"tensor": k}`` (entry ``tensors/k.npy``, with ``"requires_grad"``
  and ``"parameter"`` flags beside it), ``{"float": "inf" | "-inf" | "nan"}``,
  ``{"dict": [[key, value], ...]}`` (keys of any supported type, order kept),
  ``{"ordered_dict": [[key, value], ...]}`` (with ``"attributes"``, a dict, beside it when the
  dict has some: a ``state_dict``'s ``_metadata``), ``{"list": [...]}``, ``{"tuple": [...]}``,
  ``{"size": [...]}``, ``{"dtype": "float32"}``, ``{"device": "cpu"}``, ``{"complex": [re,
  im]}``, ``{"bytes": "<hex>"}``, ``{"set": [...]}``, or ``{"pickle": k}`` (entry
  ``pickles/k.pkl``, written only for objects of other types: NumPy scalars too, as torch
  pickles them, so a ``weights_only`` load refuses them as torch's does).
* ``tensors/<k>.npy``: each tensor's data in NumPy's ``.npy`` format (read without pickle:
  ``np.load(..., allow_pickle=False)``). A tensor that appears several times is stored once
  and loads as one tensor; views are saved as their own data (sharing with a base is not kept).
  A sparse tensor is saved as its arrays, ``tensors/<k>.<name>.npy`` (``indices`` and
  ``values``, or ``crow``, ``col`` and ``values``), its tag carrying ``"sparse": {"layout":
  "coo" | "csr", "size", "dtype", "arrays", "coalesced"}``.

``load(weights_only=True)``, the default as in torch, reads the manifest and the ``.npy``
entries, and unpickles an entry only through globals allowlisted by ``add_safe_globals`` /
``safe_globals`` (else ``pickle.UnpicklingError``), so loading an untrusted file runs no other
code. ``load(weights_only=False)`` unpickles those entries freely: only for files you trust.
"""

from __future__ import annotations

import codecs
import io
import json
import math
import os
import pickle
import zipfile
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from . import dtypes
from .device import device

FORMAT_VERSION = 1
_MANIFEST = "manifest.json"


class _Writer:
    def __init__(self, zf: zipfile.ZipFile, pickle_protocol: int) -> None:
        self.zf = zf
        self.tensors: dict[int, int] = {}
        self.keep: list = []  # (keeps ids unique while writing)
        self.n_pickles = 0
        self.protocol = pickle_protocol

    def encode(self, obj: Any) -> Any:
        from .device import device
        from .tensor import Size, Tensor

        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float) and not isinstance(obj, np.floating):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, Size):
            return {"size": [int(n) for n in obj]}
        if isinstance(obj, OrderedDict):
            out = {"ordered_dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
            if getattr(obj, "__dict__", None):  # (a state_dict's _metadata: the module versions)
                out["attributes"] = self.encode(dict(obj.__dict__))
            return out
        if type(obj) is dict:
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if type(obj) is list:
            return {"list": [self.encode(v) for v in obj]}
        if type(obj) is tuple:
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, (set, frozenset)) and type(obj) in (set, frozenset):
            return {"set": [self.encode(v) for v in obj]}
        if isinstance(obj, dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, device):
            return {"device": str(obj)}
        if isinstance(obj, complex):
            return {"complex": [self.encode(obj.real), self.encode(obj.imag)]}
        if isinstance(obj, bytes):
            return {"bytes": obj.hex()}
        k = self.n_pickles
        self.n_pickles += 1
        self.zf.writestr(f"pickles/{k}.pkl", pickle.dumps(obj, protocol=self.protocol))
        return {"pickle": k}

    def _array(self, name: str, data: Any) -> None:
        buf = io.BytesIO()
        np.save(buf, np.asarray(data, order="C"), allow_pickle=False)
        self.zf.writestr(name, buf.getvalue())

    def _tensor(self, t: Any) -> dict:
        from .nn.parameter import Parameter
        from .ops.surface24_info import strided
        from .sparse import sparse_parts

        k = self.tensors.get(id(t))
        if k is None:
            k = self.tensors[id(t)] = len(self.tensors)
            self.keep.append(t)
            if t.is_meta:  # (no values: the entry holds its shape and dtype)
                pass
            elif t.layout is not strided:  # a sparse tensor: its index and value arrays
                for name, arr in sparse_parts(t)[1].items():
                    self._array(f"tensors/{k}.{name}.npy", arr)
            else:
                self._array(f"tensors/{k}.npy",  # (loads on the CPU)
                            t._data.copy_to_host() if t.is_cuda else t._data)
        out: dict = {"tensor": k}
        if t.is_meta:
            out["meta"] = {"shape": [int(n) for n in t.shape], "dtype": t.dtype.name}
        if t._dtype is dtypes.bfloat16:  # (stored as its float32 array)
            out["element_type"] = "bfloat16"
        if t.layout is not strided:
            out["sparse"] = sparse_parts(t)[0]
        if t.requires_grad:
            out["requires_grad"] = True
        if isinstance(t, Parameter):
            out["parameter"] = True
        return out


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Saves ``obj`` (tensors, and dicts/lists/tuples of them and of numbers and strings, such
    as a ``state_dict``) to the path or binary file ``f`` in jitgrad's zip format (see the
    module docstring). Objects of other types are pickled into the archive; ``load`` then needs
    ``weights_only=False`` for them."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            return save(obj, fh, pickle_module, pickle_protocol)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
        writer = _Writer(zf, pickle_protocol)
        root = writer.encode(obj)
        manifest = {"format": "jitgrad", "version": FORMAT_VERSION, "root": root}
        zf.writestr(_MANIFEST, json.dumps(manifest))


class _Reader:
    def __init__(self, zf: zipfile.ZipFile, weights_only: bool, meta: bool = False) -> None:
        self.zf = zf
        self.weights_only = weights_only
        self.meta = meta  # map_location="meta": dense tensors load as meta tensors
        self.tensors: dict[int, Any] = {}

    def decode(self, v: Any) -> Any:
        from .device import device
        from .tensor import Size

        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):  # (never written at the top level of a value)
            raise pickle.UnpicklingError("corrupt jitgrad file: a bare JSON list")
        (tag, body), = ((k, x) for k, x in v.items() if k in _TAGS)
        if tag == "tensor":
            return self._tensor(v)
        if tag == "float":
            return float(body)
        if tag in ("dict", "ordered_dict"):
            items = [(self.decode(k), self.decode(x)) for k, x in body]
            if tag == "dict":
                return dict(items)
            out = OrderedDict(items)
            for name, value in self.decode(v.get("attributes", {"dict": []})).items():
                setattr(out, name, value)
            return out
        if tag == "list":
            return [self.decode(x) for x in body]
        if tag == "tuple":
            return tuple(self.decode(x) for x in body)
        if tag == "set":
            return {self.decode(x) for x in body}
        if tag == "size":
            return Size(body)
        if tag == "dtype":
            d = getattr(dtypes, body, None)
            if not isinstance(d, dtypes.dtype):
                raise pickle.UnpicklingError(f"corrupt jitgrad file: unknown dtype {body!r}")
            return d
        if tag == "device":
            return device(body)
        if tag == "complex":
            return complex(self.decode(body[0]), self.decode(body[1]))
        if tag == "bytes":
            return bytes.fromhex(body)
        # "pickle"
        data = self.zf.read(f"pickles/{int(body)}.pkl")
        if self.weights_only:  # (only the globals allowlisted by add_safe_globals)
            return _WeightsUnpickler(io.BytesIO(data)).load()
        return pickle.loads(data)

    def _array(self, name: str) -> np.ndarray:
        with self.zf.open(name) as fh:
            return np.load(io.BytesIO(fh.read()), allow_pickle=False)

    def _tensor(self, v: dict) -> Any:
        from .nn.parameter import Parameter
        from .sparse import sparse_from_parts
        from .tensor import _new

        k = int(v["tensor"])
        t = self.tensors.get(k)
        if t is None:
            if "meta" in v or self.meta and "sparse" not in v:  # (no values read)
                t = self._meta_tensor(k, v)
            elif "sparse" in v:  # a sparse tensor: rebuilt from its arrays
                meta = v["sparse"]
                t = sparse_from_parts(meta, {name: self._array(f"tensors/{k}.{name}.npy")
                                             for name in meta["arrays"]})
            else:
                data = self._array(f"tensors/{k}.npy")
                bf16 = v.get("element_type") == "bfloat16" and data.dtype == np.float32
                t = _new(data, dtypes.bfloat16 if bf16 else dtypes.from_numpy_dtype(data.dtype))
            if v.get("parameter"):
                t = Parameter(t, requires_grad=bool(v.get("requires_grad")))
            elif v.get("requires_grad"):
                t.requires_grad_(True)
            self.tensors[k] = t
        return t


    def _meta_tensor(self, k: int, v: dict) -> Any:
        """A meta tensor of a saved meta tensor, or of a saved array's header alone."""
        from .ops.creation import meta_empty

        if "meta" in v:
            shape, dt = tuple(v["meta"]["shape"]), getattr(dtypes, v["meta"]["dtype"])
        else:
            with self.zf.open(f"tensors/{k}.npy") as fh:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, npdt = read(fh)
            dt = dtypes.bfloat16 if v.get("element_type") == "bfloat16" and \
                npdt == np.float32 else dtypes.from_numpy_dtype(npdt)
        return meta_empty(shape, dt)


# ---------------------------------------------------------------- weights_only's allowlist

# (the globals a weights_only load of a pickled entry accepts without add_safe_globals)
_DEFAULT_SAFE = {f"{obj.__module__}.{obj.__qualname__}": obj
                 for obj in (OrderedDict, Counter, set, frozenset, bytearray, complex, slice)}
_DEFAULT_SAFE["_codecs.encode"] = codecs.encode  # (bytes under protocol 2)
_USER_SAFE: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Allows ``load(weights_only=True)`` to unpickle these classes and functions (each an
    object, or ``(object, "module.name")`` for one saved under another name).

    Args:
        safe_globals: the objects to allow, for files whose source you trust.
    """
    _USER_SAFE.extend(safe_globals)


def get_safe_globals() -> list:
    """The objects ``add_safe_globals`` allowed."""
    return list(_USER_SAFE)


def clear_safe_globals() -> None:
    """Forgets every object ``add_safe_globals`` allowed."""
    _USER_SAFE.clear()


class safe_globals:  # noqa: N801 - torch's name
    """A context manager allowing ``safe_globals`` (as ``add_safe_globals``) inside it only."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        self._before = list(_USER_SAFE)
        _USER_SAFE.extend(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        _USER_SAFE[:] = self._before


def _allowed_globals() -> dict[str, Any]:
    allowed = dict(_DEFAULT_SAFE)
    for entry in _USER_SAFE:
        obj, name = entry if isinstance(entry, tuple) else \
            (entry, f"{entry.__module__}.{entry.__qualname__}")
        allowed[name] = obj
    return allowed


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that finds only allowlisted globals (no other code can run)."""

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self.allowed = _allowed_globals()

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if full in self.allowed:
            return self.allowed[full]
        raise pickle.UnpicklingError(
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
            "`jitgrad.load` defaults to `weights_only=True`, as `torch.load` does since "
            "PyTorch 2.6. Re-running `jitgrad.load` with `weights_only` set to `False` will "
            "likely succeed, but it can result in arbitrary code execution. Do it only if you "
            "got the file from a trusted source.\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            "message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL "
            f"{full} was not an allowed global by default. Please use "
            f"`jitgrad.serialization.add_safe_globals([{full}])` or the "
            f"`jitgrad.serialization.safe_globals([{full}])` context manager to allowlist "
            "this global if you trust this class/function.\n\nCheck the documentation of "
            "jitgrad.load (docs/serialization.md) to learn more about types accepted by default "
            "with weights_only.")


def _pickled_globals(data: bytes) -> list[str]:
    """The ``module.name`` of each global a pickle refers to (run nothing: opcodes only)."""
    import pickletools

    names, pushed, memo = [], [], {}
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("GLOBAL", "INST"):
            names.append(arg.replace(" ", "."))
        elif op.name == "STACK_GLOBAL" and len(pushed) >= 2:
            names.append(f"{pushed[-2]}.{pushed[-1]}")
        elif "UNICODE" in op.name or "STRING" in op.name:
            pushed.append(arg)
        elif op.name == "MEMOIZE" and pushed:
            memo[len(memo)] = pushed[-1]
        elif op.name in ("PUT", "BINPUT", "LONG_BINPUT") and pushed:
            memo[arg] = pushed[-1]
        elif op.name in ("GET", "BINGET", "LONG_BINGET") and arg in memo:
            pushed.append(memo[arg])
    return names


def get_unsafe_globals_in_checkpoint(f: Any) -> list[str]:
    """The globals a file's pickled objects use that ``load(weights_only=True)`` would refuse
    (read without unpickling anything).

    Args:
        f: a path or a binary file written by ``jitgrad.save``.
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return get_unsafe_globals_in_checkpoint(fh)
    allowed, unsafe = _allowed_globals(), []
    with zipfile.ZipFile(f, "r") as zf:
        for entry in sorted(n for n in zf.namelist() if n.startswith("pickles/")):
            for name in _pickled_globals(zf.read(entry)):
                if name not in allowed and name not in unsafe:
                    unsafe.append(name)
    return unsafe


_TAGS = ("tensor", "float", "dict", "ordered_dict", "list", "tuple", "set", "size", "dtype",
         "device", "complex", "bytes", "pickle")


def _check_map_location(map_location: Any) -> None:
    from .device import device

    if map_location is None or callable(map_location) and not isinstance(map_location, str):
        return
    if isinstance(map_location, dict):
        targets = list(map_location.values())
    else:
        targets = [map_location]
    for t in targets:
        if device(t).type not in ("cpu", "meta"):
            raise RuntimeError(
                f"load(map_location={t!r}): jitgrad loads tensors on the CPU (or as meta "
                "tensors); use map_location='cpu' or 'meta' (or leave it out).")


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any
         ) -> Any:
    """Loads an object saved with ``jitgrad.save`` from the path or binary file ``f``.

    With ``weights_only=True`` (the default, as in torch 2.6+) only tensors, numbers, strings,
    ``Size``/dtype/device objects and containers of them load, and pickled objects of the
    classes allowed by ``add_safe_globals``: any other raises ``pickle.UnpicklingError`` and no
    code from the file runs. ``weights_only=False``
    also unpickles those objects (only for trusted files). ``map_location`` may be None,
    ``"cpu"`` or ``"meta"``: meta tensors of the saved shapes and dtypes, whose values are never
    read (a checkpoint inspected, or loaded into a meta model with ``assign=True``).
    """
    _check_map_location(map_location)
    if weights_only is None:
        weights_only = True
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return load(fh, map_location, weights_only=weights_only)
    try:
        zf = zipfile.ZipFile(f, "r")
    except zipfile.BadZipFile:
        raise pickle.UnpicklingError(
            "jitgrad.load: not a jitgrad file (expected a zip archive with manifest.json)"
        ) from None
    with zf:
        try:
            manifest = json.loads(zf.read(_MANIFEST))
        except KeyError:
            raise pickle.UnpicklingError(
                "jitgrad.load: not a jitgrad file (no manifest.json in the archive; files "
                "written by torch.save are not readable by jitgrad.load)") from None
        if manifest.get("format") != "jitgrad" or manifest.get("version") != FORMAT_VERSION:
            raise pickle.UnpicklingError(
                f"jitgrad.load: unsupported file format {manifest.get('format')!r} version "
                f"{manifest.get('version')!r}")
        meta = isinstance(map_location, (str, device)) and device(map_location).type == "meta"
        return _Reader(zf, bool(weights_only), meta).decode(manifest["root"])
