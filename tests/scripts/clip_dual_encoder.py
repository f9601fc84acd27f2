# ruff: noqa: N812 (the usual F alias of nn.functional)
"""A CLIP-style dual encoder trained contrastively on synthetic coloured patterns and captions,
written for these tests the way open_clip's ``model.py``/``transformer.py``/``loss.py``/
``zero_shot_classifier.py`` and the "simple CLIP" tutorials write torch code (not a copy):

- an image tower as a patch-embedding ViT: ``nn.Conv2d`` with ``stride=patch``, a class token
  (``nn.Parameter(scale * torch.randn(width))`` added to ``torch.zeros``), learned positional
  embeddings, ``ln_pre``/``ln_post``, ``nn.TransformerEncoder`` of ``batch_first=True,
  norm_first=True`` GELU layers, and ``x[:, 0] @ self.proj``;
- a text tower: ``nn.Embedding`` + positional embedding, a causal mask built by
  ``torch.empty().fill_(-inf).triu_(1)``, by ``nn.Transformer.generate_square_subsequent_mask``
  and as a boolean ``torch.triu(torch.ones(...), diagonal=1)`` (also ``is_causal=True``), the
  EOT features taken with ``x[torch.arange(B), text.argmax(dim=-1)]``, open_clip's
  initialisation of the in/out projections with ``nn.init.normal_``;
- open_clip's own residual attention block (``nn.MultiheadAttention`` on ``(L, N, D)`` with
  ``attn_mask``, an ``nn.Sequential(OrderedDict(...))`` MLP) loaded from an
  ``nn.TransformerEncoderLayer``'s ``state_dict`` by renaming keys;
- ``F.normalize``, a learnable ``logit_scale`` (``nn.Parameter(torch.ones([]) *
  np.log(1 / 0.07))``) used as ``logit_scale.exp().clamp(max=100)`` and clamped in place with
  ``clamp_(0, math.log(100))`` after each step; the symmetric cross-entropy ``ClipLoss``;
- the "simple CLIP" variant: a small CNN image encoder (``nn.AdaptiveAvgPool2d``), projection
  heads (Linear-GELU-Linear-Dropout, a residual and ``nn.LayerNorm``), soft targets from
  ``F.softmax`` of the in-modality similarities and a hand-written soft cross-entropy
  (``nn.LogSoftmax``) against ``F.cross_entropy`` with probability targets;
- ``AdamW`` with parameter groups (no weight decay on gains, biases and ``logit_scale``),
  open_clip's warm-up + cosine schedule written into ``param_group["lr"]``,
  ``clip_grad_norm_``;
- zero-shot classification by prompt ensembles (normalise, ``mean(dim=0)``, ``/= norm()``,
  ``torch.stack(dim=1)``), open_clip's top-k ``accuracy`` (``topk``, ``.t()``, ``eq``,
  ``expand_as``), retrieval ranks by ``argsort(descending=True)`` and ``torch.where``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math
from collections import OrderedDict

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
np.random.seed(0)
fixed_results = {}

# ---------------------------------------------------------------------------- data

COLORS = {"red": (1.0, 0.1, 0.1), "green": (0.1, 1.0, 0.1), "blue": (0.1, 0.1, 1.0)}
PATTERNS = ("horizontal", "vertical", "checkered")
CLASSNAMES = [f"{color} {pattern}" for color in COLORS for pattern in PATTERNS]
IMAGE_SIZE = 16
MEAN = torch.tensor([0.4, 0.4, 0.4]).view(3, 1, 1)
STD = torch.tensor([0.3, 0.3, 0.3]).view(3, 1, 1)


def make_image(label, rng):
    """Noisy 2-pixel stripes or checks in one colour, at a random phase and contrast."""
    color = np.array(COLORS[CLASSNAMES[label].split()[0]], dtype=np.float32)
    pattern = CLASSNAMES[label].split()[1]
    rows, cols = np.mgrid[:IMAGE_SIZE, :IMAGE_SIZE]
    phase = rng.integers(2)
    if pattern == "horizontal":
        wave = (rows + phase) % 4 // 2
    elif pattern == "vertical":
        wave = (cols + phase) % 4 // 2
    else:
        wave = (rows // 2 + cols // 2 + phase) % 2
    contrast = rng.uniform(0.6, 1.0)
    image = 0.2 + contrast * wave[None] * color[:, None, None]
    image = image + rng.normal(0.0, 0.1, size=image.shape)
    return np.clip(image, 0.0, 1.0).astype(np.float32)


def make_images(labels, rng):
    images = torch.from_numpy(np.stack([make_image(int(label), rng) for label in labels]))
    return (images - MEAN) / STD  # what transforms.Normalize does


TRAIN_TEMPLATES = ("a photo of a {} pattern.", "a {} picture.", "an image of {} stripes.",
                   "{}")
ZERO_SHOT_TEMPLATES = ("a photo of a {}.", "a {} pattern.", "an image of a {} picture.")


class SimpleTokenizer:
    """Word-level tokens between start/end-of-text markers, zero-padded to the context length;
    the end-of-text token has the largest id, so ``text.argmax(dim=-1)`` finds it."""

    def __init__(self, words, context_length=10):
        self.encoder = {word: i + 1 for i, word in enumerate(sorted(set(words)))}  # 0 pads
        self.sot_token = len(self.encoder) + 1
        self.eot_token = len(self.encoder) + 2
        self.vocab_size = self.eot_token + 1
        self.context_length = context_length

    def encode(self, text):
        return [self.encoder[word] for word in text.lower().replace(".", "").split()]

    def __call__(self, texts):
        if isinstance(texts, str):
            texts = [texts]
        all_tokens = [[self.sot_token] + self.encode(text) + [self.eot_token] for text in texts]
        result = torch.zeros(len(all_tokens), self.context_length, dtype=torch.long)
        for i, tokens in enumerate(all_tokens):
            if len(tokens) > self.context_length:
                tokens = tokens[:self.context_length]  # truncate, keeping an EOT at the end
                tokens[-1] = self.eot_token
            result[i, :len(tokens)] = torch.tensor(tokens)
        return result


words = " ".join(TRAIN_TEMPLATES + ZERO_SHOT_TEMPLATES + tuple(CLASSNAMES)).replace("{}", "")
tokenizer = SimpleTokenizer(words.replace(".", "").split())

# ---------------------------------------------------------------------------- towers


def encoder_layer(width, heads, mlp_ratio=4.0):
    return nn.TransformerEncoderLayer(width, heads, dim_feedforward=int(width * mlp_ratio),
                                      dropout=0.0, activation="gelu", batch_first=True,
                                      norm_first=True)


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, width, layers, heads, output_dim):
        super().__init__()
        self.grid_size = image_size // patch_size
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width ** -0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn(self.grid_size ** 2 + 1,
                                                                     width))
        self.ln_pre = nn.LayerNorm(width)
        self.transformer = nn.TransformerEncoder(encoder_layer(width, heads), layers,
                                                 enable_nested_tensor=False)
        self.ln_post = nn.LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

    def forward(self, x):
        x = self.conv1(x)  # shape = [*, width, grid, grid]
        x = x.reshape(x.shape[0], x.shape[1], -1)  # shape = [*, width, grid ** 2]
        x = x.permute(0, 2, 1)  # shape = [*, grid ** 2, width]
        cls = self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1],
                                                             dtype=x.dtype, device=x.device)
        x = torch.cat([cls, x], dim=1)  # shape = [*, grid ** 2 + 1, width]
        x = x + self.positional_embedding.to(x.dtype)
        x = self.ln_pre(x)
        x = self.transformer(x)
        x = self.ln_post(x[:, 0, :])
        return x @ self.proj


class TextTransformer(nn.Module):
    def __init__(self, vocab_size, context_length, width, layers, heads, output_dim):
        super().__init__()
        self.context_length = context_length
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(context_length, width))
        self.transformer = nn.TransformerEncoder(encoder_layer(width, heads), layers,
                                                 enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        self.text_projection = nn.Parameter(torch.empty(width, output_dim))
        self.register_buffer("attn_mask", self.build_attention_mask(), persistent=False)
        self.init_parameters(width, layers)

    def init_parameters(self, width, layers):
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        proj_std = (width ** -0.5) * ((2 * layers) ** -0.5)
        attn_std = width ** -0.5
        fc_std = (2 * width) ** -0.5
        for block in self.transformer.layers:
            nn.init.normal_(block.self_attn.in_proj_weight, std=attn_std)
            nn.init.normal_(block.self_attn.out_proj.weight, std=proj_std)
            nn.init.normal_(block.linear1.weight, std=fc_std)
            nn.init.normal_(block.linear2.weight, std=proj_std)
        nn.init.normal_(self.text_projection, std=width ** -0.5)

    def build_attention_mask(self):
        # additive causal mask, -inf above the diagonal
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)  # zero out the lower diagonal
        return mask

    def forward(self, text, attn_mask=None, is_causal=False):
        mask = self.attn_mask if attn_mask is None else attn_mask
        x = self.token_embedding(text)  # [batch_size, n_ctx, d_model]
        x = x + self.positional_embedding
        x = self.transformer(x, mask=mask, is_causal=is_causal)
        x = self.ln_final(x)
        # take features from the eot embedding (eot_token is the highest number in each sequence)
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection


class CLIP(nn.Module):
    def __init__(self, embed_dim=32, image_size=IMAGE_SIZE, patch_size=4, vision_width=32,
                 vision_layers=2, vision_heads=4, vocab_size=None, context_length=10,
                 text_width=32, text_layers=2, text_heads=4, init_logit_scale=np.log(1 / 0.07)):
        super().__init__()
        self.visual = VisionTransformer(image_size, patch_size, vision_width, vision_layers,
                                        vision_heads, embed_dim)
        self.text = TextTransformer(vocab_size, context_length, text_width, text_layers,
                                    text_heads, embed_dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * init_logit_scale)

    def encode_image(self, image, normalize=False):
        features = self.visual(image)
        return F.normalize(features, dim=-1) if normalize else features

    def encode_text(self, text, normalize=False):
        features = self.text(text)
        return F.normalize(features, dim=-1) if normalize else features

    def forward(self, image, text):
        image_features = self.encode_image(image, normalize=True)
        text_features = self.encode_text(text, normalize=True)
        return image_features, text_features, self.logit_scale.exp().clamp(max=100)


class ClipLoss(nn.Module):
    def get_ground_truth(self, num_logits):
        return torch.arange(num_logits, dtype=torch.long)

    def get_logits(self, image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        return logits_per_image, logits_per_text

    def forward(self, image_features, text_features, logit_scale):
        logits_per_image, logits_per_text = self.get_logits(image_features, text_features,
                                                            logit_scale)
        labels = self.get_ground_truth(logits_per_image.shape[0])
        return (F.cross_entropy(logits_per_image, labels)
                + F.cross_entropy(logits_per_text, labels)) / 2


# ------------------------------------------------ open_clip's own residual attention block


class ResidualAttentionBlock(nn.Module):
    """open_clip's block: attention over (L, N, D) with an additive mask, then a GELU MLP."""

    def __init__(self, d_model, n_head, mlp_ratio=4.0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_2 = nn.LayerNorm(d_model)
        mlp_width = int(d_model * mlp_ratio)
        self.mlp = nn.Sequential(OrderedDict([
            ("c_fc", nn.Linear(d_model, mlp_width)),
            ("gelu", nn.GELU()),
            ("c_proj", nn.Linear(mlp_width, d_model)),
        ]))

    def attention(self, x, attn_mask=None):
        attn_mask = attn_mask.to(x.dtype) if attn_mask is not None else None
        return self.attn(x, x, x, need_weights=False, attn_mask=attn_mask)[0]

    def forward(self, x, attn_mask=None):
        x = x + self.attention(self.ln_1(x), attn_mask=attn_mask)
        return x + self.mlp(self.ln_2(x))


def block_from_encoder_layer(layer):
    renames = {"self_attn.": "attn.", "norm1.": "ln_1.", "norm2.": "ln_2.",
               "linear1.": "mlp.c_fc.", "linear2.": "mlp.c_proj."}
    state = OrderedDict()
    for key, value in layer.state_dict().items():
        for old, new in renames.items():
            if key.startswith(old):
                key = new + key[len(old):]
        state[key] = value
    block = ResidualAttentionBlock(layer.linear1.in_features, layer.self_attn.num_heads)
    result = block.load_state_dict(state, strict=True)
    return block, result


# ------------------------------------------------------------------ "simple CLIP" variant


class ImageEncoder(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1, stride=2), nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
        self.out_features = channels

    def forward(self, x):
        return self.features(x)


class TextEncoder(nn.Module):
    """A bag of token embeddings: the mean over the non-padding tokens."""

    def __init__(self, vocab_size, width=24):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, width, padding_idx=0)
        self.out_features = width

    def forward(self, text):
        keep = (text != 0).unsqueeze(-1).float()
        return (self.embedding(text) * keep).sum(1) / keep.sum(1)


