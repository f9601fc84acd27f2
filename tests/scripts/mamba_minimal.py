"""A minimal Mamba (selective state space) language model trained on a synthetic copy task,
written for these tests in the way johnma2006/mamba-minimal commonly writes torch code
(modelled on the API usage of mamba-minimal and mamba.py, not a copy of either):

- a ``@dataclass`` ModelArgs with ``__post_init__`` (d_inner, ``dt_rank='auto'`` through
  ``math.ceil``, the vocabulary padded to a multiple);
- RMSNorm (``torch.rsqrt``, ``pow(2).mean(-1, keepdim=True)``, a weight ``nn.Parameter``);
- a MambaBlock: ``in_proj`` split into (x, res) with ``Tensor.split``, a depthwise causal
  ``nn.Conv1d`` (``groups=d_inner``, ``padding=d_conv - 1``, trimmed with ``[:, :, :L]``), the
  rearranges done with ``transpose``, ``x_proj`` split into (delta, B, C), ``dt_proj`` +
  ``F.softplus``, ``A = -torch.exp(A_log.float())`` with ``A_log`` from
  ``torch.log(torch.arange(...).repeat(d_inner, 1))``, discretization with ``torch.einsum``
  (spaced equations such as ``'b l d, d n -> b l d n'``), a sequential selective scan over L in
  a Python loop with ``torch.stack``, the D skip and ``F.silu`` gating; the same scan in
  parallel form through a "segsum" (``repeat``, ``torch.tril(..., diagonal=-1)`` bool masks,
  ``masked_fill`` with 0 and ``-torch.inf``, ``torch.cumsum``, ``torch.exp``, a five-index
  einsum), and as mamba.py's parallel scan: a ``torch.autograd.Function`` (``ctx``,
  ``torch.amp.custom_fwd`` / ``custom_bwd`` as mamba_ssm decorates its Functions,
  ``save_for_backward``, ``saved_tensors``) running a Blelloch scan in place on ``view``s of
  ``clone(memory_format=torch.contiguous_format)`` copies (``add_``, ``mul_`` on strided
  slices), its backward a reversed scan (``F.pad``, ``flip``, ``zeros_like``, slice
  assignment), inputs padded to a power of two (``F.pad(x, (0, 0, 0, 0, 0, k), "constant", 0)``)
  and checked by ``torch.autograd.gradcheck`` in float64; all scans' input gradients through
  ``torch.autograd.grad``;
- Mamba's initialization: ``dt_proj`` bias as the inverse softplus of log-uniform steps
  (``torch.rand``, ``torch.exp``, ``clamp(min=...)``, ``torch.expm1``, ``bias.copy_`` under
  ``torch.no_grad()``, a ``_no_reinit`` flag on the Parameter), mamba_simple's ``_init_weights``
  through ``apply(partial(...))`` (``nn.init.zeros_`` / ``normal_`` / ``kaiming_uniform_``,
  then ``p /= math.sqrt(...)`` under ``torch.no_grad()``);
- residual blocks in ``nn.ModuleList``, tied embedding / ``lm_head`` weights, a state dict saved
  with a ``backbone.`` prefix (as the released checkpoints are), loaded as from_pretrained does
  (``torch.load(..., weights_only=True, map_location="cpu", mmap=True)``) and renamed;
- a recurrent ``step`` for inference (conv state rolled with ``torch.roll``, the depthwise conv
  as ``torch.sum(state * weight[:, 0, :], dim=-1)``, the SSM state carried between steps);
- training: next-token cross entropy with ``ignore_index=-100`` on the copied half, AdamW with
  decay / no-decay groups, a warm-up + cosine ``LambdaLR``, ``clip_grad_norm_``;
- generation: greedy ``torch.argmax(probs, dim=-1)[:, None]`` under ``torch.no_grad()``, and
  top-k sampling (``torch.topk``, ``probs[probs < values[:, -1, None]] = 0``,
  ``probs.sum(axis=1, keepdims=True)``, ``torch.multinomial``);
- generation through the recurrent step under ``torch.inference_mode()`` with mamba's logit
  processors: a repetition penalty (``torch.gather``, ``torch.where``, ``scatter_``), nucleus
  filtering (``torch.sort``, ``softmax().cumsum()``, a bool ``scatter``, ``masked_fill(-inf)``),
  ``torch.multinomial(..., generator=...)``;
- gradient checkpointing of the residual blocks (``torch.utils.checkpoint.checkpoint(...,
  use_reentrant=False)``);
- fixed-weight results for the torch comparison: logits, loss, gradients, the scans' outputs,
  the recurrent logits, an AdamW step and the sampled tokens.
"""
import math
import os
import tempfile
import time
from dataclasses import dataclass
from functools import partial

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.checkpoint import checkpoint


