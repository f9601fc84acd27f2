"""A pure-Python reader of TensorBoard event files, for the tests of
``jitgrad.utils.tensorboard``: TFRecord framing with its CRC-32C checks and protobuf decoding of
the fields the writer emits (``tests/test_tensorboard*.py``)."""

import glob
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from jitgrad.utils.tensorboard._record import masked_crc32c

def _varint(buf: bytes, i: int) -> tuple:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def fields(buf: bytes) -> dict:
    """Field number -> list of raw values (ints, floats, bytes) in wire order."""
    out: dict = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v = struct.unpack_from("<d", buf, i)[0]
            i += 8
        elif wire == 5:
            v = struct.unpack_from("<f", buf, i)[0]
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            v = bytes(buf[i:i + n])
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(v)
    return out


def records(path: str) -> list:
    """The records of a TFRecord file, each checked against its two masked CRC-32Cs."""
    data = Path(path).read_bytes()
    out, i = [], 0
    while i < len(data):
        header = data[i:i + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == masked_crc32c(header)
        payload = data[i + 12:i + 12 + length]
        assert struct.unpack("<I", data[i + 12 + length:i + 16 + length])[0] \
            == masked_crc32c(payload)
        out.append(payload)
        i += 16 + length
    assert i == len(data)
    return out


def _last(f: dict, n: int, default=None):
    return f[n][-1] if n in f else default


def decode_value(buf: bytes) -> dict:
    f = fields(buf)
    v = {"tag": _last(f, 1, b"").decode()}
    if 2 in f:
        v["simple_value"] = f[2][-1]
    if 5 in f:
        h = fields(f[5][-1])
        v["histo"] = {"min": _last(h, 1, 0.0), "max": _last(h, 2, 0.0), "num": _last(h, 3, 0.0),
                      "sum": _last(h, 4, 0.0), "sum_squares": _last(h, 5, 0.0),
                      "bucket_limit": np.frombuffer(_last(h, 6, b""), "<f8").tolist(),
                      "bucket": np.frombuffer(_last(h, 7, b""), "<f8").tolist()}
    if 4 in f:
        m = fields(f[4][-1])
        v["image"] = {"height": _last(m, 1), "width": _last(m, 2), "colorspace": _last(m, 3),
                      "png": _last(m, 4)}
    if 6 in f:
        a = fields(f[6][-1])
        v["audio"] = {"sample_rate": _last(a, 1), "num_channels": _last(a, 2),
                      "length_frames": _last(a, 3), "wav": _last(a, 4),
                      "content_type": _last(a, 5).decode()}
    if 8 in f:
        t = fields(f[8][-1])
        shape = [_last(fields(d), 1, 0) for d in fields(_last(t, 2, b"")).get(2, [])]
        v["tensor"] = {"dtype": _last(t, 1), "shape": shape, "string_val": t.get(8, []),
                       "float_val": np.frombuffer(_last(t, 5, b""), "<f4").tolist(),
                       "double_val": np.frombuffer(_last(t, 6, b""), "<f8").tolist()}
    if 9 in f:
        pd = fields(fields(f[9][-1])[1][-1])
        v["plugin"] = (pd[1][-1].decode(), _last(pd, 2, b""))
    return v


def decode_event(buf: bytes) -> dict:
    f = fields(buf)
    e = {"wall_time": _last(f, 1), "step": _last(f, 2, 0)}
    if 3 in f:
        e["file_version"] = f[3][-1].decode()
    if 5 in f:
        e["values"] = [decode_value(v) for v in fields(f[5][-1]).get(1, [])]
    if 7 in f:
        e["session_log_status"] = _last(fields(f[7][-1]), 1)
    if 4 in f:
        e["graph_def"] = f[4][-1]
    if 8 in f:
        e["tagged_run_metadata"] = f[8][-1]
    if 10 in f:
        e["source_writer"] = fields(f[10][-1])[1][-1].decode()
    return e


def event_files(logdir) -> list:
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def read_events(logdir) -> list:
    (path,) = event_files(logdir)
    return [decode_event(r) for r in records(path)]


def values(logdir, tag: str) -> list:
    """(step, wall_time, decoded value) of every summary value with ``tag``."""
    return [(e["step"], e["wall_time"], v) for e in read_events(logdir)
            for v in e.get("values", []) if v["tag"] == tag]


def decode_png(png: bytes) -> np.ndarray:
    """The HWC pixels of a non-interlaced 8-bit PNG (all five row filters)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    i, idat = 8, b""
    while i < len(png):
        (n,) = struct.unpack(">I", png[i:i + 4])
        kind, data = png[i + 4:i + 8], png[i + 8:i + 8 + n]
        assert struct.unpack(">I", png[i + 8 + n:i + 12 + n])[0] == zlib.crc32(kind + data)
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", data[:10])
        elif kind == b"IDAT":
            idat += data
        i += 12 + n
    assert depth == 8
    c = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    out = np.zeros((h, w * c), np.int32)
    for y in range(h):
        ft, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        prev = out[y - 1] if y else np.zeros(w * c, np.int32)
        cur = np.zeros(w * c, np.int32)
        for x in range(w * c):
            a = cur[x - c] if x >= c else 0
            b = prev[x]
            cc = prev[x - c] if x >= c else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
            cur[x] = (row[x] + p) & 0xFF
        out[y] = cur
    return out.astype(np.uint8).reshape(h, w, c)


def embedding_calls(w, tensor):
    """Two ``add_embedding`` calls, the same for our writer and torch's."""
    rng = np.random.default_rng(7)
    meta = [f"word{i}" for i in range(6)]
    w.add_embedding(tensor(rng.standard_normal((6, 3))), metadata=meta,
                    label_img=tensor(rng.random((6, 3, 4, 5))), tag="emb/one%\\")
    w.add_embedding(tensor(rng.standard_normal((6, 2))), global_step=12,
                    metadata=[[m, i] for i, m in enumerate(meta)], metadata_header=["w", "i"])


def decode_gif(gif: bytes) -> tuple:
    """(frames T x H x W x 3, delays in 1/100 s) of a GIF with a global palette and full-size,
    non-interlaced frames (what the writer emits)."""
    assert gif[:6] == b"GIF89a"
    w, h, packed = struct.unpack("<HHB", gif[6:11])
    assert packed & 0x80
    n = 2 << (packed & 7)
    palette = np.frombuffer(gif[13:13 + 3 * n], np.uint8).reshape(n, 3)
    i, frames, delays = 13 + 3 * n, [], []
    while gif[i] != 0x3B:
        if gif[i] == 0x21:  # an extension: its sub-blocks
            if gif[i + 1] == 0xF9:
                delays.append(struct.unpack("<H", gif[i + 4:i + 6])[0])
            i += 2
            while gif[i]:
                i += 1 + gif[i]
            i += 1
            continue
        assert gif[i] == 0x2C
        assert struct.unpack("<HHHHB", gif[i + 1:i + 10]) == (0, 0, w, h, 0)
        min_size = gif[i + 10]
        i += 11
        data = b""
        while gif[i]:
            data += gif[i + 1:i + 1 + gif[i]]
            i += 1 + gif[i]
        i += 1
        frames.append(palette[np.array(_lzw_decode(data, min_size), np.uint8)].reshape(h, w, 3))
    return np.stack(frames), delays


def _lzw_decode(data: bytes, min_size: int) -> list:
    clear, end = 1 << min_size, (1 << min_size) + 1
    bits = int.from_bytes(data, "little")
    pos, total = 0, len(data) * 8
    out: list = []
    table: list = []
    width, prev = min_size + 1, None
    while pos + width <= total:
        code = (bits >> pos) & ((1 << width) - 1)
        pos += width
        if code == clear:
            table = [[k] for k in range(clear)] + [None, None]
            width, prev = min_size + 1, None
            continue
        if code == end:
            break
        if prev is None:
            entry = table[code]
        else:
            entry = table[code] if code < len(table) else prev + prev[:1]
            table.append(prev + entry[:1])
            if len(table) == 1 << width and width < 12:
                width += 1
        out += entry
        prev = entry
    return out
