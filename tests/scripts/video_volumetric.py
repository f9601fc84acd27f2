# ruff: noqa: N812 (the usual F alias)
"""Video and volumetric models written for these tests the way public PyTorch code writes them
(torchvision's video ResNet R(2+1)D and C3D-style stems, a 3D U-Net as medical segmentation
code writes it, the TSM temporal shift; in plain torch, no torchvision, not a copy of any):

- ``nn.Conv3d`` with stride, padding, dilation, groups, ``padding='same'`` (odd and even
  kernels, dilated), ``padding_mode`` 'replicate' / 'circular' / 'reflect'; torchvision's
  factorised ``Conv2Plus1D`` (a (1, k, k) spatial conv, BatchNorm3d, ReLU, a (k, 1, 1)
  temporal conv with its ``midplanes`` formula);
- ``nn.BatchNorm3d`` in train and eval (running stats, ``momentum=None``, num_batches_tracked),
  ``nn.InstanceNorm3d(affine=True)``, ``nn.GroupNorm`` on 5-D input;
- ``nn.MaxPool3d(return_indices=True)`` and ``nn.MaxUnpool3d`` (with ``output_size``),
  ``nn.AvgPool3d`` (``ceil_mode``, ``count_include_pad=False``, ``divisor_override``),
  ``nn.AdaptiveAvgPool3d`` / ``nn.AdaptiveMaxPool3d`` (non-divisible sizes, ``None`` entries,
  ``return_indices``);
- ``nn.ConvTranspose3d`` with ``output_padding``, groups, dilation and ``output_size``;
  ``F.interpolate`` trilinear (``align_corners`` True/False, size and scale factor) and nearest
  on 5-D input, ``nn.Upsample``;
- (B, T, C, H, W) <-> (B, C, T, H, W) permutes, TSM's temporal shift by slicing (zero fill),
  by ``torch.roll`` (cyclic) and by slicing + ``torch.cat``, and TSM's in-place shift as a
  ``torch.autograd.Function`` whose backward shifts the gradient back; TSM's temporal
  ``MaxPool3d((3, 1, 1))``;
- ``F.pad`` of 5-D input with a 6-tuple (constant, replicate, reflect, circular);
- a tiny 3D U-Net (Conv3d + InstanceNorm3d / GroupNorm + LeakyReLU, MaxPool3d, ConvTranspose3d,
  skip ``torch.cat``) trained with soft Dice + ``BCEWithLogitsLoss`` on synthetic blobs by Adam;
- a tiny R(2+1)D video classifier (torchvision's initialisation: kaiming_normal_ fan_out,
  BatchNorm ones/zeros, Linear normal(0, 0.01)) trained on moving blobs by SGD(momentum,
  nesterov) + StepLR, and a TSM 2-D ResNet-lite by SGD(nesterov) + CosineAnnealingLR;
- ``torch.autograd.gradcheck`` in float64 on small conv3d / conv_transpose3d / pool3d /
  interpolate / pad / temporal-shift cases.

Sections marked "(recorded)" keep what the tests compare with the same script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}
dt = torch.float64

# ------------------------------------------------------------ Conv3d variants (recorded)

x = torch.randn(1, 2, 4, 6, 6, dtype=dt, requires_grad=True)
conv_cases = {
    "stride": dict(in_channels=2, out_channels=4, kernel_size=3, stride=(1, 2, 2), padding=1),
    "dilation": dict(in_channels=2, out_channels=3, kernel_size=(2, 3, 3), dilation=(1, 2, 2),
                     padding=(0, 2, 2)),
    "groups": dict(in_channels=2, out_channels=4, kernel_size=(1, 3, 3), groups=2,
                   padding=(0, 1, 1), bias=False),
    "same": dict(in_channels=2, out_channels=3, kernel_size=3, padding="same"),
    "same_even": dict(in_channels=2, out_channels=3, kernel_size=(2, 4, 3), padding="same"),
    "same_dilated": dict(in_channels=2, out_channels=3, kernel_size=(2, 3, 3),
                         padding="same", dilation=(2, 1, 2)),
    "replicate": dict(in_channels=2, out_channels=3, kernel_size=3, padding=1,
                      padding_mode="replicate"),
    "circular": dict(in_channels=2, out_channels=3, kernel_size=3, padding=(1, 2, 1),
                     padding_mode="circular"),
    "reflect": dict(in_channels=2, out_channels=3, kernel_size=3, padding=1, stride=2,
                    padding_mode="reflect"),
}
conv_out, conv_grads, conv_shapes = {}, {}, {}
for name, kwargs in conv_cases.items():
    conv = nn.Conv3d(**kwargs).double()
    out = conv(x)
    conv_shapes[name] = tuple(out.shape)
    grads = torch.autograd.grad((out * out.detach().sin()).sum(),
                                [x] + list(conv.parameters()))
    conv_out[name] = out.detach()
    conv_grads[name] = {"x": grads[0], "weight": grads[1]}
    if conv.bias is not None:
        conv_grads[name]["bias"] = grads[2]
fixed_results["conv3d"] = conv_out
fixed_results["conv3d_grads"] = conv_grads

# 'same' on a stride-1 conv keeps (T, H, W); replicate padding by hand is the same conv
conv = nn.Conv3d(2, 3, 3, padding=1, padding_mode="replicate").double()
by_hand = F.conv3d(F.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"), conv.weight, conv.bias)
replicate_by_hand_error = (conv(x) - by_hand).abs().max().item()
conv = nn.Conv3d(2, 3, 3, padding=(1, 2, 1), padding_mode="circular").double()
by_hand = F.conv3d(F.pad(x, (1, 1, 2, 2, 1, 1), mode="circular"), conv.weight, conv.bias)
circular_by_hand_error = (conv(x) - by_hand).abs().max().item()


class Conv2Plus1D(nn.Sequential):
    """torchvision's factorised convolution: spatial (1, 3, 3), then temporal (3, 1, 1)."""

    def __init__(self, in_planes, out_planes, midplanes, stride=1, padding=1):
        super().__init__(
            nn.Conv3d(in_planes, midplanes, kernel_size=(1, 3, 3), stride=(1, stride, stride),
                      padding=(0, padding, padding), bias=False),
            nn.BatchNorm3d(midplanes),
            nn.ReLU(inplace=True),
            nn.Conv3d(midplanes, out_planes, kernel_size=(3, 1, 1), stride=(stride, 1, 1),
                      padding=(padding, 0, 0), bias=False),
        )

    @staticmethod
    def get_downsample_stride(stride):
        return stride, stride, stride


