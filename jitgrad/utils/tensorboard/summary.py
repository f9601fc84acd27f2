"""Summary builders, as ``torch.utils.tensorboard.summary``: each returns a serialized
``tensorboard.Summary`` message (bytes) for :class:`~jitgrad.utils.tensorboard.FileWriter`."""

from __future__ import annotations

import io
import json
import logging
import struct
import wave
from typing import Any

import numpy as np

from . import _proto as pb
from ._convert import convert_to_HWC, encode_png, make_np, prepare_video
from ._gif import encode_gif

logger = logging.getLogger(__name__)

__all__ = ["audio", "compute_curve", "custom_scalars", "draw_boxes", "half_to_int", "histogram",
           "histogram_raw", "hparams", "image", "image_boxes", "int_to_half", "make_histogram",
           "make_image", "mesh", "pr_curve", "pr_curve_raw", "scalar", "tensor_proto", "text",
           "video"]


def half_to_int(f: float) -> int:
    """The bits of ``f`` as a float32, read as an int32 (torch's ``half_to_int``)."""
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i: int) -> float:
    """The inverse of :func:`half_to_int`."""
    return struct.unpack("f", struct.pack("i", i))[0]


def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> bytes:
    """A scalar summary: ``simple_value``, or with ``new_style`` a scalars-plugin tensor.

    Args:
        name: The tag.
        tensor: A number, a NumPy scalar/array or a Tensor with one element.
        collections: Unused (as torch).
        new_style: Write a ``DT_FLOAT`` tensor with the scalars plugin's metadata.
        double_precision: With ``new_style``, write a ``DT_DOUBLE`` tensor.

    Returns:
        The serialized Summary.

    Raises:
        AssertionError: if the value has more than one element.
    """
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). \
            Was given size: {tensor.size} and {tensor.ndim} dimensions.")
    value = float(tensor)
    if new_style:
        if double_precision:
            proto = pb.tensor_proto(pb.DT_DOUBLE, field="double_val", values=[value])
        else:
            proto = pb.tensor_proto(pb.DT_FLOAT, field="float_val", values=[value])
        return pb.summary([pb.summary_value(name, tensor=proto,
                                            metadata=pb.summary_metadata("scalars"))])
    return pb.summary([pb.summary_value(name, simple_value=value)])


def _complex_list(a: np.ndarray) -> list:
    return np.stack([a.real, a.imag], axis=-1).reshape(-1).tolist()


_TENSOR_TYPE_MAP = {  # jitgrad dtype name -> (DataType, TensorProto field, conversion)
    "float16": (pb.DT_HALF, "half_val", lambda a: [half_to_int(x) for x in a.ravel().tolist()]),
    "bfloat16": (pb.DT_BFLOAT16, "half_val",
                 lambda a: [half_to_int(x) for x in a.ravel().tolist()]),
    "float32": (pb.DT_FLOAT, "float_val", lambda a: a.ravel().tolist()),
    "float64": (pb.DT_DOUBLE, "double_val", lambda a: a.ravel().tolist()),
    "int8": (pb.DT_INT8, "int_val", lambda a: a.ravel().tolist()),
    "uint8": (pb.DT_UINT8, "uint32_val", lambda a: a.ravel().tolist()),
    "int16": (pb.DT_INT16, "int_val", lambda a: a.ravel().tolist()),
    "int32": (pb.DT_INT32, "int_val", lambda a: a.ravel().tolist()),
    "int64": (pb.DT_INT64, "int64_val", lambda a: a.ravel().tolist()),
    "complex64": (pb.DT_COMPLEX64, "scomplex_val", _complex_list),
    "complex128": (pb.DT_COMPLEX128, "dcomplex_val", _complex_list),
    "bool": (pb.DT_BOOL, "bool_val", lambda a: a.ravel().tolist()),
}


def tensor_proto(tag: str, tensor: Any) -> bytes:
    """A tensor summary (the ``tensor`` plugin) holding a Tensor's values and shape.

    Args:
        tag: The tag.
        tensor: A jitgrad Tensor.

    Returns:
        The serialized Summary.

    Raises:
        ValueError: for a tensor of 2 GB or more, or a dtype TensorBoard has no type for.
    """
    if tensor.numel() * tensor.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    name = tensor.dtype.name
    if name not in _TENSOR_TYPE_MAP:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, conversion = _TENSOR_TYPE_MAP[name]
    values = tensor.detach().cpu()
    array = values.to(_float32()).numpy() if name == "bfloat16" else values.numpy()
    proto = pb.tensor_proto(dtype, list(tensor.shape), field=field, values=conversion(array))
    return pb.summary([pb.summary_value(tag, tensor=proto,
                                        metadata=pb.summary_metadata("tensor"))])