class ProjectionHead(nn.Module):
    def __init__(self, embedding_dim, projection_dim=32, dropout=0.0):
        super().__init__()
        self.projection = nn.Linear(embedding_dim, projection_dim)
        self.gelu = nn.GELU()
        self.fc = nn.Linear(projection_dim, projection_dim)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(projection_dim)

    def forward(self, x):
        projected = self.projection(x)
        x = self.gelu(projected)
        x = self.fc(x)
        x = self.dropout(x)
        x = x + projected
        return self.layer_norm(x)


def soft_cross_entropy(preds, targets, reduction="none"):
    log_softmax = nn.LogSoftmax(dim=-1)
    loss = (-targets * log_softmax(preds)).sum(1)
    return loss if reduction == "none" else loss.mean()


class SimpleCLIPModel(nn.Module):
    def __init__(self, vocab_size, temperature=1.0):
        super().__init__()
        self.image_encoder = ImageEncoder()
        self.text_encoder = TextEncoder(vocab_size)
        self.image_projection = ProjectionHead(self.image_encoder.out_features)
        self.text_projection = ProjectionHead(self.text_encoder.out_features)
        self.temperature = temperature

    def forward(self, images, texts):
        image_embeddings = self.image_projection(self.image_encoder(images))
        text_embeddings = self.text_projection(self.text_encoder(texts))
        logits = (text_embeddings @ image_embeddings.T) / self.temperature
        images_similarity = image_embeddings @ image_embeddings.T
        texts_similarity = text_embeddings @ text_embeddings.T
        targets = F.softmax((images_similarity + texts_similarity) / 2 * self.temperature,
                            dim=-1)
        texts_loss = soft_cross_entropy(logits, targets, reduction="none")
        images_loss = soft_cross_entropy(logits.T, targets.T, reduction="none")
        loss = (images_loss + texts_loss) / 2.0  # shape: (batch_size)
        return loss.mean(), logits, targets