def midplanes_for(inplanes, planes):
    return (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)


# the (2+1)D factorisation with an identity BatchNorm is one full 3x3x3 conv of rank-1 kernels
torch.manual_seed(1)
c21 = Conv2Plus1D(2, 3, midplanes_for(2, 3)).double().eval()
with torch.no_grad():
    c21[2] = nn.Identity()  # (no ReLU: the composition is linear)
    spatial, temporal = c21[0].weight, c21[3].weight  # (M, 2, 1, 3, 3), (3, M, 3, 1, 1)
    full = torch.einsum("omt,mihw->oithw", temporal[:, :, :, 0, 0], spatial[:, :, 0])
fixed_results["conv2plus1d"] = c21(x).detach()
factorised_error = (c21(x) - F.conv3d(x, full, padding=1) /
                    (1 + c21[1].eps) ** 0.5).abs().max().item()
midplanes = {(64, 64): midplanes_for(64, 64), (3, 45): midplanes_for(3, 45),
             (128, 256): midplanes_for(128, 256)}

# --------------------------------------------------------- BatchNorm3d, norms (recorded)

torch.manual_seed(2)
bn = nn.BatchNorm3d(3).double()
bn_cumulative = nn.BatchNorm3d(3, momentum=None).double()
batches = [torch.randn(2, 3, 2, 3, 3, dtype=dt) * (i + 1) + i for i in range(3)]
bn_train_out = []
for b in batches:
    bn_train_out.append(bn(b).detach())
    bn_cumulative(b)
cumulative_mean = torch.stack([b.mean(dim=(0, 2, 3, 4)) for b in batches]).mean(0)
bn.eval()
xb = batches[0].clone().requires_grad_()
bn_eval = bn(xb)
bn_eval_grad = torch.autograd.grad(bn_eval.pow(2).sum(), [xb, bn.weight, bn.bias])
fixed_results["batchnorm3d"] = {
    "train_out": torch.stack(bn_train_out), "running_mean": bn.running_mean.clone(),
    "running_var": bn.running_var.clone(), "eval_out": bn_eval.detach(),
    "eval_grad_x": bn_eval_grad[0], "eval_grad_weight": bn_eval_grad[1],
    "cumulative_mean": bn_cumulative.running_mean.clone(),
    "cumulative_var": bn_cumulative.running_var.clone(),
}
bn_batches_tracked = int(bn.num_batches_tracked)
cumulative_mean_error = (bn_cumulative.running_mean - cumulative_mean).abs().max().item()

# train-mode BatchNorm3d gradients, InstanceNorm3d(affine), GroupNorm on 5-D input
bn.train()
xb = batches[1].clone().requires_grad_()
out = bn(xb)
bn_train_grad = torch.autograd.grad((out * out.detach().cos()).sum(), [xb, bn.weight])
inorm = nn.InstanceNorm3d(3, affine=True).double()
gnorm = nn.GroupNorm(1, 3).double()
with torch.no_grad():
    inorm.weight.copy_(torch.tensor([0.5, 1.0, 2.0]))
    inorm.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    gnorm.weight.uniform_(0.5, 1.5)
norm_out, norm_grads = {}, {}
for name, module in (("instance", inorm), ("group", gnorm)):
    out = module(xb)
    norm_out[name] = out.detach()
    norm_grads[name] = dict(zip(("x", "weight", "bias"), torch.autograd.grad(
        (out * out.detach().cos()).sum(), [xb, module.weight, module.bias])))
fixed_results["batchnorm3d_train_grads"] = dict(zip(("x", "weight"), bn_train_grad))
fixed_results["norms"] = norm_out
fixed_results["norm_grads"] = norm_grads
group_of_one_channel = nn.GroupNorm(3, 3, affine=False).double()
instance_vs_group_error = (F.instance_norm(xb) - group_of_one_channel(xb)).abs().max().item()
instance_running = nn.InstanceNorm3d(3, track_running_stats=True).double()
instance_running(xb)
fixed_results["instance_running_mean"] = instance_running.running_mean.clone()

# ------------------------------------------------------------------ pooling (recorded)

torch.manual_seed(3)
v = torch.randn(2, 2, 5, 7, 7, dtype=dt, requires_grad=True)
pool = nn.MaxPool3d(3, stride=2, padding=1, return_indices=True)
pooled, indices = pool(v)
unpool = nn.MaxUnpool3d(3, stride=2, padding=1)
restored = unpool(pooled, indices, output_size=v.shape)
# every pooled value is the input at its flat (T*H*W) index
gathered = v.flatten(2).gather(2, indices.flatten(2)).view_as(pooled)
unpool_matches = bool((restored.flatten(2).gather(2, indices.flatten(2)).view_as(pooled)
                       == pooled).all())
