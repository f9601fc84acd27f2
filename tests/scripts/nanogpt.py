"""A character-level GPT trained, checkpointed and sampled, written for these tests in the way
nanoGPT (model.py, data/*/prepare.py, train.py, sample.py) is commonly written (modelled on the
API usage of nanoGPT, not a copy of it):

- a LayerNorm with an optional bias through ``F.layer_norm``; attention by
  ``F.scaled_dot_product_attention(..., is_causal=True)`` when it exists; ``nn.GELU``;
  ``Linear(bias=...)``; token embedding tied to the output layer by assigning the ``weight``;
  GPT-2 init through ``apply`` plus a scaled init of the residual projections;
- AdamW groups by ``p.dim() >= 2`` (``fused`` looked up with ``inspect.signature``), a cosine
  learning rate with warmup written into every param group, ``clip_grad_norm_``, and
  ``torch.cuda.amp.GradScaler`` (asked for with float16, so it disables itself without CUDA:
  ``scale``/``unscale_``/``step``/``update``);
- data prepared as ``np.uint16`` ``.bin`` files and a pickled vocabulary, batches read back
  with ``np.memmap`` and ``torch.from_numpy``; tf32 switches, the dtype table, a
  ``nullcontext`` on the CPU, the DDP names imported;
- a ``@torch.no_grad()`` loss estimate; checkpoints holding the model's and the optimizer's
  ``state_dict``, ``torch.save``/``torch.load(map_location=...)``, an ``_orig_mod.`` key fix;
- top-k sampling at a temperature (last-position logits only at inference);
- a fixed-weight section (with and without biases: loss, logits, gradients, three clipped
  steps under the schedule, groups, tying, parameter count) compared with torch's.
"""
import inspect
import math
import os
import pickle
import random
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.distributed import destroy_process_group, init_process_group
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel as DDP  # noqa: N817  (the usual alias)

# ---- model ----------------------------------------------------------------------------------


@dataclass
class ModelArgs:
    block_size: int = 256
    vocab_size: int = 65
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    bias: bool = True


class Norm(nn.Module):
    """LayerNorm whose bias can be switched off."""

    def __init__(self, dim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class SelfAttention(nn.Module):
    def __init__(self, a):
        super().__init__()
        assert a.n_embd % a.n_head == 0
        self.n_head, self.n_embd, self.p = a.n_head, a.n_embd, a.dropout
        self.qkv = nn.Linear(a.n_embd, 3 * a.n_embd, bias=a.bias)
        self.proj = nn.Linear(a.n_embd, a.n_embd, bias=a.bias)
        self.drop_w = nn.Dropout(a.dropout)
        self.drop_out = nn.Dropout(a.dropout)
        self.fused = hasattr(nn.functional, "scaled_dot_product_attention")
        if not self.fused:
            n = a.block_size
            self.register_buffer("mask", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
                   for z in self.qkv(x).split(self.n_embd, dim=2))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.p if self.training else 0,
                                               is_causal=True)
        else:
            w = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            w = w.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            y = self.drop_w(F.softmax(w, dim=-1)) @ v
        return self.drop_out(self.proj(y.transpose(1, 2).contiguous().view(b, t, c)))


