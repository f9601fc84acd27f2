# ruff: noqa: N812 (the usual F alias)
"""A tiny Swin Transformer and a tiny ConvNeXt, written for these tests the way timm and the
official Swin-Transformer / ConvNeXt repositories write their models (not a copy of either):

- Swin: patch embedding by a strided ``nn.Conv2d`` (flatten(2).transpose(1, 2)),
  ``window_partition`` / ``window_reverse`` with view/permute/contiguous, shifted windows by
  ``torch.roll``, the shifted-window attention mask built from slices and
  ``masked_fill(-100.0)`` (a non-persistent buffer), a relative position bias table indexed
  by the registered buffer ``relative_position_index`` (``torch.meshgrid(indexing="ij")``,
  flatten, stack, sum), ``PatchMerging`` by strided slicing and ``torch.cat``, token average
  pooling with ``nn.AdaptiveAvgPool1d``;
- ConvNeXt: a patchify stem, depthwise 7x7 ``Conv2d(groups=C)``, LayerNorm over channels by a
  permute to channels-last, the official ``LayerNorm`` with a ``data_format`` and timm's
  ``LayerNorm2d`` (``F.layer_norm`` between permutes), ``nn.Linear`` pointwise layers, GELU,
  the layer-scale ``gamma``, the head-init scale, a timm-style weight EMA;
- both: DropPath / stochastic depth with a per-sample Bernoulli mask
  (``x.new_empty(shape).bernoulli_(keep_prob)`` and ``div_``) and a linearly increasing rate,
  ``trunc_normal_`` init through ``self.apply``, ``AdamW`` whose parameter groups leave
  norms, biases and the bias table undecayed, cosine LR with linear warm-up (``LambdaLR`` and
  ``SequentialLR(LinearLR, CosineAnnealingLR)``), label-smoothing cross entropy (by hand as
  timm's ``LabelSmoothingCrossEntropy`` and ``nn.CrossEntropyLoss(label_smoothing=...)``),
  ``clip_grad_norm_``, and ``model.eval()`` vs ``model.train()`` with DropPath.

Both models learn a seeded synthetic task: 16x16 RGB images of a line in one of four
orientations. Sections marked "(recorded)" keep what the tests compare, on fixed weights,
with the same script on torch.
"""
import copy
import io
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.init import trunc_normal_
from jitgrad.utils import checkpoint

torch.manual_seed(0)
fixed_results = {}
_assert = torch._assert  # (timm's layers check shapes with it)


