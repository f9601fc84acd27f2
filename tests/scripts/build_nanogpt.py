"""A tiny GPT-2 pretraining run, written for these tests in the way a from-scratch GPT-2
reproduction (Karpathy's build-nanogpt train_gpt2.py) is commonly written (modelled on the API
usage of that script, not a copy of it). It exercises:

- a GPT-2 module tree (``nn.ModuleDict``/``ModuleList``, GPT-2's parameter names), causal
  ``F.scaled_dot_product_attention``, ``nn.GELU(approximate='tanh')``, wte/lm_head weight
  tying, a scaled residual init through ``model.apply`` and a marker attribute;
- AdamW decay/no-decay groups with the ``fused`` check through ``inspect.signature``;
- a shard loader over ``np.uint16`` .npy token files, gradient accumulation, bfloat16
  ``torch.autocast`` on the CPU, warmup + cosine lr set on ``param_groups``,
  ``clip_grad_norm_``, validation, a checkpoint with the config dataclass (``torch.save``,
  ``torch.load(weights_only=False)``), the DDP environment check;
- a HellaSwag-style multiple-choice eval (padded rows, completion masks, per-row mean loss
  with ``cross_entropy(reduction='none')``), top-k sampling with ``torch.topk``,
  ``torch.multinomial`` on a seeded ``torch.Generator`` and ``torch.gather``;
- the model under ``torch.compile``, and a fixed-weight forward/backward/AdamW check.
Offline stand-ins: a byte-level tokenizer with GPT-2's end-of-text id, generated text shards and
multiple-choice items, all in a temporary directory; the sizes are tiny.
"""
import inspect
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

import jitgrad as torch
import jitgrad.distributed as dist
import jitgrad.nn as nn
from jitgrad.distributed import destroy_process_group, init_process_group
from jitgrad.nn import functional as F
from jitgrad.nn.parallel import DistributedDataParallel

WORK = tempfile.mkdtemp(prefix="gpt_run_")


# ----------------------------------------------------------------------------- tokenizer + data
class ByteTokenizer:
    """UTF-8 bytes as token ids, plus GPT-2's end-of-text token."""
    eot_token = 50256

    def encode(self, text):
        return [*text.encode("utf-8")]

    def decode(self, ids):
        pieces = [bytes([i]) if i < 256 else b"<|endoftext|>" for i in ids]
        return b"".join(pieces).decode("utf-8", errors="replace")


tok = ByteTokenizer()
gen = np.random.default_rng(0)
WHO = ["the cat", "a dog", "the man", "my friend", "the bird", "a child"]
DOES = ["sees", "likes", "finds", "takes", "wants", "makes"]
WHAT = ["a ball.", "the food.", "some water.", "the book.", "a hat.", "the tree."]


def pick(words):
    return words[gen.integers(len(words))]


def line():
    return f"{pick(WHO)} {pick(DOES)} {pick(WHAT)}"


shard_dir = os.path.join(WORK, "shards")
os.makedirs(shard_dir)
for k, n_docs in enumerate((40, 60, 60)):  # shard 0 validates, the others train
    ids = []
    for _ in range(n_docs):
        ids += [tok.eot_token] + tok.encode(f"{line()} {line()}")
    arr = np.array(ids)
    assert arr.min() >= 0 and arr.max() < 2**16
    kind = "val" if k == 0 else "train"
    np.save(os.path.join(shard_dir, f"shard_{kind}_{k:06d}"), arr.astype(np.uint16))

mc_path = os.path.join(WORK, "choices_val.jsonl")
with open(mc_path, "w") as fh:  # the right ending reads like the corpus, the others are noise
    for ind in range(4):
        endings = ["".join(chr(ord("a") + gen.integers(26)) for _ in range(12)) + "."
                   for _ in range(4)]
        endings[ind] = f"{pick(DOES)} {pick(WHAT)}"
        item = {"ind": ind, "ctx": pick(WHO), "label": ind, "endings": endings}
        fh.write(json.dumps(item) + "\n")


def read_items():
    with open(mc_path) as fh:
        for row in fh:
            yield json.loads(row)


def encode_item(item):
    """Context + each ending as 4 zero-padded rows, and masks marking the ending tokens."""
    ctx = tok.encode(item["ctx"])
    rows = [ctx + tok.encode(" " + e) for e in item["endings"]]
    width = max(map(len, rows))
    tokens = torch.zeros((4, width), dtype=torch.long)
    mask = torch.zeros((4, width), dtype=torch.long)
    for r, row in enumerate(rows):
        tokens[r, :len(row)] = torch.tensor(row)
        mask[r, len(ctx):len(row)] = torch.tensor([1] * (len(row) - len(ctx)))
    return tokens, mask, item["label"]