class FeedForward(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.up = nn.Linear(a.n_embd, 4 * a.n_embd, bias=a.bias)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * a.n_embd, a.n_embd, bias=a.bias)
        self.drop = nn.Dropout(a.dropout)

    def forward(self, x):
        return self.drop(self.proj(self.act(self.up(x))))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.norm1, self.attn = Norm(a.n_embd, a.bias), SelfAttention(a)
        self.norm2, self.ff = Norm(a.n_embd, a.bias), FeedForward(a)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class CharGPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.args = a
        self.core = nn.ModuleDict({
            "tok": nn.Embedding(a.vocab_size, a.n_embd),
            "pos": nn.Embedding(a.block_size, a.n_embd),
            "drop": nn.Dropout(a.dropout),
            "blocks": nn.ModuleList(Block(a) for _ in range(a.n_layer)),
            "norm": Norm(a.n_embd, a.bias),
        })
        self.head = nn.Linear(a.n_embd, a.vocab_size, bias=False)
        self.core.tok.weight = self.head.weight  # one matrix for input and output
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * a.n_layer))
        print(f"{self.get_num_params() / 1e3:.1f}k parameters")

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding=True):
        total = sum(p.numel() for p in self.parameters())
        return total - self.core.pos.weight.numel() if non_embedding else total

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.args.block_size, f"{t} tokens exceed the block of {self.args.block_size}"
        where = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.core.drop(self.core.tok(idx) + self.core.pos(where))
        for block in self.core.blocks:
            x = block(x)
        x = self.core.norm(x)
        if targets is None:
            return self.head(x[:, [-1], :]), None  # only the next token is needed
        logits = self.head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        trainable = {n: p for n, p in self.named_parameters() if p.requires_grad}
        matrices = [p for p in trainable.values() if p.dim() >= 2]
        vectors = [p for p in trainable.values() if p.dim() < 2]
        print(f"decayed: {len(matrices)} tensors ({sum(p.numel() for p in matrices)} values); "
              f"not decayed: {len(vectors)} ({sum(p.numel() for p in vectors)})")
        fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
        extra = {"fused": True} if fused else {}
        return torch.optim.AdamW([{"params": matrices, "weight_decay": weight_decay},
                                  {"params": vectors, "weight_decay": 0.0}],
                                 lr=learning_rate, betas=betas, **extra)

    def flops_utilisation(self, seqs_per_iter, seconds, peak=312e12):
        a = self.args
        per_token = 6 * self.get_num_params() + 12 * a.n_layer * a.n_embd * a.block_size
        return per_token * a.block_size * seqs_per_iter / seconds / peak

    @torch.no_grad()
    def generate(self, idx, n_new, temperature=1.0, top_k=None):
        for _ in range(n_new):
            window = idx[:, -self.args.block_size:]
            logits = self(window)[0][:, -1, :] / temperature
            if top_k is not None:
                kth, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < kth[:, [-1]]] = -float("inf")
            pick = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, pick), dim=1)
        return idx


# ---- data preparation: a play script as uint16 token files plus a pickled vocabulary --------

ROOT = tempfile.mkdtemp()


def prepare(name, text):
    folder = os.path.join(ROOT, "data", name)
    os.makedirs(folder, exist_ok=True)
    alphabet = sorted(set(text))
    to_id = {ch: i for i, ch in enumerate(alphabet)}
    ids = np.array([to_id[ch] for ch in text], dtype=np.uint16)
    cut = int(0.9 * len(ids))
    ids[:cut].tofile(os.path.join(folder, "train.bin"))
    ids[cut:].tofile(os.path.join(folder, "val.bin"))
    with open(os.path.join(folder, "meta.pkl"), "wb") as fh:
        pickle.dump({"vocab_size": len(alphabet), "stoi": to_id, "itos": dict(enumerate(alphabet))},
                    fh)
    print(f"{name}: {len(text)} characters, {len(alphabet)} distinct")


def play_script(seed=21, lines=400):
    r = random.Random(seed)
    cast = ["MACBETH", "LADY MACBETH", "BANQUO", "FIRST WITCH"]
    lexicon = ("fair is foul and foul is fair hover through the fog and filthy air "
               "when shall we three meet again").split()
    out = []
    for _ in range(lines):
        said = " ".join(r.choice(lexicon) for _ in range(r.randint(4, 9)))
        out.append(f"{r.choice(cast)}:\n{said.capitalize()}.\n\n")
    return "".join(out)


prepare("play_char", play_script())

# ---- training settings: nanoGPT-style defaults, then the small character run ----------------


@dataclass
class TrainArgs:
    out_dir: str = "out"
    eval_interval: int = 2000
    log_interval: int = 1
    eval_iters: int = 200
    always_save_checkpoint: bool = True
    dataset: str = "openwebtext"
    gradient_accumulation_steps: int = 40
    batch_size: int = 12
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = False
    learning_rate: float = 6e-4
    max_iters: int = 600000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    decay_lr: bool = True
    warmup_iters: int = 2000
    lr_decay_iters: int = 600000
    min_lr: float = 6e-5
    backend: str = "nccl"
    device: str = "cuda"
    dtype: str = "bfloat16"
    compile: bool = True