# ------------------------------------------------------------------ training utilities


def param_groups(model, weight_decay):
    def exclude(n, p):
        return p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n

    named_parameters = list(model.named_parameters())
    gain_or_bias_params = [p for n, p in named_parameters if exclude(n, p) and p.requires_grad]
    rest_params = [p for n, p in named_parameters if not exclude(n, p) and p.requires_grad]
    return [{"params": gain_or_bias_params, "weight_decay": 0.0},
            {"params": rest_params, "weight_decay": weight_decay}]


def assign_learning_rate(optimizer, new_lr):
    for param_group in optimizer.param_groups:
        param_group["lr"] = new_lr


def cosine_lr(optimizer, base_lr, warmup_length, steps):
    def _lr_adjuster(step):
        if step < warmup_length:
            lr = base_lr * (step + 1) / warmup_length
        else:
            e = step - warmup_length
            es = steps - warmup_length
            lr = 0.5 * (1 + np.cos(np.pi * e / es)) * base_lr
        assign_learning_rate(optimizer, lr)
        return lr
    return _lr_adjuster


def accuracy(output, target, topk=(1,)):
    pred = output.topk(max(topk), 1, True, True)[1].t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    return [float(correct[:k].reshape(-1).float().sum(0, keepdim=True).cpu().numpy()[0])
            for k in topk]