def _float32() -> Any:
    from jitgrad.dtypes import float32

    return float32


def histogram_raw(name: str, min: float, max: float, num: float, sum: float,
                  sum_squares: float, bucket_limits: Any, bucket_counts: Any) -> bytes:
    """A histogram summary from precomputed statistics and buckets."""
    return pb.summary([pb.summary_value(name, histo=pb.histogram_proto(
        min, max, num, sum, sum_squares, list(bucket_limits), list(bucket_counts)))])


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> bytes:
    """A histogram summary of ``values`` with NumPy's ``bins`` (edges or a method name)."""
    values = make_np(values)
    return pb.summary([pb.summary_value(
        name, histo=make_histogram(values.astype(float), bins, max_bins))])


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> bytes:
    """A serialized ``HistogramProto`` of ``values``: NumPy's histogram, merged down to at most
    ``max_bins`` buckets, with the empty buckets at both ends dropped (one empty bucket kept
    before the first filled one), as torch's ``make_histogram``.

    Raises:
        ValueError: for no values.
    """
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        subsampling_remainder = num_bins % subsampling
        if subsampling_remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - subsampling_remainder]],
                            mode="constant", constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start = int(start)
    end = int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return pb.histogram_proto(values.min(), values.max(), len(values), values.sum(),
                              values.dot(values), limits.tolist(), counts.tolist())