opts = TrainArgs(out_dir=os.path.join(ROOT, "out-play"), eval_interval=10, eval_iters=4,
                 always_save_checkpoint=False, dataset="play_char",
                 gradient_accumulation_steps=1, batch_size=8, block_size=32, n_layer=2,
                 n_head=2, n_embd=32, learning_rate=1e-2, max_iters=30, lr_decay_iters=30,
                 min_lr=1e-3, beta2=0.99, warmup_iters=5, device="cpu", compile=False)
if not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
    opts.dtype = "float16"
run_config = asdict(opts)

distributed = int(os.environ.get("RANK", -1)) != -1
if distributed:
    init_process_group(backend=opts.backend)
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    opts.device = f"cuda:{local_rank}"
    torch.cuda.set_device(opts.device)
    is_main, seed_offset = rank == 0, rank
else:
    is_main, seed_offset = True, 0
if is_main:
    os.makedirs(opts.out_dir, exist_ok=True)
torch.manual_seed(100 + seed_offset)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in opts.device else "cpu"
amp_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
             "float16": torch.float16}[opts.dtype]
autocast = (nullcontext() if device_type == "cpu"
            else torch.amp.autocast(device_type=device_type, dtype=amp_dtype))
out_dir = opts.out_dir
data_dir = os.path.join(ROOT, "data", opts.dataset)


def batch(split):
    tokens = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
    starts = torch.randint(len(tokens) - opts.block_size, (opts.batch_size,))
    x = torch.stack([torch.from_numpy(tokens[s:s + opts.block_size].astype(np.int64))
                     for s in starts])
    y = torch.stack([torch.from_numpy(tokens[s + 1:s + 1 + opts.block_size].astype(np.int64))
                     for s in starts])
    if device_type == "cuda":
        return (x.pin_memory().to(opts.device, non_blocking=True),
                y.pin_memory().to(opts.device, non_blocking=True))
    return x.to(opts.device), y.to(opts.device)


with open(os.path.join(data_dir, "meta.pkl"), "rb") as fh:
    meta_vocab_size = pickle.load(fh)["vocab_size"]

model_args = {"n_layer": opts.n_layer, "n_head": opts.n_head, "n_embd": opts.n_embd,
              "block_size": opts.block_size, "bias": opts.bias, "vocab_size": meta_vocab_size,
              "dropout": opts.dropout}
model = CharGPT(ModelArgs(**model_args))
model.to(opts.device)
scaler = torch.cuda.amp.GradScaler(enabled=opts.dtype == "float16")  # (off without CUDA)
optimizer = model.configure_optimizers(opts.weight_decay, opts.learning_rate,
                                       (opts.beta1, opts.beta2), device_type)
if opts.compile:
    model = torch.compile(model)
if distributed:
    model = DDP(model, device_ids=[local_rank])
raw_model = model.module if distributed else model


def lr_at(it):
    """Linear warmup, then cosine decay from learning_rate to min_lr, then min_lr."""
    if it < opts.warmup_iters:
        return opts.learning_rate * (it + 1) / (opts.warmup_iters + 1)
    if it > opts.lr_decay_iters:
        return opts.min_lr
    progress = (it - opts.warmup_iters) / (opts.lr_decay_iters - opts.warmup_iters)
    weight = 0.5 * (1.0 + math.cos(math.pi * progress))
    return opts.min_lr + weight * (opts.learning_rate - opts.min_lr)


@torch.no_grad()
def estimate_loss():
    model.eval()
    means = {}
    for split in ("train", "val"):
        values = torch.zeros(opts.eval_iters)
        for i in range(opts.eval_iters):
            with autocast:
                values[i] = model(*batch(split))[1].item()
        means[split] = values.mean()
    model.train()
    return means