pool_ceil, idx_ceil = F.max_pool3d(v, (2, 2, 2), stride=2, ceil_mode=True, return_indices=True)
restored_ceil = F.max_unpool3d(pool_ceil, idx_ceil, 2, stride=2, output_size=(5, 7, 7))
pool_results = {
    "max": pooled, "max_indices": indices, "unpool": restored,
    "max_ceil": pool_ceil, "max_ceil_indices": idx_ceil, "unpool_ceil": restored_ceil,
    "max_dilated": F.max_pool3d(v, 2, stride=1, dilation=(1, 2, 2)),
    "avg_ceil": nn.AvgPool3d(2, stride=2, ceil_mode=True)(v),
    "avg_no_pad_count": nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False)(v),
    "avg_pad_count": nn.AvgPool3d(3, stride=2, padding=1)(v),
    "avg_ceil_no_pad": nn.AvgPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1),
                                    ceil_mode=True, count_include_pad=False)(v),
    "avg_divisor": F.avg_pool3d(v, 2, divisor_override=3),
    "adaptive_avg": nn.AdaptiveAvgPool3d((2, 3, 4))(v),
    "adaptive_avg_one": nn.AdaptiveAvgPool3d(1)(v),
    "adaptive_avg_none": nn.AdaptiveAvgPool3d((1, None, None))(v),
    "adaptive_max": nn.AdaptiveMaxPool3d((3, 2, 5))(v),
}
adaptive_max, adaptive_idx = nn.AdaptiveMaxPool3d((2, 3, 3), return_indices=True)(v)
pool_results["adaptive_max_ri"] = adaptive_max
pool_results["adaptive_max_indices"] = adaptive_idx
pool_grads = {}
for name, out in pool_results.items():
    if out.dtype == dt and out.requires_grad:
        w = torch.linspace(-1, 1, out.numel(), dtype=dt).view_as(out)
        pool_grads[name] = torch.autograd.grad((out * w).sum(), v, retain_graph=True)[0]
fixed_results["pool"] = {k: t.detach() for k, t in pool_results.items()}
fixed_results["pool_grads"] = pool_grads
pool_shapes = {k: tuple(t.shape) for k, t in pool_results.items()}
gather_error = (gathered - pooled).abs().max().item()

# ------------------------------------------------ ConvTranspose3d, interpolate (recorded)

torch.manual_seed(4)
y = torch.randn(1, 4, 2, 3, 3, dtype=dt, requires_grad=True)
transpose_cases = {
    "stride2": dict(in_channels=4, out_channels=2, kernel_size=2, stride=2),
    "output_padding": dict(in_channels=4, out_channels=3, kernel_size=3, stride=2, padding=1,
                           output_padding=1),
    "mixed": dict(in_channels=4, out_channels=2, kernel_size=(1, 3, 3), stride=(1, 2, 2),
                  padding=(0, 1, 1), output_padding=(0, 1, 0)),
    "groups_dilation": dict(in_channels=4, out_channels=4, kernel_size=3, stride=2, groups=2,
                            dilation=(1, 2, 1), padding=1, bias=False),
}
transpose_out, transpose_grads, transpose_shapes = {}, {}, {}
for name, kwargs in transpose_cases.items():
    deconv = nn.ConvTranspose3d(**kwargs).double()
    out = deconv(y)
    transpose_shapes[name] = tuple(out.shape)
    grads = torch.autograd.grad((out * out.detach().sin()).sum(), [y, deconv.weight])
    transpose_out[name] = out.detach()
    transpose_grads[name] = dict(zip(("y", "weight"), grads))
deconv = nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1).double()
transpose_out["output_size"] = deconv(y, output_size=(4, 6, 6)).detach()
transpose_shapes["output_size"] = tuple(transpose_out["output_size"].shape)
fixed_results["conv_transpose3d"] = transpose_out
fixed_results["conv_transpose3d_grads"] = transpose_grads
# a transposed conv is the gradient of the conv with the same weight
conv_input = torch.zeros(1, 3, 4, 6, 6, dtype=dt, requires_grad=True)
deconv = nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1, output_padding=1, bias=False).double()
adjoint = torch.autograd.grad(F.conv3d(conv_input, deconv.weight, stride=2, padding=1), conv_input,
                              y.detach())[0]
adjoint_error = (adjoint - deconv(y)).abs().max().item()

interp_out, interp_grads = {}, {}
interp_cases = {
    "trilinear_ac": dict(scale_factor=2, mode="trilinear", align_corners=True),
    "trilinear": dict(scale_factor=2, mode="trilinear", align_corners=False),
    "trilinear_size": dict(size=(3, 5, 7), mode="trilinear", align_corners=False),
    "trilinear_size_ac": dict(size=(3, 5, 7), mode="trilinear", align_corners=True),
    "trilinear_down": dict(size=(1, 2, 2), mode="trilinear", align_corners=False),
    "trilinear_frac": dict(scale_factor=(1.0, 1.5, 2.5), mode="trilinear"),
    "nearest": dict(scale_factor=2, mode="nearest"),
    "nearest_size": dict(size=(3, 5, 4), mode="nearest"),
    "nearest_frac": dict(scale_factor=(2.0, 1.5, 0.5), mode="nearest"),
}
for name, kwargs in interp_cases.items():
    out = F.interpolate(y, **kwargs)
    w = torch.linspace(-1, 2, out.numel(), dtype=dt).view_as(out)
    interp_out[name] = out.detach()
    interp_grads[name] = torch.autograd.grad((out * w).sum(), y)[0]