def zero_shot_classifier(model, classnames, templates):
    with torch.no_grad():
        zeroshot_weights = []
        for classname in classnames:
            texts = tokenizer([template.format(classname) for template in templates])
            class_embeddings = model.encode_text(texts)
            class_embedding = F.normalize(class_embeddings, dim=-1).mean(dim=0)
            class_embedding /= class_embedding.norm()
            zeroshot_weights.append(class_embedding)
        return torch.stack(zeroshot_weights, dim=1)


def retrieval_metrics(image_features, text_features, logit_scale):
    metrics = {}
    logits_per_image = (logit_scale * image_features @ text_features.t()).detach()
    logits_per_text = logits_per_image.t().detach()
    logits = {"image_to_text": logits_per_image, "text_to_image": logits_per_text}
    ground_truth = torch.arange(len(text_features)).view(-1, 1)
    for name, logit in logits.items():
        ranking = torch.argsort(logit, descending=True)
        preds = torch.where(ranking == ground_truth)[1]
        preds = preds.detach().cpu().numpy()
        metrics[f"{name}_mean_rank"] = preds.mean() + 1
        metrics[f"{name}_median_rank"] = np.floor(np.median(preds)) + 1
        for k in (1, 3):
            metrics[f"{name}_R@{k}"] = np.mean(preds < k)
    return metrics


