"""The embedding projector's files, as ``torch.utils.tensorboard._embedding``: ``tensors.tsv``,
``metadata.tsv``, ``sprite.png`` and ``projector_config.pbtxt`` (protobuf text format, written
by hand)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ._convert import encode_png, make_grid, make_np


def make_tsv(metadata: list, save_path: str, metadata_header: list | None = None) -> None:
    """Writes ``metadata.tsv``: one label a line, or with a header one tab-separated row each.

    Raises:
        AssertionError: if the header's length is not the rows'.
    """
    if not metadata_header:
        metadata = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError(
                "len of header must be equal to the number of columns in metadata")
        metadata = ["\t".join(str(e) for e in row) for row in [metadata_header] + metadata]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(metadata) + "\n").encode("utf-8"))


def make_sprite(label_img: Any, save_path: str) -> None:
    """Writes ``sprite.png``: the NCHW images tiled into a square grid (floats scaled by 255)."""
    images = make_np(label_img)
    nrow = math.ceil(images.shape[0] ** 0.5)
    arranged_chw = make_grid(images, ncols=nrow)
    square_hwc = np.zeros((arranged_chw.shape[2], arranged_chw.shape[2], 3))
    arranged_hwc = arranged_chw.transpose(1, 2, 0)
    square_hwc[:arranged_hwc.shape[0], :, :] = arranged_hwc
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(encode_png(np.uint8((square_hwc * 255).clip(0, 255))))


def make_mat(matlist: np.ndarray, save_path: str) -> None:
    """Writes ``tensors.tsv``: one tab-separated row per data point."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for x in matlist:
            f.write(("\t".join(str(i.item()) for i in x) + "\n").encode("utf-8"))


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def embedding_info(metadata: Any, label_img: Any, subdir: str, global_step: int,
                   tag: str) -> dict:
    """The fields of one ``EmbeddingInfo`` of the projector config."""
    info: dict = {"tensor_name": f"{tag}:{str(global_step).zfill(5)}"}
    if metadata is not None:
        info["metadata_path"] = os.path.join(subdir, "metadata.tsv")
    if label_img is not None:
        shape = tuple(label_img.shape)
        info["sprite"] = (os.path.join(subdir, "sprite.png"), [shape[3], shape[2]])
    info["tensor_path"] = os.path.join(subdir, "tensors.tsv")
    return info


def projector_config_text(embeddings: list) -> str:
    """A ``ProjectorConfig`` in protobuf text format, as ``text_format.MessageToString``."""
    lines = []
    for info in embeddings:
        lines.append("embeddings {")
        lines.append(f"  tensor_name: {_quote(info['tensor_name'])}")
        if "metadata_path" in info:
            lines.append(f"  metadata_path: {_quote(info['metadata_path'])}")
        if "sprite" in info:
            image_path, dims = info["sprite"]
            lines += ["  sprite {", f"    image_path: {_quote(image_path)}"]
            lines += [f"    single_image_dim: {int(d)}" for d in dims]
            lines.append("  }")
        lines.append(f"  tensor_path: {_quote(info['tensor_path'])}")
        lines.append("}")
    return "".join(line + "\n" for line in lines)


def write_pbtxt(save_path: str, contents: str) -> None:
    """Writes ``projector_config.pbtxt``."""
    with open(os.path.join(save_path, "projector_config.pbtxt"), "wb") as f:
        f.write(contents.encode("utf-8"))
