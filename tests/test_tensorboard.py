"""``jitgrad.utils.tensorboard.SummaryWriter`` writes event files that TensorBoard reads.

A pure-Python reader (tests/tensorboard_reader.py: TFRecord framing with its CRC-32C checks,
protobuf decoding of the fields the writer emits) reads every method's output back here;
tests/test_tensorboard_oracle.py compares with torch's SummaryWriter and TensorBoard's reader.
"""

import os
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest
from tensorboard_reader import (
    decode_event,
    decode_gif,
    decode_png,
    embedding_calls,
    event_files,
    fields,
    read_events,
    records,
    values,
)

import jitgrad
from jitgrad.utils.tensorboard import SummaryWriter
from jitgrad.utils.tensorboard._record import crc32c, masked_crc32c

ROOT = Path(__file__).resolve().parents[1]


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


def test_add_video_is_an_animated_gif(tmp_path):
    rng = np.random.default_rng(9)
    few_colors = rng.integers(0, 4, (3, 5, 3, 6, 7), dtype=np.uint8) * 85  # N T C H W
    many = rng.random((1, 4, 3, 40, 40))
    with SummaryWriter(tmp_path) as w:
        w.add_video("v", jitgrad.tensor(few_colors), 1, fps=10)
        w.add_video("noise", many, 2)
    img = values(tmp_path, "v")[0][2]["image"]
    assert (img["height"], img["width"], img["colorspace"]) == (6, 28, 3)  # 3 -> 1 x 4 grid
    frames, delays = decode_gif(img["png"])
    assert frames.shape == (5, 6, 28, 3) and delays == [10] * 5
    np.testing.assert_array_equal(frames[:, :, :7], few_colors[0].transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(frames[:, :, 14:21], few_colors[2].transpose(0, 2, 3, 1))
    assert not frames[:, :, 21:].any()  # (the padding video)
    img = values(tmp_path, "noise")[0][2]["image"]
    frames, delays = decode_gif(img["png"])  # (more than 4096 LZW codes: the table restarts)
    want = (many[0].transpose(0, 2, 3, 1).astype(np.float32) * 255).astype(np.uint8)
    assert frames.shape == want.shape and delays == [25] * 4
    assert np.abs(frames.astype(int) - want).max() <= 26  # (the fixed 6x7x6 palette)


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


def test_add_graph_records_calls_scoped_by_module(tmp_path):
    nn = jitgrad.nn

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(8, 3))

        def forward(self, img, steps):
            h = self.conv(img)
            for _ in range(steps.shape[0]):  # (Python control flow: followed for these inputs)
                h = jitgrad.relu(h)
            return self.head(h)

    model = ConvNet()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, (jitgrad.randn(2, 1, 4, 4), jitgrad.zeros(2)))
    assert model.training
    events = read_events(tmp_path)
    graph_events = [e for e in events if "graph_def" in e]
    assert len(graph_events) == 1
    tagged = [e for e in events if "tagged_run_metadata" in e]
    assert fields(tagged[0]["tagged_run_metadata"])[1] == [b"step1"]
    nodes = {}
    for raw in fields(graph_events[0]["graph_def"])[1]:
        f = fields(raw)
        nodes[f[1][0].decode()] = (f[2][0].decode(), [i.decode() for i in f.get(3, [])])
    ops = sorted(op for op, _ in nodes.values())
    assert ops == ["IO Node"] * 3 + ["aten::conv2d", "aten::flatten", "aten::linear"] \
        + ["aten::relu"] * 2 + ["prim::GetAttr"] * 4
    assert nodes["input/img"] == ("IO Node", []) and nodes["input/steps"] == ("IO Node", [])
    conv = [n for n in nodes if n.startswith("ConvNet/Conv2d[conv]/conv2d")]
    assert nodes[conv[0]][1] == ["input/img", "ConvNet/Conv2d[conv]/weight",
                                 "ConvNet/Conv2d[conv]/bias"]
    (linear,) = [n for n, (op, _) in nodes.items() if op == "aten::linear"]
    assert linear.startswith("ConvNet/Sequential[head]/Linear[1]/")
    assert nodes["output/output.1"][1] == [linear]


def test_add_figure_needs_matplotlib(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=20)
    fig.patch.set_facecolor((1.0, 0.0, 0.0))
    figs = [plt.figure(figsize=(2, 1), dpi=20) for _ in range(2)]
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
        w.add_figure("figs", figs, 1, close=False)
    img = values(tmp_path, "fig")[0][2]["image"]
    assert (img["height"], img["width"], img["colorspace"]) == (20, 40, 3)
    assert (decode_png(img["png"]) == [255, 0, 0]).all()
    assert not plt.fignum_exists(fig.number) and plt.fignum_exists(figs[0].number)
    img = values(tmp_path, "figs")[0][2]["image"]
    assert (img["height"], img["width"]) == (20, 80)  # (a list: a grid, side by side)
    plt.close("all")


def test_methods_jitgrad_does_not_provide_are_absent():
    for name in ("add_onnx_graph",):
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


def test_threads_may_share_a_writer(tmp_path):
    import threading

    with SummaryWriter(tmp_path, max_queue=7, flush_secs=0.01) as w:
        def log(k):
            for i in range(200):
                w.add_scalar(f"t{k}", float(i), i)

        threads = [threading.Thread(target=log, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k in range(4):  # (every record's CRCs are checked as it is read)
        assert [v["simple_value"] for _, _, v in values(tmp_path, f"t{k}")] \
            == [float(i) for i in range(200)]


def test_flush_secs_zero_writes_each_event_at_once(tmp_path):
    with SummaryWriter(tmp_path, flush_secs=0) as w:
        assert w.file_writer.event_writer._thread is None
        w.add_scalar("a", 1.0, 0)
        assert _count(tmp_path) == 2


def test_close_twice_then_add_reopens_a_new_file(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.close()
    w.flush()
    w.add_scalar("a", 2.0, 1)  # (a new file: its name's counter differs)
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


def test_add_embedding_files(tmp_path):
    with SummaryWriter(tmp_path) as w:
        embedding_calls(w, lambda a: jitgrad.tensor(a))
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
