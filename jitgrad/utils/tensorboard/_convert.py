"""Conversions for the summaries: tensors to NumPy arrays, image layouts to HWC, image grids,
PNG encoding (``zlib`` only) and matplotlib figures to images."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np


def make_np(x: Any) -> np.ndarray:
    """Converts a NumPy array, a Python or NumPy scalar or a jitgrad Tensor to an array, as
    ``torch.utils.tensorboard._convert_np.make_np``.

    Args:
        x: The value.

    Returns:
        The array (a scalar becomes a 1-element array).

    Raises:
        NotImplementedError: for any other type.
    """
    from jitgrad.dtypes import bfloat16, float16
    from jitgrad.tensor import Tensor

    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)
        if x.dtype == bfloat16:
            x = x.to(float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(
        f"Got {type(x)}, but numpy array or torch tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tiles an NCHW batch (1 or 3 channels) into one CHW image, ``ncols`` images a row.

    Args:
        images: The batch.
        ncols: Images per row.

    Returns:
        The CHW canvas.

    Raises:
        AssertionError: for a batch that is not 4-D with 3 channels (after 1 -> 3).
    """
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    nimg, h, w = images.shape[0], images.shape[2], images.shape[3]
    ncols = min(nimg, ncols)
    nrows = int(np.ceil(float(nimg) / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    i = 0
    for y in range(nrows):
        for x in range(ncols):
            if i >= nimg:
                break
            canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
            i = i + 1
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802
    """Reorders an image (or a batch, tiled into a grid) given in ``input_format`` (a
    permutation of ``NCHW``, ``CHW``/``HWC`` or ``HW``) to HWC with 3 (or 4) channels.

    Args:
        tensor: The image array.
        input_format: Its layout, e.g. ``"CHW"``.

    Returns:
        The HWC array.

    Raises:
        AssertionError: for a repeated letter or a layout whose length is not the array's.
    """
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. \
            input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. \
        tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        index = [input_format.find(c) for c in "NCHW"]
        return make_grid(tensor.transpose(index)).transpose(1, 2, 0)
    if len(input_format) == 3:
        index = [input_format.find(c) for c in "HWC"]
        tensor_hwc = tensor.transpose(index)
        if tensor_hwc.shape[2] == 1:
            tensor_hwc = np.concatenate([tensor_hwc, tensor_hwc, tensor_hwc], 2)
        return tensor_hwc
    if len(input_format) == 2:
        index = [input_format.find(c) for c in "HW"]
        tensor = tensor.transpose(index)
        return np.stack([tensor, tensor, tensor], 2)
    return tensor


def prepare_video(video: np.ndarray) -> np.ndarray:
    """Tiles a ``(B, T, C, H, W)`` batch of videos into one ``(T, H', W', C)`` video (the
    batch padded to a power of 2, laid out in a grid; uint8 scaled to [0, 1]), as torch.

    Args:
        video: The batch.

    Returns:
        The tiled video.
    """
    b, t, c, h, w = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    if not (b != 0 and (b & (b - 1)) == 0):
        pad = int(2 ** b.bit_length() - b)
        video = np.concatenate((video, np.zeros(shape=(pad, t, c, h, w))), axis=0)
    n_rows = 2 ** ((b.bit_length() - 1) // 2)
    n_cols = video.shape[0] // n_rows
    video = np.reshape(video, (n_rows, n_cols, t, c, h, w))
    video = np.transpose(video, axes=(2, 0, 4, 1, 5, 3))
    return np.reshape(video, (t, n_rows * h, n_cols * w, c))


_PNG_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> grey, grey+alpha, RGB, RGBA


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(hwc: np.ndarray) -> bytes:
    """Encodes a uint8 HWC image (1 to 4 channels) as PNG with ``zlib``.

    Args:
        hwc: The image, ``uint8`` of shape ``(height, width, channels)``.

    Returns:
        The PNG file's bytes.

    Raises:
        ValueError: for another dtype or a channel count outside 1-4.
    """
    if hwc.dtype != np.uint8 or hwc.ndim != 3 or hwc.shape[2] not in _PNG_COLOR_TYPE:
        raise ValueError(f"Cannot encode an image of shape {hwc.shape} and dtype {hwc.dtype} "
                         "as PNG (uint8 with 1 to 4 channels expected)")
    height, width, channels = hwc.shape
    ihdr = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPE[channels], 0, 0, 0)
    rows = np.ascontiguousarray(hwc).reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)  # filter 0 per row
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
            + _png_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + _png_chunk(b"IEND", b""))


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """Renders a matplotlib figure (or a list of them) to a CHW (NCHW) uint8 array; needs
    ``matplotlib``.

    Args:
        figures: A figure or a list of figures.
        close: Close each figure after rendering it.

    Returns:
        The CHW image, or the NCHW stack for a list.
    """
    import matplotlib.backends.backend_agg as plt_backend_agg
    import matplotlib.pyplot as plt

    def render_to_rgb(figure: Any) -> np.ndarray:
        canvas = plt_backend_agg.FigureCanvasAgg(figure)
        canvas.draw()
        data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        w, h = figure.canvas.get_width_height()
        image_chw = np.moveaxis(data.reshape([h, w, 4])[:, :, 0:3], source=2, destination=0)
        if close:
            plt.close(figure)
        return image_chw

    if isinstance(figures, list):
        return np.stack([render_to_rgb(figure) for figure in figures])
    return render_to_rgb(figures)