def sample_batch(rng, batch_classes):
    images = make_images(batch_classes, rng)
    captions = [TRAIN_TEMPLATES[rng.integers(len(TRAIN_TEMPLATES))].format(CLASSNAMES[c])
                for c in batch_classes]
    return images, tokenizer(captions)


# ------------------------------------------------------------ (recorded) on fixed weights

rng = np.random.default_rng(0)
model = CLIP(vocab_size=tokenizer.vocab_size)
loss_fn = ClipLoss()
classes = torch.randperm(len(CLASSNAMES)).tolist()
images, texts = sample_batch(rng, classes)
fixed_results["tokens"] = texts.clone()
fixed_results["logit_scale_init"] = model.logit_scale.detach().clone()
image_features, text_features, logit_scale = model(images, texts)
loss = loss_fn(image_features, text_features, logit_scale)
loss.backward()
fixed_results["image_features"] = image_features.detach()
fixed_results["text_features"] = text_features.detach()
fixed_results["loss"] = loss.item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()
                          if n in ("logit_scale", "visual.proj", "visual.class_embedding",
                                   "visual.conv1.weight", "text.text_projection",
                                   "text.token_embedding.weight",
                                   "text.positional_embedding")}
model.zero_grad(set_to_none=True)

# the causal mask three ways (and is_causal), and what padding after the EOT changes
with torch.no_grad():
    n_ctx = tokenizer.context_length
    square_mask = nn.Transformer.generate_square_subsequent_mask(n_ctx)
    bool_mask = torch.triu(torch.ones(n_ctx, n_ctx), diagonal=1).bool()
    text_by_mask = {
        "triu_fill": model.text(texts),
        "square_subsequent": model.text(texts, attn_mask=square_mask),
        "bool": model.text(texts, attn_mask=bool_mask),
        "is_causal": model.text(texts, attn_mask=square_mask, is_causal=True),
    }
    noisy_padding = texts.clone()
    eot_position = texts.argmax(dim=-1)
    after_eot = torch.arange(n_ctx)[None, :] > eot_position[:, None]
    noisy_padding[after_eot] = torch.randint(1, tokenizer.sot_token, (int(after_eot.sum()),))
    padding_change = (model.text(noisy_padding) - text_by_mask["triu_fill"]).abs().max().item()
    no_mask_padding_change = (model.text(noisy_padding, attn_mask=torch.zeros(n_ctx, n_ctx))
                              - model.text(texts, attn_mask=torch.zeros(n_ctx, n_ctx))
                              ).abs().max().item()
fixed_results["text_by_mask"] = text_by_mask
fixed_results["square_mask"] = square_mask
fixed_results["eot_position"] = eot_position

# open_clip's block with an encoder layer's weights, in (L, N, D) with the additive mask
layer = model.text.transformer.layers[0]
block, load_result = block_from_encoder_layer(layer)
block_keys_missing = list(load_result.missing_keys) + list(load_result.unexpected_keys)
with torch.no_grad():
    x_in = model.text.token_embedding(texts) + model.text.positional_embedding
    ours_lnd = block(x_in.permute(1, 0, 2), attn_mask=model.text.attn_mask).permute(1, 0, 2)
    theirs_nld = layer(x_in, src_mask=model.text.attn_mask)
block_difference = (ours_lnd - theirs_nld).abs().max().item()
fixed_results["block_out"] = ours_lnd

# logit_scale past log(100): the forward uses 100 and the clamp passes no gradient back
clamp_probe = CLIP(vocab_size=tokenizer.vocab_size)
clamp_probe.load_state_dict(model.state_dict())
with torch.no_grad():
    clamp_probe.logit_scale.fill_(5.0)
probe_image, probe_text, probe_scale = clamp_probe(images, texts)
loss_fn(probe_image, probe_text, probe_scale).backward()
fixed_results["clamped_scale"] = probe_scale.detach()
fixed_results["clamped_scale_grad"] = clamp_probe.logit_scale.grad.clone()
with torch.no_grad():
    clamp_probe.logit_scale.clamp_(0, math.log(100))
fixed_results["clamped_in_place"] = clamp_probe.logit_scale.detach().clone()

# zero-shot head and retrieval metrics at initialisation
with torch.no_grad():
    zs_init = zero_shot_classifier(model, CLASSNAMES, ZERO_SHOT_TEMPLATES)
    fixed_results["zeroshot_weights_init"] = zs_init
    fixed_results["zeroshot_logits_init"] = 100.0 * model.encode_image(images, True) @ zs_init
    fixed_results["retrieval_init"] = retrieval_metrics(image_features.detach(),
                                                        text_features.detach(), 100.0)

