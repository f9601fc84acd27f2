"""A VQ-VAE (van den Oord et al. 2017) on small synthetic images, written for these tests in the
way common VQ-VAE tutorials (zalandoresearch's pytorch-vq-vae notebook, rosinality's
vq-vae-2-pytorch) commonly write torch code (modelled on their API usage, not a copy of either):

- synthetic 3 x 16 x 16 images of coloured rectangles and discs on a dark background, drawn
  with ``torch.meshgrid(..., indexing="ij")``, ``torch.rand(..., generator=g)``, boolean masks
  and ``torch.where``, wrapped in a ``TensorDataset`` / ``DataLoader``; the data variance from
  ``np.var`` as zalando's notebook computes it;
- a conv encoder / decoder (``nn.Conv2d`` with stride 2, ``nn.ConvTranspose2d``, residual stacks
  whose blocks start with ``nn.ReLU(True)``, the in-place ReLU applied to the block's input that
  the skip connection then adds, ``nn.ModuleList``, a ``_``-prefixed attribute style);
- a VectorQuantizer (zalando): ``nn.Embedding`` codebook initialized with
  ``weight.data.uniform_(-1 / K, 1 / K)``, ``permute(0, 2, 3, 1).contiguous()``, ``view(-1, D)``,
  distances by ``torch.sum(x ** 2, dim=1, keepdim=True) + torch.sum(w ** 2, dim=1) -
  2 * torch.matmul(x, w.t())``, ``torch.argmin(..., dim=1).unsqueeze(1)``, one-hot encodings by
  ``torch.zeros(...).scatter_(1, idx, 1)``, ``torch.matmul(encodings, weight)``, the codebook and
  commitment losses with ``F.mse_loss`` on ``detach``'ed sides, the straight-through estimator
  ``inputs + (quantized - inputs).detach()`` and the perplexity
  ``torch.exp(-torch.sum(p * torch.log(p + 1e-10)))``;
- an EMA quantizer (rosinality): ``register_buffer`` for the codebook, the cluster sizes and the
  summed codes, distances by ``torch.cdist``, ``(-dist).max(1)``, ``F.one_hot(...).type(dtype)``,
  ``F.embedding`` lookups through ``embed.transpose(0, 1)``, updates under ``torch.no_grad()`` with
  ``mul_(decay).add_(x, alpha=1 - decay)``, Laplace smoothing of the cluster sizes and
  ``embed.data.copy_``, ``(q.detach() - x).pow(2).mean()`` commitment; a codebook started at
  the first batch's encoder outputs (a bool ``initted`` buffer, ``torch.randperm`` rows,
  ``fill_``, a ``@torch.no_grad()`` method) and dead codes restarted there (a bool column mask,
  ``self.embed[:, dead] = rows.t()``, ``self.cluster_size[dead] = 1.0``);
- a Gumbel-softmax quantizer (``F.gumbel_softmax(..., hard=True/False, dim=1)``, a codebook
  einsum, a KL to the uniform prior);
- a PixelCNN prior over the codes: an ``nn.Conv2d`` subclass with a registered mask buffer
  (``self.weight.data *= self.mask`` before ``super().forward``), ``nn.BatchNorm2d``,
  ``F.cross_entropy`` of (B, K, H, W) logits against (B, H, W) codes, ``torch.bincount``, the
  unigram baseline through ``F.nll_loss`` on expanded log-frequencies, raster-order sampling
  with ``torch.multinomial(..., generator=...)`` and decoding of the sampled codes;
- training with ``optim.Adam(model.parameters(), lr=..., amsgrad=False)``, the reconstruction
  error divided by the data variance, ``model.train()`` / ``model.eval()``, the codes of a batch
  (``encodings.argmax``) and reconstructions from codes under ``torch.no_grad()``;
- fixed-weight results for the torch comparison: both quantizers' losses, perplexities, codes,
  reconstructions, gradients, Adam steps and EMA buffers after a step.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader, TensorDataset


# ------------------------------------------------------------------------------- the data
def make_shapes(n, size=16, generator=None):
    """n RGB images in [0, 1]: a coloured rectangle or disc (half each) on a dark background."""
    ii, jj = torch.meshgrid(torch.arange(size, dtype=torch.float32),
                            torch.arange(size, dtype=torch.float32), indexing="ij")
    images = torch.rand(n, 3, 1, 1, generator=generator) * 0.1 * torch.ones(n, 3, size, size)
    colours = 0.4 + 0.6 * torch.rand(n, 3, generator=generator)
    centres = 4 + (size - 8) * torch.rand(n, 2, generator=generator)
    radii = 2 + 3 * torch.rand(n, generator=generator)
    is_disc = torch.rand(n, generator=generator) < 0.5
    for k in range(n):
        ci, cj, r = centres[k, 0], centres[k, 1], radii[k]
        if is_disc[k]:
            mask = (ii - ci) ** 2 + (jj - cj) ** 2 <= r ** 2
        else:
            mask = ((ii - ci).abs() <= r) & ((jj - cj).abs() <= 0.7 * r)
        images[k] = torch.where(mask, colours[k][:, None, None], images[k])
    return images, is_disc.long()


# ------------------------------------------------------------------------------ the model
class Residual(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super().__init__()
        self._block = nn.Sequential(
            nn.ReLU(True),
            nn.Conv2d(in_channels=in_channels, out_channels=num_residual_hiddens,
                      kernel_size=3, stride=1, padding=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(in_channels=num_residual_hiddens, out_channels=num_hiddens,
                      kernel_size=1, stride=1, bias=False),
        )

    def forward(self, x):
        return x + self._block(x)


class ResidualStack(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens):
        super().__init__()
        self._num_residual_layers = num_residual_layers
        self._layers = nn.ModuleList([Residual(in_channels, num_hiddens, num_residual_hiddens)
                                      for _ in range(self._num_residual_layers)])

    def forward(self, x):
        for i in range(self._num_residual_layers):
            x = self._layers[i](x)
        return F.relu(x)


class Encoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens):
        super().__init__()
        self._conv_1 = nn.Conv2d(in_channels=in_channels, out_channels=num_hiddens // 2,
                                 kernel_size=4, stride=2, padding=1)
        self._conv_2 = nn.Conv2d(in_channels=num_hiddens // 2, out_channels=num_hiddens,
                                 kernel_size=4, stride=2, padding=1)
        self._conv_3 = nn.Conv2d(in_channels=num_hiddens, out_channels=num_hiddens,
                                 kernel_size=3, stride=1, padding=1)
        self._residual_stack = ResidualStack(num_hiddens, num_hiddens, num_residual_layers,
                                             num_residual_hiddens)

    def forward(self, inputs):
        x = self._conv_1(inputs)
        x = F.relu(x)
        x = self._conv_2(x)
        x = F.relu(x)
        x = self._conv_3(x)
        return self._residual_stack(x)


class Decoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens,
                 out_channels=3):
        super().__init__()
        self._conv_1 = nn.Conv2d(in_channels=in_channels, out_channels=num_hiddens,
                                 kernel_size=3, stride=1, padding=1)
        self._residual_stack = ResidualStack(num_hiddens, num_hiddens, num_residual_layers,
                                             num_residual_hiddens)
        self._conv_trans_1 = nn.ConvTranspose2d(in_channels=num_hiddens,
                                                out_channels=num_hiddens // 2,
                                                kernel_size=4, stride=2, padding=1)
        self._conv_trans_2 = nn.ConvTranspose2d(in_channels=num_hiddens // 2,
                                                out_channels=out_channels,
                                                kernel_size=4, stride=2, padding=1)

    def forward(self, inputs):
        x = self._conv_1(inputs)
        x = self._residual_stack(x)
        x = self._conv_trans_1(x)
        x = F.relu(x)
        return self._conv_trans_2(x)


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.uniform_(-1 / self._num_embeddings,
                                             1 / self._num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        # convert inputs from BCHW -> BHWC
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape

        # flatten input
        flat_input = inputs.view(-1, self._embedding_dim)

        # calculate distances
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))

        # encoding
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings,
                                device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)

        # quantize and unflatten
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)

        # loss
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss

        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))

        # convert quantized from BHWC -> BCHW
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class QuantizeEMA(nn.Module):
    """rosinality's Quantize: the codebook is a buffer, moved by exponential moving averages."""

    def __init__(self, dim, n_embed, commitment_cost=0.25, decay=0.99, eps=1e-5,
                 restart_threshold=0.05):
        super().__init__()
        self.restart_threshold = restart_threshold
        self.n_restarts = 0
        self.dim = dim
        self.n_embed = n_embed
        self.decay = decay
        self.eps = eps
        self.commitment_cost = commitment_cost

        embed = torch.randn(dim, n_embed)
        self.register_buffer("embed", embed)
        self.register_buffer("cluster_size", torch.zeros(n_embed))
        self.register_buffer("embed_avg", embed.clone())
        self.register_buffer("initted", torch.tensor(False))

    @torch.no_grad()
    def init_from_data(self, flatten):
        """The codebook starts at random encoder outputs of the first batch (a randn codebook
        far from the encoder's outputs collapses onto one code)."""
        rows = torch.randperm(flatten.shape[0])[: self.n_embed]
        self.embed.copy_(flatten[rows].t())
        self.embed_avg.copy_(self.embed)
        self.cluster_size.fill_(1.0)
        self.initted.fill_(True)

    def forward(self, inputs):
        x = inputs.permute(0, 2, 3, 1).contiguous()
        flatten = x.reshape(-1, self.dim)
        if self.training and not self.initted:
            self.init_from_data(flatten)
        dist = torch.cdist(flatten, self.embed.t()).pow(2)
        _, embed_ind = (-dist).max(1)
        embed_onehot = F.one_hot(embed_ind, self.n_embed).type(flatten.dtype)
        embed_ind = embed_ind.view(*x.shape[:-1])
        quantize = self.embed_code(embed_ind)

        if self.training:
            with torch.no_grad():
                embed_onehot_sum = embed_onehot.sum(0)
                embed_sum = flatten.transpose(0, 1) @ embed_onehot
                self.cluster_size.data.mul_(self.decay).add_(embed_onehot_sum,
                                                             alpha=1 - self.decay)
                self.embed_avg.data.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
                n = self.cluster_size.sum()
                cluster_size = ((self.cluster_size + self.eps)
                                / (n + self.n_embed * self.eps) * n)  # Laplace smoothing
                embed_normalized = self.embed_avg / cluster_size.unsqueeze(0)
                self.embed.data.copy_(embed_normalized)
                self.restart_dead_codes(flatten)

        diff = self.commitment_cost * (quantize.detach() - x).pow(2).mean()
        quantize = x + (quantize - x).detach()
        avg_probs = embed_onehot.mean(0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return diff, quantize.permute(0, 3, 1, 2).contiguous(), perplexity, embed_onehot

    @torch.no_grad()
    def restart_dead_codes(self, flatten):
        """Codes whose moving usage fell under the threshold restart at random encoder outputs
        of the batch (as jukebox's bottleneck does)."""
        dead = self.cluster_size < self.restart_threshold
        n_dead = int(dead.sum())
        if n_dead == 0:
            return
        rows = flatten[torch.randint(0, flatten.shape[0], (n_dead,))]
        self.embed[:, dead] = rows.t()
        self.embed_avg[:, dead] = rows.t()
        self.cluster_size[dead] = 1.0
        self.n_restarts += n_dead

    def embed_code(self, embed_id):
        return F.embedding(embed_id, self.embed.transpose(0, 1))


class GumbelQuantizer(nn.Module):
    """The relaxed (DALL-E dVAE style) alternative: logits over the codebook, a Gumbel-softmax
    sample, and a KL to the uniform prior."""

    def __init__(self, num_hiddens, n_embed, embedding_dim, kl_weight=5e-4, temperature=1.0):
        super().__init__()
        self.n_embed = n_embed
        self.temperature = temperature
        self.kl_weight = kl_weight
        self.proj = nn.Conv2d(num_hiddens, n_embed, 1)
        self.embed = nn.Embedding(n_embed, embedding_dim)

    def forward(self, z, hard=False):
        logits = self.proj(z)
        soft_one_hot = F.gumbel_softmax(logits, tau=self.temperature, dim=1, hard=hard)
        z_q = torch.einsum("b n h w, n d -> b d h w", soft_one_hot, self.embed.weight)
        qy = F.softmax(logits, dim=1)
        diff = self.kl_weight * torch.sum(qy * torch.log(qy * self.n_embed + 1e-10),
                                          dim=1).mean()
        return diff, z_q, logits.argmax(dim=1)


class MaskedConv2d(nn.Conv2d):
    """A PixelCNN convolution: type "A" hides the centre pixel, type "B" lets it through."""

    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class PixelCNN(nn.Module):
    """A small autoregressive prior over the (h, w) grid of code indices."""

    def __init__(self, n_embed, dim=32, n_layers=3):
        super().__init__()
        self.n_embed = n_embed
        self.embedding = nn.Embedding(n_embed, dim)
        layers = [MaskedConv2d("A", dim, dim, 3, 1, 1, bias=False), nn.BatchNorm2d(dim),
                  nn.ReLU(True)]
        for _ in range(n_layers - 1):
            layers += [MaskedConv2d("B", dim, dim, 3, 1, 1, bias=False), nn.BatchNorm2d(dim),
                       nn.ReLU(True)]
        layers.append(nn.Conv2d(dim, n_embed, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, codes):
        x = self.embedding(codes).permute(0, 3, 1, 2)  # (B, H, W, C) -> (B, C, H, W)
        return self.net(x)

    @torch.no_grad()
    def sample(self, n, shape, generator=None):
        codes = torch.zeros(n, *shape, dtype=torch.long)
        for i in range(shape[0]):
            for j in range(shape[1]):
                probs = F.softmax(self(codes)[:, :, i, j], dim=-1)
                codes[:, i, j] = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        return codes


class Model(nn.Module):
    def __init__(self, num_hiddens, num_residual_layers, num_residual_hiddens, num_embeddings,
                 embedding_dim, commitment_cost, decay=0.0):
        super().__init__()
        self._encoder = Encoder(3, num_hiddens, num_residual_layers, num_residual_hiddens)
        self._pre_vq_conv = nn.Conv2d(in_channels=num_hiddens, out_channels=embedding_dim,
                                      kernel_size=1, stride=1)
        if decay > 0.0:
            self._vq_vae = QuantizeEMA(embedding_dim, num_embeddings, commitment_cost, decay)
        else:
            self._vq_vae = VectorQuantizer(num_embeddings, embedding_dim, commitment_cost)
        self._decoder = Decoder(embedding_dim, num_hiddens, num_residual_layers,
                                num_residual_hiddens)

    def forward(self, x):
        z = self._encoder(x)
        z = self._pre_vq_conv(z)
        loss, quantized, perplexity, _ = self._vq_vae(z)
        x_recon = self._decoder(quantized)
        return loss, x_recon, perplexity

    def encode_codes(self, x):
        z = self._pre_vq_conv(self._encoder(x))
        _, _, _, encodings = self._vq_vae(z)
        return encodings.argmax(1).view(x.shape[0], z.shape[2], z.shape[3])

    def decode_codes(self, codes):
        if isinstance(self._vq_vae, QuantizeEMA):
            quantized = self._vq_vae.embed_code(codes)
        else:
            quantized = self._vq_vae._embedding(codes)
        return self._decoder(quantized.permute(0, 3, 1, 2).contiguous())


# -------------------------------------------------------------------- hyper-parameters
batch_size = 32
num_hiddens = 32
num_residual_hiddens = 16
num_residual_layers = 2
embedding_dim = 8
num_embeddings = 32
commitment_cost = 0.25
learning_rate = 2e-3
num_training_updates = 150


# --------------------------------------------------------------- fixed weights, for torch
def vq_step_results(decay):
    torch.manual_seed(21)
    model = Model(16, 1, 8, 16, 4, commitment_cost, decay=decay)
    g = torch.Generator().manual_seed(3)
    data, _ = make_shapes(6, generator=g)
    model.train()
    vq_loss, data_recon, perplexity = model(data)
    recon_error = F.mse_loss(data_recon, data) / 0.05
    loss = recon_error + vq_loss
    loss.backward()
    results = {
        "vq_loss": vq_loss.item(),
        "recon_error": recon_error.item(),
        "perplexity": perplexity.item(),
        "recon": data_recon.detach().clone(),
        "grads": {n: p.grad.clone() for n, p in model.named_parameters()},
    }
    optimizer = optim.Adam(model.parameters(), lr=1e-2, amsgrad=False)
    optimizer.step()
    results["after_step"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    results["buffers"] = {n: b.clone() for n, b in model.named_buffers()}
    model.eval()
    with torch.no_grad():
        results["codes"] = model.encode_codes(data)
        results["decoded"] = model.decode_codes(results["codes"])
    return results


def compare_with_torch():
    results = {"plain": vq_step_results(0.0), "ema": vq_step_results(0.9)}
    # the EMA quantizer alone for three steps, a fast decay restarting unused codes
    torch.manual_seed(5)
    ema = QuantizeEMA(3, 6, decay=0.5, restart_threshold=0.6)
    ema.train()
    steps = []
    for k in range(3):
        inputs = torch.randn(2, 3, 3, 3) + k
        diff, quantized, perplexity, onehot = ema(inputs)
        steps.append({"diff": diff.item(), "perplexity": perplexity.item(),
                      "indices": onehot.argmax(1), "quantized": quantized.clone(),
                      "n_restarts": ema.n_restarts,
                      **{n: b.clone() for n, b in ema.named_buffers()}})
    results["ema_steps"] = steps
    # the Gumbel-softmax quantizer: torch's noise, soft and straight-through hard samples
    torch.manual_seed(4)
    gq = GumbelQuantizer(6, 5, 3, kl_weight=0.1, temperature=0.9)
    z = torch.randn(2, 6, 3, 3, requires_grad=True)
    gumbel = {}
    for hard in (False, True):
        diff, z_q, ind = gq(z, hard=hard)
        z.grad = None
        gq.zero_grad()
        (diff + (z_q * torch.linspace(-1, 1, 3).view(1, 3, 1, 1)).sum()).backward()
        gumbel[f"hard={hard}"] = {"diff": diff.item(), "z_q": z_q.detach().clone(),
                                  "indices": ind, "z_grad": z.grad.clone(),
                                  "proj_grad": gq.proj.weight.grad.clone()}
    results["gumbel"] = gumbel
    # the PixelCNN prior: masked weights, logits, the 2-d cross entropy and its gradients
    torch.manual_seed(6)
    prior = PixelCNN(7, dim=8, n_layers=2)
    codes = torch.randint(0, 7, (3, 4, 4))
    logits = prior(codes)
    prior_loss = F.cross_entropy(logits, codes)
    prior_loss.backward()
    results["prior"] = {
        "loss": prior_loss.item(),
        "logits": logits.detach().clone(),
        "grads": {n: p.grad.clone() for n, p in prior.named_parameters()},
        "masked_weight": prior.net[0].weight.detach().clone(),
        "running_mean": prior.net[1].running_mean.clone(),
    }
    prior.eval()
    results["prior"]["samples"] = prior.sample(2, (3, 3), torch.Generator().manual_seed(8))
    # the quantizer alone on set inputs: both distance formulas pick the same codes
    torch.manual_seed(2)
    vq = VectorQuantizer(8, 3, commitment_cost)
    inputs = torch.randn(2, 3, 4, 4, requires_grad=True)
    loss, quantized, perplexity, encodings = vq(inputs)
    (loss + quantized.sin().sum()).backward()
    flat = inputs.detach().permute(0, 2, 3, 1).reshape(-1, 3)
    results["vq"] = {
        "inputs": inputs.detach().clone(),
        "codebook": vq._embedding.weight.detach().clone(),
        "loss": loss.item(),
        "quantized": quantized.detach().clone(),
        "perplexity": perplexity.item(),
        "indices": encodings.argmax(1),
        "cdist_indices": torch.cdist(flat, vq._embedding.weight).argmin(dim=1),
        "input_grad": inputs.grad.clone(),
        "codebook_grad": vq._embedding.weight.grad.clone(),
    }
    return results


fixed_results = compare_with_torch()

# --------------------------------------------------------------------------- training
torch.manual_seed(0)
data_gen = torch.Generator().manual_seed(0)
train_images, train_kinds = make_shapes(256, generator=data_gen)
valid_images, valid_kinds = make_shapes(64, generator=data_gen)
data_variance = np.var(train_images.numpy())
training_loader = DataLoader(TensorDataset(train_images, train_kinds), batch_size=batch_size,
                             shuffle=True, pin_memory=True)

histories = {}
for decay in (0.0, 0.9):
    torch.manual_seed(0)
    model = Model(num_hiddens, num_residual_layers, num_residual_hiddens, num_embeddings,
                  embedding_dim, commitment_cost, decay)
    optimizer = optim.Adam(model.parameters(), lr=learning_rate, amsgrad=False)
    model.train()
    train_res_recon_error, train_res_perplexity, train_res_vq_loss = [], [], []
    step = 0
    while step < num_training_updates:
        for data, _ in training_loader:
            optimizer.zero_grad()
            vq_loss, data_recon, perplexity = model(data)
            recon_error = F.mse_loss(data_recon, data) / data_variance
            loss = recon_error + vq_loss
            loss.backward()
            optimizer.step()
            train_res_recon_error.append(recon_error.item())
            train_res_perplexity.append(perplexity.item())
            train_res_vq_loss.append(vq_loss.item())
            step += 1
            if step % 50 == 0:
                print(f"decay {decay} step {step}: recon_error "
                      f"{np.mean(train_res_recon_error[-50:]):.3f}, perplexity "
                      f"{np.mean(train_res_perplexity[-50:]):.3f}")
            if step == num_training_updates:
                break

    model.eval()
    with torch.no_grad():
        valid_vq_loss, valid_recon, valid_perplexity = model(valid_images)
        valid_recon_error = (F.mse_loss(valid_recon, valid_images) / data_variance).item()
        codes = model.encode_codes(valid_images)
        from_codes = model.decode_codes(codes)
    histories["ema" if decay > 0 else "plain"] = {
        "recon_error": train_res_recon_error,
        "perplexity": train_res_perplexity,
        "vq_loss": train_res_vq_loss,
        "valid_recon_error": valid_recon_error,
        "valid_perplexity": valid_perplexity.item(),
        "codes_used": int(torch.unique(codes).numel()),
        "codes_shape": tuple(codes.shape),
        "decode_gap": (from_codes - valid_recon).abs().max().item(),
        "n_restarts": getattr(model._vq_vae, "n_restarts", 0),
        "model": model,
    }
    print(f"decay {decay}: valid recon error {valid_recon_error:.3f}, "
          f"perplexity {valid_perplexity.item():.2f}, "
          f"codes used {histories['ema' if decay > 0 else 'plain']['codes_used']}")

# ---------------------------------------------- a PixelCNN prior over the EMA model's codes
vqvae = histories["ema"]["model"]
vqvae.eval()
with torch.no_grad():
    train_codes = torch.cat([vqvae.encode_codes(train_images[i:i + 64])
                             for i in range(0, len(train_images), 64)])
code_counts = torch.bincount(train_codes.flatten(), minlength=num_embeddings)
torch.manual_seed(0)
prior = PixelCNN(num_embeddings, dim=32, n_layers=3)
prior_optimizer = optim.Adam(prior.parameters(), lr=3e-3)
code_loader = DataLoader(TensorDataset(train_codes), batch_size=64, shuffle=True)
prior_losses = []
for _ in range(6):
    prior.train()
    for (batch_codes,) in code_loader:
        logits = prior(batch_codes)  # (B, K, H, W) against (B, H, W) targets
        prior_loss = F.cross_entropy(logits, batch_codes)
        prior_optimizer.zero_grad()
        prior_loss.backward()
        prior_optimizer.step()
        prior_losses.append(prior_loss.item())
prior.eval()
with torch.no_grad():
    valid_codes = vqvae.encode_codes(valid_images)
    prior_valid_nll = F.cross_entropy(prior(valid_codes), valid_codes).item()
    # the empirical code frequencies: the NLL a prior without context would reach
    freq = (code_counts.float() + 1e-3) / (code_counts.sum() + 1e-3 * num_embeddings)
    unigram_nll = F.nll_loss(torch.log(freq)[None, :, None, None].expand(
        len(valid_codes), -1, *valid_codes.shape[1:]), valid_codes).item()
    sampled_codes = prior.sample(8, tuple(valid_codes.shape[1:]),
                                 torch.Generator().manual_seed(1))
    sampled_images = vqvae.decode_codes(sampled_codes).clamp(0, 1)
print(f"prior: loss {np.mean(prior_losses[:4]):.3f} -> {np.mean(prior_losses[-4:]):.3f}, "
      f"valid NLL {prior_valid_nll:.3f} (unigram {unigram_nll:.3f})")

baseline_error = float(((valid_images - train_images.mean(0)) ** 2).mean() / data_variance)
print(f"mean-image baseline error {baseline_error:.3f}, log2 K = {math.log2(num_embeddings)}")