train_losses, eval_history = [], []
best_val = 1e9
x, y = batch("train")
tick = time.time()
mfu = -1.0
for it in range(opts.max_iters + 1):
    lr = lr_at(it) if opts.decay_lr else opts.learning_rate
    for group in optimizer.param_groups:
        group["lr"] = lr
    if it % opts.eval_interval == 0 and is_main:
        est = estimate_loss()
        eval_history.append((it, est["train"].item(), est["val"].item()))
        print(f"eval {it}: train {est['train']:.4f} val {est['val']:.4f}")
        if est["val"] < best_val or opts.always_save_checkpoint:
            best_val = est["val"]
            if it > 0:
                torch.save({"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                            "model_args": model_args, "iter_num": it,
                            "best_val_loss": best_val, "config": run_config},
                           os.path.join(out_dir, "ckpt.pt"))
    for micro in range(opts.gradient_accumulation_steps):
        if distributed:
            model.require_backward_grad_sync = micro == opts.gradient_accumulation_steps - 1
        with autocast:
            _, loss = model(x, y)
            loss = loss / opts.gradient_accumulation_steps
        x, y = batch("train")  # fetch the next batch while this one is in flight
        scaler.scale(loss).backward()
    if opts.grad_clip != 0.0:
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), opts.grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    now = time.time()
    elapsed, tick = now - tick, now
    if it % opts.log_interval == 0 and is_main:
        step_loss = loss.item() * opts.gradient_accumulation_steps
        if it >= 5:
            u = raw_model.flops_utilisation(opts.batch_size * opts.gradient_accumulation_steps,
                                            elapsed)
            mfu = u if mfu == -1.0 else 0.9 * mfu + 0.1 * u
        train_losses.append(step_loss)
        print(f"iter {it}: loss {step_loss:.4f}, {elapsed * 1000:.0f} ms, mfu {mfu * 100:.3f}%")
if distributed:
    destroy_process_group()

# ---- sampling from the saved checkpoint -----------------------------------------------------

torch.manual_seed(7)
torch.cuda.manual_seed(7)
saved = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=opts.device)
model = CharGPT(ModelArgs(**saved["model_args"]))
weights = saved["model"]
for key in [k for k in weights if k.startswith("_orig_mod.")]:  # keys of a compiled model
    weights[key.removeprefix("_orig_mod.")] = weights.pop(key)
model.load_state_dict(weights)
model.eval()
model.to(opts.device)
with open(os.path.join(ROOT, "data", saved["config"]["dataset"], "meta.pkl"), "rb") as fh:
    vocab = pickle.load(fh)
stoi, itos = vocab["stoi"], vocab["itos"]
prompt = torch.tensor([stoi[ch] for ch in "\n"], dtype=torch.long, device=opts.device)[None, ...]
samples = []
with torch.no_grad(), autocast:
    for _ in range(3):
        out = model.generate(prompt, 40, temperature=0.8, top_k=200)
        samples.append("".join(itos[i] for i in out[0].tolist()))
        print(samples[-1], "\n--")

# ---- deterministic check against torch ------------------------------------------------------
# With and without biases: sine-pattern weights on a fixed batch; the first step's loss, logits
# and gradients, then three clipped AdamW steps at the schedule's learning rates, then the
# inference path's last-position logits.
fixed_results = {}
for bias in (True, False):
    probe = CharGPT(ModelArgs(block_size=6, vocab_size=11, n_layer=2, n_head=2, n_embd=8,
                              dropout=0.0, bias=bias))
    with torch.no_grad():
        for j, (_, w) in enumerate(probe.named_parameters()):
            w.copy_(torch.sin(torch.arange(w.numel(), dtype=torch.float32) * (0.45 * j + 0.8))
                    .view_as(w) / 3)
    px = torch.tensor([[2, 7, 1, 8, 2, 8], [10, 0, 3, 9, 4, 6]])
    py = torch.tensor([[7, 1, 8, 2, 8, 1], [0, 3, 9, 4, 6, -1]])
    probe_opt = probe.configure_optimizers(0.1, 1e-2, (0.9, 0.99), "cpu")
    for step in range(3):
        for group in probe_opt.param_groups:
            group["lr"] = lr_at(step)
        logits, loss = probe(px, py)
        loss.backward()
        if step == 0:
            record = {"loss": loss.item(), "logits": logits.tolist()}
            record.update({n: w.grad.tolist() for n, w in probe.named_parameters()})
        nn.utils.clip_grad_norm_(probe.parameters(), 1.0)
        probe_opt.step()
        probe_opt.zero_grad(set_to_none=True)
    probe.eval()
    record["after_steps"] = {n: w.tolist() for n, w in probe.named_parameters()}
    record["last_logits"] = probe(px[:, :3])[0].tolist()
    record["groups"] = [(len(g["params"]), g["weight_decay"]) for g in probe_opt.param_groups]
    record["tied"] = probe.core.tok.weight is probe.head.weight
    record["num_params"] = probe.get_num_params()
    fixed_results[bias] = record
