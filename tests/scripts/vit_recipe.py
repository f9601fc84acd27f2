# ruff: noqa: N812 (the usual F alias of nn.functional)
"""A small Vision Transformer trained the way timm's ``vision_transformer.py`` and the DeiT
training recipes write torch code (written for these tests, not a copy of either), on sklearn's
8x8 digits upsampled to 16x16:

- patch embedding by ``nn.Conv2d(kernel_size=patch, stride=patch)`` then
  ``flatten(2).transpose(1, 2)``; a class token and a learned position embedding as
  ``nn.Parameter(torch.zeros(...))`` initialised by ``nn.init.trunc_normal_(std=.02)``;
  ``model.apply(_init_weights)`` over the Linear/LayerNorm modules;
- attention as timm writes it (``qkv`` reshape/permute/``unbind``) through
  ``F.scaled_dot_product_attention``, beside the explicit ``q @ k.transpose * scale``/softmax
  path and an ``nn.MultiheadAttention(batch_first=True)`` (``need_weights=False``) loaded with
  the same weights;
- stochastic depth written by hand (``x.new_empty(shape).bernoulli_(keep)``, ``div_``),
  LayerScale (``gamma * x``), ``nn.GELU`` MLPs, a per-block drop-path rate from
  ``torch.linspace``;
- AdamW with a no-weight-decay group (``named_parameters``: ``ndim <= 1`` and the position
  embedding / class token), a warm-up + cosine ``LambdaLR`` stepped per optimizer step,
  gradient accumulation, the forward under ``torch.autocast("cpu", dtype=torch.bfloat16)``,
  ``nn.CrossEntropyLoss(label_smoothing=0.1)``, ``clip_grad_norm_``;
- a model EMA as ``torch.optim.swa_utils.AveragedModel`` with ``get_ema_multi_avg_fn`` and,
  by hand, as ``torch._foreach_lerp_`` over the parameter lists;
- evaluation under ``model.eval()`` and ``torch.inference_mode()``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
fixed_results = {}


# ---------------------------------------------------------------------------------- layers


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    """Drop whole samples of a residual branch (stochastic depth)."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample, any rank
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


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=1, embed_dim=32):
        super().__init__()
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # (B, D, H', W')
        return x.flatten(2).transpose(1, 2)  # (B, N, D)


class Attention(nn.Module):
    def __init__(self, dim, num_heads=4, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        assert dim % num_heads == 0, "dim should be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = True
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=2.0, init_values=None, drop_path=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads=num_heads)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=1, num_classes=10, embed_dim=32,
                 depth=3, num_heads=4, mlp_ratio=2.0, init_values=0.1, drop_rate=0.0,
                 drop_path_rate=0.1):
        super().__init__()
        self.num_classes = num_classes
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=drop_rate)
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # decay rule
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio, init_values=init_values, drop_path=dpr[i])
            for i in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def no_weight_decay(self):
        return {"pos_embed", "cls_token"}

    def set_fused_attn(self, fused):
        for block in self.blocks:
            block.attn.fused_attn = fused

    def forward_features(self, x):
        x = self.patch_embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits=False):
        x = x[:, 0]  # class token
        return x if pre_logits else self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


def param_groups_weight_decay(model, weight_decay=0.05, no_weight_decay_list=()):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0},
            {"params": decay, "weight_decay": weight_decay}]


def mha_from_attention(attn, dim):
    """An ``nn.MultiheadAttention`` holding timm-layout ``Attention`` weights."""
    mha = nn.MultiheadAttention(dim, attn.num_heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv.weight)
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    return mha


# -------------------------------------------------------------------------------- data

digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (N, 1, 8, 8)
images = F.interpolate(images, scale_factor=2, mode="bilinear", align_corners=False)
labels = torch.tensor(digits.target, dtype=torch.long)
n_train = 1440
perm = torch.randperm(len(labels))
train_idx, test_idx = perm[:n_train], perm[n_train:]
mean, std = images[train_idx].mean(), images[train_idx].std()
images = (images - mean) / std
x_train, y_train = images[train_idx], labels[train_idx]
x_test, y_test = images[test_idx], labels[test_idx]


# ------------------------------------------------------------ fixed-weight checks (recorded)

torch.manual_seed(1)
fixed_model = VisionTransformer()
fixed_x, fixed_y = x_train[:16], y_train[:16]
tokens = fixed_model.patch_embed(fixed_x)
fixed_results["patch_tokens_shape"] = list(tokens.shape)
# Conv2d(stride=patch) is a Linear over the flattened patches
patches = fixed_x.unfold(2, 4, 4).unfold(3, 4, 4)  # (B, 1, 4, 4, 4, 4)
patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(16, 16, -1)
linear_tokens = patches @ fixed_model.patch_embed.proj.weight.flatten(1).T \
    + fixed_model.patch_embed.proj.bias