# ------------------------------------------------------------------------------ layers


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    """Stochastic depth per sample, applied in the main path of residual blocks."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # works with any number of dims
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU,
                 drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop(self.act(self.fc1(x)))
        return self.drop(self.fc2(x))


# -------------------------------------------------------------------------------- Swin


def window_partition(x, window_size: int):
    """(B, H, W, C) -> (num_windows * B, window_size, window_size, C)"""
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size: int, H: int, W: int):
    """(num_windows * B, window_size, window_size, C) -> (B, H, W, C)"""
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


def get_relative_position_index(win_h: int, win_w: int):
    coords = torch.stack(torch.meshgrid(torch.arange(win_h), torch.arange(win_w),
                                        indexing="ij"))  # 2, Wh, Ww
    coords_flatten = torch.flatten(coords, 1)  # 2, Wh*Ww
    relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 2, N, N
    relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # N, N, 2
    relative_coords[:, :, 0] += win_h - 1  # shift to start from 0
    relative_coords[:, :, 1] += win_w - 1
    relative_coords[:, :, 0] *= 2 * win_w - 1
    return relative_coords.sum(-1)  # N, N


class WindowAttention(nn.Module):
    """Window based multi-head self attention with a relative position bias."""

    def __init__(self, dim, window_size, num_heads, qkv_bias=True, attn_drop=0.0,
                 proj_drop=0.0):
        super().__init__()
        self.dim = dim
        self.window_size = to_2tuple(window_size)  # Wh, Ww
        win_h, win_w = self.window_size
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * win_h - 1) * (2 * win_w - 1), num_heads))
        self.register_buffer("relative_position_index", get_relative_position_index(win_h, win_w))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.softmax = nn.Softmax(dim=-1)

    def _get_rel_pos_bias(self):
        n = self.window_size[0] * self.window_size[1]
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        return bias.view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)  # 1, nH, N, N

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn + self._get_rel_pos_bias()
        if mask is not None:
            num_win = mask.shape[0]
            attn = attn.view(-1, num_win, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = self.attn_drop(self.softmax(attn))
        x = (attn @ v).transpose(1, 2).reshape(B_, N, -1)
        return self.proj_drop(self.proj(x))


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, input_resolution, num_heads, window_size=4, shift_size=0,
                 mlp_ratio=4.0, drop_path=0.0, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.window_size = window_size
        self.shift_size = shift_size
        if min(self.input_resolution) <= self.window_size:
            # the window covers the whole image: no shifting, one window
            self.shift_size = 0
            self.window_size = min(self.input_resolution)
        assert 0 <= self.shift_size < self.window_size, "shift_size must be in [0, window_size)"
        self.norm1 = norm_layer(dim)
        self.attn = WindowAttention(dim, window_size=to_2tuple(self.window_size),
                                    num_heads=num_heads)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, hidden_features=int(dim * mlp_ratio))

        if self.shift_size > 0:
            # the mask is built on the padded resolution (multiples of the window)
            H, W = (math.ceil(r / self.window_size) * self.window_size
                    for r in self.input_resolution)
            img_mask = torch.zeros((1, H, W, 1))  # 1 Hp Wp 1
            cnt = 0
            for h in (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                      slice(-self.shift_size, None)):
                for w in (slice(0, -self.window_size),
                          slice(-self.window_size, -self.shift_size),
                          slice(-self.shift_size, None)):
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mask_windows = window_partition(img_mask, self.window_size)  # nW, ws, ws, 1
            mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(
                attn_mask == 0, 0.0)
        else:
            attn_mask = None
        self.register_buffer("attn_mask", attn_mask, persistent=False)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        assert L == H * W, "input feature has wrong size"
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        # pad the feature map to multiples of the window size (bottom and right)
        pad_b = (self.window_size - H % self.window_size) % self.window_size
        pad_r = (self.window_size - W % self.window_size) % self.window_size
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, Hp, Wp, _ = x.shape
        if self.shift_size > 0:
            shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        else:
            shifted_x = x
        x_windows = window_partition(shifted_x, self.window_size)
        x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
        attn_windows = self.attn(x_windows, mask=self.attn_mask)
        attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
        shifted_x = window_reverse(attn_windows, self.window_size, Hp, Wp)
        if self.shift_size > 0:
            x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        else:
            x = shifted_x
        if pad_r > 0 or pad_b > 0:
            x = x[:, :H, :W, :].contiguous()
        x = shortcut + self.drop_path(x.view(B, H * W, C))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class PatchMerging(nn.Module):
    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        assert H % 2 == 0 and W % 2 == 0, f"x size ({H}*{W}) are not even."
        x = x.view(B, H, W, C)
        x0 = x[:, 0::2, 0::2, :]  # B H/2 W/2 C
        x1 = x[:, 1::2, 0::2, :]
        x2 = x[:, 0::2, 1::2, :]
        x3 = x[:, 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)  # B H/2*W/2 4*C
        return self.reduction(self.norm(x))


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=2, in_chans=3, embed_dim=16, norm_layer=None):
        super().__init__()
        img_size, patch_size = to_2tuple(img_size), to_2tuple(patch_size)
        self.img_size = img_size
        self.patches_resolution = [img_size[0] // patch_size[0], img_size[1] // patch_size[1]]
        self.num_patches = self.patches_resolution[0] * self.patches_resolution[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer is not None else None

    def forward(self, x):
        B, C, H, W = x.shape
        _assert(H == self.img_size[0], f"Input height ({H}) doesn't match ({self.img_size[0]}).")
        _assert(W == self.img_size[1], f"Input width ({W}) doesn't match ({self.img_size[1]}).")
        x = self.proj(x).flatten(2).transpose(1, 2)  # B Ph*Pw C
        if self.norm is not None:
            x = self.norm(x)
        return x


class BasicLayer(nn.Module):
    def __init__(self, dim, input_resolution, depth, num_heads, window_size, drop_path,
                 downsample=None, use_checkpoint=False):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.blocks = nn.ModuleList([
            SwinTransformerBlock(dim=dim, input_resolution=input_resolution,
                                 num_heads=num_heads, window_size=window_size,
                                 shift_size=0 if (i % 2 == 0) else window_size // 2,
                                 drop_path=drop_path[i])
            for i in range(depth)])
        self.downsample = downsample(input_resolution, dim=dim) if downsample else None

    def forward(self, x):
        for blk in self.blocks:
            if self.use_checkpoint:
                x = checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        if self.downsample is not None:
            x = self.downsample(x)
        return x


class SwinTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=2, in_chans=3, num_classes=4, embed_dim=16,
                 depths=(2, 2), num_heads=(2, 4), window_size=4, drop_path_rate=0.1,
                 use_checkpoint=False):
        super().__init__()
        self.num_layers = len(depths)
        self.num_features = int(embed_dim * 2 ** (self.num_layers - 1))
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, nn.LayerNorm)
        res = self.patch_embed.patches_resolution
        # stochastic depth decay rule
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        self.layers = nn.ModuleList()
        for i_layer in range(self.num_layers):
            self.layers.append(BasicLayer(
                dim=int(embed_dim * 2 ** i_layer),
                input_resolution=(res[0] // (2 ** i_layer), res[1] // (2 ** i_layer)),
                depth=depths[i_layer], num_heads=num_heads[i_layer], window_size=window_size,
                drop_path=dpr[sum(depths[:i_layer]):sum(depths[:i_layer + 1])],
                downsample=PatchMerging if (i_layer < self.num_layers - 1) else None,
                use_checkpoint=use_checkpoint))
        self.norm = nn.LayerNorm(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(self.num_features, num_classes)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    @torch.jit.ignore
    def no_weight_decay_keywords(self):
        return {"relative_position_bias_table"}

    def forward_features(self, x):
        x = self.patch_embed(x)
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)  # B L C
        x = self.avgpool(x.transpose(1, 2))  # B C 1
        return torch.flatten(x, 1)

    def forward(self, x):
        return self.head(self.forward_features(x))


# ---------------------------------------------------------------------------- ConvNeXt


class LayerNorm(nn.Module):
    """The official ConvNeXt LayerNorm: channels_last (B, H, W, C) by F.layer_norm,
    channels_first (B, C, H, W) by hand."""

    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        if self.data_format not in ["channels_last", "channels_first"]:
            raise NotImplementedError
        self.normalized_shape = (normalized_shape,)

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class LayerNorm2d(nn.LayerNorm):
    """timm's LayerNorm for channels of '2D' spatial NCHW tensors."""

    def __init__(self, num_channels, eps=1e-6, affine=True):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """DwConv -> Permute to (N, H, W, C); LayerNorm (channels_last) -> Linear -> GELU ->
    Linear; Permute back."""

    def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)  # depthwise
        self.norm = LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)  # pointwise/1x1 convs, implemented with linear
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = (nn.Parameter(layer_scale_init_value * torch.ones(dim), requires_grad=True)
                      if layer_scale_init_value > 0 else None)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv2(self.act(self.pwconv1(x)))
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
        return shortcut + self.drop_path(x)


