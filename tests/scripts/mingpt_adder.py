# ruff: noqa: UP031  (%-formatting of tensor elements is one of the behaviours exercised)
"""A tiny GPT learning two-digit addition, written for these tests in the way minGPT (its
model, trainer and projects/adder) is commonly written (modelled on the API usage of minGPT,
not a copy of it):

- a nested attribute config overridden from ``--a.b=value`` strings (``ast.literal_eval``),
  written to the work dir as JSON next to the command line; seeding of ``random``,
  ``np.random``, ``torch.manual_seed`` and ``torch.cuda.manual_seed_all``;
- a GPT with batched causal attention (``split``, ``view``/``transpose``, a ``register_buffer``
  tril mask, ``masked_fill``, attention and residual ``nn.Dropout``), a tanh GELU with
  ``torch.pow``, ``nn.ModuleDict``/``nn.ModuleList``, weights initialised through ``apply``
  (``nn.init.normal_``/``zeros_``/``ones_``) and a scaled init of the output projections;
- AdamW parameter groups built from ``named_modules``/``named_parameters`` (Linear weights
  decay; biases, LayerNorm and Embedding weights do not), ``clip_grad_norm_``;
- a trainer over ``DataLoader(sampler=RandomSampler(replacement=True, num_samples=int(1e10)))``
  with event callbacks; a ``Dataset`` split by ``torch.randperm`` with a seeded
  ``torch.Generator``, targets masked with -1 for ``F.cross_entropy(ignore_index=-1)``;
- greedy ``generate`` (``torch.topk``), scoring with ``flip``, digit weights and ``sum``,
  ``%d``/``%.1f`` formatting of tensor values, ``torch.save`` of the best state dict;
- a fixed-weight section (loss, gradients, optimizer groups, one clipped AdamW step, greedy
  continuations) compared with torch's.
"""
import json
import math
import os
import random
import sys
import tempfile
import time
from ast import literal_eval
from collections import defaultdict

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn import functional as F
from jitgrad.utils.data import Dataset
from jitgrad.utils.data.dataloader import DataLoader


class Node:
    """Attributes, possibly nested Nodes, settable from '--section.key=value' strings."""

    def __init__(self, **items):
        vars(self).update(items)

    def as_dict(self):
        return {k: v.as_dict() if isinstance(v, Node) else v for k, v in vars(self).items()}

    def update(self, mapping):
        vars(self).update(mapping)

    def override(self, argv):
        for item in argv:
            name, _, text = item.partition("=")
            assert name.startswith("--") and text, f"expected --key=value, got {item!r}"
            try:
                value = literal_eval(text)
            except ValueError:
                value = text  # a plain string
            *path, leaf = name[2:].split(".")
            target = self
            for part in path:
                target = getattr(target, part)
            assert hasattr(target, leaf), f"unknown setting {name}"
            setattr(target, leaf, value)

    def __str__(self):
        return json.dumps(self.as_dict(), indent=2)


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def prepare_work_dir(cfg):
    os.makedirs(cfg.system.work_dir, exist_ok=True)
    with open(os.path.join(cfg.system.work_dir, "args.txt"), "w") as fh:
        fh.write(" ".join(sys.argv))
    with open(os.path.join(cfg.system.work_dir, "config.json"), "w") as fh:
        json.dump(cfg.as_dict(), fh, indent=2)


# ---- the model ----------------------------------------------------------------------------

PRESETS = {
    "gpt-micro": {"n_layer": 4, "n_head": 4, "n_embd": 128},
    "gpt-nano": {"n_layer": 3, "n_head": 3, "n_embd": 48},
}


def model_defaults():
    return Node(model_type="gpt", n_layer=None, n_head=None, n_embd=None, vocab_size=None,
                block_size=None, embd_pdrop=0.1, resid_pdrop=0.1, attn_pdrop=0.1)


def gelu_tanh(x):
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class Gelu(nn.Module):
    def forward(self, x):
        return gelu_tanh(x)


class CausalAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.weights_drop = nn.Dropout(cfg.attn_pdrop)
        self.out_drop = nn.Dropout(cfg.resid_pdrop)
        size = cfg.block_size
        self.register_buffer("causal", torch.tril(torch.ones(size, size)).view(1, 1, size, size))

    def forward(self, x):
        b, t, c = x.size()
        hs = c // self.n_head
        q, k, v = [z.view(b, t, self.n_head, hs).transpose(1, 2)
                   for z in self.c_attn(x).split(self.n_embd, dim=2)]
        w = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        w = w.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
        w = self.weights_drop(F.softmax(w, dim=-1))
        merged = (w @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.out_drop(self.c_proj(merged))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.ModuleDict({"c_fc": nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
                                  "act": Gelu(),
                                  "c_proj": nn.Linear(4 * cfg.n_embd, cfg.n_embd),
                                  "drop": nn.Dropout(cfg.resid_pdrop)})

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        f = self.mlp
        return x + f.drop(f.c_proj(f.act(f.c_fc(self.ln_2(x)))))


def gpt2_init(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.vocab_size is not None and cfg.block_size is not None
        if cfg.model_type is not None:
            cfg.update(PRESETS[cfg.model_type])
        self.block_size = cfg.block_size
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg.vocab_size, cfg.n_embd),
            "wpe": nn.Embedding(cfg.block_size, cfg.n_embd),
            "drop": nn.Dropout(cfg.embd_pdrop),
            "h": nn.ModuleList([Layer(cfg) for _ in range(cfg.n_layer)]),
            "ln_f": nn.LayerNorm(cfg.n_embd),
        })
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.apply(gpt2_init)
        # residual projections start smaller, by 1/sqrt(2 * layers)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))
        print(f"{sum(p.numel() for p in self.transformer.parameters())} parameters in the body")

    def configure_optimizers(self, tcfg):
        decay, no_decay = set(), set()
        for mod_name, mod in self.named_modules():
            for p_name, _ in mod.named_parameters():
                full = f"{mod_name}.{p_name}" if mod_name else p_name
                if p_name.endswith("bias"):
                    no_decay.add(full)
                elif p_name.endswith("weight") and isinstance(mod, (nn.Linear,)):
                    decay.add(full)
                elif p_name.endswith("weight") and isinstance(mod, (nn.LayerNorm, nn.Embedding)):
                    no_decay.add(full)
        params = dict(self.named_parameters())
        assert not decay & no_decay and set(params) == decay | no_decay
        groups = [
            {"params": [params[n] for n in sorted(decay)], "weight_decay": tcfg.weight_decay},
            {"params": [params[n] for n in sorted(no_decay)], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=tcfg.learning_rate, betas=tcfg.betas)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, f"{t} tokens do not fit a block of {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        tr = self.transformer
        x = tr.drop(tr.wte(idx) + tr.wpe(pos))
        for layer in tr.h:
            x = layer(x)
        logits = self.lm_head(tr.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, n_new, temperature=1.0, do_sample=False, top_k=None):
        for _ in range(n_new):
            ctx = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits = self(ctx)[0][:, -1, :] / temperature
            if top_k is not None:
                top, _ = torch.topk(logits, top_k)
                logits[logits < top[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                chosen = torch.multinomial(probs, num_samples=1)
            else:
                _, chosen = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, chosen), dim=1)
        return idx


# ---- the training loop --------------------------------------------------------------------

def trainer_defaults():
    return Node(device="auto", num_workers=4, max_iters=None, batch_size=64,
                learning_rate=3e-4, betas=(0.9, 0.95), weight_decay=0.1, grad_norm_clip=1.0)


class Trainer:
    def __init__(self, cfg, model, dataset):
        self.cfg, self.dataset = cfg, dataset
        if cfg.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            self.device = cfg.device
        self.model = model.to(self.device)
        self.hooks = defaultdict(list)
        self.iter_num, self.iter_dt, self.loss = 0, 0.0, None

    def on(self, event, fn):
        self.hooks[event].append(fn)

    def _fire(self, event):
        for fn in self.hooks[event]:
            fn(self)

    def run(self):
        cfg, model = self.cfg, self.model
        opt = model.configure_optimizers(cfg)
        sampler = torch.utils.data.RandomSampler(self.dataset, replacement=True,
                                                 num_samples=int(1e10))
        loader = DataLoader(self.dataset, sampler=sampler, shuffle=False, pin_memory=True,
                            batch_size=cfg.batch_size, num_workers=cfg.num_workers)
        model.train()
        stream = iter(loader)
        last = time.time()
        while cfg.max_iters is None or self.iter_num < cfg.max_iters:
            try:
                x, y = next(stream)
            except StopIteration:
                stream = iter(loader)
                x, y = next(stream)
            _, self.loss = model(x.to(self.device), y.to(self.device))
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_norm_clip)
            opt.step()
            self._fire("on_batch_end")
            self.iter_num += 1
            now = time.time()
            self.iter_dt, last = now - last, now


# ---- the addition task --------------------------------------------------------------------

class Sums(Dataset):
    """a + b with n-digit operands as tokens: the digits of a, of b, then of a + b reversed
    (n + 1 digits, lowest first). Only the answer positions are trained."""

    def __init__(self, ndigit, split):
        self.n = ndigit
        total = 10 ** (2 * ndigit)
        gen = torch.Generator()
        gen.manual_seed(4242)
        order = torch.randperm(total, generator=gen)
        n_test = min(int(total * 0.2), 500)
        self.ixes = order[:n_test] if split == "test" else order[n_test:]

    def get_vocab_size(self):
        return 10

    def get_block_size(self):
        return 3 * self.n  # 2n operand digits + (n + 1) answer digits, less the last one

    def __len__(self):
        return self.ixes.nelement()

    def __getitem__(self, i):
        a, b = divmod(self.ixes[i].item(), 10 ** self.n)
        text = f"{a:0{self.n}d}{b:0{self.n}d}" + f"{a + b:0{self.n + 1}d}"[::-1]
        digits = [int(ch) for ch in text]
        x = torch.tensor(digits[:-1], dtype=torch.long)
        y = torch.tensor(digits[1:], dtype=torch.long)
        y[:2 * self.n - 1] = -1
        return x, y