patch_embed_difference = (tokens - linear_tokens).abs().max().item()

fixed_model.eval()
with torch.no_grad():
    fixed_results["logits_fp32"] = fixed_model(fixed_x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16_logits = fixed_model(fixed_x)
    bf16_logits_are_bfloat16 = bf16_logits.dtype == torch.bfloat16
    fixed_results["logits_bf16"] = bf16_logits.float()

# the three attention paths on the first block's weights
attention = fixed_model.blocks[0].attn
xa = torch.randn(4, 17, 32)
with torch.no_grad():
    attn_fused = attention(xa)
    attention.fused_attn = False
    attn_explicit = attention(xa)
    attention.fused_attn = True
    mha = mha_from_attention(attention, 32)
    attn_mha, mha_weights = mha(xa, xa, xa, need_weights=False)
fixed_results["attention"] = attn_fused
mha_returned_none = mha_weights is None
attention_differences = {"explicit": (attn_explicit - attn_fused).abs().max().item(),
                         "mha": (attn_mha - attn_fused).abs().max().item()}
# and with gradients, through the whole model
fixed_model.train()
for module in fixed_model.modules():
    if isinstance(module, DropPath):
        module.drop_prob = 0.0  # (no sampling: deterministic forwards)
attention_grads = {}
for fused in (True, False):
    fixed_model.set_fused_attn(fused)
    fixed_model.zero_grad()
    F.cross_entropy(fixed_model(fixed_x), fixed_y, label_smoothing=0.1).backward()
    attention_grads[fused] = {n: p.grad.clone() for n, p in fixed_model.named_parameters()}
fixed_model.set_fused_attn(True)
fixed_results["grads"] = attention_grads[True]

# one MLP (fc1, GELU, fc2) under bfloat16 autocast: the gradients that reach its input and fc1
mlp = fixed_model.blocks[0].mlp
xm = torch.randn(16, 17, 32, requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    ym = mlp(xm)
mlp.zero_grad()
ym.backward(torch.randn(16, 17, 32).to(ym.dtype))
fixed_results["bf16_mlp_grads"] = {"input": xm.grad.clone(),
                                   "fc1.weight": mlp.fc1.weight.grad.clone(),
                                   "fc1.bias": mlp.fc1.bias.grad.clone()}

# gradient accumulation: two half batches with loss / 2 give the full batch's gradient
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
fixed_model.zero_grad()
criterion(fixed_model(fixed_x), fixed_y).backward()
full_batch_grads = [p.grad.clone() for p in fixed_model.parameters()]
fixed_model.zero_grad()
for micro in (slice(0, 8), slice(8, 16)):
    (criterion(fixed_model(fixed_x[micro]), fixed_y[micro]) / 2).backward()
accumulated_grads = [p.grad.clone() for p in fixed_model.parameters()]
accumulation_difference = max((a - b).abs().max().item()
                              for a, b in zip(accumulated_grads, full_batch_grads))

# DropPath: identity in eval, per-sample 0 or x / keep in train
dp = DropPath(0.25)
xd = torch.randn(4000, 3, 5) + 3.0
dp.eval()
drop_path_eval_is_identity = dp(xd) is xd
dp.train()
yd = dp(xd)
kept = (yd != 0).reshape(4000, -1)
drop_path_per_sample = bool((kept == kept[:, :1]).all())
kept = kept[:, 0]
drop_path_kept_scaled = torch.allclose(yd[kept], xd[kept] / 0.75, rtol=1e-6, atol=0)
drop_path_keep_fraction = kept.float().mean().item()
drop_path_mean_ratio = (yd.mean() / xd.mean()).item()
fixed_results["drop_path_sample"] = yd[:12, 0, 0]
fixed_results["drop_path_module_repr"] = repr(DropPath(0.1))

# float64 gradients through the fused attention, the MultiheadAttention copy and a DropPath
# whose mask is drawn from a fixed seed on each call
attention64 = copy.deepcopy(attention).double()
mha64 = mha_from_attention(attention64, 32).double()
x64 = torch.randn(1, 4, 32, dtype=torch.float64, requires_grad=True)


def drop_path_seeded(x):
    torch.manual_seed(7)
    return drop_path(x, 0.5, training=True)


gradcheck_results = {
    "sdpa_attention": torch.autograd.gradcheck(attention64, (x64,)),
    "mha": torch.autograd.gradcheck(
        lambda x: mha64(x, x, x, need_weights=False)[0], (x64,)),
    "drop_path": torch.autograd.gradcheck(drop_path_seeded, (x64,)),
}


# ------------------------------------------------------------------------------ training

epochs, batch_size, accum_steps = 6, 32, 2
micro_batch = batch_size // accum_steps
steps_per_epoch = n_train // batch_size
total_steps, warmup_steps = epochs * steps_per_epoch, 20
base_lr, min_lr_ratio = 8e-3, 0.01


def lr_lambda(step):
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def create_optimizer(model):
    optimizer = torch.optim.AdamW(
        param_groups_weight_decay(model, 0.05, model.no_weight_decay()), lr=base_lr,
        betas=(0.9, 0.999))
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def train_one_epoch(model, optimizer, scheduler, criterion, use_amp=True, after_step=None,
                    max_steps=None):
    """One pass in shuffled batches of ``batch_size``, each as ``accum_steps`` micro-batches;
    the per-step losses, gradient norms and learning rates. ``after_step(model)`` follows each
    optimizer step (the EMA updates)."""
    model.train()
    order = torch.randperm(n_train)
    record = {"losses": [], "grad_norms": [], "lrs": []}
    for i in range(steps_per_epoch if max_steps is None else max_steps):
        idx = order[i * batch_size:(i + 1) * batch_size]
        step_loss = 0.0
        for micro in range(accum_steps):
            mb = idx[micro * micro_batch:(micro + 1) * micro_batch]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
                output = model(x_train[mb])
                loss = criterion(output, y_train[mb])
            (loss / accum_steps).backward()
            step_loss += loss.item() / accum_steps
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        if after_step is not None:
            after_step(model)
        record["losses"].append(step_loss)
        record["grad_norms"].append(grad_norm.item())
        record["lrs"].append(optimizer.param_groups[0]["lr"])
    return record


criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

# a few float32 steps on fixed weights (recorded)
torch.manual_seed(3)
fp32_model = VisionTransformer()
fp32_optimizer, fp32_scheduler = create_optimizer(fp32_model)
fp32_record = train_one_epoch(fp32_model, fp32_optimizer, fp32_scheduler, criterion,
                              use_amp=False, max_steps=4)
fixed_results["fp32_losses"] = fp32_record["losses"]
fixed_results["fp32_grad_norms"] = fp32_record["grad_norms"]
fixed_results["fp32_head_after"] = fp32_model.head.weight.detach().clone()

# the run: bfloat16 autocast, EMA two ways
torch.manual_seed(2)
model = VisionTransformer()
optimizer, scheduler = create_optimizer(model)
ema_decay = 0.9
model_ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(ema_decay))
ema_by_hand = [p.detach().clone() for p in model.parameters()]
ema_updates = 0


def update_emas(model):
    global ema_updates
    model_ema.update_parameters(model)
    with torch.no_grad():
        params = [p.detach() for p in model.parameters()]
        if ema_updates == 0:  # (AveragedModel copies the weights on its first update)
            torch._foreach_copy_(ema_by_hand, params)
        else:
            torch._foreach_lerp_(ema_by_hand, params, 1.0 - ema_decay)
    ema_updates += 1


losses, lrs, grad_norms = [], [], []
for epoch in range(epochs):
    record = train_one_epoch(model, optimizer, scheduler, criterion, after_step=update_emas)
    losses += record["losses"]
    lrs += record["lrs"]
    grad_norms += record["grad_norms"]
    print(f"epoch {epoch}: loss {np.mean(record['losses']):.4f} lr {lrs[-1]:.2e}")


@torch.inference_mode()
def evaluate(net, x, y, autocast=False):
    net.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = net(x)
    return (logits.argmax(-1) == y).float().mean().item(), logits


test_accuracy, test_logits = evaluate(model, x_test, y_test)
test_accuracy_bf16, _ = evaluate(model, x_test, y_test, autocast=True)
ema_accuracy, _ = evaluate(model_ema, x_test, y_test)
train_accuracy, _ = evaluate(model, x_train[:400], y_train[:400])
ema_difference = max((a - b).abs().max().item()
                     for a, b in zip(model_ema.module.parameters(), ema_by_hand))
test_logits_are_inference = test_logits.is_inference()
n_no_decay = len(optimizer.param_groups[0]["params"])
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; test accuracy {test_accuracy:.3f} "
      f"(bf16 {test_accuracy_bf16:.3f}, ema {ema_accuracy:.3f}); attention paths "
      f"{attention_differences}; ema by hand {ema_difference:.1e}")