upsample = nn.Upsample(scale_factor=(1, 2, 2), mode="trilinear", align_corners=False)
interp_out["upsample_module"] = upsample(y).detach()
fixed_results["interpolate"] = interp_out
fixed_results["interpolate_grads"] = interp_grads
interp_shapes = {k: tuple(t.shape) for k, t in interp_out.items()}
# align_corners=True keeps the corner voxels; nearest x2 repeats each voxel
corner_error = (interp_out["trilinear_ac"][..., [0, -1], :, :][..., [0, -1], :][..., [0, -1]]
                - y.detach()[..., [0, -1], :, :][..., [0, -1], :][..., [0, -1]]).abs().max().item()
nearest_repeat = torch.equal(
    interp_out["nearest"], y.detach().repeat_interleave(2, 2).repeat_interleave(2, 3)
    .repeat_interleave(2, 4))

# ---------------------------------------------------------- F.pad on 5-D (recorded)

pad_out, pad_grads = {}, {}
for mode in ("constant", "replicate", "reflect", "circular"):
    kwargs = {"value": -0.5} if mode == "constant" else {}
    out = F.pad(y, (1, 2, 0, 1, 1, 1), mode=mode, **kwargs)
    pad_out[mode] = out.detach()
    w = torch.linspace(0, 1, out.numel(), dtype=dt).view_as(out)
    pad_grads[mode] = torch.autograd.grad((out * w).sum(), y)[0]
pad_out["negative"] = F.pad(y, (-1, 0, 1, -1, 0, 0)).detach()
pad_out["replication_module"] = nn.ReplicationPad3d((0, 1, 1, 0, 2, 0))(y).detach()
pad_out["constant_module"] = nn.ConstantPad3d(1, 3.5)(y).detach()
fixed_results["pad"] = pad_out
fixed_results["pad_grads"] = pad_grads

# --------------------------------------------------- layouts, temporal shift (recorded)

torch.manual_seed(5)
clip_btchw = torch.randn(2, 4, 8, 3, 3, dtype=dt)  # (B, T, C, H, W) as video loaders give it
clip_bcthw = clip_btchw.permute(0, 2, 1, 3, 4).contiguous()
layout_roundtrip = torch.equal(clip_bcthw.permute(0, 2, 1, 3, 4), clip_btchw)
layout_transpose = torch.equal(clip_btchw.transpose(1, 2), clip_bcthw)
frames = clip_btchw.flatten(0, 1)  # (B*T, C, H, W) for a 2-D backbone
frames_back = frames.view(2, 4, 8, 3, 3)
layout_flatten = torch.equal(frames_back, clip_btchw) and frames.is_contiguous()
bcthw_is_contiguous = clip_btchw.permute(0, 2, 1, 3, 4).is_contiguous()


def temporal_shift(x, n_segment, fold_div=4):
    """TSM's shift of (N*T, C, H, W): 1/fold_div of the channels to t-1, as many to t+1."""
    nt, c, h, w = x.size()
    n_batch = nt // n_segment
    x = x.view(n_batch, n_segment, c, h, w)
    fold = c // fold_div
    out = torch.zeros_like(x)
    out[:, :-1, :fold] = x[:, 1:, :fold]  # shift left
    out[:, 1:, fold: 2 * fold] = x[:, :-1, fold: 2 * fold]  # shift right
    out[:, :, 2 * fold:] = x[:, :, 2 * fold:]  # not shifted
    return out.view(nt, c, h, w)