class ConvNeXt(nn.Module):
    def __init__(self, in_chans=3, num_classes=4, depths=(2, 2), dims=(16, 32),
                 drop_path_rate=0.1, layer_scale_init_value=0.1, head_init_scale=1.0,
                 stem_stride=2, norm2d=LayerNorm2d):
        super().__init__()
        self.downsample_layers = nn.ModuleList()  # stem and intermediate downsampling layers
        self.downsample_layers.append(nn.Sequential(
            nn.Conv2d(in_chans, dims[0], kernel_size=stem_stride, stride=stem_stride),
            LayerNorm(dims[0], eps=1e-6, data_format="channels_first")))
        for i in range(len(dims) - 1):
            self.downsample_layers.append(nn.Sequential(
                norm2d(dims[i], eps=1e-6),
                nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2)))
        self.stages = nn.ModuleList()  # feature resolution stages, each of residual blocks
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(len(dims)):
            self.stages.append(nn.Sequential(*[
                ConvNeXtBlock(dim=dims[i], drop_path=dp_rates[cur + j],
                              layer_scale_init_value=layer_scale_init_value)
                for j in range(depths[i])]))
            cur += depths[i]
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)  # final norm layer
        self.head = nn.Linear(dims[-1], num_classes)
        self.apply(self._init_weights)
        self.head.weight.data.mul_(head_init_scale)
        self.head.bias.data.mul_(head_init_scale)

    def _init_weights(self, m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            trunc_normal_(m.weight, std=0.02)
            nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        for downsample, stage in zip(self.downsample_layers, self.stages):
            x = stage(downsample(x))
        return self.norm(x.mean([-2, -1]))  # global average pooling, (N, C, H, W) -> (N, C)

    def forward(self, x):
        return self.head(self.forward_features(x))


class ModelEmaV2(nn.Module):
    """timm's weight EMA: a deep copy updated in place from the model's state_dict."""

    def __init__(self, model, decay=0.9):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(),
                                  model.state_dict().values()):
            ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)


