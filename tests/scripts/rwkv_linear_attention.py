# ruff: noqa: N812, N801 (the usual F alias, RWKV-LM's class names)
"""An RWKV-4-style language model and Katharopoulos linear attention, written for these tests
the way RWKV-LM (its GPT-mode ``model.py`` and "RWKV in 150 lines") and linear-transformer
code write torch code (not a copy of either):

- time mixing: token shift by ``nn.ZeroPad2d((0, 0, 1, -1))`` (also ``F.pad`` with a negative
  pad and ``torch.cat``), ``time_mix_k/v/r`` interpolation, ``time_decay`` (``w = -exp``),
  ``time_first`` (the bonus ``u``), receptance through ``torch.sigmoid``;
- the WKV recurrence as a Python loop over time with the log-sum-exp trick (``torch.maximum``,
  ``torch.exp``, ``torch.stack``), and in parallel through a causal matrix
  (``torch.arange`` comparisons, ``masked_fill(-inf)``, ``torch.softmax``, ``torch.einsum``)
  and through ``torch.cumsum`` (float64);
- channel mixing with squared ReLU ``torch.square(torch.relu(k))``; ``nn.LayerNorm``
  (``ln0`` after the embedding), RWKV-LM's initialisation of the decay/mix parameters
  under ``torch.no_grad`` with ``torch.pow``;
- RNN inference carrying a state tensor ``(n_layer * 5, B, C)`` (last x of both mixes,
  ``aa``, ``bb``, ``pp`` initialised to ``-1e38``), greedy generation token by token;
- linear attention with the ``F.elu(x) + 1`` feature map: causal ``cumsum`` form vs the
  quadratic masked form vs a recurrent form; a one-layer linear transformer LM;
- ``AdamW`` with parameter groups (no weight decay on the time parameters),
  ``clip_grad_norm_``, ``LambdaLR`` warm-up, ``F.cross_entropy``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}


# ---------------------------------------------------------------------------------- WKV


def wkv_loop(time_decay, time_first, k, v):
    """RWKV-4's numerically stable recurrence over (B, T, C) keys and values."""
    B, T, C = k.size()
    w = -torch.exp(time_decay)
    u = time_first
    aa = torch.zeros(B, C, dtype=k.dtype)
    bb = torch.zeros(B, C, dtype=k.dtype)
    pp = torch.full((B, C), -1e38, dtype=k.dtype)
    out = []
    for t in range(T):
        kk, vv = k[:, t], v[:, t]
        ww = u + kk
        p = torch.maximum(pp, ww)
        e1 = torch.exp(pp - p)
        e2 = torch.exp(ww - p)
        out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
        ww = w + pp
        p = torch.maximum(ww, kk)
        e1 = torch.exp(ww - p)
        e2 = torch.exp(kk - p)
        aa = e1 * aa + e2 * vv
        bb = e1 * bb + e2
        pp = p
    return torch.stack(out, dim=1)


def wkv_parallel(time_decay, time_first, k, v):
    """The same WKV as softmax weights over a causal (T, T) matrix of log-weights."""
    B, T, C = k.size()
    t = torch.arange(T)
    distance = (t[:, None] - 1 - t[None, :]).to(k.dtype)  # t - 1 - i for i < t
    log_w = -distance[:, :, None] * torch.exp(time_decay) + k[:, None, :, :]  # (B, T, T, C)
    diagonal = (t[:, None] == t[None, :])[:, :, None]
    log_w = torch.where(diagonal, time_first + k[:, None, :, :], log_w)
    future = (t[None, :] > t[:, None])[:, :, None]
    log_w = log_w.masked_fill(future, float("-inf"))
    weights = torch.softmax(log_w, dim=2)
    return torch.einsum("btic,bic->btc", weights, v)


def wkv_cumsum(time_decay, time_first, k, v):
    """Prefix sums: exp(-(t-1-i) w + k_i) = exp(-(t-1) w) exp(i w + k_i), for short T."""
    T = k.shape[1]
    w = torch.exp(time_decay)
    i = torch.arange(T, dtype=k.dtype)[:, None]
    ek = torch.exp(i * w + k)
    num = torch.cumsum(ek * v, dim=1) - ek * v  # exclusive: i < t
    den = torch.cumsum(ek, dim=1) - ek
    scale = torch.exp(-(i - 1) * w)
    bonus = torch.exp(time_first + k)
    return (scale * num + bonus * v) / (scale * den + bonus)