@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 16
    expand: int = 2
    dt_rank: int | str = "auto"
    d_conv: int = 4
    pad_vocab_size_multiple: int = 8
    conv_bias: bool = True
    bias: bool = False
    pscan: bool = False  # the parallel scan (mamba.py) instead of the sequential loop

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)
        if self.dt_rank == "auto":
            self.dt_rank = math.ceil(self.d_model / 16)
        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += (self.pad_vocab_size_multiple
                                - self.vocab_size % self.pad_vocab_size_multiple)


def npo2(length):
    """The next power of two."""
    return 2 ** math.ceil(math.log2(length))


def pad_npo2(x):
    """Pads (b, l, d, n) with zeros along l up to the next power of two."""
    return F.pad(x, (0, 0, 0, 0, 0, npo2(x.size(1)) - x.size(1)), "constant", 0)


def scan_inplace(A, X):
    """In place along dim 2 of (b, d, l, n), l a power of two: X_t <- A_t X_{t-1} + X_t.

    A Blelloch scan on views: the up-sweep combines pairs of blocks into their right element,
    the down-sweep (from the coarsest level) completes each left element from the prefix that
    ends just before it."""
    b, d, l, n = A.shape
    Aa, Xa, levels = A, X, []
    for _ in range(int(math.log2(l))):
        T = Xa.size(2)
        Aa = Aa.view(b, d, T // 2, 2, -1)
        Xa = Xa.view(b, d, T // 2, 2, -1)
        levels.append((Aa, Xa))
        Xa[:, :, :, 1].add_(Aa[:, :, :, 1].mul(Xa[:, :, :, 0]))
        Aa[:, :, :, 1].mul_(Aa[:, :, :, 0])
        Aa = Aa[:, :, :, 1]
        Xa = Xa[:, :, :, 1]
    for Aa, Xa in reversed(levels):
        if Xa.size(2) > 1:
            Xa[:, :, 1:, 0].add_(Aa[:, :, 1:, 0].mul(Xa[:, :, :-1, 1]))


# mamba_ssm's autograd Functions are decorated for autocast: torch.amp's decorators want a
# device_type since torch 2.4, the older torch.cuda.amp ones did not
if hasattr(torch.amp, "custom_fwd"):
    custom_fwd = partial(torch.amp.custom_fwd, device_type="cuda")
    custom_bwd = partial(torch.amp.custom_bwd, device_type="cuda")
else:
    from jitgrad.cuda.amp import custom_bwd, custom_fwd


class PScan(torch.autograd.Function):
    """H_t = A_t * H_{t-1} + X_t along dim 1 of (b, l, d, n), by a parallel scan in forward
    and a reversed one in backward."""

    @staticmethod
    @custom_fwd
    def forward(ctx, A_in, X_in):
        A = A_in.transpose(2, 1).clone(memory_format=torch.contiguous_format)
        X = X_in.transpose(2, 1).clone(memory_format=torch.contiguous_format)
        scan_inplace(A, X)
        ctx.save_for_backward(A_in, X)
        return X.transpose(2, 1)

    @staticmethod
    @custom_bwd
    def backward(ctx, grad_output):
        A_in, H = ctx.saved_tensors
        A = A_in.transpose(2, 1)
        # dL/dX_t = G_t = dL/dH_t + A_{t+1} G_{t+1}: a scan from the end with A shifted by one
        A_next = F.pad(A[:, :, 1:], (0, 0, 0, 1))
        A_rev, G = A_next.flip(2), grad_output.transpose(2, 1).flip(2)
        scan_inplace(A_rev, G)
        G = G.flip(2)
        grad_A = torch.zeros_like(H)
        grad_A[:, :, 1:] = H[:, :, :-1] * G[:, :, 1:]
        return grad_A.transpose(2, 1), G.transpose(2, 1)


pscan = PScan.apply


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs, dt_min=0.001, dt_max=0.1, dt_init_floor=1e-4):
        super().__init__()
        self.args = args
        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
        self.conv1d = nn.Conv1d(
            in_channels=args.d_inner,
            out_channels=args.d_inner,
            bias=args.conv_bias,
            kernel_size=args.d_conv,
            groups=args.d_inner,
            padding=args.d_conv - 1,
        )
        # x_proj takes in `x` and outputs the input-specific delta, B, C
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
        # dt_proj projects delta from dt_rank to d_in
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)

        dt_init_std = args.dt_rank ** -0.5
        nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        dt = torch.exp(
            torch.rand(args.d_inner) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        ).clamp(min=dt_init_floor)
        inv_dt = dt + torch.log(-torch.expm1(-dt))  # the inverse of softplus
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)
        self.dt_proj.bias._no_reinit = True

        A = torch.arange(1, args.d_state + 1, dtype=torch.float32).repeat(args.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

    def forward(self, x):
        """x: (b, l, d) -> (b, l, d)"""
        (b, l, d) = x.shape
        x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
        (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)

        x = x.transpose(1, 2)  # b l d_in -> b d_in l
        x = self.conv1d(x)[:, :, :l]
        x = x.transpose(1, 2)  # b d_in l -> b l d_in
        x = F.silu(x)

        y = self.ssm(x)
        y = y * F.silu(res)
        return self.out_proj(y)

    def ssm_parameters(self, x):
        A = -torch.exp(self.A_log.float())  # shape (d_in, n)
        x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2 * n)
        (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, self.args.d_state,
                                                self.args.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
        return A, delta, B, C

    def ssm(self, x):
        A, delta, B, C = self.ssm_parameters(x)
        if self.args.pscan:
            return self.selective_scan_pscan(x, delta, A, B, C, self.D.float())
        return self.selective_scan(x, delta, A, B, C, self.D.float())

    def selective_scan_pscan(self, u, delta, A, B, C, D):
        """mamba.py's form: the recurrence through PScan, padded to a power of two."""
        L = u.size(1)
        deltaA = torch.exp(delta.unsqueeze(-1) * A)  # (b, l, d_in, n)
        BX = (delta * u).unsqueeze(-1) * B.unsqueeze(2)  # (b, l, d_in, n)
        hs = pscan(pad_npo2(deltaA), pad_npo2(BX))[:, :L]
        y = (hs @ C.unsqueeze(-1)).squeeze(3)  # (b, l, d_in, n) @ (b, l, n, 1)
        return y + D * u

    def selective_scan(self, u, delta, A, B, C, D):
        """The sequential form of the selective scan (Algorithm 2 of the Mamba paper)."""
        (b, l, d_in) = u.shape
        n = A.shape[1]
        # Discretize: A with zero-order hold, B with a simplified Euler step
        deltaA = torch.exp(torch.einsum("b l d, d n -> b l d n", delta, A))
        deltaB_u = torch.einsum("b l d, b l n, b l d -> b l d n", delta, B, u)

        x = torch.zeros((b, d_in, n), device=deltaA.device)
        ys = []
        for i in range(l):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            y = torch.einsum("b d n, b n -> b d", x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=1)  # shape (b, l, d_in)
        return y + u * D

    def selective_scan_parallel(self, u, delta, A, B, C, D):
        """The same scan in one shot (a Mamba-2-style "segsum"): h_t = sum_s exp(sum_{s<r<=t}
        delta_r A) delta_s B_s u_s, through a cumulative sum of the log-decays."""
        (b, l, d_in) = u.shape
        dA = torch.einsum("b l d, d n -> b d n l", delta, A)
        segments = dA[..., None].repeat(1, 1, 1, 1, l)  # (b, d, n, l, l): [t, s] = dA_t
        below = torch.tril(torch.ones(l, l, dtype=torch.bool), diagonal=-1)
        segments = torch.cumsum(segments.masked_fill(~below, 0), dim=-2)
        segsum = segments.masked_fill(~torch.tril(torch.ones(l, l, dtype=torch.bool)),
                                      -torch.inf)
        decay = torch.exp(segsum)  # zero above the diagonal: the scan is causal
        deltaB_u = torch.einsum("b l d, b l n, b l d -> b l d n", delta, B, u)
        y = torch.einsum("b d n t s, b s d n, b t n -> b t d", decay, deltaB_u, C)
        return y + u * D

    def step(self, x, cache):
        """One token: x (b, d) and cache (h (b, d_in, n), conv state (b, d_in, d_conv))."""
        h, inputs = cache
        xz = self.in_proj(x)
        x, z = xz.chunk(2, dim=1)
        inputs = torch.roll(inputs, shifts=-1, dims=-1)
        inputs[:, :, -1] = x
        x = torch.sum(inputs * self.conv1d.weight[:, 0, :], dim=-1) + self.conv1d.bias
        x = F.silu(x)

        A, delta, B, C = self.ssm_parameters(x)
        deltaA = torch.exp(delta.unsqueeze(-1) * A)  # (b, d_in, n)
        BX = (delta * x).unsqueeze(-1) * B.unsqueeze(1)
        h = deltaA * h + BX
        y = (h @ C.unsqueeze(-1)).squeeze(2) + self.D * x
        y = y * F.silu(z)
        return self.out_proj(y), (h, inputs)


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x

    def step(self, x, cache):
        output, cache = self.mixer.step(self.norm(x), cache)
        return output + x, cache


def _init_weights(module, n_layer, rescale_prenorm_residual=True, n_residuals_per_layer=1):
    """mamba_simple's init: zero biases (but dt_proj's), N(0, 0.02) embeddings, and the
    residual projections scaled down by the square root of the number of layers."""
    if isinstance(module, nn.Linear):
        if module.bias is not None and not getattr(module.bias, "_no_reinit", False):
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if rescale_prenorm_residual:
        for name, p in module.named_parameters():
            if name in ["out_proj.weight", "fc2.weight"]:
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                with torch.no_grad():
                    p /= math.sqrt(n_residuals_per_layer * n_layer)


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # tie output projection to the embedding
        self.apply(partial(_init_weights, n_layer=args.n_layer))

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm_f(x)
        return self.lm_head(x)

    def init_caches(self, batch):
        a = self.args
        return [(torch.zeros(batch, a.d_inner, a.d_state),
                 torch.zeros(batch, a.d_inner, a.d_conv)) for _ in self.layers]

    def step(self, token, caches):
        x = self.embedding(token)
        for i, layer in enumerate(self.layers):
            x, caches[i] = layer.step(x, caches[i])
        return self.lm_head(self.norm_f(x)), caches


def generate(model, input_ids, n_tokens_to_gen, sample=False, top_k=None):
    """mamba-minimal's generate: the whole prefix through the model for every new token."""
    model.eval()
    for _ in range(n_tokens_to_gen):
        with torch.no_grad():
            next_token_logits = model(input_ids)[:, -1]
        probs = F.softmax(next_token_logits, dim=-1)
        (batch, vocab_size) = probs.shape
        if top_k is not None:
            (values, indices) = torch.topk(probs, k=top_k)
            probs[probs < values[:, -1, None]] = 0
            probs = probs / probs.sum(axis=1, keepdims=True)
        if sample:
            next_indices = torch.multinomial(probs, num_samples=1)
        else:
            next_indices = torch.argmax(probs, dim=-1)[:, None]
        input_ids = torch.cat([input_ids, next_indices], dim=1)
    return input_ids


def modify_logits_for_top_p(logits, top_p):
    """Nucleus filtering: keep the smallest set of tokens whose probability reaches top_p."""
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                         sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, float("-inf"))