def temporal_shift_cat(x, n_segment, fold_div=4):
    nt, c, h, w = x.size()
    x = x.view(nt // n_segment, n_segment, c, h, w)
    fold = c // fold_div
    left = torch.cat([x[:, 1:, :fold], torch.zeros_like(x[:, :1, :fold])], dim=1)
    right = torch.cat([torch.zeros_like(x[:, :1, fold: 2 * fold]), x[:, :-1, fold: 2 * fold]], 1)
    return torch.cat([left, right, x[:, :, 2 * fold:]], dim=2).view(nt, c, h, w)


def temporal_shift_roll(x, n_segment, fold_div=4):
    """The cyclic variant: frames wrap around (torch.roll along time)."""
    nt, c, h, w = x.size()
    x = x.view(nt // n_segment, n_segment, c, h, w)
    fold = c // fold_div
    return torch.cat([torch.roll(x[:, :, :fold], shifts=-1, dims=1),
                      torch.roll(x[:, :, fold: 2 * fold], shifts=1, dims=1),
                      x[:, :, 2 * fold:]], dim=2).view(nt, c, h, w)


class InplaceShift(torch.autograd.Function):
    """TSM's in-place shift: forward shifts the buffer, backward shifts the gradient back."""

    @staticmethod
    def forward(ctx, input, fold):
        ctx.fold_ = fold
        n, t, c, h, w = input.size()
        buffer = input.new_zeros(n, t, fold, h, w)
        buffer[:, :-1] = input[:, 1:, :fold]
        input[:, :, :fold] = buffer
        buffer.zero_()
        buffer[:, 1:] = input[:, :-1, fold: 2 * fold]
        input[:, :, fold: 2 * fold] = buffer
        return input

    @staticmethod
    def backward(ctx, grad_output):
        fold = ctx.fold_
        n, t, c, h, w = grad_output.size()
        grad_output = grad_output.clone()
        buffer = grad_output.new_zeros(n, t, fold, h, w)
        buffer[:, 1:] = grad_output[:, :-1, :fold]
        grad_output[:, :, :fold] = buffer
        buffer.zero_()
        buffer[:, :-1] = grad_output[:, 1:, fold: 2 * fold]
        grad_output[:, :, fold: 2 * fold] = buffer
        return grad_output, None


frames_req = frames.clone().requires_grad_()
shifted = temporal_shift(frames_req, 4)
shift_grad = torch.autograd.grad((shifted * shifted.detach().cos()).sum(), frames_req)[0]
shifted_inplace = InplaceShift.apply(frames.clone().view(2, 4, 8, 3, 3), 2).view(8, 8, 3, 3)
fixed_results["temporal_shift"] = shifted.detach()
fixed_results["temporal_shift_roll"] = temporal_shift_roll(frames, 4)
fixed_results["temporal_shift_grad"] = shift_grad
shift_forms_agree = (torch.equal(shifted.detach(), temporal_shift_cat(frames, 4))
                     and torch.equal(shifted.detach(), shifted_inplace))
# frame 0's left-shifted channels come from frame 1; the last frame's are zero (not wrapped)
shift_semantics = (torch.equal(shifted.detach().view(2, 4, 8, 3, 3)[:, 0, :2], clip_btchw[:, 1, :2])
                   and bool((shifted.detach().view(2, 4, 8, 3, 3)[:, -1, :2] == 0).all()))
roll_wraps = torch.equal(fixed_results["temporal_shift_roll"].view(2, 4, 8, 3, 3)[:, -1, :2],
                         clip_btchw[:, 0, :2])

# TSM's temporal pooling: (N*T, C, H, W) -> (N, C, T, H, W), MaxPool3d over time, back
pooled_t = F.max_pool3d(frames.view(2, 4, 8, 3, 3).transpose(1, 2), kernel_size=(3, 1, 1),
                        stride=(2, 1, 1), padding=(1, 0, 0))
fixed_results["temporal_pool"] = pooled_t.transpose(1, 2).reshape(2 * 2, 8, 3, 3)

# ------------------------------------------------------------------------- gradcheck

torch.manual_seed(6)
gx = torch.randn(1, 2, 2, 3, 3, dtype=dt, requires_grad=True)
gw = torch.randn(2, 1, 1, 2, 3, dtype=dt, requires_grad=True)
gwt = torch.randn(2, 1, 2, 2, 1, dtype=dt, requires_grad=True)
gb = torch.randn(2, dtype=dt, requires_grad=True)
gy = torch.randn(1, 2, 1, 2, 3, dtype=dt, requires_grad=True)
gradcheck = torch.autograd.gradcheck
gradcheck_results = {
    "conv3d": gradcheck(lambda a, w, b: F.conv3d(a, w, b, stride=(1, 2, 1), padding=(1, 0, 1),
                                                 dilation=(1, 1, 2), groups=2), (gx, gw, gb)),
    "conv3d_same": gradcheck(lambda a, w: F.conv3d(a, w, padding="same", groups=2), (gx, gw)),
    "conv_transpose3d": gradcheck(
        lambda a, w, b: F.conv_transpose3d(a, w, b, stride=2, padding=(0, 1, 1),
                                           output_padding=(1, 1, 0), groups=2), (gy, gwt, gb)),
    "max_pool3d": gradcheck(lambda a: F.max_pool3d(a, 2, stride=(1, 2, 2), padding=1), (gy,)),
    "avg_pool3d": gradcheck(lambda a: F.avg_pool3d(a, 2, stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False), (gx,)),
    "adaptive_avg_pool3d": gradcheck(lambda a: F.adaptive_avg_pool3d(a, (1, 2, 2)), (gy,)),
    "adaptive_max_pool3d": gradcheck(lambda a: F.adaptive_max_pool3d(a, (1, 2, 2)), (gy,)),
    "trilinear": gradcheck(lambda a: F.interpolate(a, size=(3, 4, 5), mode="trilinear"), (gy,)),
    "trilinear_ac": gradcheck(lambda a: F.interpolate(a, scale_factor=2, mode="trilinear",
                                                      align_corners=True), (gy,)),
    "nearest": gradcheck(lambda a: F.interpolate(a, scale_factor=(2, 1.5, 1), mode="nearest"),
                         (gy,)),
    "pad_replicate": gradcheck(lambda a: F.pad(a, (1, 0, 2, 1, 0, 1), mode="replicate"), (gy,)),
    "pad_circular": gradcheck(lambda a: F.pad(a, (1, 1, 1, 0, 1, 1), mode="circular"), (gy,)),
    "inplace_shift": gradcheck(lambda a: InplaceShift.apply(a.clone(), 1),
                               (torch.randn(1, 3, 4, 2, 2, dtype=dt, requires_grad=True),)),
    "instance_norm": gradcheck(lambda a: F.instance_norm(a), (gx,)),
    "group_norm": gradcheck(lambda a: F.group_norm(a, 2), (gx,)),
}


def input_curvature(f, a):
    """d/da of |df/da|^2: zero for a max-pooled (piecewise-linear) score of the clip."""
    g, = torch.autograd.grad(f(a), a, create_graph=True)
    # jitgrad-diff: torch gives zeros here (its pool backward records the pooled input); with
    # jitgrad's adaptive_max_pool3d, g does not depend on ``a`` (nor require grad): guarded
    if not g.requires_grad:
        return torch.zeros_like(a)
    gg, = torch.autograd.grad(g.pow(2).sum(), a)
    return gg


clip = torch.randn(1, 2, 2, 4, 4, dtype=dt, requires_grad=True)
pool_curvature = {
    "max_pool3d": input_curvature(lambda a: F.max_pool3d(a, 2).sum(), clip),
    "adaptive_max_pool3d": input_curvature(lambda a: F.adaptive_max_pool3d(a, 1).sum(), clip),
    "relu_max_pool3d": input_curvature(lambda a: F.max_pool3d(F.relu(a), 2).sum(), clip),
    "hessian": torch.autograd.functional.hessian(lambda a: F.max_pool3d(a, 2).pow(2).sum(),
                                                 clip.detach()),
}
gradgradcheck_conv3d = torch.autograd.gradgradcheck(
    lambda a, w: F.conv3d(a, w, stride=2, padding=1, groups=2),
    (gx[:, :, :1, :2].detach().requires_grad_(), gw[:, :, :, :1].detach().requires_grad_()))

# ----------------------------------------------------------------------------- 3D U-Net


class ConvBlock3d(nn.Module):
    """(Conv3d + norm + LeakyReLU) x 2, the nnU-Net-style stage."""

    def __init__(self, in_ch, out_ch, norm="instance"):
        super().__init__()

        def norm_layer(c):
            if norm == "instance":
                return nn.InstanceNorm3d(c, affine=True)
            return nn.GroupNorm(2, c)

        self.block = nn.Sequential(
            nn.Conv3d(in_ch, out_ch, 3, padding=1), norm_layer(out_ch),
            nn.LeakyReLU(0.01, inplace=True),
            nn.Conv3d(out_ch, out_ch, 3, padding=1), norm_layer(out_ch),
            nn.LeakyReLU(0.01, inplace=True),
        )

    def forward(self, x):
        return self.block(x)


class UNet3D(nn.Module):
    def __init__(self, in_ch=1, out_ch=1, base=4, trilinear=False):
        super().__init__()
        self.enc1 = ConvBlock3d(in_ch, base)
        self.pool = nn.MaxPool3d(2)
        self.enc2 = ConvBlock3d(base, 2 * base, norm="group")
        if trilinear:
            self.up = nn.Sequential(
                nn.Upsample(scale_factor=2, mode="trilinear", align_corners=True),
                nn.Conv3d(2 * base, base, 1))
        else:
            self.up = nn.ConvTranspose3d(2 * base, base, kernel_size=2, stride=2)
        self.dec1 = ConvBlock3d(2 * base, base)
        self.head = nn.Conv3d(base, out_ch, kernel_size=1)

    def forward(self, x):
        s1 = self.enc1(x)
        b = self.enc2(self.pool(s1))
        u = self.up(b)
        # (pad to the skip's size if the volume was odd, as U-Net code does)
        dz, dy, dx = (s1.size(i) - u.size(i) for i in (2, 3, 4))
        u = F.pad(u, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2, dz // 2, dz - dz // 2])
        return self.head(self.dec1(torch.cat([s1, u], dim=1)))


def soft_dice_loss(logits, target, eps=1.0):
    prob = torch.sigmoid(logits)
    dims = (1, 2, 3, 4)
    intersection = (prob * target).sum(dims)
    denominator = prob.sum(dims) + target.sum(dims)
    return 1 - ((2 * intersection + eps) / (denominator + eps)).mean()


def dice_score(logits, target):
    pred = (logits > 0).float()
    inter = (pred * target).sum()
    return (2 * inter / (pred.sum() + target.sum()).clamp(min=1)).item()


def make_blobs(n, shape=(4, 8, 8)):
    """Ellipsoids at random centres in noise: (N, 1, D, H, W) volumes and their masks."""
    D, H, W = shape
    zz = torch.arange(D).view(1, D, 1, 1).float()
    yy = torch.arange(H).view(1, 1, H, 1).float()
    xx = torch.arange(W).view(1, 1, 1, W).float()
    centre = torch.rand(n, 3) * torch.tensor([D - 1.0, H - 3.0, W - 3.0]) + \
        torch.tensor([0.0, 1.5, 1.5])
    radius = torch.rand(n, 3) * torch.tensor([0.8, 1.5, 1.5]) + torch.tensor([1.0, 1.5, 1.5])
    c, r = centre.view(n, 3, 1, 1, 1), radius.view(n, 3, 1, 1, 1)
    dist = ((zz - c[:, 0]) / r[:, 0]) ** 2 + ((yy - c[:, 1]) / r[:, 1]) ** 2 + \
        ((xx - c[:, 2]) / r[:, 2]) ** 2
    mask = (dist <= 1).float().unsqueeze(1)
    volume = mask * 1.0 + 0.4 * torch.randn(n, 1, D, H, W)
    return volume, mask


torch.manual_seed(7)
unet = UNet3D()
train_vol, train_mask = make_blobs(8)
test_vol, test_mask = make_blobs(4)
# fixed weights: output and parameter gradients of the first batch (recorded)
logits = unet(train_vol)
bce = nn.BCEWithLogitsLoss()
loss = bce(logits, train_mask) + soft_dice_loss(logits, train_mask)
loss.backward()
fixed_results["unet_logits"] = logits.detach()
fixed_results["unet_loss"] = loss.detach()
fixed_results["unet_grads"] = {n: p.grad.clone() for n, p in unet.named_parameters()}
unet.zero_grad()
unet_tri = UNet3D(trilinear=True)
fixed_results["unet_trilinear_logits"] = unet_tri(train_vol).detach()

unet_optimizer = torch.optim.Adam(unet.parameters(), lr=3e-2)
unet_losses, unet_dice_losses = [], []
with torch.no_grad():
    dice_before = dice_score(unet(test_vol), test_mask)
for _step in range(16):
    logits = unet(train_vol)
    dice_loss = soft_dice_loss(logits, train_mask)
    loss = bce(logits, train_mask) + dice_loss
    unet_optimizer.zero_grad()
    loss.backward()
    unet_optimizer.step()
    unet_losses.append(loss.item())
    unet_dice_losses.append(dice_loss.item())
unet.eval()
with torch.no_grad():
    dice_after = dice_score(unet(test_vol), test_mask)
unet_output_shape = tuple(unet(test_vol).shape)

# ------------------------------------------------------------------ video classifiers


def make_videos(n, T=4, size=8, channels=3):
    """A Gaussian blob moving one pixel a frame right, left, down or up: label = direction.
    Returned (N, C, T, H, W), as video models take it."""
    label = torch.randint(0, 4, (n,))
    step = torch.tensor([[0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]])[label]  # (dy, dx)
    start = torch.rand(n, 2) * (size - 5) + 2.5 - 1.5 * step
    t = torch.arange(T).float().view(1, T, 1)
    centre = start[:, None, :] + t * step[:, None, :]  # (N, T, 2)
    yy = torch.arange(size).float().view(1, 1, size, 1)
    xx = torch.arange(size).float().view(1, 1, 1, size)
    blob = torch.exp(-((yy - centre[..., 0, None, None]) ** 2
                       + (xx - centre[..., 1, None, None]) ** 2) / 1.5)  # (N, T, H, W)
    colour = torch.rand(n, 1, channels, 1, 1) * 0.5 + 0.5
    video = blob[:, :, None] * colour + 0.1 * torch.randn(n, T, channels, size, size)
    return video.permute(0, 2, 1, 3, 4).contiguous(), label  # (B,T,C,H,W) -> (B,C,T,H,W)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
        midplanes = midplanes_for(inplanes, planes)
        super().__init__()
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, midplanes, stride),
                                   nn.BatchNorm3d(planes), nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes),
                                   nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv2(self.conv1(x))
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        return self.relu(out)


class R2Plus1dStem(nn.Sequential):
    def __init__(self, width=8):
        super().__init__(
            nn.Conv3d(3, 6, kernel_size=(1, 5, 5), stride=(1, 2, 2), padding=(0, 2, 2),
                      bias=False),
            nn.BatchNorm3d(6), nn.ReLU(inplace=True),
            nn.Conv3d(6, width, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0),
                      bias=False),
            nn.BatchNorm3d(width), nn.ReLU(inplace=True),
        )


