# ruff: noqa: N812 (the usual F alias)
"""A small Perceiver and Perceiver IO, written for these tests the way public PyTorch code of
the kind writes it (the lucid re-implementations with weight-tied blocks, and Perceiver IO
decoders with output queries; not a copy of any of them):

- Fourier positional features: ``torch.linspace`` axes, ``torch.meshgrid(indexing="ij")``,
  ``torch.stack``, frequency bands by ``torch.linspace``, ``sin``/``cos``, ``torch.cat`` with
  the raw positions, ``repeat``/``expand`` over the batch;
- a latent array (``nn.Parameter``) cross-attending to a long input through
  ``nn.MultiheadAttention(kdim=, vdim=, batch_first=True)`` with ``key_padding_mask``, the
  cross-attention weights read with ``need_weights=True`` and ``average_attn_weights``
  False/True;
- latent self-attention by ``nn.TransformerEncoderLayer(norm_first=True, activation="gelu",
  batch_first=True)`` in an ``nn.TransformerEncoder``; the Perceiver's weight sharing: the
  same (cross-attention, latent transformer) modules applied at every iteration after the
  first, checked against an untied copy (equal outputs, the tied gradient the sum of the
  untied ones);
- Perceiver IO decoding: output queries built from Fourier features of the query positions
  cross-attend to the latents; an autoregressive head on ``nn.TransformerDecoder`` with
  ``tgt_mask`` from ``nn.Transformer.generate_square_subsequent_mask`` and a
  ``memory_key_padding_mask`` over the latents and the padded inputs, causality and padding
  checked numerically, greedy decoding;
- training on seeded synthetic tasks: which quadrant of an 8x8 image holds a blob (the
  positions are only in the Fourier features), inpainting a sinusoid at query positions
  (``F.mse_loss``), and sorting a variable-length token sequence (``F.cross_entropy`` with
  ``ignore_index``); ``AdamW``, ``OneCycleLR``, ``clip_grad_norm_``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math
import warnings

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ----------------------------------------------------------------- Fourier features


def fourier_encode(x, max_freq, num_bands):
    """(..., d) positions in [-1, 1] -> (..., d, 2 * num_bands + 1)."""
    x = x.unsqueeze(-1)
    scales = torch.linspace(1.0, max_freq / 2, num_bands, dtype=x.dtype)
    scales = scales[(*((None,) * (x.dim() - 1)), Ellipsis)]
    x_scaled = x * scales * math.pi
    return torch.cat([x_scaled.sin(), x_scaled.cos(), x], dim=-1)


def position_grid(*shape):
    axes = [torch.linspace(-1.0, 1.0, steps=size) for size in shape]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1)  # (*shape, len(shape))


def position_features(shape, max_freq, num_bands):
    """Flattened features (prod(shape), len(shape) * (2 * num_bands + 1))."""
    enc = fourier_encode(position_grid(*shape), max_freq, num_bands)
    return enc.flatten(-2).reshape(-1, len(shape) * (2 * num_bands + 1))


# -------------------------------------------------------------------------- blocks


class CrossAttention(nn.Module):
    """Pre-norm cross-attention of queries to a context, then a GELU MLP, both residual."""

    def __init__(self, query_dim, context_dim, heads=1, mlp_mult=2):
        super().__init__()
        self.norm_q = nn.LayerNorm(query_dim)
        self.norm_context = nn.LayerNorm(context_dim)
        self.attn = nn.MultiheadAttention(query_dim, heads, kdim=context_dim, vdim=context_dim,
                                          batch_first=True)
        self.mlp = nn.Sequential(nn.LayerNorm(query_dim), nn.Linear(query_dim,
                                                                    mlp_mult * query_dim),
                                 nn.GELU(), nn.Linear(mlp_mult * query_dim, query_dim))

    def forward(self, x, context, key_padding_mask=None, need_weights=False,
                average_attn_weights=True):
        context = self.norm_context(context)
        h, weights = self.attn(self.norm_q(x), context, context,
                               key_padding_mask=key_padding_mask, need_weights=need_weights,
                               average_attn_weights=average_attn_weights)
        x = x + h
        return x + self.mlp(x), weights


def latent_transformer(dim, heads, layers):
    layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)


# (with the default enable_nested_tensor=True, a norm_first layer draws torch's warning)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, norm_first=True, batch_first=True),
                          num_layers=1)
nested_tensor_warnings = [str(w.message) for w in caught]


class Perceiver(nn.Module):
    def __init__(self, input_channels, input_axis, num_freq_bands, max_freq, depth=3,
                 num_latents=16, latent_dim=32, cross_heads=1, latent_heads=4,
                 self_per_cross=1, num_classes=None, weight_tie=True):
        super().__init__()
        self.num_freq_bands, self.max_freq = num_freq_bands, max_freq
        input_dim = input_channels + input_axis * (2 * num_freq_bands + 1)
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim) * 0.2)
        self.layers = nn.ModuleList()
        for i in range(depth):
            if i > 1 and weight_tie:
                self.layers.append(self.layers[1])  # the same modules again
                continue
            self.layers.append(nn.ModuleList([
                CrossAttention(latent_dim, input_dim, heads=cross_heads),
                latent_transformer(latent_dim, latent_heads, self_per_cross)]))
        self.to_logits = None if num_classes is None else nn.Sequential(
            nn.LayerNorm(latent_dim), nn.Linear(latent_dim, num_classes))

    def encode_inputs(self, data):
        """(B, *axes, C) -> (B, prod(axes), C + features)."""
        b, *axes, _ = data.shape
        pos = position_features(axes, self.max_freq, self.num_freq_bands)
        data = data.reshape(b, -1, data.size(-1))
        return torch.cat([data, pos.unsqueeze(0).expand(b, -1, -1)], dim=-1)

    def forward(self, data, mask=None, return_latents=False, return_attention=False):
        """``mask``: (B, N), True on the padded inputs (key_padding_mask's convention)."""
        inputs = self.encode_inputs(data)
        x = self.latents.unsqueeze(0).repeat(data.size(0), 1, 1)
        attentions = []
        for cross_attn, self_attns in self.layers:
            x, weights = cross_attn(x, inputs, key_padding_mask=mask,
                                    need_weights=return_attention, average_attn_weights=False)
            attentions.append(weights)
            x = self_attns(x)
        if return_latents:
            return (x, attentions) if return_attention else x
        out = self.to_logits(x.mean(dim=1))
        return (out, attentions) if return_attention else out


class PerceiverIO(nn.Module):
    """Encoder on 1-D inputs, and output queries from the Fourier features of positions."""

    def __init__(self, num_freq_bands=6, max_freq=16.0, latent_dim=32, num_latents=12,
                 query_dim=24):
        super().__init__()
        self.encoder = Perceiver(1, 1, num_freq_bands, max_freq, depth=2,
                                 num_latents=num_latents, latent_dim=latent_dim)
        self.query_proj = nn.Linear(2 * num_freq_bands + 1, query_dim)
        self.decoder = CrossAttention(query_dim, latent_dim, heads=2)
        self.to_out = nn.Linear(query_dim, 1)
        self.num_freq_bands, self.max_freq = num_freq_bands, max_freq

    def forward(self, values, pad_mask, query_positions):
        latents = self.encoder(values, pad_mask, return_latents=True)
        q = fourier_encode(query_positions.unsqueeze(-1), self.max_freq,
                           self.num_freq_bands).flatten(-2)
        out, _ = self.decoder(self.query_proj(q), latents)
        return self.to_out(out).squeeze(-1)


class SortDecoder(nn.Module):
    """Perceiver encoder over embedded tokens; a TransformerDecoder writes them sorted,
    attending to the latents and to the (padded) inputs."""

    def __init__(self, vocab, d_model=32, max_len=8):
        super().__init__()
        self.bos = vocab
        self.embed = nn.Embedding(vocab + 1, d_model)
        self.pos = nn.Embedding(max_len + 1, d_model)
        self.encoder = Perceiver(d_model, 1, 4, 8.0, depth=2, num_latents=8,
                                 latent_dim=d_model)
        self.in_proj = nn.Linear(d_model + 9, d_model)
        layer = nn.TransformerDecoderLayer(d_model, 4, dim_feedforward=2 * d_model,
                                           dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, num_layers=2, norm=nn.LayerNorm(d_model))
        self.head = nn.Linear(d_model, vocab)

    def memory(self, src, src_pad):
        data = self.embed(src)
        latents = self.encoder(data, src_pad, return_latents=True)
        inputs = self.in_proj(self.encoder.encode_inputs(data))
        memory = torch.cat([latents, inputs], dim=1)
        latent_pad = torch.zeros(src.size(0), latents.size(1), dtype=torch.bool)
        return memory, torch.cat([latent_pad, src_pad], dim=1)

    def decode(self, tgt_in, memory, memory_pad):
        T = tgt_in.size(1)
        x = self.embed(tgt_in) + self.pos(torch.arange(T))
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.decoder(x, memory, tgt_mask=tgt_mask, memory_key_padding_mask=memory_pad)
        return self.head(h)

    def forward(self, src, src_pad, tgt_in):
        memory, memory_pad = self.memory(src, src_pad)
        return self.decode(tgt_in, memory, memory_pad)

    @torch.no_grad()
    def greedy(self, src, src_pad, steps):
        memory, memory_pad = self.memory(src, src_pad)
        out = torch.full((src.size(0), 1), self.bos, dtype=torch.long)
        for _ in range(steps):
            logits = self.decode(out, memory, memory_pad)
            out = torch.cat([out, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return out[:, 1:]


# ------------------------------------------------------------------------------ data


def quadrant_images(batch_size, size=8):
    """A Gaussian blob in one of four quadrants (the label), on noise: (B, size, size, 1)."""
    labels = torch.randint(0, 4, (batch_size,))
    half = size // 2
    cy = (labels // 2) * half + torch.randint(1, half - 1, (batch_size,))
    cx = (labels % 2) * half + torch.randint(1, half - 1, (batch_size,))
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    d2 = (yy[None] - cy[:, None, None]) ** 2 + (xx[None] - cx[:, None, None]) ** 2
    images = torch.exp(-d2.float() / 2.0) + 0.1 * torch.randn(batch_size, size, size)
    return images.unsqueeze(-1), labels


def sinusoid_batch(batch_size, max_len=32, min_len=20, num_queries=16):
    """Samples of a sin at the first L of max_len grid points (the rest padded), and targets
    at query positions anywhere on [-1, 1] (inpainting the missing end)."""
    lengths = torch.randint(min_len, max_len + 1, (batch_size,))
    t = torch.linspace(-1.0, 1.0, max_len)
    amp = torch.rand(batch_size, 1) + 0.5
    freq = torch.rand(batch_size, 1) * 2 + 0.5
    phase = torch.rand(batch_size, 1) * 2 * math.pi
    values = amp * torch.sin(math.pi * freq * t + phase)
    pad = torch.arange(max_len)[None] >= lengths[:, None]
    values = values.masked_fill(pad, 0.0).unsqueeze(-1)
    qpos = torch.rand(batch_size, num_queries) * 2 - 1
    targets = amp * torch.sin(math.pi * freq * qpos + phase)
    return values, pad, qpos, targets


VOCAB, MAX_LEN = 10, 8


def sort_batch(batch_size, min_len=3):
    lengths = torch.randint(min_len, MAX_LEN + 1, (batch_size,))
    src = torch.randint(0, VOCAB, (batch_size, MAX_LEN))
    pad = torch.arange(MAX_LEN)[None] >= lengths[:, None]
    # padded slots sort last as VOCAB, then are ignored in the loss
    ordered = src.masked_fill(pad, VOCAB).sort(dim=1).values
    target = ordered.masked_fill(pad, -100)
    tgt_in = torch.cat([torch.full((batch_size, 1), VOCAB), ordered[:, :-1]], dim=1)
    tgt_in = tgt_in.clamp(max=VOCAB)  # (BOS and pads are the same index: ignored targets)
    return src, pad, tgt_in, target


# -------------------------------------------------------- Fourier features (recorded)

grid = position_grid(3, 4)
features = fourier_encode(grid, max_freq=8.0, num_bands=3)
fixed_results["grid"] = grid
fixed_results["fourier_features"] = features
fixed_results["position_features_1d"] = position_features((5,), 16.0, 2)
# the last feature is the position itself, sin^2 + cos^2 = 1 per band
features_checks = {
    "shape": tuple(features.shape),
    "identity": torch.equal(features[..., -1], grid),
    "unit": (features[..., :3] ** 2 + features[..., 3:6] ** 2 - 1).abs().max().item(),
}

# ------------------------------------------------ a Perceiver on fixed weights (recorded)

torch.manual_seed(1)
perceiver = Perceiver(1, 2, num_freq_bands=4, max_freq=8.0, depth=3, num_latents=8,
                      latent_dim=16, cross_heads=2, latent_heads=4, num_classes=4)
images, labels = quadrant_images(3)
logits, attentions = perceiver(images, return_attention=True)
loss = F.cross_entropy(logits, labels)
loss.backward()
fixed_results["perceiver_logits"] = logits.detach()
fixed_results["perceiver_attention"] = attentions[0].detach()  # (B, heads, latents, 64)
fixed_results["perceiver_grads"] = {
    "latents": perceiver.latents.grad,
    "layers.1.0.attn.k_proj_weight": perceiver.layers[1][0].attn.k_proj_weight.grad,
    "layers.1.1.layers.0.self_attn.in_proj_weight":
        perceiver.layers[1][1].layers[0].self_attn.in_proj_weight.grad,
    "layers.0.1.layers.0.linear1.weight": perceiver.layers[0][1].layers[0].linear1.weight.grad,
    "layers.2.0.norm_context.weight": perceiver.layers[2][0].norm_context.weight.grad,
}
n_tied_params = len(list(perceiver.parameters()))
n_tied_named = len(dict(perceiver.named_parameters()))
n_tied_state = len(perceiver.state_dict())
with torch.no_grad():
    _, averaged = perceiver(images, return_attention=True)  # (the same weights, per head)
    inputs = perceiver.encode_inputs(images)
    cross = perceiver.layers[0][0]
    ctx = cross.norm_context(inputs)
    _, attn_avg = cross.attn(cross.norm_q(perceiver.latents.expand(3, -1, -1)), ctx, ctx,
                             need_weights=True, average_attn_weights=True)
fixed_results["perceiver_attention_avg"] = attn_avg
attention_checks = {
    "avg_is_mean": (attentions[0].detach().mean(1) - attn_avg).abs().max().item(),
    "rows_sum_to_one": (attentions[0].detach().sum(-1) - 1).abs().max().item(),
    "shape": tuple(attentions[0].shape),
}

# the tied model against an untied copy with the same weights
untied = copy.deepcopy(perceiver)
untied.layers[2] = copy.deepcopy(perceiver.layers[1])
untied.zero_grad()
untied_logits = untied(images)
F.cross_entropy(untied_logits, labels).backward()
tied_grad = perceiver.layers[1][0].attn.out_proj.weight.grad
untied_sum = (untied.layers[1][0].attn.out_proj.weight.grad
              + untied.layers[2][0].attn.out_proj.weight.grad)
tie_checks = {
    "logits": (untied_logits - logits).abs().max().item(),
    "grad_sum": (untied_sum - tied_grad).abs().max().item(),
    "untied_params": len(list(untied.parameters())),
}
perceiver.zero_grad()

# the norm_first GELU encoder layer by hand
layer = perceiver.layers[0][1].layers[0]
x = torch.randn(2, 8, 16)
sa = layer.self_attn
h = layer.norm1(x)
by_hand = x + sa(h, h, h, need_weights=False)[0]
by_hand = by_hand + layer.linear2(F.gelu(layer.linear1(layer.norm2(by_hand))))
encoder_layer_difference = (layer(x) - by_hand).abs().max().item()
fixed_results["encoder_layer"] = layer(x).detach()

# padding: masked inputs do not change the latents
torch.manual_seed(2)
pio = PerceiverIO()
values, pad, qpos, targets = sinusoid_batch(3)
pred = pio(values, pad, qpos)
io_loss = F.mse_loss(pred, targets)
io_loss.backward()
fixed_results["io_pred"] = pred.detach()
fixed_results["io_loss"] = io_loss.item()
fixed_results["io_grads"] = {
    "encoder.latents": pio.encoder.latents.grad,
    "query_proj.weight": pio.query_proj.weight.grad,
    "decoder.attn.q_proj_weight": pio.decoder.attn.q_proj_weight.grad,
    "decoder.attn.in_proj_bias": pio.decoder.attn.in_proj_bias.grad,
}
pio.zero_grad()
with torch.no_grad():
    noisy = values + torch.randn_like(values) * pad.unsqueeze(-1)
    padding_difference = (pio(noisy, pad, qpos) - pred).abs().max().item()

# ---------------------------------------- the sorting decoder on fixed weights (recorded)

torch.manual_seed(3)
sorter = SortDecoder(VOCAB, max_len=MAX_LEN)
src, src_pad, tgt_in, target = sort_batch(4)
sort_logits = sorter(src, src_pad, tgt_in)
sort_loss = F.cross_entropy(sort_logits.reshape(-1, VOCAB), target.reshape(-1))
sort_loss.backward()
fixed_results["causal_mask"] = nn.Transformer.generate_square_subsequent_mask(5)
fixed_results["sort_logits"] = sort_logits.detach()
fixed_results["sort_loss"] = sort_loss.item()
fixed_results["sort_grads"] = {
    "embed.weight": sorter.embed.weight.grad,
    "decoder.layers.0.multihead_attn.in_proj_weight":
        sorter.decoder.layers[0].multihead_attn.in_proj_weight.grad,
    "decoder.layers.1.self_attn.out_proj.weight":
        sorter.decoder.layers[1].self_attn.out_proj.weight.grad,
    "decoder.norm.weight": sorter.decoder.norm.weight.grad,
    "encoder.latents": sorter.encoder.latents.grad,
}
sorter.zero_grad()
with torch.no_grad():
    memory, memory_pad = sorter.memory(src, src_pad)
    base = sorter.decode(tgt_in, memory, memory_pad)
    # a changed future target token changes nothing before it
    changed = tgt_in.clone()
    changed[:, 5] = (changed[:, 5] + 3) % VOCAB
    later = sorter.decode(changed, memory, memory_pad)
    # garbage in the padded memory slots changes nothing
    garbage = memory.masked_fill(memory_pad.unsqueeze(-1), 50.0)
    # the causal mask as a boolean mask, and through tgt_is_causal
    T = tgt_in.size(1)
    emb = sorter.embed(tgt_in) + sorter.pos(torch.arange(T))
    bool_mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    h_bool = sorter.decoder(emb, memory, tgt_mask=bool_mask, memory_key_padding_mask=memory_pad)
    h_causal = sorter.decoder(emb, memory,
                              tgt_mask=nn.Transformer.generate_square_subsequent_mask(T),
                              tgt_is_causal=True, memory_key_padding_mask=memory_pad)
    decoder_checks = {
        "past_unchanged": (later[:, :5] - base[:, :5]).abs().max().item(),
        "future_changed": (later[:, 5:] - base[:, 5:]).abs().max().item(),
        "padding": (sorter.decode(tgt_in, garbage, memory_pad) - base).abs().max().item(),
        "bool_mask": (sorter.head(h_bool) - base).abs().max().item(),
        "is_causal": (sorter.head(h_causal) - base).abs().max().item(),
    }


# ---------------------------------------------------------------------------- training


def fit(model, batch_fn, loss_fn, steps, lr, batch_size=32):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps,
                                                    pct_start=0.2)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model, *batch_fn(batch_size))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(10)
classifier = Perceiver(1, 2, num_freq_bands=4, max_freq=8.0, depth=2, num_latents=8,
                       latent_dim=16, cross_heads=1, latent_heads=2, num_classes=4)
cls_losses = fit(classifier, quadrant_images,
                 lambda m, x, y: F.cross_entropy(m(x), y), steps=80, lr=1e-2)
torch.manual_seed(11)
images, labels = quadrant_images(256)
classifier.eval()
with torch.no_grad():
    cls_accuracy = (classifier(images).argmax(-1) == labels).float().mean().item()

torch.manual_seed(20)
io_model = PerceiverIO()
io_losses = fit(io_model, sinusoid_batch,
                lambda m, v, p, q, t: F.mse_loss(m(v, p, q), t), steps=60, lr=3e-3)


def sort_loss_fn(model, src, pad, tgt_in, target):
    logits = model(src, pad, tgt_in)
    return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1), ignore_index=-100)


torch.manual_seed(30)
sort_model = SortDecoder(VOCAB, max_len=MAX_LEN)
sort_losses = fit(sort_model, sort_batch, sort_loss_fn, steps=100, lr=3e-3)
torch.manual_seed(31)
src, src_pad, tgt_in, target = sort_batch(128)
sort_model.eval()
decoded = sort_model.greedy(src, src_pad, MAX_LEN)
valid = target != -100
sort_token_accuracy = (decoded == target)[valid].float().mean().item()

print(f"quadrants {cls_losses[0]:.3f} -> {cls_losses[-1]:.3f} (accuracy {cls_accuracy:.3f}); "
      f"inpainting {io_losses[0]:.3f} -> {io_losses[-1]:.3f}; sorting {sort_losses[0]:.3f} -> "
      f"{sort_losses[-1]:.3f} (token accuracy {sort_token_accuracy:.3f}); "
      f"checks {features_checks} {attention_checks} {tie_checks} {decoder_checks}")