# ------------------------------------------------------------------------------- model


class RWKVConfig:
    def __init__(self, **kwargs):
        self.vocab_size, self.ctx_len = 8, 16
        self.n_layer, self.n_embd, self.ffn_mult = 2, 32, 4
        self.wkv_mode = "loop"
        for k, v in kwargs.items():
            setattr(self, k, v)


class RWKV_TimeMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.config = config
        C, n_layer = config.n_embd, config.n_layer
        ratio_0_to_1 = layer_id / (n_layer - 1)
        ratio_1_to_almost0 = 1.0 - layer_id / n_layer
        with torch.no_grad():
            decay_speed = torch.ones(C)
            for h in range(C):
                decay_speed[h] = -5 + 8 * (h / (C - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
            self.time_decay = nn.Parameter(decay_speed)
            zigzag = torch.tensor([(i + 1) % 3 - 1 for i in range(C)]) * 0.5
            self.time_first = nn.Parameter(torch.ones(C) * math.log(0.3) + zigzag)
            x = (torch.arange(C) / C).view(1, 1, C)
            self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
            self.time_mix_v = nn.Parameter(torch.pow(x, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
            self.time_mix_r = nn.Parameter(torch.pow(x, 0.5 * ratio_1_to_almost0))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key = nn.Linear(C, C, bias=False)
        self.value = nn.Linear(C, C, bias=False)
        self.receptance = nn.Linear(C, C, bias=False)
        self.output = nn.Linear(C, C, bias=False)

    def mix(self, x, xx):
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        return self.key(xk), self.value(xv), torch.sigmoid(self.receptance(xr))

    def forward(self, x):
        k, v, sr = self.mix(x, self.time_shift(x))
        wkv = wkv_loop if self.config.wkv_mode == "loop" else wkv_parallel
        return self.output(sr * wkv(self.time_decay, self.time_first, k, v))

    def step(self, x, state, i):
        """One token (B, C); the layer's rows of ``state`` are updated in place."""
        k, v, sr = (t.squeeze(1) for t in self.mix(x[:, None], state[5 * i + 1, :, None]))
        state[5 * i + 1] = x
        aa, bb, pp = state[5 * i + 2], state[5 * i + 3], state[5 * i + 4]
        ww = self.time_first + k
        p = torch.maximum(pp, ww)
        e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
        wkv = (e1 * aa + e2 * v) / (e1 * bb + e2)
        ww = pp - torch.exp(self.time_decay)
        p = torch.maximum(ww, k)
        e1, e2 = torch.exp(ww - p), torch.exp(k - p)
        state[5 * i + 2] = e1 * aa + e2 * v
        state[5 * i + 3] = e1 * bb + e2
        state[5 * i + 4] = p
        return self.output(sr * wkv)


class RWKV_ChannelMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        C = config.n_embd
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        with torch.no_grad():
            x = (torch.arange(C) / C).view(1, 1, C)
            ratio_1_to_almost0 = 1.0 - layer_id / config.n_layer
            self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
            self.time_mix_r = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
        hidden = config.ffn_mult * C
        self.key = nn.Linear(C, hidden, bias=False)
        self.receptance = nn.Linear(C, C, bias=False)
        self.value = nn.Linear(hidden, C, bias=False)

    def mix(self, x, xx):
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k = torch.square(torch.relu(self.key(xk)))
        return torch.sigmoid(self.receptance(xr)) * self.value(k)

    def forward(self, x):
        return self.mix(x, self.time_shift(x))

    def step(self, x, state, i):
        out = self.mix(x[:, None], state[5 * i, :, None]).squeeze(1)
        state[5 * i] = x
        return out


class Block(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.layer_id = layer_id
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        if layer_id == 0:
            self.ln0 = nn.LayerNorm(config.n_embd)
        self.att = RWKV_TimeMix(config, layer_id)
        self.ffn = RWKV_ChannelMix(config, layer_id)

    def forward(self, x):
        if self.layer_id == 0:
            x = self.ln0(x)
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))

    def step(self, x, state):
        if self.layer_id == 0:
            x = self.ln0(x)
        x = x + self.att.step(self.ln1(x), state, self.layer_id)
        return x + self.ffn.step(self.ln2(x), state, self.layer_id)


class RWKV(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.Sequential(*[Block(config, i) for i in range(config.n_layer)])
        self.ln_out = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        nn.init.uniform_(self.emb.weight, a=-1e-4, b=1e-4)
        nn.init.orthogonal_(self.head.weight, gain=0.5)

    def forward(self, idx, targets=None):
        x = self.ln_out(self.blocks(self.emb(idx)))
        logits = self.head(x)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)
        return logits, loss

    def init_state(self, batch_size):
        state = torch.zeros(self.config.n_layer * 5, batch_size, self.config.n_embd)
        for i in range(self.config.n_layer):
            state[5 * i + 4] = -1e38
        return state

    @torch.no_grad()
    def step(self, token, state):
        x = self.emb(token)
        for block in self.blocks:
            x = block.step(x, state)
        return self.head(self.ln_out(x)), state

    def configure_optimizers(self, lr, weight_decay):
        no_decay = {n for n, _ in self.named_parameters() if "time_" in n or "ln" in n}
        params = dict(self.named_parameters())
        groups = [
            {"params": [params[n] for n in sorted(params) if n not in no_decay],
             "weight_decay": weight_decay},
            {"params": [params[n] for n in sorted(no_decay)], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), eps=1e-8)


# --------------------------------------------------------------- linear attention


def elu_feature_map(x):
    return F.elu(x) + 1


def causal_linear_attention(q, k, v, eps=1e-6):
    """(B, H, T, D) queries/keys, (B, H, T, M) values: prefix sums of k v^T and of k."""
    Q, K = elu_feature_map(q), elu_feature_map(k)
    KV = torch.einsum("bhtd,bhtm->bhtdm", K, v).cumsum(dim=2)
    Z = 1 / (torch.einsum("bhtd,bhtd->bht", Q, K.cumsum(dim=2)) + eps)
    return torch.einsum("bhtd,bhtdm,bht->bhtm", Q, KV, Z)


def quadratic_linear_attention(q, k, v, eps=1e-6):
    Q, K = elu_feature_map(q), elu_feature_map(k)
    T = q.shape[2]
    A = Q @ K.transpose(-2, -1)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    A = A.masked_fill(~causal, 0.0)
    return (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)


def recurrent_linear_attention(q, k, v, eps=1e-6):
    Q, K = elu_feature_map(q), elu_feature_map(k)
    B, H, T, D = q.shape
    S = torch.zeros(B, H, D, v.shape[-1], dtype=q.dtype)
    z = torch.zeros(B, H, D, dtype=q.dtype)
    out = []
    for t in range(T):
        S = S + K[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + K[:, :, t]
        num = torch.einsum("bhd,bhdm->bhm", Q[:, :, t], S)
        out.append(num / (torch.einsum("bhd,bhd->bh", Q[:, :, t], z)[..., None] + eps))
    return torch.stack(out, dim=2)


class LinearAttentionLM(nn.Module):
    def __init__(self, vocab_size, n_embd=32, n_head=4, ctx_len=16):
        super().__init__()
        self.n_head = n_head
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Parameter(torch.zeros(1, ctx_len, n_embd))
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd))
        self.head = nn.Linear(n_embd, vocab_size)
        self.attention = causal_linear_attention

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos[:, :T]
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        y = self.attention(q, k, v).transpose(1, 2).contiguous().view(B, T, -1)
        x = x + self.proj(y)
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


# ------------------------------------------------------------------------------ data

VOCAB = 8


def get_batch(batch_size, T=16):
    """x_t = (x_{t-1} + x_{t-3}) mod V after three random tokens: needs the token shift and
    a memory of three steps back (the WKV's decaying sum)."""
    seq = torch.zeros(batch_size, T + 1, dtype=torch.long)
    seq[:, :3] = torch.randint(0, VOCAB, (batch_size, 3))
    for t in range(3, T + 1):
        seq[:, t] = (seq[:, t - 1] + seq[:, t - 3]) % VOCAB
    x, y = seq[:, :-1], seq[:, 1:].clone()
    y[:, :2] = -1  # the first targets are random: ignored
    return x, y


# ----------------------------------------------------- fixed-weight checks (recorded)

# token shift three ways
x = torch.randn(2, 5, 3)
shifted = nn.ZeroPad2d((0, 0, 1, -1))(x)
fixed_results["token_shift"] = shifted
shift_agrees = (torch.equal(shifted, F.pad(x, (0, 0, 1, -1)))
                and torch.equal(shifted, torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1)))

# WKV three ways, float64 with gradients
B, T, C = 2, 8, 6
time_decay = torch.randn(C, dtype=torch.float64, requires_grad=True)
time_first = torch.randn(C, dtype=torch.float64, requires_grad=True)
k64 = (3 * torch.randn(B, T, C, dtype=torch.float64)).requires_grad_()
v64 = torch.randn(B, T, C, dtype=torch.float64, requires_grad=True)
inputs = (time_decay, time_first, k64, v64)
upstream = torch.randn(B, T, C, dtype=torch.float64)
wkv_outputs, wkv_grads = {}, {}
for name, fn in (("loop", wkv_loop), ("parallel", wkv_parallel), ("cumsum", wkv_cumsum)):
    out = fn(*inputs)
    wkv_outputs[name] = out.detach()
    wkv_grads[name] = torch.autograd.grad(out, inputs, upstream)
fixed_results["wkv"] = wkv_outputs["loop"]
fixed_results["wkv_grads"] = {n: g for n, g in zip(("w", "u", "k", "v"), wkv_grads["loop"])}
fixed_results["wkv_parallel_grads"] = {
    n: g for n, g in zip(("w", "u", "k", "v"), wkv_grads["parallel"])}
small = tuple(t[:1, :4, :2].detach().clone().requires_grad_() for t in (k64, v64))
gradcheck_wkv = {
    "loop": torch.autograd.gradcheck(
        lambda w, u, k, v: wkv_loop(w, u, k, v),
        (time_decay[:2].detach().requires_grad_(), time_first[:2].detach().requires_grad_())
        + small),
    "parallel": torch.autograd.gradcheck(
        lambda w, u, k, v: wkv_parallel(w, u, k, v),
        (time_decay[:2].detach().requires_grad_(), time_first[:2].detach().requires_grad_())
        + small),
}
# large keys: the loop's max trick and the softmax stay finite where exp(k) overflows
big_k = torch.full((1, 4, 2), 200.0)
big_v = torch.arange(8.0).view(1, 4, 2)
wkv_big = wkv_loop(torch.zeros(2), torch.zeros(2), big_k, big_v)
fixed_results["wkv_big"] = wkv_big
fixed_results["wkv_big_parallel"] = wkv_parallel(torch.zeros(2), torch.zeros(2), big_k, big_v)

# the model on fixed weights: loop vs parallel, logits, loss, gradients
config = RWKVConfig()
model = RWKV(config)
fixed_results["time_decay_init"] = model.blocks[1].att.time_decay.detach().clone()
fixed_results["time_mix_v_init"] = model.blocks[1].att.time_mix_v.detach().clone()
xb, yb = get_batch(4)
mode_logits, mode_grads = {}, {}
for mode in ("loop", "parallel"):
    config.wkv_mode = mode
    model.zero_grad()
    logits, loss = model(xb, yb)
    loss.backward()
    mode_logits[mode] = logits.detach()
    mode_grads[mode] = {n: p.grad.clone() for n, p in model.named_parameters()}
config.wkv_mode = "loop"
fixed_results["logits"] = mode_logits["loop"]
fixed_results["loss"] = loss.item()
fixed_results["grads"] = {n: mode_grads["loop"][n] for n in (
    "blocks.0.att.time_decay", "blocks.0.att.time_first", "blocks.1.att.time_mix_k",
    "blocks.1.ffn.key.weight", "emb.weight", "head.weight")}
model.zero_grad()

# linear attention three ways, float64 with gradients
q = torch.randn(2, 2, 7, 4, dtype=torch.float64, requires_grad=True)
k = torch.randn(2, 2, 7, 4, dtype=torch.float64, requires_grad=True)
v = torch.randn(2, 2, 7, 3, dtype=torch.float64, requires_grad=True)
la_outputs, la_grads = {}, {}
for name, fn in (("cumsum", causal_linear_attention), ("quadratic", quadratic_linear_attention),
                 ("recurrent", recurrent_linear_attention)):
    out = fn(q, k, v)
    la_outputs[name] = out.detach()
    la_grads[name] = torch.autograd.grad(out.pow(2).sum(), (q, k, v))
fixed_results["linear_attention"] = la_outputs["cumsum"]
fixed_results["linear_attention_grads"] = dict(zip("qkv", la_grads["cumsum"]))
gradcheck_linear = torch.autograd.gradcheck(
    causal_linear_attention, tuple(t[:1, :1, :4].detach().requires_grad_() for t in (q, k, v)))

# ------------------------------------------------------------------------------ training

max_iters, batch_size, lr = 150, 32, 6e-3
optimizer = model.configure_optimizers(lr, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: min(1.0, (it + 1) / 10))
losses, lrs = [], []
model.train()
for it in range(max_iters):
    xb, yb = get_batch(batch_size)
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    lrs.append(optimizer.param_groups[0]["lr"])
    if it % 50 == 0 or it == max_iters - 1:
        print(f"iter {it}: loss {loss.item():.4f}")

model.eval()
xb, yb = get_batch(16)
with torch.no_grad():
    logits, val_loss = model(xb, yb)
    config.wkv_mode = "parallel"
    parallel_logits, _ = model(xb, yb)
    config.wkv_mode = "loop"
val_loss = val_loss.item()
valid = yb >= 0
val_accuracy = (logits.argmax(-1) == yb)[valid].float().mean().item()
trained_mode_difference = (logits - parallel_logits).abs().max().item()

# RNN mode: three prompt tokens, then greedy generation carrying the state
prompt = xb[:4, :3]
state = model.init_state(4)
step_logits = []
for t in range(3):
    out, state = model.step(prompt[:, t], state)
    step_logits.append(out)
generated = [prompt]
for _ in range(12):
    token = step_logits[-1].argmax(-1)
    generated.append(token[:, None])
    out, state = model.step(token, state)
    step_logits.append(out)
generated = torch.cat(generated, dim=1)
step_logits = torch.stack(step_logits, dim=1)
with torch.no_grad():
    full_logits, _ = model(generated)
rnn_difference = (step_logits - full_logits).abs().max().item()
rule_followed = all(
    (generated[:, t] == (generated[:, t - 1] + generated[:, t - 3]) % VOCAB).all().item()
    for t in range(3, generated.shape[1]))
final_state = state

# a one-layer linear transformer on the same task, then its three attention forms agree
torch.manual_seed(1)
lin_model = LinearAttentionLM(VOCAB)
lin_optimizer = torch.optim.AdamW(lin_model.parameters(), lr=1e-2, weight_decay=0.01)
lin_losses = []
for _ in range(100):
    xb, yb = get_batch(batch_size)
    loss = F.cross_entropy(lin_model(xb).view(-1, VOCAB), yb.view(-1), ignore_index=-1)
    lin_optimizer.zero_grad()
    loss.backward()
    lin_optimizer.step()
    lin_losses.append(loss.item())
with torch.no_grad():
    lin_logits = {}
    for name, fn in (("cumsum", causal_linear_attention), ("quadratic",
                                                           quadratic_linear_attention),
                     ("recurrent", recurrent_linear_attention)):
        lin_model.attention = fn
        lin_logits[name] = lin_model(xb)
    lin_model.attention = causal_linear_attention

print(f"val loss {val_loss:.4f}, accuracy {val_accuracy:.3f}, loop/parallel "
      f"{trained_mode_difference:.2e}, rnn/full {rnn_difference:.2e}, rule {rule_followed}; "
      f"linear attention {lin_losses[0]:.3f} -> {lin_losses[-1]:.3f}")
