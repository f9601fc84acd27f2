# ruff: noqa: E402, F811, N806 (tutorial code as is)
"""The "Python Custom Operators" tutorial (pytorch.org/tutorials/advanced/python_custom_ops),
with NumPy in place of PIL/torchvision for the image ops: wrap a function as a custom op
(``crop``), give it a FakeTensor kernel, use it under torch.compile(fullgraph=True), add
training support (``register_autograd``, whose backward calls a second custom op, ``paste``),
test it with ``opcheck``, and write a mutable custom op (``numpy_sin`` writing into
``output``) used under torch.compile; plus the keyword-only ``numpy_mul`` example of
``register_autograd``'s documentation."""
from collections.abc import Sequence

import numpy as np

import jitgrad as torch

torch.manual_seed(0)
rng = np.random.default_rng(0)
img = torch.from_numpy(rng.random((3, 64, 64), dtype=np.float32))  # a CHW "image" in [0, 1)


# ---- Wrapping a (NumPy) image function as a custom op --------------------------------------
@torch.library.custom_op("mylib::crop", mutates_args=())
def crop(pic: torch.Tensor, box: Sequence[int]) -> torch.Tensor:
    x0, y0, x1, y1 = box
    arr = pic.numpy(force=True)
    cropped = np.ascontiguousarray(arr[:, y0:y1, x0:x1])
    return torch.from_numpy(cropped).to(pic.device, pic.dtype)


cropped_img = crop(img, (10, 10, 50, 50))
print("cropped:", tuple(cropped_img.shape))


# ---- Adding torch.compile support: a fake kernel --------------------------------------------
@crop.register_fake
def _(pic, box):
    channels = pic.shape[0]
    x0, y0, x1, y1 = box
    # (the tutorial's PIL kernel returns a permuted HWC buffer; the NumPy one a contiguous one)
    result = pic.new_empty(channels, y1 - y0, x1 - x0)
    return result


@torch.compile(fullgraph=True)
def f(img):
    return crop(img, (10, 10, 50, 50))


compiled_crop = f(img)
print("compiled crop equals eager:", torch.equal(compiled_crop, cropped_img))


# ---- Adding training support: register_autograd ---------------------------------------------
@torch.library.custom_op("mylib::paste", mutates_args=())
def paste(im1: torch.Tensor, im2: torch.Tensor, coord: Sequence[int]) -> torch.Tensor:
    assert im1.device == im2.device
    assert im1.dtype == im2.dtype
    out = im1.numpy(force=True).copy()
    x0, y0 = coord
    _, h, w = im2.shape
    out[:, y0:y0 + h, x0:x0 + w] = im2.numpy(force=True)
    return torch.from_numpy(out).to(im1.device, im1.dtype)


@paste.register_fake
def _(im1, im2, coord):
    assert im1.device == im2.device
    assert im1.dtype == im2.dtype
    return torch.empty_like(im1)


def backward(ctx, grad_output):
    grad_input = grad_output.new_zeros(ctx.pic_shape)
    grad_input = paste(grad_input, grad_output, ctx.coords)
    return grad_input, None


def setup_context(ctx, inputs, output):
    img, box = inputs
    ctx.coords = box[:2]
    ctx.pic_shape = img.shape


crop.register_autograd(backward, setup_context=setup_context)

img = img.requires_grad_()
result = crop(img, (10, 10, 50, 50))
result.sum().backward()
print("img.grad sum:", img.grad.sum().item())  # 3 x 40 x 40 ones

weights = torch.from_numpy(rng.random((3, 40, 40), dtype=np.float32))
img.grad = None
(crop(img, (10, 10, 50, 50)) * weights).sum().backward()
weighted_grad = img.grad.clone()

x64 = torch.from_numpy(rng.random((2, 9, 9))).requires_grad_()
crop_gradcheck = torch.autograd.gradcheck(lambda t: crop(t, [1, 2, 6, 8]), (x64,))
print("gradcheck:", crop_gradcheck)


# ---- Testing Python custom operators: opcheck -----------------------------------------------
examples = [
    [torch.randn(3, 64, 64), [0, 0, 10, 10]],
    [torch.randn(3, 91, 91, requires_grad=True), [10, 0, 20, 10]],
    [torch.randn(3, 60, 60, dtype=torch.double), [3, 4, 32, 20]],
    [torch.randn(3, 512, 512, requires_grad=True, dtype=torch.double), [3, 4, 32, 45]],
]

opcheck_results = []
for example in examples:
    opcheck_results.append(torch.library.opcheck(crop, example))
print("opcheck:", opcheck_results[-1])


# ---- Mutable Python custom operators --------------------------------------------------------
@torch.library.custom_op("mylib::numpy_sin", mutates_args={"output"}, device_types="cpu")
def numpy_sin(input: torch.Tensor, output: torch.Tensor) -> None:
    assert input.device == output.device
    assert input.device.type == "cpu"
    input_np = input.numpy()
    output_np = output.numpy()
    np.sin(input_np, out=output_np)


@torch.compile(fullgraph=True)
def f(x):
    out = torch.empty(3)
    numpy_sin(x, out)
    return out


x = torch.from_numpy(rng.standard_normal(3).astype(np.float32))
y = f(x)
assert torch.allclose(y, x.sin())

out = torch.zeros(3)
version_before = out._version
numpy_sin(x, out)
mutated_version_bumped = out._version > version_before
numpy_sin_opcheck = torch.library.opcheck(numpy_sin, (x, torch.zeros(3)))


# ---- Keyword-only arguments in the autograd formula ----------------------------------------
@torch.library.custom_op("mylib::numpy_mul", mutates_args=())
def numpy_mul(x: torch.Tensor, *, val: float) -> torch.Tensor:
    x_np = x.numpy(force=True)
    return torch.from_numpy(x_np * val).to(x.device)


@numpy_mul.register_fake
def _(x, *, val):
    return torch.empty_like(x)


def setup_context(ctx, inputs, keyword_only_inputs, output) -> None:
    ctx.val = keyword_only_inputs["val"]


def backward(ctx, grad):
    return grad * ctx.val


numpy_mul.register_autograd(backward, setup_context=setup_context)

xm = torch.randn(3, requires_grad=True)
ym = numpy_mul(xm, val=3.14)
(grad_x,) = torch.autograd.grad(ym, xm, torch.ones_like(ym))
assert torch.allclose(grad_x, torch.full_like(xm, 3.14))
via_namespace = torch.ops.mylib.numpy_mul.default(xm.detach(), val=2.0)
print("numpy_mul ok:", torch.allclose(via_namespace, xm.detach() * 2))