def best_ending(tokens, mask, logits):
    """The row whose ending has the lowest mean next-token loss."""
    pred = logits[..., :-1, :].contiguous()
    nxt = tokens[..., 1:].contiguous()
    per_tok = F.cross_entropy(pred.view(-1, pred.size(-1)), nxt.view(-1), reduction="none")
    per_tok = per_tok.view(tokens.size(0), -1)
    m = mask[..., 1:].contiguous()
    return ((per_tok * m).sum(dim=1) / m.sum(dim=1)).argmin().item()


# ----------------------------------------------------------------------------- model
@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50257
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)  # q, k, v for all heads at once
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.c_proj.RESIDUAL_SCALE = True
        self.heads = cfg.n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(out.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.c_proj.RESIDUAL_SCALE = True

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(cfg.n_embd), SelfAttention(cfg)
        self.ln_2, self.mlp = nn.LayerNorm(cfg.n_embd), MLP(cfg)

    def forward(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.mlp(self.ln_2(h))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        d = config.n_embd
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(config.vocab_size, d),
            "wpe": nn.Embedding(config.block_size, d),
            "h": nn.ModuleList(Block(config) for _ in range(config.n_layer)),
            "ln_f": nn.LayerNorm(d),
        })
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # one matrix embeds and unembeds
        self.apply(self.init_module)

    def init_module(self, m):
        """N(0, 0.02); residual output projections scaled by 1/sqrt(2 * n_layer)."""
        if isinstance(m, nn.Linear):
            scale = (2 * self.config.n_layer) ** -0.5 if getattr(m, "RESIDUAL_SCALE", False) else 1
            nn.init.normal_(m.weight, mean=0.0, std=0.02 * scale)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets=None):
        B, T = idx.size()
        assert T <= self.config.block_size, f"sequence of {T} > block size"
        where = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(where)
        for layer in self.transformer.h:
            x = layer(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizers(self, weight_decay: float, learning_rate: float, device_type: str):
        """AdamW: matrices and embeddings decay, vectors (biases, LayerNorm) do not."""
        trainable = [p for _, p in self.named_parameters() if p.requires_grad]
        decay = [p for p in trainable if p.dim() >= 2]
        no_decay = [p for p in trainable if p.dim() < 2]
        if is_main:
            print(f"decayed: {len(decay)} tensors, {sum(p.numel() for p in decay):,} numbers; "
                  f"not decayed: {len(no_decay)} tensors, {sum(p.numel() for p in no_decay):,}")
        fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8,
                                 fused=fused)


# ----------------------------------------------------------------------------- loader
def read_shard(path):
    return torch.tensor(np.load(path).astype(np.int32), dtype=torch.long)


class ShardLoader:
    """Consecutive (B, T) windows over the token shards of one split, rank-strided."""
    def __init__(self, B, T, rank, world, split):
        assert split in ("train", "val")
        self.B, self.T, self.rank, self.world = B, T, rank, world
        names = sorted(n for n in os.listdir(shard_dir) if split in n)
        assert names, f"no {split} shards"
        self.paths = [os.path.join(shard_dir, n) for n in names]
        self.reset()

    def reset(self):
        self.shard = 0
        self.data = read_shard(self.paths[0])
        self.pos = self.B * self.T * self.rank

    def next_batch(self):
        n = self.B * self.T
        chunk = self.data[self.pos:self.pos + n + 1]
        self.pos += n * self.world
        if self.pos + n * self.world + 1 > len(self.data):  # (the next one would not fit)
            self.shard = (self.shard + 1) % len(self.paths)
            self.data = read_shard(self.paths[self.shard])
            self.pos = n * self.rank
        return chunk[:-1].view(self.B, self.T), chunk[1:].view(self.B, self.T)


# ----------------------------------------------------------------------------- setup
use_ddp = int(os.environ.get("RANK", -1)) != -1
if use_ddp:
    assert torch.cuda.is_available()
    init_process_group(backend="nccl")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device=device)
else:
    rank, local_rank, world = 0, 0, 1
    has_mps = hasattr(torch.backends, "mps") and torch.backends.mps.is_available()
    device = "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
is_main = rank == 0
device_type = "cpu" if not device.startswith("cuda") else "cuda"
print("device:", device)

SEED = 1337
torch.manual_seed(SEED)
if torch.cuda.is_available():  # (the CPU seed does not seed the GPU generators)
    torch.cuda.manual_seed(SEED)