class BasicStem(nn.Sequential):
    """The C3D / R3D stem: one full 3x7x7 conv (here 3x5x5)."""

    def __init__(self, width=8):
        super().__init__(
            nn.Conv3d(3, width, kernel_size=(3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2),
                      bias=False),
            nn.BatchNorm3d(width), nn.ReLU(inplace=True))


class VideoResNet(nn.Module):
    def __init__(self, stem, widths=(8, 12), num_classes=4):
        super().__init__()
        self.inplanes = widths[0]
        self.stem = stem(widths[0])
        self.layer1 = self._make_layer(Conv2Plus1D, widths[0], stride=1)
        self.layer2 = self._make_layer(Conv2Plus1D, widths[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(widths[1] * BasicBlock.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, conv_builder, planes, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
            ds_stride = conv_builder.get_downsample_stride(stride)
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, planes * BasicBlock.expansion, kernel_size=1,
                          stride=ds_stride, bias=False),
                nn.BatchNorm3d(planes * BasicBlock.expansion))
        layer = BasicBlock(self.inplanes, planes, conv_builder, stride, downsample)
        self.inplanes = planes * BasicBlock.expansion
        return nn.Sequential(layer)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = self.avgpool(x)
        return self.fc(x.flatten(1))


torch.manual_seed(8)
train_videos, train_labels = make_videos(16)
video_model = VideoResNet(R2Plus1dStem)
c3d_model = VideoResNet(BasicStem)
# fixed weights, train-mode BatchNorm: logits and parameter gradients (recorded)
logits = video_model(train_videos[:8])
F.cross_entropy(logits, train_labels[:8]).backward()
fixed_results["video_logits"] = logits.detach()
fixed_results["video_grads"] = {n: p.grad.clone() for n, p in video_model.named_parameters()
                                if n.startswith(("stem", "layer1.0.conv1", "fc"))}
fixed_results["c3d_logits"] = c3d_model(train_videos[:8]).detach()
video_model.zero_grad()
feature_shapes = {}
h = train_videos[:2]
for name in ("stem", "layer1", "layer2", "avgpool"):
    h = getattr(video_model, name)(h)
    feature_shapes[name] = tuple(h.shape)
video_model.load_state_dict(VideoResNet(R2Plus1dStem).state_dict())  # (the stats moved)

video_optimizer = torch.optim.SGD(video_model.parameters(), lr=0.1, momentum=0.9,
                                  nesterov=True, weight_decay=1e-4)
video_scheduler = torch.optim.lr_scheduler.StepLR(video_optimizer, step_size=6, gamma=0.5)
video_losses, video_lrs = [], []
epochs, batch = 8, 8
for _epoch in range(epochs):
    video_model.train()
    perm = torch.randperm(16)
    for i in range(0, 16, batch):
        idx = perm[i: i + batch]
        loss = F.cross_entropy(video_model(train_videos[idx]), train_labels[idx])
        video_optimizer.zero_grad()
        loss.backward()
        video_optimizer.step()
        video_scheduler.step()
        video_losses.append(loss.item())
        video_lrs.append(video_scheduler.get_last_lr()[0])


@torch.no_grad()
def precise_bn(model, batches):
    """SlowFast's precise BN: recompute the running statistics as a true average over
    batches with the final weights (momentum=None is a cumulative average)."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm3d)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    for b in batches:
        model(b)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    return bns


video_model.eval()
with torch.no_grad():
    eval_accuracy_before_precise_bn = (
        video_model(train_videos).argmax(1) == train_labels).float().mean().item()
bns = precise_bn(video_model, train_videos.split(8))
precise_bn_batches = [int(bn.num_batches_tracked) for bn in bns]
video_model.eval()
with torch.no_grad():
    train_accuracy = (video_model(train_videos).argmax(1) == train_labels).float().mean().item()


class TSMNet(nn.Module):
    """A 2-D CNN over frames with TSM's residual shift before each block's first conv."""

    def __init__(self, n_segment=4, width=8, num_classes=4):
        super().__init__()
        self.n_segment = n_segment
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, video):  # (B, C, T, H, W)
        b, c, t, hh, ww = video.shape
        x = video.transpose(1, 2).reshape(b * t, c, hh, ww)
        x = self.stem(x)
        out = F.relu(self.bn1(self.conv1(temporal_shift(x, self.n_segment))))
        x = F.relu(x + self.bn2(self.conv2(out)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        logits = self.fc(x).view(b, t, -1)
        return logits.mean(dim=1)  # the consensus over segments


torch.manual_seed(9)
tsm = TSMNet()
tsm_optimizer = torch.optim.SGD(tsm.parameters(), lr=0.1, momentum=0.9, nesterov=True)
tsm_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(tsm_optimizer, T_max=16,
                                                           eta_min=1e-3)
fixed_results["tsm_logits"] = tsm(train_videos[:4]).detach()
tsm_losses, tsm_lrs = [], []
for _epoch in range(epochs):
    tsm.train()
    for i in range(0, 16, batch):
        loss = F.cross_entropy(tsm(train_videos[i: i + batch]), train_labels[i: i + batch])
        tsm_optimizer.zero_grad()
        loss.backward()
        tsm_optimizer.step()
        tsm_scheduler.step()
        tsm_losses.append(loss.item())
        tsm_lrs.append(tsm_optimizer.param_groups[0]["lr"])
tsm.eval()
with torch.no_grad():
    tsm_train_accuracy = (tsm(train_videos).argmax(1) == train_labels).float().mean().item()

# ------------------------------------------- a multi-class segmentation head (recorded)


def multiclass_dice_loss(logits, labels, eps=1e-6):
    """nnU-Net-style soft Dice over the softmax classes, voxels flattened."""
    n, c = logits.shape[:2]
    probs = F.softmax(logits, dim=1).view(n, c, -1)
    onehot = F.one_hot(labels, c).permute(0, 4, 1, 2, 3).to(logits.dtype).reshape(n, c, -1)
    intersection = (probs * onehot).sum(-1)
    union = probs.sum(-1) + onehot.sum(-1)
    return 1 - ((2 * intersection + eps) / (union + eps)).mean()


def region_dice_loss(logits, regions, eps=1e-6):
    """BraTS-style nested regions (whole, core): one sigmoid per region, V-Net's flattening."""
    n, c = logits.shape[:2]
    probs = torch.sigmoid(logits).view(n, c, -1)
    regions = regions.view(n, c, -1)
    intersection = (probs * regions).sum(-1)
    return 1 - ((2 * intersection + eps) / (probs.sum(-1) + regions.sum(-1) + eps)).mean()


torch.manual_seed(10)
seg_head = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv3d(4, 3, 1))
region_head = nn.Conv3d(4, 2, 1)
core = (train_vol.squeeze(1) > 1.0).long()
seg_labels = train_mask.squeeze(1).long() * (1 + core)  # 0 background, 1 rim, 2 core
seg_regions = torch.stack([seg_labels > 0, seg_labels == 2], dim=1).float()
seg_logits = seg_head(train_vol)
n_vox = seg_logits.shape[2:].numel()
flat_logits = seg_logits.view(8, 3, -1)
seg_ce = F.cross_entropy(flat_logits, seg_labels.view(8, n_vox),
                         weight=torch.tensor([0.2, 1.0, 1.0]))