# the "simple CLIP" loss on fixed weights, and the soft targets through F.cross_entropy
simple = SimpleCLIPModel(tokenizer.vocab_size)
simple_loss, simple_logits, simple_targets = simple(images, texts)
simple_loss.backward()
fixed_results["simple_loss"] = simple_loss.item()
fixed_results["simple_logits"] = simple_logits.detach()
fixed_results["simple_targets"] = simple_targets.detach()
fixed_results["simple_grad_fc"] = simple.image_projection.fc.weight.grad.clone()
with torch.no_grad():
    soft_by_hand = soft_cross_entropy(simple_logits, simple_targets, reduction="mean")
    soft_builtin = F.cross_entropy(simple_logits, simple_targets)
fixed_results["soft_ce_builtin"] = soft_builtin
simple.zero_grad()

# ---------------------------------------------------------------------------- training

steps, warmup = 50, 5
optimizer = torch.optim.AdamW(param_groups(model, 0.1), lr=3e-3, betas=(0.9, 0.98), eps=1e-6)
scheduler = cosine_lr(optimizer, 3e-3, warmup, steps)
losses, lrs, logit_scales = [], [], []
model.train()
for step in range(steps):
    lrs.append(scheduler(step))
    classes = torch.randperm(len(CLASSNAMES)).tolist()
    images, texts = sample_batch(rng, classes)
    image_features, text_features, logit_scale = model(images, texts)
    total_loss = loss_fn(image_features, text_features, logit_scale)
    optimizer.zero_grad()
    total_loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, math.log(100))
    losses.append(total_loss.item())
    logit_scales.append(logit_scale.item())
    if step % 10 == 0:
        print(f"step {step}: loss {losses[-1]:.4f}, scale {logit_scales[-1]:.2f}, "
              f"lr {lrs[-1]:.5f}")

# ------------------------------------------------------------------------- evaluation

model.eval()
test_labels = torch.arange(len(CLASSNAMES)).repeat(4)
test_images = make_images(test_labels, np.random.default_rng(1))
with torch.no_grad():
    classifier = zero_shot_classifier(model, CLASSNAMES, ZERO_SHOT_TEMPLATES)
    test_image_features = model.encode_image(test_images, normalize=True)
    zs_logits = 100.0 * test_image_features @ classifier
    top1, top3 = accuracy(zs_logits, test_labels, topk=(1, 3))
    zero_shot_top1 = top1 / len(test_labels)
    zero_shot_top3 = top3 / len(test_labels)
    zs_probs = zs_logits.softmax(dim=-1)
    eval_texts = tokenizer([f"a photo of a {CLASSNAMES[c]}." for c in range(len(CLASSNAMES))])
    eval_text_features = model.encode_text(eval_texts, normalize=True)
    retrieval = retrieval_metrics(test_image_features[:len(CLASSNAMES)], eval_text_features,
                                  model.logit_scale.exp())
print(f"zero-shot top-1 {zero_shot_top1:.3f}, top-3 {zero_shot_top3:.3f}; "
      f"image->text R@1 {retrieval['image_to_text_R@1']:.3f}")

# the "simple CLIP" model trained on batches that repeat classes (hence the soft targets)
simple_optimizer = torch.optim.AdamW(simple.parameters(), lr=5e-3, weight_decay=1e-3)
simple_losses = []
simple.train()
for _step in range(40):
    batch_classes = rng.integers(len(CLASSNAMES), size=12)
    images, texts = sample_batch(rng, batch_classes)
    loss, _, _ = simple(images, texts)
    simple_optimizer.zero_grad()
    loss.backward()
    simple_optimizer.step()
    simple_losses.append(loss.item())
simple.eval()
with torch.no_grad():
    image_embeddings = F.normalize(simple.image_projection(simple.image_encoder(test_images)),
                                   dim=-1)
    class_texts = tokenizer([f"a {name} picture." for name in CLASSNAMES])
    text_embeddings = F.normalize(simple.text_projection(simple.text_encoder(class_texts)),
                                  dim=-1)
    simple_top1 = accuracy(image_embeddings @ text_embeddings.T, test_labels)[0] \
        / len(test_labels)
print(f"simple CLIP: loss {simple_losses[0]:.3f} -> {simple_losses[-1]:.3f}, "
      f"top-1 {simple_top1:.3f}")
