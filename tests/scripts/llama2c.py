# ruff: noqa: N806
# (N806: the FLOP estimate uses the usual one-letter upper-case names L, H, Q, T)
"""A tiny Llama-style language model trained end to end, written for these tests in the way
Karpathy's llama2.c (model.py, export.py, tinystories.py, train.py) is commonly written
(modelled on the API usage of llama2.c, not a copy of it):

- the model: a dataclass config, RMSNorm (``rsqrt``, ``type_as``), rotary embeddings from cos /
  sin tables (``outer``, ``unbind``, ``stack(...).flatten(3)``), grouped-query attention with the
  key/value heads expanded, ``F.scaled_dot_product_attention(is_causal=True)`` or a
  ``triu``-masked softmax, a SwiGLU MLP, tied embedding / output weights, normal init with a
  smaller std for the residual projections (``apply``, ``nn.init``), AdamW with decay and
  no-decay groups, an MFU estimate, ``generate`` under ``torch.inference_mode`` (greedy through
  ``topk``, or temperature + top-k + ``multinomial``);
- the C exports: the legacy float file, the v1 header + float32 file and the v2 Q8_0 file
  (per-group int8 quantization with ``abs().max(dim=1).values`` and ``round().to(int8)``);
- data: an ``IterableDataset`` reading np.memmap'd uint16 shards of synthetic token "stories"
  (``get_worker_info``, ``torch.distributed`` rank), batched by a DataLoader;
- training: gradient accumulation, warmup + cosine learning rate written into each param group,
  a disabled ``GradScaler``, gradient clipping, loss estimates under ``no_grad``, a checkpoint,
  resuming from it with ``load_state_dict(strict=False)``;
- for the torch comparison: a small model with set weights on both attention paths, its loss,
  gradients, three optimizer steps and greedy tokens, plus the rotary tables and a quantization.
"""
import glob
import inspect
import math
import os
import random
import struct
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

import jitgrad as torch
import jitgrad.distributed as dist
import jitgrad.nn.functional as F
from jitgrad import nn

HAS_SDPA = hasattr(torch.nn.functional, "scaled_dot_product_attention")


