# ruff: noqa: N806
# (N806: shape names B, T, C, V, Vp as is usual in GPT code)
"""A GPT-2 reference trainer that also writes the binary files a C implementation would read,
written for these tests in the way Karpathy's llm.c ``train_gpt2.py`` is commonly written
(modelled on the API usage of that script, not a copy of it):

- the model: the tanh GELU, causal self-attention from one fused qkv Linear (``split``) with a
  registered ``tril`` mask (``masked_fill``) or ``F.scaled_dot_product_attention``, LayerNorm,
  ``nn.ModuleDict``/``ModuleList``, tied token embedding / output weights, init from a
  ``torch.Generator`` with a smaller std for residual projections, AdamW decay groups,
  ``generate`` with top-k under ``no_grad``;
- data: token shards with a 256-int32 header and uint16 tokens, read back with
  ``np.frombuffer`` by a rank-aware loader;
- the C bridge: weights in float32 and bfloat16 (``view(torch.int16)``) with the vocabulary
  padded by ``F.pad``, a debug state (inputs, logits, loss, gradients) and a tokenizer file;
- the loop: command-line arguments, gradient accumulation from a total batch size, warmup +
  cosine learning rate per param group, ``clip_grad_norm_``, validation and sampling, overfitting
  one batch;
- for the torch comparison: set weights on both attention paths, the written files, three
  updates, greedy tokens, and ``torch.compile`` against eager (values and gradients).
"""
import argparse
import glob
import inspect
import math
import os
import struct
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

import jitgrad as torch
import jitgrad.distributed as dist
import jitgrad.nn as nn
from jitgrad.distributed import destroy_process_group, init_process_group
from jitgrad.distributed.optim import ZeroRedundancyOptimizer
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel

USE_FLASH = 0  # which attention path CausalAttention takes
EOT, N_VOCAB = 50256, 50257


def log(*parts):
    if int(os.environ.get("RANK", 0)) == 0:  # only the first process talks
        print(*parts)


# --- model ------------------------------------------------------------------------------------
class TanhGELU(nn.Module):
    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


@dataclass
class GPT2Config:
    block_size: int = 1024
    vocab_size: int = N_VOCAB
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768


class CausalAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head, self.width = cfg.n_head, cfg.n_embd
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.proj.SCALED_INIT = True
        n = cfg.block_size
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def forward(self, x):
        B, T, C = x.size()
        heads = [t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                 for t in self.qkv(x).split(self.width, dim=2)]
        q, k, v = heads
        if USE_FLASH:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            w = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            w = w.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(w, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.up = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.act = TanhGELU()
        self.down = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.down.SCALED_INIT = True

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(cfg.n_embd), CausalAttention(cfg)
        self.norm2, self.mlp = nn.LayerNorm(cfg.n_embd), FeedForward(cfg)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT2(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg.vocab_size, cfg.n_embd),
            "wpe": nn.Embedding(cfg.block_size, cfg.n_embd),
            "h": nn.ModuleList(Layer(cfg) for _ in range(cfg.n_layer)),
            "ln_f": nn.LayerNorm(cfg.n_embd),
        })
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.SHARED = True  # it is wte's matrix: initialised there
        self.transformer.wte.weight = self.lm_head.weight
        self.gen = torch.Generator()
        self.gen.manual_seed(42)
        self.apply(self._init)

    def _init(self, m):
        if isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02, generator=self.gen)
        elif isinstance(m, nn.Linear):
            std = 0.02
            if hasattr(m, "SCALED_INIT"):
                std /= math.sqrt(2 * self.config.n_layer)
            if not hasattr(m, "SHARED"):
                torch.nn.init.normal_(m.weight, mean=0.0, std=std, generator=self.gen)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)

    def forward(self, tokens, targets=None, return_logits=True):
        b, t = tokens.size()
        assert t <= self.config.block_size, f"sequence of {t} > block size"
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)
        h = self.transformer.wte(tokens) + self.transformer.wpe(pos)
        for layer in self.transformer.h:
            h = layer(h)
        h = self.transformer.ln_f(h)
        loss = None
        if targets is None:
            logits = self.lm_head(h[:, [-1], :])  # last position, time axis kept
        else:
            logits = self.lm_head(h)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return (logits if return_logits else None), loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type,
                             zero_stage=0):
        named = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in named.values() if p.dim() >= 2]
        rest = [p for p in named.values() if p.dim() < 2]
        log(f"{len(decay)} decayed tensors ({sum(p.numel() for p in decay):,} values), "
            f"{len(rest)} not ({sum(p.numel() for p in rest):,} values)")
        fused = device_type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
        if zero_stage == 1:
            opt = ZeroRedundancyOptimizer(params=decay, weight_decay=weight_decay,
                                          optimizer_class=torch.optim.AdamW, lr=learning_rate,
                                          betas=betas, fused=fused)
            opt.add_param_group({"params": rest, "weight_decay": 0.0})
            return opt
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": rest, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=fused)

    @torch.no_grad()
    def generate(self, idx, new_tokens, temperature=1.0, top_k=None):
        limit = self.config.block_size
        for _ in range(new_tokens):
            context = idx if idx.size(1) <= limit else idx[:, -limit:]
            logits, _ = self(context)
            last = logits[:, -1, :] / temperature
            if top_k is not None:
                top, _ = torch.topk(last, min(top_k, last.size(-1)))
                last[last < top[:, [-1]]] = -float("inf")
            choice = torch.multinomial(F.softmax(last, dim=-1), num_samples=1)
            idx = torch.cat((idx, choice), dim=1)
        return idx