def _calc_scale_factor(array: np.ndarray) -> int:
    return 1 if array.dtype == np.uint8 else 255


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> bytes:
    """An image summary: the image (a batch is tiled into a grid) scaled to uint8 (floats by
    255, as torch) and PNG-encoded.

    Args:
        tag: The tag.
        tensor: The image(s) as a Tensor or array.
        rescale: Scale factor of the stored image (other than 1 needs Pillow, as torch).
        dataformats: The layout, e.g. ``"CHW"``, ``"HWC"``, ``"NCHW"``, ``"HW"``.

    Returns:
        The serialized Summary.
    """
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale_factor = _calc_scale_factor(tensor)
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    return pb.summary([pb.summary_value(tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor: np.ndarray, rescale: float = 1, rois: np.ndarray | None = None,
               labels: list | None = None) -> bytes:
    """A serialized ``Summary.Image`` of a uint8 HWC array, PNG-encoded (with ``zlib``).

    Drawing boxes (``rois``) or resizing (``rescale`` other than 1) uses Pillow, as torch does
    (imported only then).
    """
    height, width, channel = tensor.shape
    scaled_height, scaled_width = int(height * rescale), int(width * rescale)
    if rois is not None or (scaled_height, scaled_width) != (height, width):
        from PIL import Image

        image = Image.fromarray(tensor)
        if rois is not None:
            image = draw_boxes(image, rois, labels=labels)
        image = image.resize((scaled_width, scaled_height), Image.Resampling.LANCZOS)
        tensor = np.asarray(image)
        if tensor.ndim == 2:
            tensor = tensor[:, :, None]
    return pb.image(height, width, channel, encode_png(tensor))


def _draw_single_box(image: Any, xmin: float, ymin: float, xmax: float, ymax: float,
                     display_str: str | None, color: str = "black",
                     color_text: str = "black", thickness: int = 2) -> Any:
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    (left, right, top, bottom) = (xmin, xmax, ymin, ymax)
    draw.line([(left, top), (left, bottom), (right, bottom), (right, top), (left, top)],
              width=thickness, fill=color)
    if display_str:
        text_bottom = bottom
        _left, _top, _right, _bottom = font.getbbox(display_str)
        text_width, text_height = _right - _left, _bottom - _top
        margin = np.ceil(0.05 * text_height)
        draw.rectangle([(left, text_bottom - text_height - 2 * margin),
                        (left + text_width, text_bottom)], fill=color)
        draw.text((left + margin, text_bottom - text_height - margin), display_str,
                  fill=color_text, font=font)
    return image


def draw_boxes(disp_image: Any, boxes: np.ndarray, labels: list | None = None) -> Any:
    """Draws each ``(xmin, ymin, xmax, ymax)`` box (and its label) in red on a PIL image."""
    for i in range(boxes.shape[0]):
        disp_image = _draw_single_box(disp_image, boxes[i, 0], boxes[i, 1], boxes[i, 2],
                                      boxes[i, 3], display_str=None if labels is None
                                      else labels[i], color="Red")
    return disp_image


def image_boxes(tag: str, tensor_image: Any, tensor_boxes: Any, rescale: float = 1,
                dataformats: str = "CHW", labels: list | None = None) -> bytes:
    """An image summary with boxes drawn on it (needs Pillow, as torch)."""
    tensor_image = convert_to_HWC(make_np(tensor_image), dataformats)
    tensor_boxes = make_np(tensor_boxes)
    tensor_image = tensor_image.astype(np.float32) * _calc_scale_factor(tensor_image)
    image = make_image(tensor_image.clip(0, 255).astype(np.uint8), rescale=rescale,
                       rois=tensor_boxes, labels=labels)
    return pb.summary([pb.summary_value(tag, image=image)])


def video(tag: str, tensor: Any, fps: float = 4) -> bytes:
    """A video summary: ``(N, T, C, H, W)`` videos tiled into a grid, scaled to uint8 (floats
    by 255) and encoded as an animated GIF (see ``_gif``: exact up to 256 colors).

    Args:
        tag: The tag.
        tensor: The videos, uint8 or floats in [0, 1].
        fps: Frames per second.

    Returns:
        The serialized Summary.
    """
    tensor = prepare_video(make_np(tensor))
    scale_factor = _calc_scale_factor(tensor)
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    _, h, w, c = tensor.shape
    return pb.summary([pb.summary_value(tag, image=pb.image(h, w, c, encode_gif(tensor, fps)))])


def audio(tag: str, tensor: Any, sample_rate: int = 44100) -> bytes:
    """An audio summary: a 1-D signal in [-1, 1] (clipped, with a warning, beyond) as 16-bit
    mono WAV.

    Raises:
        AssertionError: if the signal is not 1-D after squeezing.
    """
    array = make_np(tensor).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    array = (array * np.iinfo(np.int16).max).astype("<i2")
    fio = io.BytesIO()
    with wave.open(fio, "wb") as wave_write:
        wave_write.setnchannels(1)
        wave_write.setsampwidth(2)
        wave_write.setframerate(sample_rate)
        wave_write.writeframes(array.data)
    return pb.summary([pb.summary_value(tag, audio=pb.audio(
        sample_rate, 1, array.shape[-1], fio.getvalue(), "audio/wav"))])


def custom_scalars(layout: dict) -> bytes:
    """The custom-scalars plugin's layout: ``{category: {chart: ["Multiline" | "Margin",
    tags]}}``.

    Raises:
        AssertionError: for a margin chart without exactly 3 tags.
    """
    categories = []
    for k, v in layout.items():
        charts = []
        for chart_name, chart_metadata in v.items():
            tags = chart_metadata[1]
            if chart_metadata[0] == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                charts.append((chart_name, "Margin", tags))
            else:
                charts.append((chart_name, "Multiline", tags))
        categories.append((k, charts))
    proto = pb.tensor_proto(pb.DT_STRING, [], field="string_val", values=[pb.layout(categories)])
    return pb.summary([pb.summary_value("custom_scalars__config__", tensor=proto,
                                        metadata=pb.summary_metadata("custom_scalars"))])


def text(tag: str, text: str) -> bytes:
    """A text summary (the text plugin) under ``tag + "/text_summary"``."""
    proto = pb.tensor_proto(pb.DT_STRING, [1], field="string_val",
                            values=[text.encode(encoding="utf_8")])
    return pb.summary([pb.summary_value(
        tag + "/text_summary", tensor=proto,
        metadata=pb.summary_metadata("text", pb.text_plugin_data(0)))])


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> bytes:
    proto = pb.tensor_proto(pb.DT_FLOAT, list(data.shape[:2]), field="float_val",
                            values=data.reshape(-1).tolist())
    smd = pb.summary_metadata("pr_curves", pb.pr_curve_plugin_data(num_thresholds))
    return pb.summary([pb.summary_value(tag, tensor=proto, metadata=smd)])


def pr_curve_raw(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                 num_thresholds: int = 127, weights: Any = None) -> bytes:
    """A precision-recall curve summary from precomputed counts (at most 127 thresholds)."""
    num_thresholds = min(num_thresholds, 127)
    return _pr_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), num_thresholds)