total_batch_size, B, T = 128, 2, 32  # tokens per optimizer step, micro batch, context
assert total_batch_size % (B * T * world) == 0
grad_accum_steps = total_batch_size // (B * T * world)
print(f"{grad_accum_steps} micro steps per step")
train_loader = ShardLoader(B, T, rank, world, "train")
val_loader = ShardLoader(B, T, rank, world, "val")
torch.set_float32_matmul_precision("high")

model = GPT(GPTConfig(block_size=64, vocab_size=50304, n_layer=2, n_head=2, n_embd=16))
model.to(device)
use_compile = False  # (the compiled model is checked separately below)
if use_compile:
    model = torch.compile(model)  # (wraps; the parameters stay the raw model's)
if use_ddp:
    model = DistributedDataParallel(model, device_ids=[local_rank])
raw_model = model.module if use_ddp else model

max_lr, warmup_steps, max_steps = 6e-3, 2, 6
min_lr = max_lr * 0.1


def get_lr(it):
    """Linear warmup, then a half cosine from max_lr down to min_lr; min_lr after."""
    if it < warmup_steps:
        return max_lr * (it + 1) / warmup_steps
    if it > max_steps:
        return min_lr
    progress = (it - warmup_steps) / (max_steps - warmup_steps)
    assert 0 <= progress <= 1
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)


optimizer = raw_model.configure_optimizers(weight_decay=0.1, learning_rate=max_lr,
                                           device_type=device_type)
log_dir = os.path.join(WORK, "log")
os.makedirs(log_dir)
log_file = os.path.join(log_dir, "log.txt")
open(log_file, "w").close()


def log(text):
    with open(log_file, "a") as fh:
        fh.write(text + "\n")


def bf16():
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)


def mean_val_loss(net, n_batches=2):
    val_loader.reset()
    total = 0.0
    with torch.no_grad():
        for _ in range(n_batches):
            vx, vy = val_loader.next_batch()
            with bf16():
                _, vloss = net(vx.to(device), vy.to(device))
            total += (vloss / n_batches).detach()
    return total