def apply_repetition_penalty(logits, prev_tokens, penalty):
    score = torch.gather(logits, 1, prev_tokens)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return logits.scatter_(1, prev_tokens, score)


@torch.inference_mode()
def generate_recurrent(model, input_ids, n_tokens_to_gen, temperature=1.0, top_p=0.0,
                       repetition_penalty=1.0, generator=None):
    """Token by token through the recurrent step: the prompt fills the caches, then each new
    token costs one step (mamba's generation utilities, with their logit processors)."""
    model.eval()
    caches = model.init_caches(input_ids.size(0))
    for t in range(input_ids.size(1)):
        logits, caches = model.step(input_ids[:, t], caches)
    for _ in range(n_tokens_to_gen):
        logits = apply_repetition_penalty(logits.clone(), input_ids, repetition_penalty)
        if top_p > 0.0:
            logits = modify_logits_for_top_p(logits / temperature, top_p)
            next_token = torch.multinomial(F.softmax(logits, dim=-1), 1,
                                           generator=generator).squeeze(-1)
        else:
            next_token = logits.argmax(dim=-1)
        input_ids = torch.cat([input_ids, next_token.unsqueeze(1)], dim=1)
        logits, caches = model.step(next_token, caches)
    return input_ids


# ------------------------------------------------------------------- the synthetic copy task
N_SYMBOLS, COPY_LEN = 6, 5
SEP = N_SYMBOLS + 1  # tokens 1..N_SYMBOLS are symbols, 0 is unused, SEP separates the halves