def pr_curve(tag: str, labels: np.ndarray, predictions: np.ndarray, num_thresholds: int = 127,
             weights: Any = None) -> bytes:
    """A precision-recall curve summary of binary ``labels`` and ``predictions`` in [0, 1]."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int | None = None,
                  weights: Any = None) -> np.ndarray:
    """The ``(6, num_thresholds)`` array of TP, FP, TN, FN, precision and recall counts."""
    _minimum_count = 1e-7
    if weights is None:
        weights = 1.0
    bucket_indices = np.int32(np.floor(predictions * (num_thresholds - 1)))
    float_labels = labels.astype(np.float64)
    histogram_range = (0, num_thresholds - 1)
    tp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=histogram_range,
                                 weights=float_labels * weights)
    fp_buckets, _ = np.histogram(bucket_indices, bins=num_thresholds, range=histogram_range,
                                 weights=(1.0 - float_labels) * weights)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_minimum_count, tp + fp)
    recall = tp / np.maximum(_minimum_count, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


_HP_PLUGIN, _HP_VERSION = "hparams", 0
_DATA_TYPE_STRING, _DATA_TYPE_BOOL, _DATA_TYPE_FLOAT64 = 1, 2, 3
_STATUS_SUCCESS = 1


def hparams(hparam_dict: dict | None = None, metric_dict: dict | None = None,
            hparam_domain_discrete: dict | None = None) -> tuple[bytes, bytes, bytes]:
    """The hparams plugin's experiment, session-start and session-end summaries.

    Args:
        hparam_dict: Hyperparameter name -> int, float, str, bool, one-element Tensor or None
            (skipped).
        metric_dict: Metric tag -> value (only the tags are recorded here).
        hparam_domain_discrete: Hyperparameter name -> the list of values it can take.

    Returns:
        ``(experiment, session_start_info, session_end_info)`` serialized Summaries.

    Raises:
        TypeError: if an argument is not a dict, or a domain's values are not of its
            hyperparameter's type.
        ValueError: for a hyperparameter value of another type.
    """
    from jitgrad.tensor import Tensor

    if not isinstance(hparam_dict, dict):
        logger.warning("parameter: hparam_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        logger.warning("parameter: metric_dict should be a dictionary, nothing logged.")
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError(
            "parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    infos, start_values = [], {}
    for k, v in hparam_dict.items():
        if v is None:
            continue
        domain = None
        if k in hparam_domain_discrete:
            domain = pb.list_value(float(d) if isinstance(v, (int, float)) else d
                                   for d in hparam_domain_discrete[k])
        if isinstance(v, (int, float)):  # (bool too, as torch: a number)
            start_values[k] = float(v)
            infos.append(pb.hparam_info(k, _DATA_TYPE_FLOAT64, domain))
        elif isinstance(v, str):
            start_values[k] = v
            infos.append(pb.hparam_info(k, _DATA_TYPE_STRING, domain))
        elif isinstance(v, Tensor):
            start_values[k] = float(make_np(v)[0])
            infos.append(pb.hparam_info(k, _DATA_TYPE_FLOAT64))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    def plugin_summary(tag: str, **data: bytes) -> bytes:
        content = pb.hparams_plugin_data(_HP_VERSION, **data)
        return pb.summary([pb.summary_value(tag, metadata=pb.summary_metadata(_HP_PLUGIN,
                                                                              content))])

    ssi = plugin_summary("_hparams_/session_start_info",
                         session_start_info=pb.session_start_info(start_values))
    exp = plugin_summary("_hparams_/experiment",
                         experiment=pb.experiment(infos, list(metric_dict)))
    sei = plugin_summary("_hparams_/session_end_info",
                         session_end_info=pb.session_end_info(_STATUS_SUCCESS))
    return exp, ssi, sei


_MESH_VERTEX, _MESH_FACE, _MESH_COLOR = 1, 2, 3
_MESH_NAMES = {_MESH_VERTEX: "VERTEX", _MESH_FACE: "FACE", _MESH_COLOR: "COLOR"}


def _get_json_config(config_dict: dict | None) -> str:
    return "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)


def mesh(tag: str, vertices: Any, colors: Any, faces: Any, config_dict: dict | None,
         display_name: str | None = None, description: str | None = None) -> bytes:
    """The mesh plugin's summary: one ``DT_FLOAT`` tensor value per component given
    (``<tag>_VERTEX``, ``<tag>_FACE``, ``<tag>_COLOR``), each ``(B, N, 3)``.

    Raises:
        ValueError: for a component that is not 3-D.
    """
    from jitgrad.tensor import Tensor

    json_config = _get_json_config(config_dict)
    parts = [(t, kind) for t, kind in ((vertices, _MESH_VERTEX), (faces, _MESH_FACE),
                                       (colors, _MESH_COLOR)) if t is not None]
    components = 0
    for _, kind in parts:
        components |= 1 << kind
    values = []
    for t, kind in parts:
        array = np.asarray(make_np(t) if isinstance(t, Tensor) else t)
        if array.ndim != 3:
            shape = t.shape if isinstance(t, Tensor) else array.shape
            raise ValueError(f"Tensor shape should be of shape BxNx3, but got {shape}.")
        content = pb.mesh_plugin_data(tag, kind, json_config, list(array.shape), components)
        smd = pb.summary_metadata("mesh", content, display_name, description)
        proto = pb.tensor_proto(pb.DT_FLOAT, list(array.shape), field="float_val",
                                values=array.reshape(-1).tolist())
        values.append(pb.summary_value(f"{tag}_{_MESH_NAMES[kind]}", tensor=proto,
                                       metadata=smd))
    return pb.summary(values)
