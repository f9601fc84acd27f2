"""Animated GIF encoding (GIF89a, LZW) in pure Python, for ``add_video``: torch renders the
frames with moviepy; here a video of at most 256 distinct colors is stored exactly, and any
other is quantized to a fixed 6x7x6 RGB palette."""

from __future__ import annotations

import struct

import numpy as np

_LEVELS = (6, 7, 6)  # the fixed palette's levels per channel (252 colors)


def _palette_indices(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A palette (256 x 3 uint8) and each pixel's index into it (``frames``: T x H x W x 3)."""
    flat = frames.reshape(-1, 3)
    colors, inverse = np.unique(flat, axis=0, return_inverse=True)
    if len(colors) <= 256:
        palette = np.zeros((256, 3), np.uint8)
        palette[:len(colors)] = colors
        return palette, inverse.reshape(frames.shape[:3]).astype(np.uint8)
    levels = np.array(_LEVELS)
    q = np.rint(flat.astype(np.float64) * (levels - 1) / 255).astype(np.int64)
    index = (q[:, 0] * levels[1] + q[:, 1]) * levels[2] + q[:, 2]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in _LEVELS], indexing="ij"), -1)
    palette = np.zeros((256, 3), np.uint8)
    palette[:grid.size // 3] = np.rint(grid.reshape(-1, 3) * 255 / (levels - 1))
    return palette, index.reshape(frames.shape[:3]).astype(np.uint8)


def _lzw(indices: bytes) -> bytes:
    """GIF's variable-width LZW of 8-bit ``indices`` (minimum code size 8)."""
    clear, end = 256, 257
    out = bytearray()
    acc = nbits = 0

    def emit(code: int, width: int) -> None:
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8

    table: dict = {}
    next_code, width = 258, 9
    emit(clear, width)
    prefix = -1
    for k in indices:
        if prefix < 0:
            prefix = k
            continue
        key = (prefix << 8) | k
        code = table.get(key)
        if code is not None:
            prefix = code
            continue
        emit(prefix, width)
        if next_code < 4096:
            table[key] = next_code
            next_code += 1
            if next_code > (1 << width) and width < 12:
                width += 1
        else:  # (the table is full: start again)
            emit(clear, width)
            table.clear()
            next_code, width = 258, 9
        prefix = k
    if prefix >= 0:
        emit(prefix, width)
    emit(end, width)
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out)


def encode_gif(frames: np.ndarray, fps: float) -> bytes:
    """Encodes ``T x H x W x C`` uint8 frames (C = 1 or 3) as a looping animated GIF.

    Args:
        frames: The video.
        fps: Frames per second (GIF delays are in hundredths of a second).

    Returns:
        The GIF file's bytes.
    """
    if frames.shape[-1] == 1:
        frames = np.concatenate([frames] * 3, axis=-1)
    frames = frames[..., :3]
    t, h, w, _ = frames.shape
    palette, indices = _palette_indices(frames)
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0xF7, 0, 0) + palette.tobytes())
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    delay = max(1, round(100 / fps))
    for i in range(t):
        out += b"\x21\xf9\x04\x04" + struct.pack("<H", delay) + b"\x00\x00"
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0) + b"\x08"
        data = _lzw(indices[i].tobytes())
        for j in range(0, len(data), 255):
            block = data[j:j + 255]
            out += bytes([len(block)]) + block
        out += b"\x00"
    return bytes(out + b"\x3b")