seg_dice = multiclass_dice_loss(seg_logits, seg_labels)
region_logits = region_head(seg_head[1](seg_head[0](train_vol)))
seg_region_dice = region_dice_loss(region_logits, seg_regions)
params = list(seg_head.parameters()) + list(region_head.parameters())
seg_grads = torch.autograd.grad(seg_ce + seg_dice + seg_region_dice, params)
fixed_results["segmentation"] = {"ce": seg_ce.detach(), "dice": seg_dice.detach(),
                                 "region_dice": seg_region_dice.detach(),
                                 "logits": seg_logits.detach()}
fixed_results["segmentation_grads"] = dict(zip(("w1", "b1", "w2", "b2", "w3", "b3"), seg_grads))
seg_label_counts = torch.bincount(seg_labels.flatten(), minlength=3).tolist()

print(f"unet {unet_losses[0]:.3f} -> {unet_losses[-1]:.3f}, dice {dice_before:.2f} -> "
      f"{dice_after:.2f}; r(2+1)d {video_losses[0]:.3f} -> {video_losses[-1]:.3f} "
      f"(train acc {train_accuracy:.2f}); tsm {tsm_losses[0]:.3f} -> {tsm_losses[-1]:.3f} "
      f"(train acc {tsm_train_accuracy:.2f}); cosine lr end {tsm_lrs[-1]:.4f} "
      f"{math.isclose(tsm_lrs[-1], 1e-3)}")