# ----------------------------------------------------------------------------- training
train_losses, val_losses, lrs, norms = [], [], [], []
hella_accs, samples = [], []  # (step, items, accuracy) and generated id lists
for step in range(max_steps):
    t0 = time.time()
    final = step == max_steps - 1
    evaluate = step % 250 == 0 or final

    if evaluate:
        model.eval()
        vloss = mean_val_loss(model)
        if use_ddp:
            dist.all_reduce(vloss, op=dist.ReduceOp.AVG)
        if is_main:
            print(f"val loss {vloss.item():.4f}")
            val_losses.append((step, vloss.item()))
            log(f"{step} val {vloss.item():.4f}")
            if step > 0:
                checkpoint_path = os.path.join(log_dir, f"ckpt_step{step}.pt")
                torch.save({"model": raw_model.state_dict(), "config": raw_model.config,
                            "step": step, "val_loss": vloss.item()}, checkpoint_path)

    if evaluate and not use_compile:
        right = seen = 0
        for n, item in enumerate(read_items()):
            if n % world != rank:
                continue
            tokens, mask, label = encode_item(item)
            with torch.no_grad(), bf16():
                logits, _ = model(tokens.to(device))
            right += int(best_ending(tokens.to(device), mask.to(device), logits) == label)
            seen += 1
        if use_ddp:
            counts = torch.tensor([seen, right], dtype=torch.long, device=device)
            dist.all_reduce(counts, op=dist.ReduceOp.SUM)
            seen, right = counts.tolist()
        if is_main:
            print(f"multiple choice: {right}/{seen}")
            hella_accs.append((step, seen, right / seen))
            log(f"{step} hella {right / seen:.4f}")

    if final and not use_compile:
        model.eval()
        prompt = torch.tensor(tok.encode("Hello, I'm a language model,"), dtype=torch.long)
        seqs = prompt.unsqueeze(0).repeat(4, 1).to(device)
        sampler = torch.Generator(device=device)
        sampler.manual_seed(42 + rank)
        while seqs.size(1) < 32:
            with torch.no_grad():
                with bf16():
                    logits, _ = model(seqs)
                probs = F.softmax(logits[:, -1, :], dim=-1)
                top_p, top_i = torch.topk(probs, 50, dim=-1)
                choice = torch.multinomial(top_p, 1, generator=sampler)
                seqs = torch.cat((seqs, torch.gather(top_i, -1, choice)), dim=1)
        for row in seqs.tolist():
            print(f"sample: {tok.decode(row)!r}")
            samples.append(row)

    model.train()
    optimizer.zero_grad()
    step_loss = 0.0
    for micro in range(grad_accum_steps):
        x, y = (t.to(device) for t in train_loader.next_batch())
        if use_ddp:  # (all-reduce the gradients on the last micro step only)
            model.require_backward_grad_sync = micro == grad_accum_steps - 1
        with bf16():
            _, loss = model(x, y)
        loss = loss / grad_accum_steps  # (backward sums: scale so the step sees the mean)
        step_loss += loss.detach()
        loss.backward()
    if use_ddp:
        dist.all_reduce(step_loss, op=dist.ReduceOp.AVG)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    lr = get_lr(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    if device_type == "cuda":
        torch.cuda.synchronize()  # (for an honest step time)
    elapsed = time.time() - t0
    if is_main:
        train_losses.append(step_loss.item())
        lrs.append(lr)
        norms.append(norm.item())
        rate = B * T * grad_accum_steps * world / elapsed
        print(f"step {step} loss {step_loss.item():.6f} lr {lr:.2e} norm {norm:.3f} "
              f"{rate:.0f} tok/s")
        log(f"{step} train {step_loss.item():.6f}")

if use_ddp:
    destroy_process_group()

# ----------------------------------------------------------------------------- checkpoint
checkpoint = torch.load(checkpoint_path, weights_only=False)  # (it holds a dataclass)
reloaded = GPT(checkpoint["config"])
reloaded.load_state_dict(checkpoint["model"])
reloaded_tied = reloaded.lm_head.weight is reloaded.transformer.wte.weight
reloaded_val_loss = mean_val_loss(reloaded)

# ----------------------------------------------------------------------------- torch.compile
# the compiled model gives the eager model's logits, loss and lm_head gradient under autocast
compiled = torch.compile(raw_model)  # (shares raw_model's parameters)
outs = []
with bf16():
    for net in (raw_model, compiled):
        net.zero_grad()
        logits, loss = net(x, y)
        loss.backward()
        outs.append((logits.float(), loss.item(), raw_model.lm_head.weight.grad.clone()))
(e_logits, e_loss, e_grad), (c_logits, c_loss, c_grad) = outs
compile_diffs = [(c_logits - e_logits).abs().max().item(), abs(c_loss - e_loss),
                 (c_grad - e_grad).abs().max().item()]

# ----------------------------------------------------------------------------- fixed weights
# a 1-layer GPT: its init statistics; then NumPy-drawn weights (the same on both frameworks),
# float32 and bfloat16 forwards, two accumulated micro batches, clipping and two AdamW steps,
# and the multiple-choice row pick
torch.manual_seed(0)
fixed = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=8, block_size=32, vocab_size=50304))
fixed_init = {name: (w.mean().item(), w.std().item()) for name, w in fixed.named_parameters()}
draw = np.random.default_rng(0)
with torch.no_grad():
    for w in fixed.parameters():
        w.copy_(torch.tensor(draw.normal(0.0, 0.02, tuple(w.shape)), dtype=torch.float32))
loader = ShardLoader(2, 8, 0, 1, "train")
batches = [loader.next_batch() for _ in range(3)]
fixed_results = {"batches": [(bx.tolist(), by.tolist()) for bx, by in batches]}
with torch.no_grad():
    logits, loss = fixed(*batches[0])
    fixed_results["logits"], fixed_results["loss"] = logits[:, :, :300].clone(), loss.item()
    with bf16():
        logits, loss = fixed(*batches[0])
    fixed_results["bf16_dtype"] = str(logits.dtype)
    fixed_results["bf16_logits"] = logits[:, :, :300].float()
    fixed_results["bf16_loss"] = loss.item()
opt = fixed.configure_optimizers(weight_decay=0.1, learning_rate=6e-3, device_type=device_type)
fixed_results["groups"] = [(len(g["params"]), g["weight_decay"], g["betas"], g["fused"])
                           for g in opt.param_groups]
fixed_results["steps"] = []
for it in range(2):
    opt.zero_grad()
    total = 0.0
    for bx, by in batches[1:]:
        _, loss = fixed(bx, by)
        (loss / 2).backward()
        total += (loss / 2).detach()
    norm = torch.nn.utils.clip_grad_norm_(fixed.parameters(), max_norm=1.0)
    for group in opt.param_groups:
        group["lr"] = get_lr(it)
    opt.step()
    fixed_results["steps"].append((total.item(), norm.item()))
fixed_results["after"] = {k: v.clone() for k, v in fixed.state_dict().items()}
tokens, mask, label = encode_item(next(read_items()))
with torch.no_grad():
    row_logits, _ = fixed(tokens)
fixed_results["hella"] = (best_ending(tokens, mask, row_logits), tokens.tolist(), mask.tolist(),
                          label)
fixed_results["lrs"] = [get_lr(it) for it in range(max_steps + 2)]
