"""Python custom operators around NumPy code, written for these tests in the way PyTorch's
"Python Custom Operators" tutorial and the ``torch.library`` docs commonly write them (modelled
on the API usage of those, not a copy of them):

- ``torch.library.custom_op`` wrapping a NumPy window cut of a CHW image (``numpy(force=True)``,
  ``from_numpy(...).to(device, dtype)``), a ``register_fake`` kernel (``new_empty``), the op
  under ``torch.compile(fullgraph=True)``
- ``register_autograd`` whose backward calls a second custom op (a NumPy "place into"),
  ``gradcheck`` in float64, ``torch.library.opcheck`` on several inputs
- a mutating op (``mutates_args={"out"}``, ``device_types="cpu"``) under ``torch.compile`` and
  eagerly (``_version`` bump), and a keyword-only argument reaching ``setup_context`` through
  ``keyword_only_inputs``, called also as ``torch.ops.<ns>.<name>.default``
"""
from collections.abc import Sequence

import numpy as np

import jitgrad as torch

torch.manual_seed(0)
rng = np.random.default_rng(0)
photo = torch.from_numpy(rng.random((3, 64, 64), dtype=np.float32))  # channels, rows, cols
BOX = (10, 10, 50, 50)  # left, top, right, bottom


@torch.library.custom_op("imgdemo::cut", mutates_args=())
def cut(image: torch.Tensor, box: Sequence[int]) -> torch.Tensor:
    """The pixels inside ``box``, copied out with NumPy."""
    left, top, right, bottom = box
    window = image.numpy(force=True)[:, top:bottom, left:right].copy()
    return torch.from_numpy(window).to(image.device, image.dtype)


@cut.register_fake
def _cut_meta(image, box):
    left, top, right, bottom = box
    return image.new_empty(image.shape[0], bottom - top, right - left)


eager_cut = cut(photo, BOX)


@torch.compile(fullgraph=True)
def cut_compiled(image):
    return cut(image, BOX)


compiled_cut = cut_compiled(photo)
print(tuple(eager_cut.shape), "compiled == eager:", torch.equal(compiled_cut, eager_cut))


@torch.library.custom_op("imgdemo::place", mutates_args=())
def place(canvas: torch.Tensor, patch: torch.Tensor, corner: Sequence[int]) -> torch.Tensor:
    """A copy of ``canvas`` with ``patch`` written at (left, top) = ``corner``."""
    assert canvas.device == patch.device and canvas.dtype == patch.dtype
    left, top = corner
    rows, cols = patch.shape[1:]
    result = canvas.numpy(force=True).copy()
    result[:, top:top + rows, left:left + cols] = patch.numpy(force=True)
    return torch.from_numpy(result).to(canvas.device, canvas.dtype)


@place.register_fake
def _place_meta(canvas, patch, corner):
    assert canvas.device == patch.device and canvas.dtype == patch.dtype
    return torch.empty_like(canvas)


def _cut_setup(ctx, inputs, output):
    image, box = inputs
    ctx.image_shape, ctx.corner = image.shape, box[:2]


def _cut_backward(ctx, grad_window):
    # the window's gradient goes back where the window came from; zero elsewhere
    blank = grad_window.new_zeros(ctx.image_shape)
    return place(blank, grad_window, ctx.corner), None


cut.register_autograd(_cut_backward, setup_context=_cut_setup)

photo = photo.requires_grad_()
cut(photo, BOX).sum().backward()
print("gradient total (3 * 40 * 40):", photo.grad.sum().item())
mask_weights = torch.from_numpy(rng.random((3, 40, 40), dtype=np.float32))
photo.grad = None
(mask_weights * cut(photo, BOX)).sum().backward()
weighted_grad = photo.grad.clone()
small = torch.from_numpy(rng.random((2, 9, 9))).requires_grad_()  # float64 for gradcheck
cut_gradcheck = torch.autograd.gradcheck(lambda t: cut(t, [1, 2, 6, 8]), (small,))

cases = [(torch.randn(3, 64, 64), [0, 0, 10, 10]),
         (torch.randn(3, 91, 91, requires_grad=True), [10, 0, 20, 10]),
         (torch.randn(3, 60, 60, dtype=torch.double), [3, 4, 32, 20]),
         (torch.randn(3, 512, 512, requires_grad=True, dtype=torch.double), [3, 4, 32, 45])]
opcheck_results = [torch.library.opcheck(cut, list(case)) for case in cases]
print("opcheck:", opcheck_results[0])


@torch.library.custom_op("imgdemo::sin_into", mutates_args={"out"}, device_types="cpu")
def sin_into(src: torch.Tensor, out: torch.Tensor) -> None:
    """out[:] = sin(src), computed by NumPy straight into out's memory."""
    assert src.device == out.device and src.device.type == "cpu"
    np.sin(src.numpy(), out=out.numpy())


@torch.compile(fullgraph=True)
def sin_compiled(src):
    buf = torch.empty(3)
    sin_into(src, buf)
    return buf


angles = torch.from_numpy(rng.standard_normal(3).astype(np.float32))
sin_result = sin_compiled(angles)
assert torch.allclose(sin_result, angles.sin())
target_buf = torch.zeros(3)
version = target_buf._version
sin_into(angles, target_buf)
mutated_version_bumped = target_buf._version > version
sin_into_opcheck = torch.library.opcheck(sin_into, (angles, torch.zeros(3)))


@torch.library.custom_op("imgdemo::scale", mutates_args=())
def scale(t: torch.Tensor, *, factor: float) -> torch.Tensor:
    return torch.from_numpy(t.numpy(force=True) * factor).to(t.device)


@scale.register_fake
def _scale_meta(t, *, factor):
    return torch.empty_like(t)


def _scale_setup(ctx, inputs, keyword_only_inputs, output) -> None:
    ctx.factor = keyword_only_inputs["factor"]


def _scale_backward(ctx, grad):
    return grad * ctx.factor


scale.register_autograd(_scale_backward, setup_context=_scale_setup)

leaf = torch.randn(3, requires_grad=True)
scaled = scale(leaf, factor=2.5)
(grad_leaf,) = torch.autograd.grad(scaled, leaf, torch.ones_like(scaled))
assert torch.allclose(grad_leaf, torch.full_like(leaf, 2.5))
by_name = torch.ops.imgdemo.scale.default(leaf.detach(), factor=-1.5)
print("scale via torch.ops:", torch.allclose(by_name, -1.5 * leaf.detach()))
