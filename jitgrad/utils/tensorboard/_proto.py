"""Hand-written protocol buffer encoding of the TensorBoard messages the writer emits.

Each function returns one message's serialized bytes (proto3 wire format: varint keys, packed
repeated scalars). Field numbers follow TensorBoard's ``event.proto``, ``summary.proto``,
``tensor.proto``, ``tensor_shape.proto`` and the text, hparams, pr_curve and custom_scalar
plugins' protos. A field passed as ``None`` is left out; a member of a ``oneof`` is written even
when it holds its default (``simple_value=0.0``), as protobuf does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

# wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5

# tensorboard.DataType
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_COMPLEX128, DT_HALF = 8, 9, 10, 14, 18, 19

SESSION_LOG_START = 1  # tensorboard.SessionLog.SessionStatus.START


def varint(n: int) -> bytes:
    """The base-128 varint of ``n`` (a negative int as its 64-bit two's complement)."""
    n = int(n)
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def f_varint(field: int, value: int | bool | None) -> bytes:
    """An int/bool/enum field."""
    return b"" if value is None else _key(field, _VARINT) + varint(int(value))


def f_double(field: int, value: float | None) -> bytes:
    """A double field."""
    return b"" if value is None else _key(field, _I64) + struct.pack("<d", float(value))


def f_float(field: int, value: float | None) -> bytes:
    """A float field."""
    return b"" if value is None else _key(field, _I32) + struct.pack("<f", float(value))


def f_bytes(field: int, value: bytes | None) -> bytes:
    """A bytes or embedded-message field."""
    return b"" if value is None else _key(field, _LEN) + varint(len(value)) + bytes(value)


def f_str(field: int, value: str | None) -> bytes:
    """A string field (UTF-8)."""
    return b"" if value is None else f_bytes(field, value.encode("utf-8"))


def f_packed(field: int, values: Iterable, kind: str) -> bytes:
    """A packed repeated scalar field: ``kind`` is ``"double"``, ``"float"`` or ``"varint"``;
    nothing is written for no values."""
    vals = list(values)
    if not vals:
        return b""
    if kind == "double":
        payload = np.asarray(vals, dtype="<f8").tobytes()
    elif kind == "float":
        payload = np.asarray(vals, dtype="<f4").tobytes()
    else:
        payload = b"".join(varint(int(v)) for v in vals)
    return f_bytes(field, payload)


def event(wall_time: float, step: int | None = None, file_version: str | None = None,
          summary: bytes | None = None, session_log: bytes | None = None,
          source_writer: str | None = None) -> bytes:
    """``tensorboard.Event``."""
    return (f_double(1, wall_time) + f_varint(2, step) + f_str(3, file_version)
            + f_bytes(5, summary) + f_bytes(7, session_log)
            + (f_bytes(10, f_str(1, source_writer)) if source_writer is not None else b""))


def session_log(status: int) -> bytes:
    """``tensorboard.SessionLog``."""
    return f_varint(1, status)


def summary(values: Sequence[bytes]) -> bytes:
    """``tensorboard.Summary`` from serialized ``Summary.Value`` messages."""
    return b"".join(f_bytes(1, v) for v in values)


def summary_value(tag: str, *, simple_value: float | None = None, image: bytes | None = None,
                  histo: bytes | None = None, audio: bytes | None = None,
                  tensor: bytes | None = None, metadata: bytes | None = None) -> bytes:
    """``tensorboard.Summary.Value`` (one of its ``value`` oneof set)."""
    return (f_str(1, tag) + f_float(2, simple_value) + f_bytes(4, image) + f_bytes(5, histo)
            + f_bytes(6, audio) + f_bytes(8, tensor) + f_bytes(9, metadata))


def summary_metadata(plugin_name: str, content: bytes = b"", display_name: str | None = None,
                     summary_description: str | None = None) -> bytes:
    """``tensorboard.SummaryMetadata`` with its ``plugin_data``."""
    plugin_data = f_str(1, plugin_name) + (f_bytes(2, content) if content else b"")
    return f_bytes(1, plugin_data) + f_str(2, display_name) + f_str(3, summary_description)


def histogram_proto(min: float, max: float, num: float, sum: float, sum_squares: float,
                    bucket_limit: Iterable[float], bucket: Iterable[float]) -> bytes:
    """``tensorboard.HistogramProto``."""
    return (f_double(1, min) + f_double(2, max) + f_double(3, num) + f_double(4, sum)
            + f_double(5, sum_squares) + f_packed(6, bucket_limit, "double")
            + f_packed(7, bucket, "double"))


def image(height: int, width: int, colorspace: int, encoded_image_string: bytes) -> bytes:
    """``tensorboard.Summary.Image``."""
    return (f_varint(1, height) + f_varint(2, width) + f_varint(3, colorspace)
            + f_bytes(4, encoded_image_string))


def audio(sample_rate: float, num_channels: int, length_frames: int,
          encoded_audio_string: bytes, content_type: str) -> bytes:
    """``tensorboard.Summary.Audio``."""
    return (f_float(1, sample_rate) + f_varint(2, num_channels) + f_varint(3, length_frames)
            + f_bytes(4, encoded_audio_string) + f_str(5, content_type))


def tensor_shape(dims: Sequence[int]) -> bytes:
    """``tensorboard.TensorShapeProto``."""
    return b"".join(f_bytes(2, f_varint(1, d)) for d in dims)


_VAL_FIELDS = {"half_val": (13, "varint"), "float_val": (5, "float"),
               "double_val": (6, "double"), "int_val": (7, "varint"),
               "scomplex_val": (9, "float"), "int64_val": (10, "varint"),
               "bool_val": (11, "varint"), "dcomplex_val": (12, "double"),
               "uint32_val": (16, "varint")}


def tensor_proto(dtype: int, shape: Sequence[int] | None = None, *, field: str,
                 values: Sequence) -> bytes:
    """``tensorboard.TensorProto`` holding ``values`` in the repeated field named ``field``
    (``"string_val"`` takes bytes)."""
    out = f_varint(1, dtype) + (f_bytes(2, tensor_shape(shape)) if shape is not None else b"")
    if field == "string_val":
        return out + b"".join(f_bytes(8, v) for v in values)
    number, kind = _VAL_FIELDS[field]
    return out + f_packed(number, values, kind)


# --- plugins ---------------------------------------------------------------------------------

def text_plugin_data(version: int = 0) -> bytes:
    """``tensorboard.TextPluginData``."""
    return f_varint(1, version) if version else b""


def pr_curve_plugin_data(num_thresholds: int, version: int = 0) -> bytes:
    """``tensorboard.PrCurvePluginData``."""
    return (f_varint(1, version) if version else b"") + f_varint(2, num_thresholds)


def mesh_plugin_data(name: str, content_type: int, json_config: str, shape: Sequence[int],
                     components: int, version: int = 0) -> bytes:
    """``tensorboard.mesh.MeshPluginData``."""
    return ((f_varint(1, version) if version else b"") + f_str(2, name)
            + f_varint(3, content_type) + f_str(5, json_config) + f_packed(6, shape, "varint")
            + f_varint(7, components))


def struct_value(v: float | str | bool) -> bytes:
    """``google.protobuf.Value`` holding a number, a string or a bool."""
    if isinstance(v, bool):
        return f_varint(4, v)
    if isinstance(v, str):
        return f_str(3, v)
    return f_double(2, v)


def list_value(values: Iterable) -> bytes:
    """``google.protobuf.ListValue``."""
    return b"".join(f_bytes(1, struct_value(v)) for v in values)


def hparam_info(name: str, data_type: int, domain_discrete: bytes | None = None) -> bytes:
    """``tensorboard.hparams.HParamInfo`` (``domain_discrete`` a serialized ListValue)."""
    return f_str(1, name) + f_varint(4, data_type) + f_bytes(5, domain_discrete)


def experiment(hparam_infos: Sequence[bytes], metric_tags: Sequence[str]) -> bytes:
    """``tensorboard.hparams.Experiment``."""
    metric_infos = (f_bytes(1, f_str(2, tag)) for tag in metric_tags)  # MetricInfo.name.tag
    return (b"".join(f_bytes(4, h) for h in hparam_infos)
            + b"".join(f_bytes(5, m) for m in metric_infos))


def session_start_info(hparams: dict) -> bytes:
    """``tensorboard.hparams.SessionStartInfo`` from name -> number, string or bool."""
    return b"".join(f_bytes(1, f_str(1, k) + f_bytes(2, struct_value(v)))
                    for k, v in hparams.items())


def session_end_info(status: int) -> bytes:
    """``tensorboard.hparams.SessionEndInfo``."""
    return f_varint(1, status)


def hparams_plugin_data(version: int, *, experiment: bytes | None = None,
                        session_start_info: bytes | None = None,
                        session_end_info: bytes | None = None) -> bytes:
    """``tensorboard.hparams.HParamsPluginData`` (one of its ``data`` oneof set)."""
    return ((f_varint(1, version) if version else b"") + f_bytes(2, experiment)
            + f_bytes(3, session_start_info) + f_bytes(4, session_end_info))


def layout(categories: Sequence[tuple[str, Sequence[tuple[str, str, Sequence[str]]]]]) -> bytes:
    """``tensorboard.Layout`` from ``(title, [(chart title, "Multiline" | "Margin", tags)])``."""
    out = b""
    for title, charts in categories:
        cat = f_str(1, title)
        for chart_title, kind, tags in charts:
            if kind == "Margin":
                series = f_str(1, tags[0]) + f_str(2, tags[1]) + f_str(3, tags[2])
                content = f_bytes(3, f_bytes(1, series))
            else:
                content = f_bytes(2, b"".join(f_str(1, t) for t in tags))
            cat += f_bytes(2, f_str(1, chart_title) + content)
        out += f_bytes(2, cat)
    return out
