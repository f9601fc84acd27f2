# ruff: noqa: N812 (the usual F alias of nn.functional)
"""A masked autoencoder (MAE) and ArcFace/CosFace margin heads on sklearn's digits, written for
these tests the way the official MAE code (``models_mae.py``, ``util/pos_embed.py``, its
visualisation notebook) and face-recognition repositories (arcface-pytorch's
``metrics.py``/``focal_loss.py``, insightface's ``losses.py``) write torch code (not a copy):

MAE
- a 2-D sin-cos positional embedding built in numpy (``np.meshgrid``, ``np.einsum``) and
  copied in with ``pos_embed.data.copy_(torch.from_numpy(...).float().unsqueeze(0))`` into a
  frozen ``nn.Parameter(requires_grad=False)``; the same built with ``torch.meshgrid``/
  ``torch.outer``;
- ``xavier_uniform_`` on a ``.view`` of the conv patch embedding's weight, ``normal_(std=.02)``
  on the cls/mask tokens, ``model.apply(_init_weights)``;
- timm-style blocks (``qkv`` reshape/``permute(2, 0, 3, 1, 4)``/``unbind``, ``softmax``)
  beside ``F.scaled_dot_product_attention``;
- ``random_masking``: ``torch.rand`` noise, ``argsort`` twice for ``ids_restore``,
  ``torch.gather`` with ``index.unsqueeze(-1).repeat(1, 1, D)``, the binary mask unshuffled by
  ``gather``; the decoder's mask tokens by ``repeat``, ``torch.cat`` and the unshuffle;
- ``patchify``/``unpatchify`` with ``reshape`` (MAE writes ``reshape(shape=...)``) and
  ``torch.einsum('nchpwq->nhwpqc')`` and back; the normalised-pixel loss (per-patch
  ``mean``/``var``), averaged over masked patches only; the notebook's ``im_masked``/
  ``im_paste``;
- ``interpolate_pos_embed`` (``F.interpolate(mode='bicubic', align_corners=False)``) loading
  the encoder into a larger-image ViT with ``load_state_dict(strict=False)``; features of a
  frozen encoder (``requires_grad_(False)``) without masking;

ArcFace / CosFace
- ``F.linear(F.normalize(x), F.normalize(W))``, ``sqrt((1 - cos^2).clamp(0, 1))``,
  ``cos(theta + m)``, ``torch.where(cos > th, phi, cos - mm)`` and the easy-margin flag, a
  one-hot by ``scatter_`` (and ``F.one_hot``), the scale ``s``; CosFace's ``cos - m``;
  insightface's margin by ``arccos_``/``cos_`` in place under ``torch.no_grad`` on an indexed
  target logit; arcface-pytorch's focal loss;
- a backbone ending in a frozen-gain ``BatchNorm1d`` embedding, ``SGD`` with momentum and
  parameter groups, ``MultiStepLR``; verification by cosine similarity with the best
  threshold; classification by the nearest class centre.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math
from functools import partial

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
np.random.seed(0)
fixed_results = {}

# ------------------------------------------------------------------ positional embeddings


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    """embed_dim: output dimension for each position; pos: positions, any shape -> (M, D)."""
    assert embed_dim % 2 == 0
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000 ** omega  # (D/2,)
    pos = pos.reshape(-1)  # (M,)
    out = np.einsum("m,d->md", pos, omega)  # (M, D/2), outer product
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)  # (M, D)


def get_2d_sincos_pos_embed_from_grid(embed_dim, grid):
    assert embed_dim % 2 == 0
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])  # (H*W, D/2)
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])  # (H*W, D/2)
    return np.concatenate([emb_h, emb_w], axis=1)  # (H*W, D)


def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False):
    """(grid_size*grid_size, embed_dim) or (1+grid_size*grid_size, embed_dim) with a cls row."""
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)  # here w goes first
    grid = np.stack(grid, axis=0)
    grid = grid.reshape([2, 1, grid_size, grid_size])
    pos_embed = get_2d_sincos_pos_embed_from_grid(embed_dim, grid)
    if cls_token:
        pos_embed = np.concatenate([np.zeros([1, embed_dim]), pos_embed], axis=0)
    return pos_embed


def sincos_2d_torch(embed_dim, grid_size, temperature=10000.0):
    """The same table in torch, as lucidrains-style ViTs build it (float64)."""
    y, x = torch.meshgrid(torch.arange(grid_size, dtype=torch.float64),
                          torch.arange(grid_size, dtype=torch.float64), indexing="xy")
    omega = torch.arange(embed_dim // 4, dtype=torch.float64) / (embed_dim / 4)
    omega = 1.0 / (temperature ** omega)
    out_y = torch.outer(y.flatten(), omega)
    out_x = torch.outer(x.flatten(), omega)
    return torch.cat((out_y.sin(), out_y.cos(), out_x.sin(), out_x.cos()), dim=1)


def interpolate_pos_embed(model, checkpoint_model, num_extra_tokens=1):
    if "pos_embed" not in checkpoint_model:
        return
    pos_embed_checkpoint = checkpoint_model["pos_embed"]
    embedding_size = pos_embed_checkpoint.shape[-1]
    num_patches = model.patch_embed.num_patches
    orig_size = int((pos_embed_checkpoint.shape[-2] - num_extra_tokens) ** 0.5)
    new_size = int(num_patches ** 0.5)
    if orig_size != new_size:
        print(f"Position interpolate from {orig_size}x{orig_size} to {new_size}x{new_size}")
        extra_tokens = pos_embed_checkpoint[:, :num_extra_tokens]
        pos_tokens = pos_embed_checkpoint[:, num_extra_tokens:]
        pos_tokens = pos_tokens.reshape(-1, orig_size, orig_size, embedding_size)
        pos_tokens = pos_tokens.permute(0, 3, 1, 2)
        pos_tokens = F.interpolate(pos_tokens, size=(new_size, new_size), mode="bicubic",
                                   align_corners=False)
        pos_tokens = pos_tokens.permute(0, 2, 3, 1).flatten(1, 2)
        checkpoint_model["pos_embed"] = torch.cat((extra_tokens, pos_tokens), dim=1)


# ---------------------------------------------------------------------------- MAE


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # BCHW -> BNC


class Attention(nn.Module):
    def __init__(self, dim, num_heads=4, qkv_bias=True, fused_attn=False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = fused_attn
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MaskedAutoencoderViT(nn.Module):
    """Masked Autoencoder with a VisionTransformer backbone."""

    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32, depth=2,
                 num_heads=4, decoder_embed_dim=24, decoder_depth=1, decoder_num_heads=4,
                 mlp_ratio=2.0, norm_layer=partial(nn.LayerNorm, eps=1e-6), norm_pix_loss=True):
        super().__init__()
        # MAE encoder specifics
        self.in_chans = in_chans
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim),
                                      requires_grad=False)  # fixed sin-cos embedding
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads, mlp_ratio, qkv_bias=True,
                                           norm_layer=norm_layer) for _ in range(depth)])
        self.norm = norm_layer(embed_dim)
        # MAE decoder specifics
        self.decoder_embed = nn.Linear(embed_dim, decoder_embed_dim, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dim))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, decoder_embed_dim),
                                              requires_grad=False)
        self.decoder_blocks = nn.ModuleList([
            Block(decoder_embed_dim, decoder_num_heads, mlp_ratio, qkv_bias=True,
                  norm_layer=norm_layer) for _ in range(decoder_depth)])
        self.decoder_norm = norm_layer(decoder_embed_dim)
        self.decoder_pred = nn.Linear(decoder_embed_dim, patch_size ** 2 * in_chans, bias=True)
        self.norm_pix_loss = norm_pix_loss
        self.initialize_weights()

    def initialize_weights(self):
        grid = int(self.patch_embed.num_patches ** 0.5)
        pos_embed = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], grid, cls_token=True)
        self.pos_embed.data.copy_(torch.from_numpy(pos_embed).float().unsqueeze(0))
        decoder_pos_embed = get_2d_sincos_pos_embed(self.decoder_pos_embed.shape[-1], grid,
                                                    cls_token=True)
        self.decoder_pos_embed.data.copy_(torch.from_numpy(decoder_pos_embed).float()
                                          .unsqueeze(0))
        # initialize patch_embed like nn.Linear (instead of nn.Conv2d)
        w = self.patch_embed.proj.weight.data
        nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
        nn.init.normal_(self.cls_token, std=0.02)
        nn.init.normal_(self.mask_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def patchify(self, imgs):
        """imgs: (N, C, H, W) -> x: (N, L, patch_size**2 * C)"""
        p = self.patch_embed.patch_size[0]
        assert imgs.shape[2] == imgs.shape[3] and imgs.shape[2] % p == 0
        h = w = imgs.shape[2] // p
        x = imgs.reshape(shape=(imgs.shape[0], self.in_chans, h, p, w, p))
        x = torch.einsum("nchpwq->nhwpqc", x)
        return x.reshape(shape=(imgs.shape[0], h * w, p ** 2 * self.in_chans))

    def unpatchify(self, x):
        """x: (N, L, patch_size**2 * C) -> imgs: (N, C, H, W)"""
        p = self.patch_embed.patch_size[0]
        h = w = int(x.shape[1] ** 0.5)
        assert h * w == x.shape[1]
        x = x.reshape(shape=(x.shape[0], h, w, p, p, self.in_chans))
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(shape=(x.shape[0], self.in_chans, h * p, h * p))

    def random_masking(self, x, mask_ratio):
        """Per-sample random masking by per-sample shuffling (argsort of random noise)."""
        N, L, D = x.shape  # batch, length, dim
        len_keep = int(L * (1 - mask_ratio))
        noise = torch.rand(N, L, device=x.device)  # noise in [0, 1]
        # sort noise for each sample
        ids_shuffle = torch.argsort(noise, dim=1)  # ascend: small is keep, large is remove
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        # keep the first subset
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
        # generate the binary mask: 0 is keep, 1 is remove
        mask = torch.ones([N, L], device=x.device)
        mask[:, :len_keep] = 0
        # unshuffle to get the binary mask
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward_encoder(self, x, mask_ratio):
        x = self.patch_embed(x)
        x = x + self.pos_embed[:, 1:, :]  # add pos embed w/o cls token
        x, mask, ids_restore = self.random_masking(x, mask_ratio)
        cls_token = self.cls_token + self.pos_embed[:, :1, :]
        cls_tokens = cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return x, mask, ids_restore

    def forward_decoder(self, x, ids_restore):
        x = self.decoder_embed(x)
        # append mask tokens to sequence
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)  # no cls token
        x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1)  # append cls token
        x = x + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        x = self.decoder_norm(x)
        x = self.decoder_pred(x)
        return x[:, 1:, :]  # remove cls token

    def forward_loss(self, imgs, pred, mask):
        """pred: (N, L, p*p*C), mask: (N, L) with 0 keep, 1 remove."""
        target = self.patchify(imgs)
        if self.norm_pix_loss:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + 1.0e-6) ** 0.5
        loss = (pred - target) ** 2
        loss = loss.mean(dim=-1)  # [N, L], mean loss per patch
        return (loss * mask).sum() / mask.sum()  # mean loss on removed patches

    def forward(self, imgs, mask_ratio=0.75):
        latent, mask, ids_restore = self.forward_encoder(imgs, mask_ratio)
        pred = self.forward_decoder(latent, ids_restore)  # [N, L, p*p*C]
        loss = self.forward_loss(imgs, pred, mask)
        return loss, pred, mask


class VisionTransformer(nn.Module):
    """The fine-tuning ViT that loads the MAE encoder; global pooling with ``fc_norm``."""

    def __init__(self, img_size=24, patch_size=4, in_chans=3, embed_dim=32, depth=2,
                 num_heads=4, mlp_ratio=2.0, num_classes=10):
        super().__init__()
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1,
                                                  embed_dim))
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads, mlp_ratio,
                                           norm_layer=norm_layer) for _ in range(depth)])
        self.fc_norm = norm_layer(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.fc_norm(x[:, 1:, :].mean(dim=1))  # global pool without cls token

    def forward(self, x):
        return self.head(self.forward_features(x))


# --------------------------------------------------------------------------- data

digits = load_digits()
rng = np.random.default_rng(0)
gray = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (1797, 1, 8, 8)
tints = torch.tensor(rng.uniform(0.3, 1.0, size=(len(gray), 3, 1, 1)), dtype=torch.float32)
color_digits = F.interpolate(gray, scale_factor=2, mode="nearest") * tints  # (1797, 3, 16, 16)
labels = torch.tensor(digits.target)
perm = torch.randperm(len(gray))
train_idx, test_idx = perm[:1400], perm[1400:]

# ------------------------------------------------------- (recorded) MAE on fixed weights

torch.manual_seed(1)
mae = MaskedAutoencoderViT()
imgs = color_digits[:6]
table = get_2d_sincos_pos_embed(32, 4, cls_token=True)
fixed_results["pos_embed"] = mae.pos_embed.detach().clone()
pos_embed_torch = sincos_2d_torch(32, 4)
pos_embed_table = torch.from_numpy(table[1:])
patches = mae.patchify(imgs)
roundtrip = mae.unpatchify(patches)
fixed_results["patches"] = patches

torch.manual_seed(2)
loss, pred, mask = mae(imgs, mask_ratio=0.75)
loss.backward()
fixed_results["mae_loss"] = loss.item()
fixed_results["mae_pred"] = pred.detach()
fixed_results["mae_mask"] = mask
fixed_results["mae_grads"] = {n: p.grad.clone() for n, p in mae.named_parameters()
                              if p.grad is not None}
frozen_grads = {n: p.grad for n, p in mae.named_parameters() if not p.requires_grad}
mae.zero_grad(set_to_none=True)

# the same masking twice: the restore indices invert the shuffle, the mask keeps len_keep
torch.manual_seed(2)
tokens = torch.arange(16.0).view(1, 16, 1).repeat(3, 1, 2)  # each token carries its index
kept, token_mask, token_restore = mae.random_masking(tokens, 0.75)
fixed_results["token_mask"] = token_mask
fixed_results["kept_tokens"] = kept[..., 0]
unshuffled = torch.gather(torch.cat([kept, torch.full((3, 12, 2), -1.0)], dim=1), dim=1,
                          index=token_restore.unsqueeze(-1).repeat(1, 1, 2))

# the fused attention path gives the same block outputs
with torch.no_grad():
    block = mae.blocks[0]
    x_tokens = mae.patch_embed(imgs) + mae.pos_embed[:, 1:, :]
    manual_out = block(x_tokens)
    block.attn.fused_attn = True
    fused_out = block(x_tokens)
    block.attn.fused_attn = False
fixed_results["block_out"] = manual_out

# the notebook's visualisation: masked input and the reconstruction pasted into it
with torch.no_grad():
    p = mae.patch_embed.patch_size[0]
    y = mae.unpatchify(pred.detach())
    y = torch.einsum("nchw->nhwc", y)
    vis_mask = mask.detach().unsqueeze(-1).repeat(1, 1, p ** 2 * 3)  # (N, H*W, p*p*3)
    vis_mask = mae.unpatchify(vis_mask)  # 1 is removing, 0 is keeping
    vis_mask = torch.einsum("nchw->nhwc", vis_mask)
    x_hwc = torch.einsum("nchw->nhwc", imgs)
    im_masked = x_hwc * (1 - vis_mask)
    im_paste = x_hwc * (1 - vis_mask) + y * vis_mask
fixed_results["im_paste"] = im_paste

# the encoder loaded into a 24x24 ViT: the 4x4 position grid interpolated to 6x6
finetune = VisionTransformer(img_size=24)
checkpoint_model = {k: v.clone() for k, v in mae.state_dict().items()}
for k in ("head.weight", "head.bias"):
    checkpoint_model.pop(k, None)
interpolate_pos_embed(finetune, checkpoint_model)
msg = finetune.load_state_dict(checkpoint_model, strict=False)
load_missing, load_unexpected = sorted(msg.missing_keys), sorted(msg.unexpected_keys)
fixed_results["interpolated_pos_embed"] = finetune.pos_embed.detach().clone()
with torch.no_grad():
    big = F.interpolate(imgs, size=(24, 24), mode="bilinear", align_corners=False)
    fixed_results["finetune_logits"] = finetune(big)

# -------------------------------------------------------------------- MAE pre-training

torch.manual_seed(0)
mae = MaskedAutoencoderViT()
param_groups = [
    {"params": [p for n, p in mae.named_parameters() if p.requires_grad and p.ndim > 1
                and "token" not in n], "weight_decay": 0.05},
    {"params": [p for n, p in mae.named_parameters() if p.requires_grad and (p.ndim <= 1
                or "token" in n)], "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(param_groups, lr=2e-3, betas=(0.9, 0.95))
mae_losses = []
mae.train()
batch_size, mae_steps = 48, 40
for step in range(mae_steps):
    idx = train_idx[torch.randint(len(train_idx), (batch_size,))]
    loss, _, _ = mae(color_digits[idx], mask_ratio=0.75)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    mae_losses.append(loss.item())
    if step % 20 == 0:
        print(f"mae step {step}: loss {loss.item():.4f}")
pos_embed_unchanged = bool(torch.equal(mae.pos_embed.data,
                                       torch.from_numpy(table).float().unsqueeze(0)))
mae.eval()
with torch.no_grad():
    torch.manual_seed(3)
    test_mae_loss = mae(color_digits[test_idx[:128]], mask_ratio=0.75)[0].item()
    torch.manual_seed(3)
    untrained_mae_loss = MaskedAutoencoderViT()(color_digits[test_idx[:128]])[0].item()
print(f"mae test loss {test_mae_loss:.4f} (untrained {untrained_mae_loss:.4f})")

# without masking the tokens still pass through the encoder shuffled (ids_shuffle), which
# attention does not see: the cls features do not depend on the noise
mae.requires_grad_(False)
with torch.no_grad():
    torch.manual_seed(6)
    latent_a, mask_a, restore_a = mae.forward_encoder(color_digits[:32], mask_ratio=0.0)
    torch.manual_seed(7)
    latent_b, mask_b, restore_b = mae.forward_encoder(color_digits[:32], mask_ratio=0.0)
    # the patch tokens come back in place through ids_restore
    restored_a = torch.gather(latent_a[:, 1:], 1, restore_a.unsqueeze(-1).repeat(1, 1, 32))
    restored_b = torch.gather(latent_b[:, 1:], 1, restore_b.unsqueeze(-1).repeat(1, 1, 32))
shuffle_cls_difference = (latent_a[:, 0] - latent_b[:, 0]).abs().max().item()
shuffle_patch_difference = (restored_a - restored_b).abs().max().item()
unrestored_difference = (latent_a[:, 1:] - latent_b[:, 1:]).abs().max().item()
no_mask_sum = mask_a.sum().item()

# ------------------------------------------------------------------ margin heads


class ArcMarginProduct(nn.Module):
    """Large margin arc distance: s * cos(theta + m) for the target class."""

    def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.s = s
        self.m = m
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.easy_margin = easy_margin
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        output *= self.s
        return output


class AddMarginProduct(nn.Module):
    """CosFace: s * (cos(theta) - m) for the target class."""

    def __init__(self, in_features, out_features, s=30.0, m=0.40):
        super().__init__()
        self.s = s
        self.m = m
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        phi = cosine - self.m
        one_hot = F.one_hot(label, num_classes=cosine.shape[1]).to(cosine.dtype)
        return self.s * (one_hot * phi + (1.0 - one_hot) * cosine)


class ArcFaceInsight(nn.Module):
    """insightface's way: the margin added to arccos of the target logit, in place under
    no_grad, so the gradient flows as if through the plain cosine logits."""

    def __init__(self, in_features, out_features, s=64.0, margin=0.5):
        super().__init__()
        self.s = s
        self.margin = margin
        self.weight = nn.Parameter(torch.normal(0, 0.01, (out_features, in_features)))

    def forward(self, embeddings, labels):
        logits = F.linear(F.normalize(embeddings), F.normalize(self.weight))
        logits = logits.clamp(-1, 1)
        index = torch.where(labels != -1)[0]
        target_logit = logits[index, labels[index].view(-1)]
        with torch.no_grad():
            target_logit.arccos_()
            logits.arccos_()
            final_target_logit = target_logit + self.margin
            logits[index, labels[index].view(-1)] = final_target_logit
            logits.cos_()
        return logits * self.s


class FocalLoss(nn.Module):
    def __init__(self, gamma=0, eps=1e-7):
        super().__init__()
        self.gamma = gamma
        self.eps = eps
        self.ce = nn.CrossEntropyLoss()

    def forward(self, input, target):
        logp = self.ce(input, target)
        p = torch.exp(-logp)
        loss = (1 - p) ** self.gamma * logp
        return loss.mean()


class Backbone(nn.Module):
    """An MLP ending in the face-recognition "features" BatchNorm1d with a frozen gain."""

    def __init__(self, in_features=64, hidden=64, embedding_size=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, hidden), nn.BatchNorm1d(hidden),
                                  nn.PReLU(hidden), nn.Dropout(0.1),
                                  nn.Linear(hidden, embedding_size))
        self.features = nn.BatchNorm1d(embedding_size, eps=1e-05)
        nn.init.constant_(self.features.weight, 1.0)
        self.features.weight.requires_grad = False

    def forward(self, x):
        return self.features(self.body(x))


# -------------------------------------------------- (recorded) margin heads on fixed inputs

torch.manual_seed(4)
emb = torch.randn(8, 6, dtype=torch.float64, requires_grad=True)
target = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2])
heads = {
    "arc": ArcMarginProduct(6, 5, s=30.0, m=0.5),
    "arc_easy": ArcMarginProduct(6, 5, s=30.0, m=0.5, easy_margin=True),
    "cos": AddMarginProduct(6, 5, s=30.0, m=0.4),
    "insight": ArcFaceInsight(6, 5, s=64.0, margin=0.5),
}
margin_outputs, margin_grads, margin_cosines = {}, {}, {}
for name, head in heads.items():
    head.double()
    out = head(emb, target)
    F.cross_entropy(out, target).backward()
    margin_outputs[name] = out.detach()
    margin_grads[name] = (emb.grad.clone(), head.weight.grad.clone())
    with torch.no_grad():
        margin_cosines[name] = F.linear(F.normalize(emb), F.normalize(head.weight))
    emb.grad = None
# insightface's in-place margin passes the gradient on as if the logits were plain cosines
insight = heads["insight"]
insight.zero_grad()
plain = F.linear(F.normalize(emb), F.normalize(insight.weight)).clamp(-1, 1)
straight_through = plain + (margin_outputs["insight"] / insight.s - plain).detach()
F.cross_entropy(straight_through * insight.s, target).backward()
straight_through_grads = (emb.grad.clone(), insight.weight.grad.clone())
emb.grad = None
focal = FocalLoss(gamma=2)
focal_value = focal(margin_outputs["arc"], target)
fixed_results["margin_outputs"] = margin_outputs
fixed_results["margin_grads"] = {k: {"embedding": v[0], "weight": v[1]}
                                for k, v in margin_grads.items()}
fixed_results["focal"] = focal_value

# ---------------------------------------------------------- ArcFace / CosFace training

features_np = digits.data / 16.0
train_mean = features_np[train_idx.numpy()].mean(0)
train_std = features_np[train_idx.numpy()].std(0) + 1e-3
X = torch.tensor((features_np - train_mean) / train_std, dtype=torch.float32)


def train_margin_model(head, epochs=8, batch_size=100, seed=0):
    torch.manual_seed(seed)
    backbone = Backbone()
    params = [{"params": [p for p in backbone.parameters() if p.requires_grad]},
              {"params": head.parameters(), "weight_decay": 5e-4}]
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-5)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[5, 7], gamma=0.1)
    criterion = FocalLoss(gamma=2)
    losses = []
    for _epoch in range(epochs):
        backbone.train()
        order = train_idx[torch.randperm(len(train_idx))]
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            output = head(backbone(X[batch]), labels[batch])
            loss = criterion(output, labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    backbone.eval()
    return backbone, losses, scheduler.get_last_lr()


def cal_accuracy(y_score, y_true):
    """The best verification accuracy over thresholds at each observed score."""
    y_score, y_true = np.asarray(y_score), np.asarray(y_true)
    best_acc, best_th = 0.0, 0.0
    for th in y_score:
        y_test = y_score >= th
        acc = np.mean((y_test == y_true).astype(int))
        if acc > best_acc:
            best_acc, best_th = acc, th
    return best_acc, best_th


def evaluate(backbone, head):
    with torch.no_grad():
        embeddings = F.normalize(backbone(X[test_idx]))
        nearest_centre = F.linear(embeddings, F.normalize(head.weight)).argmax(dim=1)
        accuracy = (nearest_centre == labels[test_idx]).float().mean().item()
        pair_rng = np.random.default_rng(1)
        first = torch.from_numpy(pair_rng.integers(len(test_idx), size=400))
        second = torch.from_numpy(pair_rng.integers(len(test_idx), size=400))
        same = (labels[test_idx][first] == labels[test_idx][second]).numpy()
        scores = (embeddings[first] * embeddings[second]).sum(dim=1).numpy()
    verification, threshold = cal_accuracy(scores, same)
    return accuracy, verification, threshold


torch.manual_seed(5)
arc_head = ArcMarginProduct(16, 10, s=16.0, m=0.3, easy_margin=False)
arc_backbone, arc_losses, arc_lrs = train_margin_model(arc_head)
arc_accuracy, arc_verification, arc_threshold = evaluate(arc_backbone, arc_head)
torch.manual_seed(5)
cos_head = AddMarginProduct(16, 10, s=16.0, m=0.2)
cos_backbone, cos_losses, _ = train_margin_model(cos_head, epochs=5)
cos_accuracy, cos_verification, cos_threshold = evaluate(cos_backbone, cos_head)
print(f"arcface: loss {arc_losses[0]:.3f} -> {arc_losses[-1]:.3f}, accuracy {arc_accuracy:.3f},"
      f" verification {arc_verification:.3f} at {arc_threshold:.3f}")
print(f"cosface: loss {cos_losses[0]:.3f} -> {cos_losses[-1]:.3f}, accuracy {cos_accuracy:.3f},"
      f" verification {cos_verification:.3f} at {cos_threshold:.3f}")