# ---------------------------------------------------------------------- training utils


class LabelSmoothingCrossEntropy(nn.Module):
    """NLL loss with label smoothing (timm)."""

    def __init__(self, smoothing=0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1.0 - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


def param_groups_weight_decay(model, weight_decay=0.05, no_weight_decay_list=()):
    """timm: no decay for biases, norm weights (ndim <= 1) and the listed names."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or any(
                key in name for key in no_weight_decay_list):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0},
            {"params": decay, "weight_decay": weight_decay}]


def checkpoint_filter_fn(state_dict):
    """timm drops the index buffers (and masks) of a checkpoint: the model rebuilds them."""
    return {k: v for k, v in state_dict.items()
            if not any(n in k for n in ("relative_position_index", "attn_mask"))}


def resize_rel_pos_bias_table(table, new_window_size):
    """Bicubic resize of a ((2W-1)^2, nH) bias table for another window size."""
    old = int(math.sqrt(table.shape[0]))
    new = 2 * new_window_size - 1
    num_heads = table.shape[1]
    grid = table.permute(1, 0).reshape(1, num_heads, old, old)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", align_corners=False)
    return grid.squeeze(0).reshape(num_heads, -1).permute(1, 0)


class SoftTargetCrossEntropy(nn.Module):
    def forward(self, x, target):
        return torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1).mean()


def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1.0 - lam)


def rand_bbox(img_shape, lam):
    """A box of area fraction 1 - lam at a random centre, clipped to the image."""
    ratio = math.sqrt(1 - lam)
    img_h, img_w = img_shape[-2:]
    cut_h, cut_w = int(img_h * ratio), int(img_w * ratio)
    cy = torch.randint(0, img_h, (1,)).item()
    cx = torch.randint(0, img_w, (1,)).item()
    yl, yh = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, img_h)
    xl, xh = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, img_w)
    return yl, yh, xl, xh


class Mixup:
    """timm-style batch Mixup / CutMix (the batch mixed with its flip), smoothed targets."""

    def __init__(self, mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5,
                 label_smoothing=0.1, num_classes=4):
        self.mixup_alpha, self.cutmix_alpha = mixup_alpha, cutmix_alpha
        self.switch_prob = switch_prob
        self.label_smoothing = label_smoothing
        self.num_classes = num_classes

    def __call__(self, x, target):
        assert len(x) % 2 == 0, "Batch size should be even when using this"
        use_cutmix = torch.rand(1).item() < self.switch_prob
        alpha = self.cutmix_alpha if use_cutmix else self.mixup_alpha
        lam = float(torch.distributions.Beta(alpha, alpha).sample())
        if use_cutmix:
            yl, yh, xl, xh = rand_bbox(x.shape, lam)
            x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
            lam = 1.0 - (yh - yl) * (xh - xl) / float(x.shape[-2] * x.shape[-1])
        else:
            x_flipped = x.flip(0).mul_(1.0 - lam)
            x.mul_(lam).add_(x_flipped)
        self.last = ("cutmix" if use_cutmix else "mixup", lam)
        return x, mixup_target(target, self.num_classes, lam, self.label_smoothing)


def cosine_with_warmup(warmup_steps, total_steps, min_ratio=0.01):
    def lr_lambda(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return lr_lambda


# ------------------------------------------------------------------------------ data

IMG, NUM_CLASSES = 16, 4
MEAN = torch.tensor([0.2, 0.2, 0.2]).view(1, 3, 1, 1)
STD = torch.tensor([0.35, 0.35, 0.35]).view(1, 3, 1, 1)


def make_lines(n, generator):
    """A line through a random offset: horizontal, vertical, diagonal or anti-diagonal."""
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    yy, xx = torch.meshgrid(torch.arange(IMG, dtype=torch.float32),
                            torch.arange(IMG, dtype=torch.float32), indexing="ij")
    offset = torch.rand(n, 1, 1, generator=generator) * (IMG - 4) + 2
    coordinate = torch.stack([yy, xx, yy - xx + IMG / 2, yy + xx - IMG / 2])  # 4, H, W
    chosen = coordinate[labels]  # n, H, W
    line = ((chosen - offset).abs() < 1.0).float()
    colour = 0.5 + 0.5 * torch.rand(n, 3, 1, 1, generator=generator)
    images = line[:, None] * colour + 0.1 * torch.randn(n, 3, IMG, IMG, generator=generator)
    return (images.clamp(0, 1) - MEAN) / STD, labels


data_gen = torch.Generator().manual_seed(1234)
train_x, train_y = make_lines(256, data_gen)
val_x, val_y = make_lines(64, data_gen)
class_counts = torch.bincount(train_y, minlength=NUM_CLASSES)

# ----------------------------------------------------- fixed-weight checks (recorded)

# window_partition / window_reverse / roll round trips
feat = torch.randn(2, 8, 8, 5)
windows = window_partition(feat, 4)
fixed_results["windows_shape"] = list(windows.shape)
partition_roundtrip = torch.equal(window_reverse(windows, 4, 8, 8), feat)
rolled = torch.roll(feat, shifts=(-2, -2), dims=(1, 2))
roll_roundtrip = torch.equal(torch.roll(rolled, shifts=(2, 2), dims=(1, 2)), feat)
# the first window holds the top-left 4x4 block
first_window_ok = torch.equal(windows[0], feat[0, :4, :4])

rel_index = get_relative_position_index(3, 3)
fixed_results["relative_position_index"] = rel_index
rel_index_dtype = str(rel_index.dtype)

# DropPath: eval is the identity, train zeroes whole samples and scales the rest by 1/keep
dp = DropPath(0.5)
ones = torch.ones(8, 3, 4)
dp.eval()
drop_path_eval_identity = dp(ones) is ones
dp.train()
torch.manual_seed(7)
dropped = dp(ones)
fixed_results["drop_path_train"] = dropped[:, 0, 0]
per_sample_values = sorted(set(dropped.flatten().tolist()))
torch.manual_seed(7)
samples = torch.stack([drop_path(ones, 0.25, True) for _ in range(400)])
drop_path_mean = samples.mean().item()

# the Swin model on fixed weights
torch.manual_seed(0)
swin = SwinTransformer()
swin_state_keys = list(swin.state_dict().keys())
swin_buffers = [name for name, _ in swin.named_buffers()]
shift_block = swin.layers[0].blocks[1]
attn_mask = shift_block.attn_mask
fixed_results["attn_mask"] = attn_mask
fixed_results["swin_table_init"] = (
    swin.layers[0].blocks[0].attn.relative_position_bias_table.detach().clone())
fixed_results["swin_dpr"] = [blk.drop_path.drop_prob if isinstance(blk.drop_path, DropPath)
                             else 0.0 for layer in swin.layers for blk in layer.blocks]
swin_n_params = sum(p.numel() for p in swin.parameters() if p.requires_grad)
xb, yb = train_x[:8], train_y[:8]
criterion = LabelSmoothingCrossEntropy(smoothing=0.1)
builtin_criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
swin.eval()
logits = swin(xb)
loss = criterion(logits, yb)
loss.backward()
fixed_results["swin_logits"] = logits.detach()
fixed_results["swin_loss"] = loss.item()
fixed_results["swin_builtin_loss"] = builtin_criterion(logits, yb).item()
fixed_results["swin_grads"] = {name: swin.get_parameter(name).grad.clone() for name in (
    "patch_embed.proj.weight", "layers.0.blocks.1.attn.relative_position_bias_table",
    "layers.0.blocks.1.attn.qkv.weight", "layers.0.downsample.reduction.weight",
    "layers.1.blocks.0.attn.relative_position_bias_table", "norm.weight", "head.bias")}
swin.zero_grad(set_to_none=True)

# mixed precision inference as timm's --amp runs it on CPU (bfloat16)
with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    swin_amp_logits = swin(xb)
amp_results = {"swin": swin_amp_logits.float()}

# inside the shifted block: the masked window attention three ways
with torch.no_grad():
    tokens = swin.layers[0].blocks[0](swin.patch_embed(xb[:2]))  # B, 64, C
    ws, C = shift_block.window_size, tokens.shape[-1]
    x_img = shift_block.norm1(tokens).view(2, 8, 8, C)
    x_win = window_partition(torch.roll(x_img, (-2, -2), (1, 2)), ws).view(-1, ws * ws, C)
    attn_module = shift_block.attn
    masked_out = attn_module(x_win, mask=attn_mask)
    qkv = attn_module.qkv(x_win).reshape(x_win.shape[0], ws * ws, 3, attn_module.num_heads, -1)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    float_mask = attn_module._get_rel_pos_bias() + attn_mask.repeat(2, 1, 1).unsqueeze(1)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
    sdpa = attn_module.proj(sdpa.transpose(1, 2).reshape(x_win.shape[0], ws * ws, C))
    sdpa_difference = (sdpa - masked_out).abs().max().item()
    scores = (q * attn_module.scale) @ k.transpose(-2, -1) + float_mask
    probs = scores.softmax(-1)
    cross_region_prob = probs.masked_select(attn_mask.repeat(2, 1, 1).unsqueeze(1) != 0).max()
    cross_region_prob = cross_region_prob.item()
    fixed_results["shift_block_out"] = masked_out

# a shifted block on a 6x6 map: padded to 8x8 windows, cropped back (recorded)
torch.manual_seed(11)
padded_block = SwinTransformerBlock(16, (6, 6), num_heads=2, window_size=4, shift_size=2)
padded_block.apply(swin._init_weights)
padded_in = torch.randn(2, 36, 16, requires_grad=True)
padded_out = padded_block(padded_in)
padded_out.pow(2).sum().backward()
fixed_results["padded_block_out"] = padded_out.detach()
fixed_results["padded_block_grads"] = {
    "input": padded_in.grad, "table": padded_block.attn.relative_position_bias_table.grad,
    "fc1": padded_block.mlp.fc1.weight.grad}
padded_mask_shape = list(padded_block.attn_mask.shape)
swin_block_repr = repr(swin.layers[0].blocks[1])

# the bias table bicubic-resized for 5x5 windows (fine-tuning at another window size)
with torch.no_grad():
    table = swin.layers[0].blocks[1].attn.relative_position_bias_table
    resized = resize_rel_pos_bias_table(table, 5)
    attention5 = WindowAttention(16, 5, num_heads=2)
    attention5.relative_position_bias_table.copy_(resized)
    fixed_results["resized_table"] = resized
    fixed_results["resized_bias"] = attention5._get_rel_pos_bias()

# eval vs train: DropPath is the identity in eval, random per sample in train
with torch.no_grad():
    eval_a, eval_b = swin(xb), swin(xb)
    swin.train()
    torch.manual_seed(3)
    train_a = swin(xb)
    torch.manual_seed(3)
    train_b = swin(xb)
    train_c = swin(xb)
    swin.eval()
eval_deterministic = torch.equal(eval_a, eval_b)
train_seeded_same = torch.equal(train_a, train_b)
train_differs = not torch.allclose(train_a, eval_a) and not torch.allclose(train_b, train_c)
fixed_results["swin_train_logits_seed3"] = train_a

# activation checkpointing in train mode: the recomputed DropPath masks are the same
checkpoint_grads = {}
for use_checkpoint in (False, True):
    torch.manual_seed(0)
    model = SwinTransformer(use_checkpoint=use_checkpoint, drop_path_rate=0.3)
    model.train()
    torch.manual_seed(5)
    criterion(model(xb), yb).backward()
    checkpoint_grads[use_checkpoint] = {n: p.grad for n, p in model.named_parameters()}
fixed_results["checkpointed_grads"] = {
    n: checkpoint_grads[True][n] for n in ("patch_embed.proj.weight",
                                           "layers.0.blocks.1.mlp.fc2.weight")}

# the ConvNeXt model on fixed weights
torch.manual_seed(0)
convnext = ConvNeXt(head_init_scale=0.5)
convnext_n_params = sum(p.numel() for p in convnext.parameters())
fixed_results["convnext_gamma_init"] = convnext.stages[0][0].gamma.detach().clone()
fixed_results["convnext_dwconv_init"] = convnext.stages[1][1].dwconv.weight[:2].detach().clone()
convnext.eval()
logits = convnext(xb)
loss = criterion(logits, yb)
loss.backward()
fixed_results["convnext_logits"] = logits.detach()
fixed_results["convnext_loss"] = loss.item()
fixed_results["convnext_grads"] = {name: convnext.get_parameter(name).grad.clone() for name in (
    "downsample_layers.0.0.weight", "downsample_layers.0.1.weight",
    "downsample_layers.1.0.bias", "stages.0.0.dwconv.weight", "stages.0.0.gamma",
    "stages.1.1.pwconv1.weight", "stages.1.1.dwconv.bias", "head.weight")}
convnext.zero_grad(set_to_none=True)

# Mixup / CutMix on a fixed batch, soft targets two ways (recorded)
torch.manual_seed(21)
mixup_fn = Mixup()
mixed = []
for _ in range(4):
    images, targets = mixup_fn(train_x[:8].clone(), train_y[:8])
    mixed.append((mixup_fn.last, images, targets))
fixed_results["mix_lams"] = [lam for (_, lam), _, _ in mixed]
mix_kinds = [kind for (kind, _), _, _ in mixed]
fixed_results["mixed_images"] = torch.stack([images for _, images, _ in mixed])
fixed_results["mixed_targets"] = torch.stack([targets for _, _, targets in mixed])
soft_criterion = SoftTargetCrossEntropy()
with torch.no_grad():
    logits = convnext(mixed[0][1])
    fixed_results["soft_ce"] = soft_criterion(logits, mixed[0][2]).item()
    soft_ce_builtin = F.cross_entropy(logits, mixed[0][2]).item()

with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    convnext_amp_logits = convnext(xb)
amp_results["convnext"] = convnext_amp_logits.float()

# the two channels_first LayerNorms, depthwise conv by channel, Linear == 1x1 conv
with torch.no_grad():
    fmap = torch.randn(2, 6, 5, 5) * 3 + 1
    official = LayerNorm(6, eps=1e-6, data_format="channels_first")
    official.weight.normal_()
    official.bias.normal_()
    timm_ln = LayerNorm2d(6)
    timm_ln.load_state_dict(official.state_dict())
    layer_norm_difference = (official(fmap) - timm_ln(fmap)).abs().max().item()
    fixed_results["layer_norm2d"] = timm_ln(fmap)
    block = convnext.stages[0][1]
    fmap = torch.randn(2, 16, 6, 6)
    depthwise = block.dwconv(fmap)
    by_channel = torch.cat([F.conv2d(fmap[:, c:c + 1], block.dwconv.weight[c:c + 1],
                                     block.dwconv.bias[c:c + 1], padding=3)
                            for c in range(16)], dim=1)
    depthwise_difference = (depthwise - by_channel).abs().max().item()
    pointwise = block.pwconv1(fmap.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    conv1x1 = F.conv2d(fmap, block.pwconv1.weight[:, :, None, None], block.pwconv1.bias)
    pointwise_difference = (pointwise - conv1x1).abs().max().item()
    fixed_results["convnext_block_out"] = block(fmap)

# ------------------------------------------------------------------------------ training


def train(model, optimizer, scheduler, steps, batch_size, ema=None, seed=0, mixup_fn=None,
          loss_fn=None):
    loss_fn = loss_fn or criterion
    loader_gen = torch.Generator().manual_seed(seed)
    losses, lrs = [], []
    model.train()
    step = 0
    while step < steps:
        order = torch.randperm(train_x.shape[0], generator=loader_gen)
        for start in range(0, train_x.shape[0] - batch_size + 1, batch_size):
            index = order[start:start + batch_size]
            images, targets = train_x[index], train_y[index]
            if mixup_fn is not None:
                images, targets = mixup_fn(images, targets)
                mix_history.append(mixup_fn.last)
            loss = loss_fn(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            lrs.append(optimizer.param_groups[0]["lr"])
            scheduler.step()
            if ema is not None:
                ema.update(model)
            losses.append(loss.item())
            step += 1
            if step == steps:
                break
    return losses, lrs


@torch.no_grad()
def evaluate(model):
    model.eval()
    logits = model(val_x)
    accuracy = (logits.argmax(1) == val_y).float().mean().item()
    return builtin_criterion(logits, val_y).item(), accuracy


steps, batch_size = 96, 32
mix_history = []

torch.manual_seed(0)
swin = SwinTransformer()
swin_groups = param_groups_weight_decay(swin, 0.05, swin.no_weight_decay_keywords())
swin_optimizer = torch.optim.AdamW(swin_groups, lr=3e-3, betas=(0.9, 0.999))
swin_scheduler = torch.optim.lr_scheduler.LambdaLR(swin_optimizer,
                                                   cosine_with_warmup(6, steps))
swin_losses, swin_lrs = train(swin, swin_optimizer, swin_scheduler, steps, batch_size)
swin_val_loss, swin_accuracy = evaluate(swin)
swin_group_sizes = [len(g["params"]) for g in swin_optimizer.param_groups]

# save, drop the index buffers as timm's checkpoint filter does, load into a fresh model
buffer = io.BytesIO()
torch.save({"model": swin.state_dict(), "step": steps}, buffer)
buffer.seek(0)
checkpoint_dict = torch.load(buffer, weights_only=True)
restored = SwinTransformer()
load_result = restored.load_state_dict(checkpoint_filter_fn(checkpoint_dict["model"]),
                                       strict=False)
restored.eval()
with torch.no_grad():
    restored_difference = (restored(val_x) - swin(val_x)).abs().max().item()

torch.manual_seed(0)
convnext = ConvNeXt()
convnext_groups = param_groups_weight_decay(convnext, 0.05)
convnext_optimizer = torch.optim.AdamW(convnext_groups, lr=4e-3)
warmup = torch.optim.lr_scheduler.LinearLR(convnext_optimizer, start_factor=0.1, total_iters=6)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(convnext_optimizer, T_max=steps - 6,
                                                    eta_min=1e-5)
convnext_scheduler = torch.optim.lr_scheduler.SequentialLR(
    convnext_optimizer, schedulers=[warmup, cosine], milestones=[6])
ema = ModelEmaV2(convnext, decay=0.9)
convnext_losses, convnext_lrs = train(convnext, convnext_optimizer, convnext_scheduler, steps,
                                      batch_size, ema=ema, seed=1, mixup_fn=Mixup(),
                                      loss_fn=soft_criterion)
convnext_val_loss, convnext_accuracy = evaluate(convnext)
ema_val_loss, ema_accuracy = evaluate(ema.module)
convnext_group_sizes = [len(g["params"]) for g in convnext_optimizer.param_groups]
# the EMA copy shares no storage with the model
ema_separate = all(a.data_ptr() != b.data_ptr() for a, b in
                   zip(ema.module.parameters(), convnext.parameters()))

print(f"swin {swin_losses[0]:.3f} -> {swin_losses[-1]:.3f} (val {swin_val_loss:.3f}, "
      f"acc {swin_accuracy:.2f}); convnext {convnext_losses[0]:.3f} -> "
      f"{convnext_losses[-1]:.3f} (val {convnext_val_loss:.3f}, acc {convnext_accuracy:.2f}, "
      f"ema acc {ema_accuracy:.2f}); sdpa {sdpa_difference:.1e}")