# --- token shards -----------------------------------------------------------------------------
SHARD_MAGIC, SHARD_VERSION = 20240520, 1


def save_shard(path, tokens):
    head = np.zeros(256, dtype=np.int32)
    head[:3] = (SHARD_MAGIC, SHARD_VERSION, len(tokens))
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())
    log(f"{path}: {len(tokens)} tokens")


def read_shard(path, header_only=False):
    with open(path, "rb") as f:
        head = np.frombuffer(f.read(1024), dtype=np.int32)
        assert head[0] == SHARD_MAGIC and head[1] == SHARD_VERSION, f"{path}: not a token shard"
        if header_only:
            return int(head[2])
        body = np.frombuffer(f.read(), dtype=np.uint16)
    assert len(body) == head[2]
    return body


class ShardLoader:
    """Consecutive (B, T) windows; each of ``world`` processes takes every ``world``-th one."""

    def __init__(self, pattern, B, T, rank, world):
        self.B, self.T, self.rank, self.world = B, T, rank, world
        self.files = sorted(glob.glob(pattern))
        assert self.files, f"nothing matches {pattern}"
        sizes = [read_shard(p, header_only=True) for p in self.files]
        assert min(sizes) > world * B * T
        log(f"loader: {sum(sizes)} tokens in {len(self.files)} shard(s)")
        self.shard = None
        self.reset()

    def _open(self, k):
        self.shard, self.tokens = k, read_shard(self.files[k])
        self.pos = self.rank * self.B * self.T

    def reset(self):
        if self.shard == 0:
            self.pos = self.rank * self.B * self.T
        else:
            self._open(0)

    def next_batch(self):
        span = self.B * self.T
        chunk = torch.tensor(self.tokens[self.pos:self.pos + span + 1].astype(np.int32),
                             dtype=torch.long)
        self.pos += span * self.world
        if self.pos + span * self.world + 1 > len(self.tokens):
            self._open((self.shard + 1) % len(self.files))
        return chunk[:-1].view(self.B, self.T), chunk[1:].view(self.B, self.T)


# --- the C bridge -----------------------------------------------------------------------------
def as_f32(t):
    return t.detach().cpu().to(torch.float32).numpy().tobytes()


def as_bf16(t):  # numpy has no bfloat16: write its bits as int16
    return t.detach().cpu().to(torch.bfloat16).view(torch.int16).numpy().tobytes()


LAYER_ORDER = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias",
               "attn.proj.weight", "attn.proj.bias", "norm2.weight", "norm2.bias",
               "mlp.up.weight", "mlp.up.bias", "mlp.down.weight", "mlp.down.bias")


def dump_tensors(tensors, n_layer, f, encode):
    """The llm.c layout: wte, wpe, then each per-layer tensor for all layers, then ln_f."""
    f.write(encode(tensors["transformer.wte.weight"]))
    f.write(encode(tensors["transformer.wpe.weight"]))
    for suffix in LAYER_ORDER:
        for i in range(n_layer):
            f.write(encode(tensors[f"transformer.h.{i}.{suffix}"]))
    f.write(encode(tensors["transformer.ln_f.weight"]))
    f.write(encode(tensors["transformer.ln_f.bias"]))