@dataclass
class LlamaConfig:
    dim: int = 64
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int | None = None
    vocab_size: int = 256
    hidden_dim: int | None = None
    multiple_of: int = 32
    norm_eps: float = 1e-5
    max_seq_len: int = 64
    dropout: float = 0.0
    use_sdpa: bool = HAS_SDPA


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rope_tables(head_dim, n_pos, base=10000.0):
    """cos and sin of position * frequency, shape (n_pos, head_dim // 2)."""
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    pos = torch.arange(n_pos, device=inv.device)
    angles = torch.outer(pos, inv).float()
    return torch.cos(angles), torch.sin(angles)


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates each (even, odd) pair of the last axis of x (b, t, h, d) by the angle tables."""
    even, odd = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    shape = [1] * even.ndim
    shape[1], shape[-1] = even.shape[1], even.shape[-1]
    cos, sin = cos.view(shape), sin.view(shape)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(3).type_as(x)


def expand_kv(x: torch.Tensor, times: int) -> torch.Tensor:
    """(b, t, kv_heads, d) -> (b, t, kv_heads * times, d), each head repeated in place."""
    if times == 1:
        return x
    b, t, kv, d = x.shape
    return x[:, :, :, None, :].expand(b, t, kv, times, d).reshape(b, t, kv * times, d)


class GroupedAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv = cfg.n_kv_heads or cfg.n_heads
        assert self.n_heads % self.n_kv == 0
        self.head_dim = cfg.dim // cfg.n_heads
        self.wq = nn.Linear(cfg.dim, self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, self.n_kv * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, self.n_kv * self.head_dim, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_dim, cfg.dim, bias=False)
        self.p_drop = cfg.dropout
        self.drop_probs, self.drop_out = nn.Dropout(cfg.dropout), nn.Dropout(cfg.dropout)
        self.use_sdpa = cfg.use_sdpa
        if not self.use_sdpa:
            n = cfg.max_seq_len
            self.register_buffer("causal", torch.triu(torch.full((1, 1, n, n), float("-inf")),
                                                      diagonal=1))

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, t, self.n_kv, self.head_dim)
        v = self.wv(x).view(b, t, self.n_kv, self.head_dim)
        q, k = rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)
        rep = self.n_heads // self.n_kv
        q = q.transpose(1, 2)
        k, v = expand_kv(k, rep).transpose(1, 2), expand_kv(v, rep).transpose(1, 2)
        if self.use_sdpa:
            p = self.p_drop if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
                                               is_causal=True)
        else:
            att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
            att = att + self.causal[:, :, :t, :t]
            att = self.drop_probs(F.softmax(att.float(), dim=-1).type_as(q))
            y = torch.matmul(att, v)
        y = y.transpose(1, 2).contiguous().view(b, t, -1)
        return self.drop_out(self.wo(y))


def swiglu_width(dim, multiple_of):
    width = int(2 * (4 * dim) / 3)
    return multiple_of * ((width + multiple_of - 1) // multiple_of)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden, dropout):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # value
        self.w2 = nn.Linear(hidden, dim, bias=False)  # back to the stream
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.attention = GroupedAttention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)
        hidden = cfg.hidden_dim or swiglu_width(cfg.dim, cfg.multiple_of)
        self.feed_forward = SwiGLU(cfg.dim, hidden, cfg.dropout)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class TinyLlama(nn.Module):
    last_loss: torch.Tensor | None

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.drop = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList()
        for _ in range(cfg.n_layers):
            self.layers.append(Block(cfg))
        self.norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.tok_embeddings.weight = self.output.weight  # one matrix for both ends
        cos, sin = rope_tables(cfg.dim // cfg.n_heads, cfg.max_seq_len)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        small = 0.02 / math.sqrt(2 * cfg.n_layers)
        for name, p in self.named_parameters():
            if name.endswith(("wo.weight", "w3.weight")):
                torch.nn.init.normal_(p, mean=0.0, std=small)
        self.last_loss = None

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        h = self.drop(self.tok_embeddings(idx))
        for block in self.layers:
            h = block(h, self.rope_cos[:t], self.rope_sin[:t])
        h = self.norm(h)
        if targets is None:
            self.last_loss = None
            return self.output(h[:, [-1], :])  # the last position only, time axis kept
        logits = self.output(h)
        self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                         ignore_index=-1)
        return logits

    def make_optimizer(self, weight_decay, lr, betas, device_type):
        trainable = [p for _, p in self.named_parameters() if p.requires_grad]
        matrices = [p for p in trainable if p.dim() >= 2]
        vectors = [p for p in trainable if p.dim() < 2]
        print(f"decay: {len(matrices)} tensors ({sum(p.numel() for p in matrices)} values), "
              f"no decay: {len(vectors)} tensors ({sum(p.numel() for p in vectors)} values)")
        can_fuse = "fused" in inspect.signature(torch.optim.AdamW).parameters
        extra = {"fused": True} if can_fuse and device_type == "cuda" else {}
        groups = [{"params": matrices, "weight_decay": weight_decay},
                  {"params": vectors, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, **extra)

    def estimate_mfu(self, seqs_per_iter, seconds):
        """Achieved FLOP/s over an A100's 312 TFLOP/s bfloat16 peak (PaLM's 6N + 12LHQT)."""
        n_params = sum(p.numel() for p in self.parameters())
        c = self.cfg
        L, H, Q, T = c.n_layers, c.n_heads, c.dim // c.n_heads, c.max_seq_len
        flops = (6 * n_params + 12 * L * H * Q * T) * T * seqs_per_iter
        return flops / seconds / 312e12

    @torch.inference_mode()
    def generate(self, idx, n_new, temperature=1.0, top_k=None):
        for _ in range(n_new):
            n = self.cfg.max_seq_len
            window = idx if idx.size(1) <= n else idx[:, -n:]
            last = self(window)[:, -1, :]
            if temperature == 0.0:
                _, nxt = torch.topk(last, k=1, dim=-1)
            else:
                last = last / temperature
                if top_k is not None:
                    kth, _ = torch.topk(last, min(top_k, last.size(-1)))
                    last[last < kth[:, [-1]]] = -float("inf")
                nxt = torch.multinomial(F.softmax(last, dim=-1), num_samples=1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


# --- writing the model for a C runtime ------------------------------------------------------
MAGIC = 0x616B3432  # "ak42"


def write_f32(f, t):
    arr = t.detach().cpu().view(-1).to(torch.float32).numpy()
    f.write(struct.pack(f"{arr.size}f", *arr))


def write_i8(f, t):
    arr = t.detach().cpu().view(-1).numpy().astype(np.int8)
    f.write(struct.pack(f"{arr.size}b", *arr))


def q8_quantize(w, group):
    """Symmetric int8 per group of ``group`` values: (int8 values, scales, worst abs error)."""
    assert w.numel() % group == 0
    rows = w.float().reshape(-1, group)
    scale = torch.abs(rows).max(dim=1).values / 127.0
    q = torch.round(rows / scale[:, None]).to(torch.int8)
    back = (q.float() * scale[:, None]).view(-1).reshape(-1, group)
    worst = torch.abs(back - rows).max(dim=1).values.max().item()
    return q, scale, worst


def shape_ints(model, negate_vocab=False):
    c = model.cfg
    ffn = model.layers[0].feed_forward.w1.weight.shape[0]
    vocab = -c.vocab_size if negate_vocab else c.vocab_size
    return struct.pack("7i", c.dim, ffn, c.n_layers, c.n_heads, c.n_kv_heads or c.n_heads,
                       vocab, c.max_seq_len)


def per_layer(model, path):
    """The weight at a dotted ``path`` of each block, in layer order."""
    out = []
    for block in model.layers:
        obj = block
        for part in path.split("."):
            obj = getattr(obj, part)
        out.append(obj)
    return out


MATRICES = ("attention.wq.weight", "attention.wk.weight", "attention.wv.weight",
            "attention.wo.weight", "feed_forward.w1.weight", "feed_forward.w2.weight",
            "feed_forward.w3.weight")


def export_legacy(model, path):
    tied = torch.equal(model.tok_embeddings.weight, model.output.weight)
    with open(path, "wb") as f:
        f.write(shape_ints(model, negate_vocab=not tied))
        write_f32(f, model.tok_embeddings.weight)
        for name in ("attention_norm.weight",) + MATRICES[:4] + ("ffn_norm.weight",) \
                + MATRICES[4:]:
            for w in per_layer(model, name):
                write_f32(f, w)
        write_f32(f, model.norm.weight)
        write_f32(f, model.rope_cos[:model.cfg.max_seq_len])
        write_f32(f, model.rope_sin[:model.cfg.max_seq_len])
        if not tied:
            write_f32(f, model.output.weight)


def _start_file(f, version, model, tied, extra=b""):
    f.write(struct.pack("I", MAGIC) + struct.pack("i", version) + shape_ints(model))
    f.write(struct.pack("B", int(tied)) + extra)
    f.write(b"\0" * (256 - f.tell()))


def export_fp32(model, path):
    tied = torch.equal(model.tok_embeddings.weight, model.output.weight)
    norms = per_layer(model, "attention_norm.weight") + per_layer(model, "ffn_norm.weight")
    tensors = norms + [model.norm.weight, model.tok_embeddings.weight]
    for name in MATRICES:
        tensors += per_layer(model, name)
    if not tied:
        tensors.append(model.output.weight)
    with open(path, "wb") as f:
        _start_file(f, 1, model, tied)
        for w in tensors:
            write_f32(f, w)


def export_q8(model, path, group=64):
    while model.cfg.dim % group:
        group //= 2
        print("group size lowered to", group)
    tied = torch.equal(model.tok_embeddings.weight, model.output.weight)
    to_quantize = [model.tok_embeddings.weight]
    for name in MATRICES:
        to_quantize += per_layer(model, name)
    if not tied:
        to_quantize.append(model.output.weight)
    assert all(w.numel() % group == 0 for w in to_quantize)
    worst = 0.0
    with open(path, "wb") as f:
        _start_file(f, 2, model, tied, extra=struct.pack("i", group))
        for w in per_layer(model, "attention_norm.weight") + per_layer(model, "ffn_norm.weight"):
            write_f32(f, w)
        write_f32(f, model.norm.weight)
        for w in to_quantize:
            q, s, err = q8_quantize(w, group)
            write_i8(f, q)
            write_f32(f, s)
            worst = max(worst, err)
    print(f"Q8_0 export, largest group error {worst:.2e}")


EXPORTERS = {0: export_legacy, 1: export_fp32, 2: export_q8}


def export(model, path, version):
    if version not in EXPORTERS:
        raise ValueError(f"no exporter for version {version}")
    EXPORTERS[version](model, path)
    print("exported", path)


def restore(ckpt_path):
    saved = torch.load(ckpt_path, map_location="cpu")
    net = TinyLlama(LlamaConfig(**saved["model_args"]))
    prefix = "_orig_mod."
    weights = {k[len(prefix):] if k.startswith(prefix) else k: v
               for k, v in saved["model"].items()}
    net.load_state_dict(weights, strict=False)
    net.eval()
    return net


# --- pretokenized shards -------------------------------------------------------------------------
work = tempfile.mkdtemp(prefix="tinyllama_")
VOCAB, BOS, STEP = 32, 1, 11  # tokens 2..31 cycle with a stride of 11


def next_token(tok):
    return (tok - 2 + STEP) % 30 + 2


shard_dir = os.path.join(work, f"tok{VOCAB}")
os.makedirs(shard_dir, exist_ok=True)
story_rng = np.random.default_rng(5)
for s in range(3):
    stream = []
    for _ in range(60):
        tok = 2 + int(story_rng.integers(0, 30))
        stream.append(BOS)
        for _ in range(int(story_rng.integers(8, 20))):
            stream.append(tok)
            tok = next_token(tok)
    np.asarray(stream, dtype=np.uint16).tofile(os.path.join(shard_dir, f"shard{s}.bin"))


class ShardStream(torch.utils.data.IterableDataset):
    """Endless (x, y) windows of ``seq_len`` tokens from the shards (shard 0 is validation)."""

    def __init__(self, split, seq_len):
        super().__init__()
        self.split, self.seq_len = split, seq_len

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker = 0 if info is None else info.id
        rank = dist.get_rank() if dist.is_initialized() else 0
        rng = random.Random(1000 * rank + worker + 7)
        files = sorted(glob.glob(os.path.join(shard_dir, "*.bin")))
        files = files[:1] if self.split == "val" else files[1:]
        assert files, "no shards"
        while True:
            rng.shuffle(files)
            for name in files:
                tokens = np.memmap(name, dtype=np.uint16, mode="r")
                starts = list(range(len(tokens) // self.seq_len - 1))
                rng.shuffle(starts)
                for k in starts:
                    piece = tokens[k * self.seq_len:(k + 1) * self.seq_len + 1]
                    window = torch.from_numpy(piece.astype(np.int64))
                    yield window[:-1], window[1:]


def batches(split, batch_size, seq_len, device):
    loader = torch.utils.data.DataLoader(ShardStream(split, seq_len), batch_size=batch_size,
                                         pin_memory=True, num_workers=0)
    for x, y in loader:
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)


# --- training -------------------------------------------------------------------------------------
device, dtype = "cpu", "float32"
device_type = "cuda" if "cuda" in device else "cpu"
BATCH, SEQ, ACCUM, GRAD_CLIP = 8, 16, 2, 1.0
MAX_LR, MIN_LR, WARMUP, LAST_ITER = 1e-2, 0.0, 4, 24
EVAL_EVERY, EVAL_BATCHES = 12, 2
torch.manual_seed(2024)
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
amp_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
autocast = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                          dtype=amp_dtype)
model_args = {"dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": VOCAB,
              "multiple_of": 16, "max_seq_len": SEQ, "dropout": 0.0}
model = TinyLlama(LlamaConfig(**model_args)).to(device)
optimizer = model.make_optimizer(0.1, MAX_LR, (0.9, 0.95), device_type)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
get_batches = partial(batches, batch_size=BATCH, seq_len=SEQ, device=device)
ckpt_dir = os.path.join(work, "ckpt")
os.makedirs(ckpt_dir, exist_ok=True)


def lr_at(step):
    if step < WARMUP:
        return MAX_LR * step / WARMUP
    if step > LAST_ITER:
        return MIN_LR
    progress = (step - WARMUP) / (LAST_ITER - WARMUP)
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * progress)) * (MAX_LR - MIN_LR)


@torch.no_grad()
def mean_losses():
    model.eval()
    out = {}
    for split in ("train", "val"):
        source = get_batches(split)
        vals = torch.zeros(EVAL_BATCHES)
        for k in range(EVAL_BATCHES):
            x, y = next(source)
            with autocast:
                model(x, y)
            vals[k] = model.last_loss.item()
        out[split] = vals.mean()
    model.train()
    return out


train_losses, eval_history, lrs = [], [], []
best_val = float("inf")
stream = get_batches("train")
x, y = next(stream)
tic = time.time()
mfu = -1.0
for it in range(LAST_ITER + 1):
    lr = lr_at(it)
    for group in optimizer.param_groups:
        group["lr"] = lr
    lrs.append(lr)
    if it % EVAL_EVERY == 0:
        est = mean_losses()
        print(f"iter {it}: train {est['train']:.4f} val {est['val']:.4f}")
        eval_history.append((it, est["train"].item(), est["val"].item()))
        if est["val"] < best_val:
            best_val = est["val"]
            if it > 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "model_args": model_args, "iter_num": it, "best_val_loss": best_val,
                            "config": asdict(model.cfg)}, os.path.join(ckpt_dir, "ckpt.pt"))
                export(model, os.path.join(ckpt_dir, "model.bin"), version=0)
    for _ in range(ACCUM):
        with autocast:
            model(x, y)
            loss = model.last_loss / ACCUM
        x, y = next(stream)  # the next batch while this one's backward runs
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    toc = time.time()
    if it >= 5:
        now = model.estimate_mfu(BATCH * ACCUM, max(toc - tic, 1e-9))
        mfu = now if mfu < 0 else 0.9 * mfu + 0.1 * now
    tic = toc
    train_losses.append(loss.item() * ACCUM)
    print(f"{it}: loss {train_losses[-1]:.4f}, lr {lr:.2e}, mfu {100 * mfu:.3f}%")


# --- resume, export every format, sample ---------------------------------------------------------
resumed = restore(os.path.join(ckpt_dir, "ckpt.pt"))
resumed_tied = resumed.tok_embeddings.weight is resumed.output.weight
paths = {v: os.path.join(ckpt_dir, f"model_v{v}.bin") for v in EXPORTERS}
for version, path in paths.items():
    export(resumed, path, version)
export_sizes = {v: os.path.getsize(path) for v, path in paths.items()}
with open(paths[1], "rb") as f:
    v1_header = struct.unpack("I8i", f.read(36))
start = torch.tensor([[BOS, 9]])
greedy = resumed.generate(start, 6, temperature=0.0)
torch.manual_seed(99)
sampled = resumed.generate(start, 6, temperature=0.8, top_k=5)
expected_greedy = [BOS, 9]
while len(expected_greedy) < 8:
    expected_greedy.append(next_token(expected_greedy[-1]))


# --- set weights on both attention paths, for the comparison with torch -------------------------
def set_weights(net):
    with torch.no_grad():
        for k, p in enumerate(net.parameters()):
            wave = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.6 + k))
            p.copy_(wave.view_as(p) / 3)


fixed_results = {}
inputs = torch.tensor([[1, 5, 3, 11, 2, 7], [6, 1, 2, 9, 4, 12]])
targets = torch.tensor([[5, 3, 11, 2, 7, 10], [1, 2, 9, 4, 12, -1]])
for sdpa in (True, False):
    net = TinyLlama(LlamaConfig(dim=16, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=13,
                                multiple_of=8, max_seq_len=8, use_sdpa=sdpa))
    set_weights(net)
    opt = net.make_optimizer(0.1, 1e-2, (0.9, 0.95), "cpu")
    record = {}
    for step in range(3):
        logits = net(inputs, targets)
        net.last_loss.backward()
        if step == 0:
            record["loss"] = net.last_loss.item()
            record["logits"] = logits.tolist()
            record.update({name: p.grad.tolist() for name, p in net.named_parameters()})
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    net.eval()
    record["after_steps"] = {name: p.tolist() for name, p in net.named_parameters()}
    record["last_logits"] = net(inputs[:, :4]).tolist()
    record["greedy"] = net.generate(inputs[:, :2], 4, temperature=0.0).tolist()
    record["groups"] = [(len(g["params"]), g["weight_decay"]) for g in opt.param_groups]
    record["mfu"] = net.estimate_mfu(4, 0.25)
    fixed_results[sdpa] = record
cos_table, sin_table = rope_tables(8, 5)
fixed_results["freqs"] = [cos_table.tolist(), sin_table.tolist()]
q, scale, err = q8_quantize(torch.cos(torch.arange(64, dtype=torch.float32) * 1.3).view(4, 16), 8)
fixed_results["q80"] = [q.tolist(), scale.tolist(), err]
