"""``jitgrad.utils.tensorboard.SummaryWriter`` writes event files that TensorBoard reads.

A pure-Python reader below (TFRecord framing with its CRC-32C checks, protobuf decoding of the
fields the writer emits) reads every method's output back. Where the ``tensorboard`` package
and torch are installed, TensorBoard's own ``EventAccumulator`` reads our files and the files
torch's ``SummaryWriter`` writes for the same calls, and the two must agree; torch's summary
builders' protos are also compared field by field with ours.
"""

import glob
import os
import struct
import subprocess
import sys
import time
import wave
import zlib
from pathlib import Path

import numpy as np
import pytest

import jitgrad
from jitgrad.utils.tensorboard import SummaryWriter
from jitgrad.utils.tensorboard._record import crc32c, masked_crc32c

ROOT = Path(__file__).resolve().parents[1]


# --- a reader for what the writer emits -----------------------------------------------------

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


# --- the file format ------------------------------------------------------------------------

def test_crc32c_known_values():
    assert crc32c(b"") == 0
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4
    crc = crc32c(b"123456789")
    assert masked_crc32c(b"123456789") == \
        ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) % 2**32


def test_crc32c_matches_tensorboard():
    pw = pytest.importorskip("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
    rng = np.random.default_rng(0)
    for n in (1, 7, 100, 1000):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert masked_crc32c(data) == pw.masked_crc32c(data)


def test_event_file_name_and_first_event(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".x") as w:
        assert w.get_logdir() == tmp_path
    (path,) = event_files(tmp_path)
    name = os.path.basename(path)
    parts = name.split(".")
    assert name.startswith("events.out.tfevents.") and name.endswith(".x")
    assert parts[3].isdigit() and len(parts[3]) >= 10
    assert abs(int(parts[3]) - time.time()) < 60
    import socket

    assert f".{socket.gethostname()}.{os.getpid()}." in name
    first = decode_event(records(path)[0])
    assert first["file_version"] == "brain.Event:2"
    assert abs(first["wall_time"] - time.time()) < 60


def test_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    import socket

    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    logdir = w.get_logdir()
    assert logdir.startswith("runs" + os.sep) and logdir.endswith(socket.gethostname() + "_lr0.1")
    stamp = os.path.basename(logdir)[:len("Nov27_18-42-09")]
    assert time.strptime(stamp, "%b%d_%H-%M-%S")
    assert len(event_files(tmp_path / logdir)) == 1


# --- each method, read back -----------------------------------------------------------------

def test_add_scalar_accepts_numbers_numpy_scalars_and_one_element_tensors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 0.5, 0, walltime=100.0)
        w.add_scalar("loss", np.float32(0.25), 1, walltime=101.5)
        w.add_scalar("loss", jitgrad.tensor(0.125), 2, walltime=102.0)
        w.add_scalar("loss", jitgrad.tensor([[2.0]], requires_grad=True) * 1, 3, walltime=103.0)
        w.add_scalar("loss", 7, np.int64(4), walltime=104.0)
        w.add_scalar("zero", 0.0)
        w.add_scalar("bf16", jitgrad.tensor(1.5, dtype=jitgrad.bfloat16), 5)
    got = values(tmp_path, "loss")
    assert [s for s, _, _ in got] == [0, 1, 2, 3, 4]
    assert [t for _, t, _ in got] == [100.0, 101.5, 102.0, 103.0, 104.0]
    assert [v["simple_value"] for _, _, v in got] == [0.5, 0.25, 0.125, 2.0, 7.0]
    ((step, wall, zero),) = values(tmp_path, "zero")
    assert step == 0 and zero["simple_value"] == 0.0 and abs(wall - time.time()) < 60
    assert values(tmp_path, "bf16")[0][2]["simple_value"] == 1.5


