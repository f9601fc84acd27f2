"""Oracles for ``jitgrad.utils.tensorboard``: torch's summary builders' protos equal ours
field by field, TensorBoard's ``EventAccumulator`` reads our files as it reads the files torch's
``SummaryWriter`` writes for the same calls, the embedding projector's files are torch's, and
a loss-logging script (tests/scripts/tensorboard_recipe.py, written for these tests in the way
the TensorBoard recipe writes torch code) runs. The comparisons skip without torch or
tensorboard installed.
"""

import glob
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard_reader import decode_png, embedding_calls, values

import jitgrad
from jitgrad.utils.tensorboard import SummaryWriter

ROOT = Path(__file__).resolve().parents[1]


# --- a script that logs its training loss --------------------------------------------------

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


def test_add_embedding_matches_torch(tmp_path):
    torch, _, _ = _oracle()
    from google.protobuf import text_format
    from PIL import Image
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with SummaryWriter(tmp_path / "ours") as w:
        embedding_calls(w, lambda a: jitgrad.tensor(a))
    with TorchWriter(tmp_path / "torch") as w:
        embedding_calls(w, lambda a: torch.tensor(a))
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


def _graph_net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 3)
            self.act = nn.ReLU()
            self.seq = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
            self.register_buffer("scale", nn.Parameter(nn.init.ones_(nn.Linear(1, 2).weight))
                                 .detach().reshape(2))

        def forward(self, x):
            h = self.seq(self.act(self.fc1(x)))
            return (h * self.scale).sum(1) * 2, h

    return Net()


def _graph_summary(graph_def) -> list:
    """(scope, op, output shapes, input ops) of every node, without torch's constants."""
    by_name = {n.name: n for n in graph_def.node}
    out = []
    for n in graph_def.node:
        if n.op in ("prim::Constant", "prim::ListConstruct", "prim::GetAttr", "IO Node"):
            continue
        shapes = [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
        inputs = [by_name[i].op for i in n.input
                  if by_name[i].op not in ("prim::Constant", "prim::ListConstruct")]
        out.append((n.name.rsplit("/", 1)[0], n.op, shapes, inputs))
    return sorted(out)


def test_add_graph_draws_torchs_scopes_ops_and_shapes(tmp_path):
    torch, _, _ = _oracle()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    x = np.random.default_rng(8).standard_normal((5, 4)).astype(np.float32)
    model = _graph_net(jitgrad.nn)
    with SummaryWriter(tmp_path / "ours") as w:
        w.add_graph(model, jitgrad.tensor(x))
    assert model.training  # (eval only while recording, as torch)
    with TorchWriter(tmp_path / "torch") as w:
        w.add_graph(_graph_net(torch.nn), torch.tensor(x))
    graphs = []
    for sub in ("ours", "torch"):
        acc = EventAccumulator(str(tmp_path / sub))
        acc.Reload()
        assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]
        graphs.append(acc.Graph())
    ours, theirs = graphs
    assert _graph_summary(ours) == _graph_summary(theirs)
    io_nodes = {n.name: (list(n.input), [[d.size for d in sh.dim]
                                         for sh in n.attr["_output_shapes"].list.shape])
                for n in ours.node if n.op == "IO Node"}
    assert io_nodes["input/x"] == ([], [[5, 4]])
    assert io_nodes["output/output.1"][0][0].startswith("Net/TupleConstruct")
    attrs = {n.name for n in ours.node if n.op == "prim::GetAttr"}
    assert attrs == {"Net/Linear[fc1]/bias", "Net/Linear[fc1]/weight", "Net/scale",
                     "Net/Sequential[seq]/Linear[0]/bias", "Net/Sequential[seq]/Linear[0]/weight"}


def test_video_frames_are_torchs_and_pil_reads_the_gif():
    torch, ts, Summary = _oracle()
    from PIL import Image
    from torch.utils.tensorboard._utils import _prepare_video

    from jitgrad.utils.tensorboard import summary as js
    from jitgrad.utils.tensorboard._convert import prepare_video

    rng = np.random.default_rng(10)
    for shape in ((1, 2, 3, 4, 5), (3, 2, 1, 4, 4), (5, 3, 3, 2, 3), (8, 1, 3, 2, 2)):
        video = rng.integers(0, 3, shape, dtype=np.uint8) * 120
        np.testing.assert_array_equal(prepare_video(video), _prepare_video(video))
        want = (_prepare_video(video) * 255).clip(0, 255).astype(np.uint8)
        if want.shape[-1] == 1:
            want = np.concatenate([want] * 3, -1)
        ours = Summary.FromString(js.video("v", video, fps=5)).value[0].image
        assert (ours.height, ours.width, ours.colorspace) == (*want.shape[1:3], shape[2])
        gif = Image.open(io.BytesIO(ours.encoded_image_string))
        assert gif.n_frames == shape[1] and gif.info["duration"] == 200
        for t in range(shape[1]):
            gif.seek(t)
            np.testing.assert_array_equal(np.asarray(gif.convert("RGB")), want[t])


def test_image_with_boxes_and_rescale_are_torchs_pixels(tmp_path):
    torch, ts, Summary = _oracle()
    from PIL import Image

    from jitgrad.utils.tensorboard import summary as js

    rng = np.random.default_rng(11)
    img = rng.random((3, 30, 40))
    boxes = np.array([[2, 3, 20, 25], [10, 5, 35, 28.5]])
    for kwargs in ({}, {"labels": ["cat", "dog"]}, {"rescale": 0.5}):
        ours = Summary.FromString(js.image_boxes("b", img, boxes, **kwargs)).value[0].image
        theirs = ts.image_boxes("b", img, boxes, **kwargs).value[0].image
        assert (ours.height, ours.width, ours.colorspace) \
            == (theirs.height, theirs.width, theirs.colorspace)
        np.testing.assert_array_equal(
            np.asarray(Image.open(io.BytesIO(ours.encoded_image_string))),
            np.asarray(Image.open(io.BytesIO(theirs.encoded_image_string))))
    with SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("b", jitgrad.tensor(img), jitgrad.tensor(boxes), 1,
                               labels=["only one"])  # (ignored: not one per box)
    png = values(tmp_path, "b")[0][2]["image"]["png"]
    pixels = decode_png(png)
    assert (pixels[3:25, 2] == [255, 0, 0]).all()  # the first box's left edge, red