def copy_batch(batch_size, generator=None):
    """[symbols..., SEP, symbols...]: inputs and next-token targets, -100 on the first half."""
    symbols = torch.randint(1, N_SYMBOLS + 1, (batch_size, COPY_LEN), generator=generator)
    sep = torch.full((batch_size, 1), SEP, dtype=torch.long)
    seq = torch.cat([symbols, sep, symbols], dim=1)
    inputs, targets = seq[:, :-1], seq[:, 1:].clone()
    targets[:, :COPY_LEN] = -100  # the first half is random: only the copy is learnable
    return inputs, targets


def lm_loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1),
                           ignore_index=-100)


def configure_optimizer(model, lr, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 and "A_log" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


# --------------------------------------------------------------- fixed weights, for torch
def compare_with_torch():
    torch.manual_seed(1234)
    args = ModelArgs(d_model=16, n_layer=2, vocab_size=10, d_state=4, d_conv=3)
    model = Mamba(args)
    g = torch.Generator().manual_seed(5)
    inputs, targets = copy_batch(3, generator=g)
    logits = model(inputs)
    loss = lm_loss(logits, targets)
    loss.backward()
    results = {
        "vocab_size": args.vocab_size,
        "dt_rank": args.dt_rank,
        "logits": logits.detach().clone(),
        "loss": loss.item(),
        "grads": {n: p.grad.clone() for n, p in model.named_parameters()},
        "dt_bias": model.layers[0].mixer.dt_proj.bias.detach().clone(),
    }
    # gradient checkpointing of each residual block: the same gradients
    model.zero_grad()
    x = model.embedding(inputs)
    for layer in model.layers:
        x = checkpoint(layer, x, use_reentrant=False)
    lm_loss(model.lm_head(model.norm_f(x)), targets).backward()
    results["checkpoint_grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
    # the same weights with the parallel scan: the same logits and gradients
    pmodel = Mamba(ModelArgs(d_model=16, n_layer=2, vocab_size=10, d_state=4, d_conv=3,
                             pscan=True))
    pmodel.load_state_dict(model.state_dict())
    plogits = pmodel(inputs)
    lm_loss(plogits, targets).backward()
    results["pscan_logits"] = plogits.detach().clone()
    results["pscan_grads"] = {n: p.grad.clone() for n, p in pmodel.named_parameters()}
    A64 = torch.rand(2, 6, 3, 2, dtype=torch.float64, generator=g).requires_grad_()
    X64 = torch.randn(2, 6, 3, 2, dtype=torch.float64, generator=g).requires_grad_()
    results["pscan_gradcheck"] = torch.autograd.gradcheck(
        lambda a, x: pscan(pad_npo2(a), pad_npo2(x)), (A64, X64))
    mixer = model.layers[1].mixer
    u = torch.randn(2, 5, args.d_inner, generator=g)
    with torch.no_grad():
        A, delta, B, C = mixer.ssm_parameters(u)
        results["scan"] = mixer.selective_scan(u, delta, A, B, C, mixer.D)
        results["scan_parallel"] = mixer.selective_scan_parallel(u, delta, A, B, C, mixer.D)
        results["scan_pscan"] = mixer.selective_scan_pscan(u, delta, A, B, C, mixer.D)
        # the recurrent form reproduces the parallel one token by token
        full = model(inputs)
        caches = model.init_caches(inputs.shape[0])
        stepped = []
        for t in range(inputs.shape[1]):
            out, caches = model.step(inputs[:, t], caches)
            stepped.append(out)
        results["stepped_logits"] = torch.stack(stepped, 1)
        results["full_logits"] = full
    # the gradients of the three scan forms with respect to their inputs
    delta, B, C = (t.detach().requires_grad_() for t in (delta, B, C))
    u.requires_grad_()
    weights = torch.randn(2, 5, args.d_inner, generator=g)
    for kind, scan in (("sequential", mixer.selective_scan),
                       ("parallel", mixer.selective_scan_parallel),
                       ("pscan", mixer.selective_scan_pscan)):
        out = scan(u, delta, A, B, C, mixer.D)
        grads = torch.autograd.grad((out * weights).sum(), (u, delta, B, C))
        results[f"scan_grads_{kind}"] = [t.clone() for t in grads]
    optimizer = configure_optimizer(model, lr=1e-2, weight_decay=0.1)
    optimizer.step()
    results["after_step"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer.zero_grad(set_to_none=True)
    logits = model(inputs)
    results["loss_after_step"] = lm_loss(logits, targets).item()
    torch.manual_seed(9)
    prompt = inputs[:, :COPY_LEN + 1]
    results["sampled"] = generate(model, prompt, 3, sample=True, top_k=4)
    results["greedy"] = generate(model, prompt, 3)
    results["greedy_recurrent"] = generate_recurrent(model, prompt, 3)
    results["nucleus"] = generate_recurrent(model, prompt, 4, temperature=0.8, top_p=0.7,
                                            repetition_penalty=1.3,
                                            generator=torch.Generator().manual_seed(3))
    logits = model(inputs)[:, -1]
    results["last_logits"] = logits.detach().clone()
    results["top_p_logits"] = modify_logits_for_top_p(logits.detach(), 0.5)
    results["penalized_logits"] = apply_repetition_penalty(logits.detach().clone(), inputs, 1.5)
    return results


fixed_results = compare_with_torch()

# ------------------------------------------------------------------------------ training
torch.manual_seed(0)
args = ModelArgs(d_model=32, n_layer=2, vocab_size=SEP + 1, d_state=8)
model = Mamba(args)
assert model.lm_head.weight is model.embedding.weight
n_params = sum(p.numel() for p in model.parameters())
optimizer = configure_optimizer(model, lr=4e-3, weight_decay=0.01)

max_iters, batch_size, warmup_iters = 150, 32, 10


def lr_lambda(it):
    """Linear warm-up, then a cosine decay to a tenth of the peak."""
    if it < warmup_iters:
        return (it + 1) / warmup_iters
    progress = (it - warmup_iters) / (max_iters - warmup_iters)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
losses, grad_norms, lrs = [], [], []
t0 = time.time()
model.train()
for it in range(max_iters):
    xb, yb = copy_batch(batch_size)
    logits = model(xb)
    loss = lm_loss(logits, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norms.append(nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
    optimizer.step()
    lrs.append(scheduler.get_last_lr()[0])
    scheduler.step()
    losses.append(loss.item())
    if it % 50 == 0 or it == max_iters - 1:
        print(f"iter {it}: loss {loss.item():.4f}, {time.time() - t0:.1f}s")

# ----------------------------------------------------------------------------- evaluation
model.eval()
torch.manual_seed(100)
test_inputs, test_targets = copy_batch(64)
with torch.no_grad():
    test_logits = model(test_inputs)
    test_loss = lm_loss(test_logits, test_targets).item()
    mask = test_targets != -100
    token_accuracy = (test_logits.argmax(-1)[mask] == test_targets[mask]).float().mean().item()

prompts = test_inputs[:16, :COPY_LEN + 1]  # the symbols and the separator
generated = generate(model, prompts, COPY_LEN)
copied = generated[:, COPY_LEN + 1:]
copy_accuracy = (copied == prompts[:, :COPY_LEN]).float().mean().item()
print(f"test loss {test_loss:.4f}, token accuracy {token_accuracy:.3f}, "
      f"copy accuracy {copy_accuracy:.3f}")

# the released checkpoints' keys carry a "backbone." prefix: save so, rename, load back
checkpoint_path = os.path.join(tempfile.mkdtemp(), "pytorch_model.bin")
torch.save({f"backbone.{k}": v for k, v in model.state_dict().items()}, checkpoint_path)
state_dict = torch.load(checkpoint_path, weights_only=True, map_location="cpu", mmap=True)
new_state_dict = {key.replace("backbone.", ""): value for key, value in state_dict.items()}
reloaded = Mamba(args)
load_result = reloaded.load_state_dict(new_state_dict)
reloaded.eval()
with torch.no_grad():
    reloaded_logits = reloaded(test_inputs)