def test_add_scalar_new_style(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("a", 1 / 3, 1, new_style=True)
        w.add_scalar("b", 1 / 3, 2, new_style=True, double_precision=True)
    (_, _, a), = values(tmp_path, "a")
    (_, _, b), = values(tmp_path, "b")
    assert a["plugin"][0] == "scalars" and b["plugin"][0] == "scalars"
    assert a["tensor"]["dtype"] == 1 and a["tensor"]["float_val"] == [np.float32(1 / 3)]
    assert b["tensor"]["dtype"] == 2 and b["tensor"]["double_val"] == [1 / 3]


def test_add_scalar_errors_match_torch(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="Tensor should contain one element"):
            w.add_scalar("x", jitgrad.ones(2))
        with pytest.raises(NotImplementedError,
                           match=r"Got <class 'list'>, but numpy array or torch tensor"):
            w.add_scalar("x", [1.0])
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import summary as ts

    from jitgrad.utils.tensorboard import summary as js

    for arg, targ in (([1.0], [1.0]), (jitgrad.ones(2), torch.ones(2))):
        with pytest.raises(Exception) as ours:
            js.scalar("x", arg)
        with pytest.raises(Exception) as theirs:
            ts.scalar("x", targ)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)


def test_add_scalars_writes_each_series_to_its_own_subdirectory(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalars("run/14h", {"xsinx": i * np.sin(i), "xcosx": i * np.cos(i)}, i,
                          walltime=50.0 + i)
        assert set(w.all_writers) == {str(tmp_path), f"{tmp_path}/run_14h_xsinx",
                                      f"{tmp_path}/run_14h_xcosx"}
    for name, fn in (("xsinx", np.sin), ("xcosx", np.cos)):
        got = values(tmp_path / f"run_14h_{name}", "run/14h")
        assert [s for s, _, _ in got] == [0, 1, 2]
        assert [t for _, t, _ in got] == [50.0, 51.0, 52.0]
        np.testing.assert_allclose([v["simple_value"] for _, _, v in got],
                                   [i * fn(i) for i in range(3)], rtol=1e-6, atol=1e-7)
    assert values(tmp_path, "run/14h") == []


def test_add_histogram_tensorflow_bins(tmp_path):
    x = np.random.default_rng(0).standard_normal(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", jitgrad.tensor(x), 3, walltime=7.0)
        w.add_histogram("auto", x, 4, bins="auto")
        w.add_histogram("few", x, 5, bins=64, max_bins=10)
        bins = w.default_bins
    assert len(bins) == 2 * 774 + 1 and bins[774] == 0 and bins[775] == 1e-12
    ((step, wall, v),) = values(tmp_path, "w")
    h = v["histo"]
    assert (step, wall) == (3, 7.0)
    assert h["min"] == x.min() and h["max"] == x.max() and h["num"] == 1000
    np.testing.assert_allclose([h["sum"], h["sum_squares"]], [x.sum(), x @ x])
    counts, limits = np.histogram(x, bins=bins)
    nz = np.flatnonzero(counts)
    assert h["bucket"] == [0.0] + counts[nz[0]:nz[-1] + 1].tolist()
    assert h["bucket_limit"] == limits[nz[0]:nz[-1] + 2].tolist()
    assert sum(values(tmp_path, "auto")[0][2]["histo"]["bucket"]) == 1000
    few = values(tmp_path, "few")[0][2]["histo"]
    assert len(few["bucket"]) == len(few["bucket_limit"]) == 1 + 11  # 64 = 6 * 11 - 2
    assert sum(few["bucket"]) == 1000
    with SummaryWriter(tmp_path / "e") as w, pytest.raises(ValueError,
                                                          match="The input has no element."):
        w.add_histogram("e", np.zeros(0))


def test_add_histogram_raw(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram_raw("r", 0, 9, 10, 45, 285, [1, 5, 9], [1, 4, 5], global_step=2)
        with pytest.raises(ValueError, match=r"len\(bucket_limits\) != len\(bucket_counts\)"):
            w.add_histogram_raw("r", 0, 9, 10, 45, 285, [1, 5], [1, 4, 5])
    h = values(tmp_path, "r")[0][2]["histo"]
    assert (h["min"], h["max"], h["num"], h["sum"], h["sum_squares"]) == (0, 9, 10, 45, 285)
    assert h["bucket_limit"] == [1, 5, 9] and h["bucket"] == [1, 4, 5]


def test_add_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "lr **0.1**, ünïcode", 4, walltime=9.0)
    ((step, wall, v),) = values(tmp_path, "notes/text_summary")
    assert (step, wall) == (4, 9.0)
    assert v["plugin"] == ("text", b"")
    assert v["tensor"]["dtype"] == 7 and v["tensor"]["shape"] == [1]
    assert v["tensor"]["string_val"] == ["lr **0.1**, ünïcode".encode()]


def test_add_image_layouts_and_scaling(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 5, 7)).astype(np.float32)
    hwc_u8 = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    gray = rng.random((5, 4))
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", jitgrad.tensor(chw), 1)
        w.add_image("hwc", hwc_u8, 2, dataformats="HWC")
        w.add_image("hw", gray, 3, dataformats="HW")
        w.add_image("rgba", rng.random((6, 5, 4)), 4, dataformats="HWC")
        with pytest.raises(AssertionError, match="size of input tensor and input format"):
            w.add_image("bad", chw, dataformats="HW")
    expect = {"chw": (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8),
              "hwc": hwc_u8,
              "hw": np.stack([(gray.astype(np.float32) * 255).astype(np.uint8)] * 3, 2)}
    for tag, want in expect.items():
        img = values(tmp_path, tag)[0][2]["image"]
        assert (img["height"], img["width"], img["colorspace"]) == want.shape
        np.testing.assert_array_equal(decode_png(img["png"]), want)
    assert values(tmp_path, "rgba")[0][2]["image"]["colorspace"] == 4


def test_add_images_tiles_a_grid(tmp_path):
    rng = np.random.default_rng(2)
    batch = rng.integers(0, 256, (10, 1, 3, 4), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_images("grid", batch, 0)
        w.add_images("nhwc", batch.transpose(0, 2, 3, 1), 1, dataformats="NHWC")
    for tag in ("grid", "nhwc"):
        img = values(tmp_path, tag)[0][2]["image"]
        pixels = decode_png(img["png"])
        assert pixels.shape == (6, 32, 3)  # 2 rows of 8
        np.testing.assert_array_equal(pixels[0:3, 4:8, 1], batch[1, 0])
        np.testing.assert_array_equal(pixels[3:6, 4:8, 2], batch[9, 0])
        assert not pixels[3:6, 8:].any()


def test_add_audio(tmp_path):
    signal = np.sin(np.linspace(0, 200, 800)) * 0.5
    with SummaryWriter(tmp_path) as w:
        w.add_audio("snd", jitgrad.tensor(signal).unsqueeze(0), 1, sample_rate=8000)
    a = values(tmp_path, "snd")[0][2]["audio"]
    assert (a["sample_rate"], a["num_channels"], a["length_frames"]) == (8000, 1, 800)
    assert a["content_type"] == "audio/wav"
    import io

    with wave.open(io.BytesIO(a["wav"])) as f:
        assert (f.getnchannels(), f.getsampwidth(), f.getframerate()) == (1, 2, 8000)
        pcm = np.frombuffer(f.readframes(800), "<i2")
    np.testing.assert_array_equal(pcm, (signal * 32767).astype("<i2"))


def test_add_pr_curve(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    preds = rng.random(200)
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", jitgrad.tensor(labels), jitgrad.tensor(preds), 1, num_thresholds=11)
    v = values(tmp_path, "pr")[0][2]
    assert v["plugin"][0] == "pr_curves" and fields(v["plugin"][1])[2] == [11]
    assert v["tensor"]["shape"] == [6, 11]
    data = np.array(v["tensor"]["float_val"]).reshape(6, 11)
    tp = [np.sum((preds >= t / 10) & (labels == 1)) for t in range(11)]
    assert data[0, 0] == labels.sum() and data[0].tolist()[1:] == pytest.approx(tp[1:], abs=1)
    assert (data[0] + data[3] == labels.sum()).all()  # TP + FN
    assert (data[1] + data[2] == (1 - labels).sum()).all()  # FP + TN


def test_add_tensor_and_custom_scalars(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_tensor("t", jitgrad.arange(6.0).reshape(2, 3), 1)
        w.add_custom_scalars_multilinechart(["loss/a", "loss/b"], title="losses")
        with pytest.raises(AssertionError, match="Expected 3 tags, got 2."):
            w.add_custom_scalars_marginchart(["a", "b"])
    t = values(tmp_path, "t")[0][2]
    assert t["plugin"][0] == "tensor" and t["tensor"]["shape"] == [2, 3]
    assert t["tensor"]["float_val"] == [0, 1, 2, 3, 4, 5]
    cs = values(tmp_path, "custom_scalars__config__")[0][2]
    assert cs["plugin"][0] == "custom_scalars"
    cat = fields(fields(cs["tensor"]["string_val"][0])[2][0])
    chart = fields(cat[2][0])
    assert cat[1] == [b"default"] and chart[1] == [b"losses"]
    assert fields(chart[2][0])[1] == [b"loss/a", b"loss/b"]


def test_add_hparams_writes_a_subrun(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bsize": 4, "opt": "adam", "skip": None},
                      {"hparam/accuracy": 0.75}, run_name="trial0")
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
            w.add_hparams([], {})
        with pytest.raises(ValueError, match="value should be one of int, float, str, bool"):
            w.add_hparams({"x": [1]}, {})
    sub = tmp_path / "trial0"
    assert values(sub, "hparam/accuracy")[0][2]["simple_value"] == 0.75
    for tag in ("_hparams_/experiment", "_hparams_/session_start_info",
                "_hparams_/session_end_info"):
        assert values(sub, tag)[0][2]["plugin"][0] == "hparams"
    ssi = fields(fields(values(sub, "_hparams_/session_start_info")[0][2]["plugin"][1])[3][0])
    entries = {fields(e)[1][0].decode(): fields(fields(e)[2][0]) for e in ssi[1]}
    assert entries["lr"] == {2: [0.1]} and entries["bsize"] == {2: [4.0]}
    assert entries["opt"] == {3: [b"adam"]} and "skip" not in entries


def test_add_mesh(tmp_path):
    verts = np.arange(12.0).reshape(1, 4, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_mesh("cube", jitgrad.tensor(verts), faces=np.array([[[0, 1, 2]]]), global_step=3,
                   config_dict={"material": {"cls": "PointsMaterial"}})
        with pytest.raises(ValueError, match="Tensor shape should be of shape BxNx3"):
            w.add_mesh("bad", np.zeros((4, 3)))
    ((step, _, v),) = values(tmp_path, "cube_VERTEX")
    assert step == 3 and v["plugin"][0] == "mesh"
    assert v["tensor"]["shape"] == [1, 4, 3] and v["tensor"]["float_val"] == list(range(12))
    content = fields(v["plugin"][1])
    assert content[2] == [b"cube"] and content[3] == [1] and content[7] == [0b110]
    assert content[5] == [b'{"material": {"cls": "PointsMaterial"}}']
    assert values(tmp_path, "cube_FACE")[0][2]["tensor"]["float_val"] == [0, 1, 2]


def test_add_figure_needs_matplotlib(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=20)
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
    img = values(tmp_path, "fig")[0][2]["image"]
    assert (img["height"], img["width"], img["colorspace"]) == (20, 40, 3)


def test_methods_jitgrad_does_not_provide_are_absent():
    for name in ("add_graph", "add_onnx_graph", "add_video", "add_image_with_boxes"):
        assert not hasattr(SummaryWriter, name), name


def test_utils_lists_the_submodule():
    import jitgrad.utils

    assert "tensorboard" in dir(jitgrad.utils)
    assert jitgrad.utils.tensorboard.SummaryWriter is SummaryWriter


# --- buffering, closing, reopening ----------------------------------------------------------

def _count(logdir) -> int:
    return sum(len(records(p)) for p in event_files(logdir))


def test_events_wait_for_max_queue_or_flush(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=3, flush_secs=1000)
    assert _count(tmp_path) == 1  # the file_version event is flushed at once
    w.add_scalar("a", 1.0, 0)
    w.add_scalar("a", 2.0, 1)
    assert _count(tmp_path) == 1
    w.add_scalar("a", 3.0, 2)
    assert _count(tmp_path) == 4
    w.add_scalar("a", 4.0, 3)
    assert _count(tmp_path) == 4
    w.flush()
    assert _count(tmp_path) == 5
    w.add_scalar("a", 5.0, 4)
    w.close()
    assert [v["simple_value"] for _, _, v in values(tmp_path, "a")] == [1, 2, 3, 4, 5]


def test_flush_secs_writes_from_a_background_thread(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=100, flush_secs=0.2)
    try:
        w.add_scalar("a", 1.0, 0)
        deadline = time.time() + 10
        while _count(tmp_path) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert _count(tmp_path) == 2
        thread = w.file_writer.event_writer._thread
        assert thread.daemon and thread.is_alive()
    finally:
        w.close()
    assert not thread.is_alive()  # close stops it


def test_close_twice_then_add_reopens_a_new_file(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.close()
    w.flush()
    time.sleep(1.1)  # (a new file name: the time in it is in whole seconds)
    w.add_scalar("a", 2.0, 1)
    w.close()
    files = event_files(tmp_path)
    assert len(files) == 2
    got = [decode_event(r) for p in files for r in records(p)]
    assert [v["simple_value"] for e in got for v in e.get("values", [])] == [1.0, 2.0]


def test_purge_step_events(tmp_path):
    with SummaryWriter(tmp_path, purge_step=42) as w:
        w.add_scalar("a", 1.0, 42)
    events = read_events(tmp_path)
    assert events[1]["step"] == 42 and events[1]["file_version"] == "brain.Event:2"
    assert events[2]["step"] == 42 and events[2]["session_log_status"] == 1  # START
    assert w.purge_step is None


def test_events_survive_a_script_that_never_closes(tmp_path):
    script = ("import jitgrad\n"
              "from jitgrad.utils.tensorboard import SummaryWriter\n"
              f"w = SummaryWriter({str(tmp_path)!r}, max_queue=1000, flush_secs=1000)\n"
              "for i in range(5):\n"
              "    w.add_scalar('loss', 1.0 / (i + 1), i)\n"
              "w2 = SummaryWriter({!r})\n".format(str(tmp_path / "dropped"))
              + "w2.add_text('t', 'kept', 0)\n"
              "del w2\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [s for s, _, _ in values(tmp_path, "loss")] == [0, 1, 2, 3, 4]
    assert values(tmp_path / "dropped", "t/text_summary")[0][2]["tensor"]["string_val"] \
        == [b"kept"]


# --- the recipe -----------------------------------------------------------------------------

def _run_recipe(cwd: Path, src: str) -> None:
    path = cwd / "recipe.py"
    path.write_text(src)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr


def test_tensorboard_recipe_script(tmp_path):
    src = (ROOT / "tests" / "scripts" / "tensorboard_recipe.py").read_text()
    _run_recipe(tmp_path, src)
    (logdir,) = glob.glob(str(tmp_path / "runs" / "*"))
    got = values(logdir, "Loss/train")
    assert [s for s, _, _ in got] == list(range(10))
    losses = [v["simple_value"] for _, _, v in got]
    assert losses[-1] < losses[0] / 10
    walls = [t for _, t, _ in got]
    assert walls == sorted(walls)
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch_dir = tmp_path / "torch"
    torch_dir.mkdir()
    _run_recipe(torch_dir, src.replace("import jitgrad", "import torch")
                .replace("from jitgrad", "from torch"))
    accs = []
    for d in (logdir, glob.glob(str(torch_dir / "runs" / "*"))[0]):
        acc = EventAccumulator(d)
        acc.Reload()
        accs.append(acc)
    ours, theirs = accs
    assert ours.Tags() == theirs.Tags()
    assert [e.step for e in ours.Scalars("Loss/train")] \
        == [e.step for e in theirs.Scalars("Loss/train")]


# --- oracles: torch's summary protos and TensorBoard's reader -------------------------------

def _oracle():
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import summary as ts

    return torch, ts, Summary


def test_summaries_equal_torchs_protos():
    torch, ts, Summary = _oracle()
    from jitgrad.utils.tensorboard import summary as js

    rng = np.random.default_rng(4)
    x = rng.standard_normal(500)
    labels, preds = rng.integers(0, 2, 100), rng.random(100)
    edges = np.linspace(-4, 4, 30).tolist()
    layout = {"cat": {"multi": ["Multiline", ["a", "b"]], "margin": ["Margin", ["v", "l", "u"]]}}
    cases = [
        (js.scalar("s", jitgrad.tensor(2.5)), ts.scalar("s", torch.tensor(2.5))),
        (js.scalar("s", 0.1, new_style=True), ts.scalar("s", 0.1, new_style=True)),
        (js.scalar("s", 0.1, new_style=True, double_precision=True),
         ts.scalar("s", 0.1, new_style=True, double_precision=True)),
        (js.histogram("h", x, edges), ts.histogram("h", x, edges)),
        (js.histogram("h", jitgrad.tensor(x), "auto", max_bins=7),
         ts.histogram("h", torch.tensor(x), "auto", max_bins=7)),
        (js.histogram_raw("r", 0, 9, 10, 45, 285, [1, 5, 9], [1, 4, 5]),
         ts.histogram_raw("r", 0, 9, 10, 45, 285, [1, 5, 9], [1, 4, 5])),
        (js.text("t", "héllo"), ts.text("t", "héllo")),
        (js.audio("a", x.clip(-1, 1), 16000), ts.audio("a", x.clip(-1, 1), 16000)),
        (js.pr_curve("p", labels, preds, 33), ts.pr_curve("p", labels, preds, 33)),
        (js.pr_curve_raw("p", *np.arange(60.0).reshape(6, 10), num_thresholds=10),
         ts.pr_curve_raw("p", *np.arange(60.0).reshape(6, 10), num_thresholds=10)),
        (js.custom_scalars(layout), ts.custom_scalars(layout)),
        (js.tensor_proto("t", jitgrad.arange(6.0).reshape(2, 3)),
         ts.tensor_proto("t", torch.arange(6.0).reshape(2, 3))),
        (js.tensor_proto("t", jitgrad.tensor([1, -2], dtype=jitgrad.int64)),
         ts.tensor_proto("t", torch.tensor([1, -2], dtype=torch.int64))),
        (js.tensor_proto("t", jitgrad.tensor([0.5, -2], dtype=jitgrad.float16)),
         ts.tensor_proto("t", torch.tensor([0.5, -2], dtype=torch.float16))),
        (js.tensor_proto("t", jitgrad.tensor([1 + 2j])),
         ts.tensor_proto("t", torch.tensor([1 + 2j]))),
    ]
    verts = rng.random((1, 4, 3)).astype(np.float32)
    faces = np.array([[[0, 1, 2], [1, 2, 3]]])
    colors = rng.integers(0, 256, (1, 4, 3))
    cases += [
        (js.mesh("m", jitgrad.tensor(verts), colors, faces, {"camera": {"fov": 75}}),
         ts.mesh("m", torch.tensor(verts), colors, faces, {"camera": {"fov": 75}})),
        (js.mesh("m", verts, None, None, None, display_name="d", description="desc"),
         ts.mesh("m", verts, None, None, None, display_name="d", description="desc")),
    ]
    hp = ({"lr": 0.1, "n": 3, "opt": "sgd", "flag": True, "none": None},
          {"m/acc": 1.0, "m/loss": 2.0}, {"opt": ["sgd", "adam"], "n": [3, 4]})
    for ours, theirs in cases:
        assert Summary.FromString(ours) == theirs, theirs
    # (the hparams plugin's content holds a map, serialized in no fixed order: compare parsed)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    for ours, theirs in zip(js.hparams(*hp), ts.hparams(*hp), strict=True):
        ours = Summary.FromString(ours)
        contents = [HParamsPluginData.FromString(s.value[0].metadata.plugin_data.content)
                    for s in (ours, theirs)]
        assert contents[0] == contents[1]
        for s in (ours, theirs):
            s.value[0].metadata.plugin_data.content = b""
        assert ours == theirs


def test_image_summaries_equal_torchs_pixels():
    torch, ts, Summary = _oracle()
    from PIL import Image

    import io
    from jitgrad.utils.tensorboard import summary as js

    rng = np.random.default_rng(5)
    for arr, fmt in ((rng.random((3, 9, 5)), "CHW"), (rng.random((9, 5, 1)), "HWC"),
                     (rng.integers(0, 256, (7, 6), dtype=np.uint8), "HW"),
                     (rng.random((11, 3, 4, 2)).astype(np.float32), "NCHW"),
                     (rng.random((4, 5, 4)), "HWC")):
        ours = Summary.FromString(js.image("i", arr, dataformats=fmt)).value[0].image
        theirs = ts.image("i", arr, dataformats=fmt).value[0].image
        assert (ours.height, ours.width, ours.colorspace) \
            == (theirs.height, theirs.width, theirs.colorspace)
        pixels = [np.asarray(Image.open(io.BytesIO(s.encoded_image_string)))
                  for s in (ours, theirs)]
        np.testing.assert_array_equal(*pixels)


def _log_everything(w, tensor, rng_seed=6):
    rng = np.random.default_rng(rng_seed)
    for i in range(4):
        w.add_scalar("loss/train", tensor(1.0 / (i + 1)), i, walltime=1000.0 + i)
        w.add_scalars("pair", {"a": float(i), "b": -float(i)}, i, walltime=1000.0 + i)
    w.add_histogram("weights", tensor(rng.standard_normal(300)), 2, walltime=1100.0)
    w.add_histogram("weights", tensor(rng.standard_normal(300) + 1), 3, walltime=1101.0)
    w.add_text("note", "markdown *text*", 1, walltime=1200.0)
    w.add_image("img", tensor(rng.random((3, 6, 8))), 1, walltime=1300.0)
    w.add_images("imgs", tensor(rng.random((3, 3, 4, 4))), 2, walltime=1301.0)
    w.add_audio("snd", tensor(np.sin(np.linspace(0, 50, 400))), 1, sample_rate=8000,
                walltime=1400.0)
    w.add_pr_curve("pr", tensor(rng.integers(0, 2, 50)), tensor(rng.random(50)), 1,
                   walltime=1500.0)
    w.add_hparams({"lr": 0.01, "opt": "adam"}, {"hp/metric": 0.5}, run_name="hp")


def test_tensorboard_reads_our_files_as_it_reads_torchs(tmp_path):
    torch, _, _ = _oracle()
    from PIL import Image

    import io
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with SummaryWriter(tmp_path / "ours") as w:
        _log_everything(w, lambda a: jitgrad.tensor(np.asarray(a)))
    with TorchWriter(tmp_path / "torch") as w:
        _log_everything(w, lambda a: torch.tensor(np.asarray(a)))
    ours_dirs = sorted(os.path.relpath(os.path.dirname(p), tmp_path / "ours")
                       for p in glob.glob(str(tmp_path / "ours" / "**" / "events*"),
                                          recursive=True))
    torch_dirs = sorted(os.path.relpath(os.path.dirname(p), tmp_path / "torch")
                        for p in glob.glob(str(tmp_path / "torch" / "**" / "events*"),
                                           recursive=True))
    assert ours_dirs == torch_dirs == [".", "hp", "pair_a", "pair_b"]

    def load(root, sub):
        acc = EventAccumulator(str(root / sub), size_guidance={"tensors": 0})
        acc.Reload()
        return acc

    for sub in ours_dirs:
        a, b = load(tmp_path / "ours", sub), load(tmp_path / "torch", sub)
        assert a.Tags() == b.Tags(), sub
        for tag in a.Tags()["scalars"]:
            if sub == "hp":  # (add_hparams stamps its metrics with the current time)
                assert [(e.step, e.value) for e in a.Scalars(tag)] \
                    == [(e.step, e.value) for e in b.Scalars(tag)]
            else:
                assert a.Scalars(tag) == b.Scalars(tag)
        for tag in a.Tags()["histograms"]:
            assert a.Histograms(tag) == b.Histograms(tag)
        for tag in a.Tags()["tensors"]:
            assert a.Tensors(tag) == b.Tensors(tag), tag
            assert a.SummaryMetadata(tag) == b.SummaryMetadata(tag), tag
        for tag in a.Tags()["audio"]:
            assert a.Audio(tag) == b.Audio(tag)
        for tag in a.Tags()["images"]:
            for x, y in zip(a.Images(tag), b.Images(tag), strict=True):
                assert (x.wall_time, x.step, x.width, x.height) \
                    == (y.wall_time, y.step, y.width, y.height)
                np.testing.assert_array_equal(
                    np.asarray(Image.open(io.BytesIO(x.encoded_image_string))),
                    np.asarray(Image.open(io.BytesIO(y.encoded_image_string))))
    assert load(tmp_path / "ours", ".").Scalars("loss/train")[3].value == 0.25


def _embedding_calls(w, tensor):
    rng = np.random.default_rng(7)
    meta = [f"word{i}" for i in range(6)]
    w.add_embedding(tensor(rng.standard_normal((6, 3))), metadata=meta,
                    label_img=tensor(rng.random((6, 3, 4, 5))), tag="emb/one%\\")
    w.add_embedding(tensor(rng.standard_normal((6, 2))), global_step=12,
                    metadata=[[m, i] for i, m in enumerate(meta)], metadata_header=["w", "i"])


def test_add_embedding_files(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _embedding_calls(w, lambda a: jitgrad.tensor(a))
        with pytest.raises(AssertionError, match="#labels should equal with #data points"):
            w.add_embedding(np.zeros((2, 2)), metadata=["a"], global_step=99)
    one = tmp_path / "00000" / "emb%2fone%25%5c"
    assert sorted(os.listdir(one)) == ["metadata.tsv", "sprite.png", "tensors.tsv"]
    rows = (one / "tensors.tsv").read_text().splitlines()
    assert len(rows) == 6 and len(rows[0].split("\t")) == 3
    assert (one / "metadata.tsv").read_text() == "".join(f"word{i}\n" for i in range(6))
    sprite = decode_png((one / "sprite.png").read_bytes())
    assert sprite.shape == (15, 15, 3)  # 3 x 3 grid of 5-wide images, squared
    two = tmp_path / "00012" / "default"
    assert (two / "metadata.tsv").read_text().splitlines()[:2] == ["w\ti", "word0\t0"]
    config = (tmp_path / "projector_config.pbtxt").read_text()
    assert config.count("embeddings {") == 2
    assert 'tensor_name: "emb/one%\\\\:00000"' in config
    assert "single_image_dim: 5\n    single_image_dim: 4" in config
    assert 'tensor_path: "00012/default/tensors.tsv"' in config


def test_add_embedding_matches_torch(tmp_path):
    torch, _, _ = _oracle()
    from google.protobuf import text_format
    from PIL import Image
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with SummaryWriter(tmp_path / "ours") as w:
        _embedding_calls(w, lambda a: jitgrad.tensor(a))
    with TorchWriter(tmp_path / "torch") as w:
        _embedding_calls(w, lambda a: torch.tensor(a))
    for root, _, files in os.walk(tmp_path / "torch"):
        for name in files:
            if name.startswith("events."):
                continue
            theirs = Path(root) / name
            ours = tmp_path / "ours" / theirs.relative_to(tmp_path / "torch")
            if name == "sprite.png":
                np.testing.assert_array_equal(decode_png(ours.read_bytes()),
                                              np.asarray(Image.open(theirs)))
            else:
                assert ours.read_bytes() == theirs.read_bytes(), name
    text = (tmp_path / "ours" / "projector_config.pbtxt").read_text()
    assert len(text_format.Parse(text, ProjectorConfig()).embeddings) == 2