@torch.no_grad()
def pad_rows(t, multiple=128, value=0):
    """Zero rows appended so the vocabulary is a multiple of 128 (50257 -> 50304)."""
    V, C = t.shape
    assert V == N_VOCAB
    Vp = -(-V // multiple) * multiple
    out = F.pad(t, (0, 0, 0, Vp - V), value=value) if Vp > V else t
    assert out.shape == (Vp, C)
    return out


def int_header(*values):
    head = torch.zeros(256, dtype=torch.int32)
    for k, v in enumerate(values):
        head[k] = v
    return head


def save_weights(model, path, dtype):
    version, encode = {"float32": (3, as_f32), "bfloat16": (5, as_bf16)}[dtype]
    c = model.config
    tensors = {n: p.cpu() for n, p in model.named_parameters()}
    wte = tensors["transformer.wte.weight"] = pad_rows(tensors["transformer.wte.weight"])
    head = int_header(20240326, version, c.block_size, c.vocab_size, c.n_layer, c.n_head,
                      c.n_embd, wte.size(0))
    with open(path, "wb") as f:
        f.write(head.numpy().tobytes())
        dump_tensors(tensors, c.n_layer, f, encode)
    log(f"wrote {path} ({dtype}, vocab padded to {wte.size(0)})")


def save_debug_state(model, x, y, logits, loss, path):
    grads = {n: p.grad.cpu() for n, p in model.named_parameters()}
    grads["transformer.wte.weight"] = pad_rows(grads["transformer.wte.weight"], value=0)
    with open(path, "wb") as f:
        f.write(int_header(20240327, 2, x.size(0), x.size(1)).numpy().tobytes())
        f.write(x.cpu().numpy().astype("int32").tobytes())
        f.write(y.cpu().numpy().astype("int32").tobytes())
        f.write(as_f32(logits.cpu()))
        f.write(as_f32(loss.cpu()))
        dump_tensors(grads, model.config.n_layer, f, as_f32)
    log(f"wrote {path}")


def save_tokenizer(enc, path):
    count = enc.max_token_value + 1
    with open(path, "wb") as f:
        f.write(int_header(20240328, 2, count, enc.eot_token).numpy().tobytes())
        for i in range(count):
            piece = enc.decode_bytes([i])
            assert len(piece) < 256
            f.write(struct.pack("<B", len(piece)) + piece)
    log(f"wrote {path}")


class BytesTokenizer:
    """Stands in for tiktoken's GPT-2 encoding (a download): ids 0-255 are bytes."""

    eot_token = EOT
    max_token_value = EOT

    def encode_ordinary(self, text):
        return [*text.encode("utf-8")]

    def decode_bytes(self, ids):
        def one(i):
            if i < 256:
                return bytes([i])
            return b"<|endoftext|>" if i == EOT else b"[%d]" % i
        return b"".join(one(i) for i in ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


# --- data and command line --------------------------------------------------------------------
OUT = tempfile.mkdtemp(prefix="gpt2_c_bridge_")
enc = BytesTokenizer()
scenes = ("Ferryman:\nThe river runs high after the rain.\n\n"
          "Miller:\nThen grind the wheat before it spoils.\n\n") * 6
stream = []
for scene in scenes.split("\n\n"):
    stream += [enc.eot_token] + enc.encode_ordinary(scene + "\n\n")
cut = 3 * len(stream) // 4
save_shard(os.path.join(OUT, "train.bin"), stream[:cut])
save_shard(os.path.join(OUT, "val.bin"), stream[cut:])

SIZES = {
    "d2": GPT2Config(block_size=64, n_layer=2, n_head=2, n_embd=16),
    "d12": GPT2Config(n_layer=12, n_head=12, n_embd=768),
    "d24": GPT2Config(n_layer=24, n_head=16, n_embd=1024),
}


def parse(argv):
    p = argparse.ArgumentParser()
    for flag, kind, default in (
        ("--input_bin", str, ""), ("--input_val_bin", str, ""), ("--output_dir", str, ""),
        ("--model", str, "d12"), ("--batch_size", int, 4), ("--sequence_length", int, 64),
        ("--total_batch_size", int, 256), ("--num_iterations", int, 10),
        ("--learning_rate", float, 1e-4), ("--warmup_iters", int, 0),
        ("--learning_rate_decay_frac", float, 1.0), ("--weight_decay", float, 0.0),
        ("--grad_clip", float, 1.0), ("--val_loss_every", int, 0), ("--val_max_steps", int, 20),
        ("--sample_every", int, 0), ("--overfit_single_batch", int, 1),
        ("--tensorcores", int, 0), ("--device", str, ""), ("--compile", int, 0),
        ("--flash", int, 0), ("--dtype", str, "float32"), ("--zero_stage", int, 0),
        ("--write_tensors", int, 1),
    ):
        p.add_argument(flag, type=kind, default=default)
    return p.parse_args(argv)


opts = parse(["--model", "d2", "--input_bin", os.path.join(OUT, "train.bin"),
              "--input_val_bin", os.path.join(OUT, "val.bin"), "--num_iterations", "10",
              "--batch_size", "2", "--sequence_length", "16", "--total_batch_size", "64",
              "--learning_rate", "1e-2", "--learning_rate_decay_frac", "0.1",
              "--warmup_iters", "2", "--weight_decay", "0.1", "--sample_every", "10",
              "--val_loss_every", "5", "--val_max_steps", "2"])


# --- training ---------------------------------------------------------------------------------
def lr_schedule(step):
    peak = opts.learning_rate
    floor = peak * opts.learning_rate_decay_frac
    if step < opts.warmup_iters:
        return peak * (step + 1) / opts.warmup_iters
    if step > opts.num_iterations:
        return floor
    frac = (step - opts.warmup_iters) / (opts.num_iterations - opts.warmup_iters)
    return floor + 0.5 * (1.0 + math.cos(math.pi * frac)) * (peak - floor)


log(f"running on torch {torch.version.__version__}")
B, T = opts.batch_size, opts.sequence_length  # micro-batch shape
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:  # (torchrun sets RANK; this script is run as a single process here)
    init_process_group(backend="nccl")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device)
else:
    rank, local_rank, world = 0, 0, 1
    device = opts.device or "cpu"
    if not opts.device and torch.cuda.is_available():
        device = "cuda"
    elif not opts.device and hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        device = "mps"
is_main = rank == 0
zero_stage = opts.zero_stage if ddp else 0
device_type = "cuda" if "cuda" in device else "cpu"
assert opts.total_batch_size % (B * T * world) == 0
grad_accum_steps = opts.total_batch_size // (B * T * world)
log(f"{grad_accum_steps} micro-steps per update")
amp = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[opts.dtype]
ctx = nullcontext() if device_type != "cuda" else torch.amp.autocast(device_type=device_type,
                                                                      dtype=amp)
torch.manual_seed(42)
if torch.cuda.is_available():
    torch.cuda.manual_seed(42)
if opts.tensorcores:
    torch.set_float32_matmul_precision("high")
USE_FLASH = opts.flash
if is_main and opts.write_tensors:
    save_tokenizer(enc, os.path.join(OUT, "gpt2_tokenizer.bin"))

model = GPT2(SIZES[opts.model])
model.train()
model.to(device)
if opts.compile:
    model = torch.compile(model)
train_loader = ShardLoader(opts.input_bin, B, T, rank, world)
val_loader = ShardLoader(opts.input_val_bin, B, T, rank, world) if opts.input_val_bin else None

if is_main and opts.write_tensors:  # reference files for the C code, from the first batch
    x, y = (t.to(device) for t in train_loader.next_batch())
    out, loss = model(x, y)
    loss.backward()
    stem = os.path.join(OUT, f"gpt2_{opts.model}")
    save_weights(model, stem + ".bin", "float32")
    save_weights(model, stem + "_bf16.bin", "bfloat16")
    save_debug_state(model, x, y, out, loss, stem + "_debug_state.bin")
    train_loader.reset()

if ddp:
    model = DistributedDataParallel(model, device_ids=[local_rank])
raw_model = model.module if ddp else model
optimizer = raw_model.configure_optimizers(opts.weight_decay, opts.learning_rate, (0.9, 0.95),
                                           device, zero_stage=zero_stage)
if device == "cuda":
    torch.cuda.reset_peak_memory_stats()

train_losses, val_losses, lrs, norms, samples, step_times = [], [], [], [], [], []
for step in range(opts.num_iterations + 1):
    tic = time.time()
    final = step == opts.num_iterations
    if val_loader is not None and opts.val_loss_every > 0 and (
            final or step % opts.val_loss_every == 0):
        model.eval()
        val_loader.reset()
        with torch.no_grad():
            total = 0.0
            for _ in range(opts.val_max_steps):
                vx, vy = val_loader.next_batch()
                total += model(vx.to(device), vy.to(device), return_logits=False)[1].item()
        val_losses.append((step, total / opts.val_max_steps))
        log(f"step {step}: val loss {val_losses[-1][1]:.4f}")
    if is_main and opts.sample_every > 0 and (final or step % opts.sample_every == 0):
        model.eval()
        prompt = torch.tensor([enc.eot_token], dtype=torch.long, device=device)[None, ...]
        tokens = raw_model.generate(prompt, 32, temperature=1.0, top_k=40)[0].tolist()
        samples.append(tokens)
        log(repr(enc.decode(tokens)))
    if final:
        break

    model.train()
    optimizer.zero_grad(set_to_none=True)
    if opts.overfit_single_batch:
        train_loader.reset()
    running = 0.0
    for micro in range(grad_accum_steps):
        x, y = (t.to(device) for t in train_loader.next_batch())
        if ddp:
            model.require_backward_grad_sync = micro == grad_accum_steps - 1
        with ctx:
            part = model(x, y, return_logits=False)[1] / grad_accum_steps
            running += part.detach()
        part.backward()
    if ddp:
        dist.all_reduce(running, op=dist.ReduceOp.AVG)
    mean_loss = running.item()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=opts.grad_clip)
    lr = lr_schedule(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    train_losses.append(mean_loss)
    lrs.append(lr)
    norms.append(float(norm))
    step_times.append(time.time() - tic)
    log(f"step {step + 1}/{opts.num_iterations}: loss {mean_loss:.5f}, norm {norm:.3f}, "
        f"lr {lr:.2e}, {1000 * step_times[-1]:.1f} ms")
log(f"mean step {1000 * np.mean(step_times[1:]):.2f} ms, "
    f"peak memory {torch.cuda.max_memory_allocated() // 2**20} MiB")
if ddp:
    destroy_process_group()


# --- set weights, both attention paths, for the comparison with torch -------------------------
fixed_results = {}
small = GPT2Config(block_size=8, n_layer=2, n_head=2, n_embd=8)
fx = torch.tensor([[EOT, 72, 101, 108, 108, 111], [119, 111, 114, 108, 100, 33]])
fy = torch.tensor([[72, 101, 108, 108, 111, 32], [111, 114, 108, 100, 33, -1]])
for USE_FLASH in (0, 1):
    net = GPT2(small)
    with torch.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 0.4))
                    .view_as(p) / 3)
    logits, loss = net(fx, fy)
    loss.backward()
    stem = os.path.join(OUT, f"set{USE_FLASH}")
    save_weights(net, stem + ".bin", "float32")
    save_weights(net, stem + "_bf16.bin", "bfloat16")
    save_debug_state(net, fx, fy, logits, loss, stem + "_state.bin")
    rec = {"loss": loss.item(),
           "logits": torch.cat([logits[:, :, :40], logits[:, :, -40:]], dim=-1).tolist()}
    for tag, word in (("", np.float32), ("_bf16", np.int16)):
        raw = open(stem + tag + ".bin", "rb").read()  # noqa: SIM115
        rec["header" + tag] = np.frombuffer(raw[:1024], dtype=np.int32)[:8].tolist()
        rec["model" + tag] = np.frombuffer(raw[1024:], dtype=word)
    words = np.fromfile(stem + "_state.bin", dtype=np.int32)
    rec["state_header"] = words[:4].tolist()
    rec["state_xy"] = words[256:280].tolist()
    rec["state_floats"] = words[280:].view(np.float32)
    opt = net.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    for step in range(3):
        if step > 0:
            opt.zero_grad(set_to_none=True)
            net(fx, fy, return_logits=False)[1].backward()
        norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        for group in opt.param_groups:
            group["lr"] = 1e-2 * (step + 1) / 3
        opt.step()
    rec["norm"] = norm.item()
    rec["after_steps"] = {n: p.flatten()[:200].tolist() for n, p in net.named_parameters()}
    net.eval()
    rec["greedy"] = net.generate(fx[:, :2], 5, top_k=1).tolist()
    fixed_results[USE_FLASH] = rec

USE_FLASH = 0
net.train()
compiled = torch.compile(net, backend="aot_eager")  # (no Inductor build on the torch side)
ref_logits, ref_loss = net(fx, fy)
got_logits, got_loss = compiled(fx, fy)
params = list(net.parameters())
ref_grads = torch.autograd.grad(ref_loss, params)
got_grads = torch.autograd.grad(got_loss, params)
compile_diffs = [(ref_loss - got_loss).abs().item(),
                 (ref_logits - got_logits).abs().max().item()]
compile_diffs += [(a - b).abs().max().item() for a, b in zip(ref_grads, got_grads)]