config = Node(
    system=Node(seed=1234, work_dir=os.path.join(tempfile.mkdtemp(), "adder")),
    data=Node(ndigit=2),
    model=model_defaults(),
    trainer=trainer_defaults(),
)
config.model.model_type = "gpt-nano"
config.trainer.learning_rate = 5e-4
config.override(["--trainer.max_iters=451", "--trainer.num_workers=0",
                 "--trainer.learning_rate=0.003"])
print(config)
prepare_work_dir(config)
seed_everything(config.system.seed)

train_set, test_set = Sums(config.data.ndigit, "train"), Sums(config.data.ndigit, "test")
config.model.vocab_size = train_set.get_vocab_size()
config.model.block_size = train_set.get_block_size()
model = GPT(config.model)
trainer = Trainer(config.trainer, model, train_set)


def count_correct(dataset, device, max_batches=None, show=3):
    """Greedy answers to every problem; returns the number right (a 0-d tensor)."""
    n = config.data.ndigit
    place = torch.tensor([[10 ** k for k in range(n, -1, -1)]]).to(device)
    right = []
    for j, (x, _) in enumerate(DataLoader(dataset, batch_size=100, num_workers=0,
                                          drop_last=False)):
        operands = x.to(device)[:, :2 * n]
        answer = model.generate(operands, n + 1, do_sample=False)[:, -(n + 1):].flip(1)
        a = (operands[:, :n] * place[:, 1:]).sum(1)
        b = (operands[:, n:] * place[:, 1:]).sum(1)
        got = (answer * place).sum(1)
        ok = (got == a + b).cpu()
        for r in range(x.size(0)):
            right.append(int(ok[r]))
            if not ok[r] and show > 0:
                show -= 1
                print("%d + %d gave %d" % (a[r], b[r], got[r]))
        if max_batches is not None and j + 1 >= max_batches:
            break
    as_float = torch.tensor(right, dtype=torch.float)
    print("%d/%d right (%.1f%%)" % (as_float.sum(), len(right), 100 * as_float.mean()))
    return as_float.sum()


losses, scores = [], []  # per-iteration loss; (iteration, train right, test right)
top_score = 0


def after_batch(tr):
    global top_score
    losses.append(tr.loss.item())
    if tr.iter_num % 50 == 0:
        print(f"iter {tr.iter_num}: loss {tr.loss.item():.4f} ({tr.iter_dt * 1000:.0f} ms)")
    if tr.iter_num % 225:
        return
    model.eval()
    with torch.no_grad():
        on_train = count_correct(train_set, tr.device, max_batches=5)  # (as minGPT's adder)
        on_test = count_correct(test_set, tr.device)
    scores.append((tr.iter_num, on_train.item(), on_test.item()))
    total = on_train + on_test
    if total > top_score:
        top_score = total
        torch.save(model.state_dict(), os.path.join(config.system.work_dir, "model.pt"))
    model.train()


trainer.on("on_batch_end", after_batch)
trainer.run()

# Deterministic check against torch: a gpt-nano with sine-pattern weights on 16 fixed
# problems (loss, gradients), its optimizer groups, one clipped AdamW step, greedy answers.
probe_cfg = model_defaults()
probe_cfg.model_type = "gpt-nano"
probe_cfg.vocab_size, probe_cfg.block_size = config.model.vocab_size, config.model.block_size
probe = GPT(probe_cfg)
with torch.no_grad():
    for j, (_, w) in enumerate(probe.named_parameters()):
        w.copy_(torch.sin(0.37 * (j + 3) * torch.arange(w.numel(), dtype=torch.float32))
                .view_as(w) / 3)
probe.eval()
problems = Sums(config.data.ndigit, "test")
problems.ixes = torch.arange(16) * 587 + 31  # fixed problems, the same on both libraries
px, py = next(iter(DataLoader(problems, batch_size=16)))
_, probe_loss = probe(px, py)
probe_loss.backward()
fixed_result = {"loss": probe_loss.item(), "x": px.tolist(), "y": py.tolist()}
fixed_result.update({name: w.grad.tolist() for name, w in probe.named_parameters()})
probe_opt = probe.configure_optimizers(config.trainer)
fixed_groups = [(len(g["params"]), g["weight_decay"]) for g in probe_opt.param_groups]
torch.nn.utils.clip_grad_norm_(probe.parameters(), config.trainer.grad_norm_clip)
probe_opt.step()
fixed_result["stepped"] = {name: w.tolist() for name, w in probe.named_parameters()}
fixed_result["greedy"] = probe.generate(px[:, :4], 3, do_sample=False).tolist()
