"""A small mixture-of-experts transformer language model trained on a synthetic token task,
written for these tests in the way common MoE implementations (Mixtral-style minimal code, the
HF Mixtral and DeepSeek-MoE blocks, lucidrains' mixture-of-experts / st-moe) commonly write
torch code (modelled on the API usage of such implementations, not a copy of any; Shazeer's
noisy gating and expert-choice routing are in ``moe_noisy_gating.py``):

- a ``@dataclass`` config; the data made with ``torch.randint(..., generator=...)``, integer
  ``%`` of negative numbers, fancy indexing of a step table and ``torch.cat``; batches drawn
  with ``torch.randint`` on the global generator;
- causal self-attention with a fused ``c_attn`` split by ``Tensor.split``, ``view`` /
  ``transpose`` into heads and ``F.scaled_dot_product_attention(is_causal=True)``, and the
  manual form (``q @ k.transpose(-2, -1)``, a ``register_buffer(persistent=False)`` mask from
  ``torch.triu(torch.ones(T, T), diagonal=1).bool()``, ``masked_fill(-inf)``, ``F.softmax``);
- SwiGLU experts (``w2(F.silu(w1(x)) * w3(x))``, ``bias=False``) in an ``nn.ModuleList``;
- a Mixtral sparse block: router jitter (``hidden_states *= torch.empty_like(...).uniform_``
  in place), a router ``nn.Linear``, ``F.softmax(..., dtype=torch.float)``, ``torch.topk`` and
  renormalized weights (``/=``), ``F.one_hot(...).permute(2, 1, 0)``, ``torch.where(mask)`` per
  expert, ``hidden[None, top_x]``, ``index_add_`` to combine; the lucidrains gate (``topk``
  over the logits, ``torch.full_like(-inf).scatter``, a softmax over the kept ones) and a
  dispatch through ``nonzero`` and boolean masks (``out[mask] += ...``), for comparison;
- a Switch / GShard capacity-limited top-1 block: experts as batched 3-D ``nn.Parameter``s
  (``nn.init.uniform_``), ``probs.max(dim=-1)``, ``torch.cumsum`` positions in each expert,
  tokens over ``math.ceil`` capacity dropped, dispatch / combine tensors of ``F.one_hot``,
  ``torch.einsum("nd,nec->ecd")`` and ``torch.bmm``; the same thing as a loop over boolean
  masks with index assignment;
- a DeepSeek-MoE block: a group-limited gate (``F.linear`` on ``.type(torch.float32)``,
  ``view(...).max(dim=-1).values``, ``topk(sorted=False)``, ``scatter_``, ``expand``,
  ``masked_fill(~mask.bool())``), a sequence-level balance loss by ``scatter_add_(...).div_``
  injected through a ``torch.autograd.Function`` that returns its input, a shared expert,
  ``repeat_interleave`` and ``y[mask] = expert(x[mask])`` into ``torch.empty_like`` in
  training, and inference's sort-based dispatch (``new_zeros``, ``argsort``, counts through
  ``.cpu().numpy()``, ``new_x[idxs] = outs``, ``.mul_``) under ``@torch.no_grad()``;
- the Switch load-balancing loss (``F.one_hot(...).float().mean(0)`` times the mean router
  probabilities), the ST-MoE router z-loss (``torch.logsumexp(...) ** 2``), expert counts by
  ``torch.bincount(minlength=...)`` and ``torch.histc``;
- LayerNorm, tied embedding / ``lm_head`` weights, GPT-2 style init through ``self.apply``
  and ``named_parameters`` (``nn.init.normal_``, ``zeros_``), decay / no-decay AdamW groups,
  a warm-up + cosine ``LambdaLR``, ``clip_grad_norm_``, ``F.cross_entropy`` on ``view(-1, V)``;
- evaluation under ``torch.no_grad()`` / ``model.eval()``, greedy and top-k sampled generation
  (``torch.topk``, ``logits[logits < v[:, [-1]]] = -float("Inf")``, ``torch.multinomial``), and
  a ``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` forward;
- fixed-weight results for the torch comparison: logits, the loss and its parts, gradients, an
  AdamW step, the routing, expert counts and the outputs of each block's dispatches.
"""
import math
from dataclasses import dataclass

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim.lr_scheduler import LambdaLR


@dataclass
class MoEConfig:
    vocab_size: int = 24
    block_size: int = 16
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 32
    n_experts: int = 4
    top_k: int = 2
    expert_hidden: int = 48
    capacity_factor: float = 1.25
    moe_kinds: tuple = ("topk", "capacity", "deepseek")
    dropout: float = 0.0
    aux_loss_coef: float = 1e-2
    z_loss_coef: float = 1e-3
    router_jitter_noise: float = 0.01


# ------------------------------------------------------------------------------------ data
N_DIGITS, STEPS = 20, [1, 3, -2, 7]  # tokens 0..19 are digits, 20..23 name the rule


def make_sequences(n, length, seed):
    """[rule, s, s + d, s + 2d, ...] (mod 20): the first digit is random, the rest follow."""
    g = torch.Generator().manual_seed(seed)
    rules = torch.randint(0, len(STEPS), (n,), generator=g)
    starts = torch.randint(0, N_DIGITS, (n,), generator=g)
    steps = torch.tensor(STEPS)[rules]
    digits = (starts[:, None] + steps[:, None] * torch.arange(length)) % N_DIGITS
    return torch.cat([(rules + N_DIGITS)[:, None], digits], dim=1)


# ----------------------------------------------------------------------------------- model
class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
        T = config.block_size
        self.register_buffer("mask", torch.triu(torch.ones(T, T), diagonal=1).bool(),
                             persistent=False)
        self.flash = hasattr(F, "scaled_dot_product_attention")

    def forward(self, x, manual=False):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash and not manual:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class SwiGLUExpert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    """Top-k routing as the Mixtral block does it: softmax, topk, renormalize, index_add_."""

    def __init__(self, config):
        super().__init__()
        self.hidden_dim = config.n_embd
        self.num_experts, self.top_k = config.n_experts, config.top_k
        self.jitter_noise = config.router_jitter_noise
        self.gate = nn.Linear(config.n_embd, config.n_experts, bias=False)
        self.experts = nn.ModuleList(
            [SwiGLUExpert(config.n_embd, config.expert_hidden) for _ in range(config.n_experts)])

    def route(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        return router_logits, routing_weights.to(hidden_states.dtype), selected_experts

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits, routing_weights, selected_experts = self.route(hidden_states)

        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype,
                                          device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        self.last_selected = selected_experts.detach()
        return final_hidden_states, router_logits

    def forward_masked(self, x):
        """The same block as lucidrains-style code writes it: the gate is a softmax over the
        top-k logits, and each expert takes its tokens through nonzero / boolean masks."""
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        logits = self.gate(x)
        top_logits, top_idx = logits.topk(self.top_k, dim=-1)
        gates = torch.full_like(logits, float("-inf")).scatter(-1, top_idx, top_logits)
        gates = gates.softmax(dim=-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            token_mask = (top_idx == i).any(dim=-1)
            rows = token_mask.nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            out[token_mask] += expert(x[rows]) * gates[rows, i].unsqueeze(-1)
        return out.reshape(shape), gates


class CapacityMoeBlock(nn.Module):
    """Switch / GShard top-1 routing with an expert capacity, the experts as batched weights."""

    def __init__(self, config):
        super().__init__()
        E, D, H = config.n_experts, config.n_embd, config.expert_hidden
        self.num_experts, self.top_k = E, 1
        self.capacity_factor = config.capacity_factor
        self.router = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.zeros(E, D, H))
        self.w3 = nn.Parameter(torch.zeros(E, D, H))
        self.w2 = nn.Parameter(torch.zeros(E, H, D))
        for w in (self.w1, self.w3):
            nn.init.uniform_(w, -1 / math.sqrt(D), 1 / math.sqrt(D))
        nn.init.uniform_(self.w2, -1 / math.sqrt(H), 1 / math.sqrt(H))

    def route(self, tokens):
        logits = self.router(tokens)
        probs = logits.softmax(dim=-1)
        gate, expert_index = probs.max(dim=-1)
        n = tokens.shape[0]
        capacity = math.ceil(self.capacity_factor * n / self.num_experts)
        mask = F.one_hot(expert_index, self.num_experts)
        position = torch.cumsum(mask, dim=0) * mask  # 1, 2, ... within each expert
        mask = mask * (position <= capacity).long()
        kept = mask.sum(dim=-1).bool()
        slot = ((position - 1) * mask).sum(dim=-1)
        return logits, gate, expert_index, mask, kept, slot, capacity

    def forward(self, x):
        B, T, D = x.shape
        tokens = x.reshape(-1, D)
        logits, gate, expert_index, mask, kept, slot, capacity = self.route(tokens)
        dispatch = mask.unsqueeze(-1) * F.one_hot(slot, capacity).unsqueeze(1)  # (n, E, C)
        dispatch = dispatch.to(tokens.dtype)
        combine = dispatch * gate[:, None, None]
        expert_inputs = torch.einsum("nd,nec->ecd", tokens, dispatch)
        hidden = F.silu(torch.bmm(expert_inputs, self.w1)) * torch.bmm(expert_inputs, self.w3)
        expert_outputs = torch.bmm(hidden, self.w2)
        out = torch.einsum("ecd,nec->nd", expert_outputs, combine)
        self.last_selected = expert_index.detach()
        self.dropped = int((~kept).sum())
        return out.view(B, T, D), logits

    def forward_loop(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        _, gate, expert_index, _, kept, _, _ = self.route(tokens)
        out = torch.zeros_like(tokens)
        for e in range(self.num_experts):
            sel = (expert_index == e) & kept
            if not sel.any():
                continue
            h = tokens[sel]
            h = (F.silu(h @ self.w1[e]) * (h @ self.w3[e])) @ self.w2[e]
            out[sel] = h * gate[sel].unsqueeze(-1)
        return out.view_as(x)


class AddAuxiliaryLoss(torch.autograd.Function):
    """Returns x unchanged; in backward, gives the auxiliary loss a gradient of one."""

    @staticmethod
    def forward(ctx, x, loss):
        assert loss.numel() == 1
        ctx.dtype = loss.dtype
        ctx.required_aux_loss = loss.requires_grad
        return x

    @staticmethod
    def backward(ctx, grad_output):
        grad_loss = None
        if ctx.required_aux_loss:
            grad_loss = torch.ones(1, dtype=ctx.dtype, device=grad_output.device)
        return grad_output, grad_loss


class MoEGate(nn.Module):
    """DeepSeek-style gate: group-limited top-k over softmax scores, a sequence-level
    balance loss made with scatter_add_."""

    def __init__(self, config, n_group=2, topk_group=1, alpha=0.01):
        super().__init__()
        self.top_k, self.n_routed_experts = config.top_k, config.n_experts
        self.n_group, self.topk_group, self.alpha = n_group, topk_group, alpha
        self.seq_aux, self.norm_topk_prob = True, True
        self.weight = nn.Parameter(torch.empty((self.n_routed_experts, config.n_embd)))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, hidden_states):
        bsz, seq_len, h = hidden_states.shape
        hidden_states = hidden_states.view(-1, h)
        logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32),
                          None)
        scores = logits.softmax(dim=-1, dtype=torch.float32)
        group_scores = scores.view(bsz * seq_len, self.n_group, -1).max(dim=-1).values
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(
            bsz * seq_len, self.n_group, self.n_routed_experts // self.n_group
        ).reshape(bsz * seq_len, -1)
        tmp_scores = scores.masked_fill(~score_mask.bool(), 0.0)
        topk_weight, topk_idx = torch.topk(tmp_scores, k=self.top_k, dim=-1, sorted=False)
        if self.top_k > 1 and self.norm_topk_prob:
            denominator = topk_weight.sum(dim=-1, keepdim=True) + 1e-20
            topk_weight = topk_weight / denominator
        self.last_scores = scores
        if self.training and self.alpha > 0.0:
            topk_idx_for_aux_loss = topk_idx.view(bsz, -1)
            scores_for_seq_aux = scores.view(bsz, seq_len, -1)
            ce = torch.zeros(bsz, self.n_routed_experts, device=hidden_states.device)
            ce.scatter_add_(1, topk_idx_for_aux_loss,
                            torch.ones(bsz, seq_len * self.top_k, device=hidden_states.device)
                            ).div_(seq_len * self.top_k / self.n_routed_experts)
            aux_loss = (ce * scores_for_seq_aux.mean(dim=1)).sum(dim=1).mean() * self.alpha
        else:
            aux_loss = None
        return topk_idx, topk_weight, aux_loss


class DeepseekMoE(nn.Module):
    """Routed experts plus an always-on shared expert; boolean-mask dispatch in training,
    sort-based (argsort) dispatch at inference."""

    def __init__(self, config, n_shared_experts=1):
        super().__init__()
        self.num_experts, self.num_experts_per_tok = config.n_experts, config.top_k
        self.top_k = config.top_k
        self.experts = nn.ModuleList(
            [SwiGLUExpert(config.n_embd, config.expert_hidden) for _ in range(config.n_experts)])
        self.gate = MoEGate(config)
        self.shared_experts = SwiGLUExpert(config.n_embd, config.expert_hidden * n_shared_experts)

    def forward(self, hidden_states):
        identity = hidden_states
        orig_shape = hidden_states.shape
        topk_idx, topk_weight, aux_loss = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        flat_topk_idx = topk_idx.view(-1)
        if self.training:
            hidden_states = hidden_states.repeat_interleave(self.num_experts_per_tok, dim=0)
            y = torch.empty_like(hidden_states)
            for i, expert in enumerate(self.experts):
                y[flat_topk_idx == i] = expert(hidden_states[flat_topk_idx == i])
            y = (y.view(*topk_weight.shape, -1) * topk_weight.unsqueeze(-1)).sum(dim=1)
            y = y.view(*orig_shape)
            y = AddAuxiliaryLoss.apply(y, aux_loss)
        else:
            y = self.moe_infer(hidden_states, topk_idx, topk_weight).view(*orig_shape)
        y = y + self.shared_experts(identity)
        self.last_selected = topk_idx.detach()
        self.aux_loss = aux_loss
        return y, None

    @torch.no_grad()
    def moe_infer(self, x, topk_ids, topk_weight):
        cnts = topk_ids.new_zeros((topk_ids.shape[0], len(self.experts)))
        cnts.scatter_(1, topk_ids, 1)
        tokens_per_expert = cnts.sum(dim=0)
        idxs = topk_ids.view(-1).argsort()
        sorted_tokens = x[idxs // topk_ids.shape[1]]
        tokens_per_expert = tokens_per_expert.cpu().numpy()
        outputs = []
        start_idx = 0
        for i, num_tokens in enumerate(tokens_per_expert):
            end_idx = start_idx + num_tokens
            if num_tokens == 0:
                continue
            expert = self.experts[i]
            tokens_for_this_expert = sorted_tokens[start_idx:end_idx]
            outputs.append(expert(tokens_for_this_expert))
            start_idx = end_idx
        outs = torch.cat(outputs, dim=0) if len(outputs) else sorted_tokens.new_empty(0)
        new_x = torch.empty_like(outs)
        new_x[idxs] = outs
        final_out = (new_x.view(*topk_ids.shape, -1).type(topk_weight.dtype)
                     .mul_(topk_weight.unsqueeze(dim=-1)).sum(dim=1).type(new_x.dtype))
        return final_out


class Block(nn.Module):
    def __init__(self, config, kind):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        kinds = {"topk": SparseMoeBlock, "capacity": CapacityMoeBlock, "deepseek": DeepseekMoE}
        self.moe = kinds[kind](config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h, router_logits = self.moe(self.ln_2(x))
        return x + h, router_logits


def load_balancing_loss(router_logits, num_experts, top_k):
    """Switch's auxiliary loss: E * sum_i (fraction of tokens to i) * (mean probability of i)."""
    routing_weights = F.softmax(router_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


def router_z_loss(router_logits):
    return (torch.logsumexp(router_logits, dim=-1) ** 2).mean()


class MoETransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config, config.moe_kinds[i % len(config.moe_kinds)])
                             for i in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight") or pn.endswith("w2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        all_router_logits = []
        for block in self.transformer.h:
            x, router_logits = block(x)
            all_router_logits.append(router_logits)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        if targets is None:
            return logits, None, None
        ce = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        # (the DeepSeek block returns no logits: its balance loss enters through its gate)
        aux = sum(load_balancing_loss(r, block.moe.num_experts, block.moe.top_k)
                  for r, block in zip(all_router_logits, self.transformer.h) if r is not None)
        z = sum(router_z_loss(r) for r in all_router_logits if r is not None)
        loss = ce + self.config.aux_loss_coef * aux + self.config.z_loss_coef * z
        return logits, loss, {"ce": ce, "aux": aux, "z": z}

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.config.block_size:]
            logits, _, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            if temperature == 0 or top_k == 1:
                idx_next = torch.argmax(probs, dim=-1, keepdim=True)
            else:
                idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# -------------------------------------------------------------------------------- training
torch.manual_seed(1337)
config = MoEConfig()
train_data = make_sequences(2048, config.block_size, seed=0)
val_data = make_sequences(256, config.block_size, seed=1)


def get_batch(split, batch_size=32):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data), (batch_size,))
    x = data[ix, :-1]
    y = data[ix, 1:]
    return x, y


model = MoETransformer(config)
n_params = sum(p.numel() for p in model.parameters())
max_iters, warmup_iters, learning_rate = 80, 8, 5e-3
optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=learning_rate,
                                       betas=(0.9, 0.95))


def lr_lambda(it):
    if it < warmup_iters:
        return (it + 1) / warmup_iters
    progress = (it - warmup_iters) / max(1, max_iters - warmup_iters)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


scheduler = LambdaLR(optimizer, lr_lambda)


@torch.no_grad()
def estimate_loss(eval_iters=2):
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss, parts = model(X, Y)
            losses[k] = parts["ce"].item()
        out[split] = losses.mean().item()
    model.train()
    return out


losses, ce_losses, aux_losses, z_losses, grad_norms, lrs = [], [], [], [], [], []
expert_counts = [torch.zeros(config.n_experts, dtype=torch.long) for _ in range(config.n_layer)]
dropped_tokens = []
eval_history = []
for it in range(max_iters):
    if it % 40 == 0 or it == max_iters - 1:
        eval_history.append((it, estimate_loss()))
    X, Y = get_batch("train")
    logits, loss, parts = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    ce_losses.append(parts["ce"].item())
    aux_losses.append(parts["aux"].item())
    z_losses.append(parts["z"].item())
    grad_norms.append(norm.item())
    lrs.append(scheduler.get_last_lr()[0])
    for layer, block in enumerate(model.transformer.h):
        expert_counts[layer] += torch.bincount(block.moe.last_selected.flatten(),
                                               minlength=config.n_experts)
        if isinstance(block.moe, CapacityMoeBlock):
            dropped_tokens.append(block.moe.dropped)
    if it % 20 == 0:
        print(f"iter {it}: loss {loss.item():.4f} aux {parts['aux'].item():.4f}")

# held-out accuracy on the digits that follow from the rule (positions 2 on)
model.eval()
with torch.no_grad():
    logits, _, _ = model(val_data[:, :-1])
    pred = logits.argmax(dim=-1)
    correct = (pred == val_data[:, 1:])[:, 1:]
    val_accuracy = correct.float().mean().item()

# generation: from [rule, first digit] continue the sequence
prompts = make_sequences(8, config.block_size, seed=2)
greedy = model.generate(prompts[:, :2], config.block_size - 2, top_k=1)
greedy_accuracy = (greedy == prompts[:, :config.block_size]).float()[:, 2:].mean().item()
torch.manual_seed(42)
sampled = model.generate(prompts[:, :2], config.block_size - 2, temperature=0.8, top_k=3)
print(f"val accuracy {val_accuracy:.3f}, greedy {greedy_accuracy:.3f}")
model.train()

# ------------------------------------------------------------ fixed weights, fixed inputs
torch.manual_seed(7)
fixed_model = MoETransformer(config)
fx, fy = train_data[:8, :-1].contiguous(), train_data[:8, 1:].contiguous()
f_logits, f_loss, f_parts = fixed_model(fx, fy)
f_loss.backward()
fixed_results = {
    "logits": f_logits.detach().clone(),
    "deepseek_aux_in_loss": fixed_model.transformer.h[2].moe.aux_loss.item(),
    "loss": f_loss.item(),
    "ce": f_parts["ce"].item(),
    "aux": f_parts["aux"].item(),
    "z": f_parts["z"].item(),
    "grads": {n: p.grad.clone() for n, p in fixed_model.named_parameters()},
}
fixed_model.eval()  # (no router jitter: the two dispatches see the same inputs)
with torch.no_grad():
    x = fixed_model.transformer.wte(fx) + fixed_model.transformer.wpe(torch.arange(16))
    block0, block1, block2 = fixed_model.transformer.h
    attn_in = block0.ln_1(x)
    fixed_results["attn_sdpa"] = block0.attn(attn_in)
    fixed_results["attn_manual"] = block0.attn(attn_in, manual=True)
    h0 = x + fixed_results["attn_sdpa"]
    moe_in = block0.ln_2(h0)
    out_where, r_logits = block0.moe(moe_in)
    out_masked, gates = block0.moe.forward_masked(moe_in)
    _, weights, selected = block0.moe.route(moe_in.view(-1, config.n_embd))
    fixed_results["topk_out"] = out_where
    fixed_results["topk_masked_out"] = out_masked
    fixed_results["router_logits"] = r_logits
    fixed_results["routing_weights"] = weights
    fixed_results["selected"] = selected
    fixed_results["gates"] = gates
    fixed_results["counts0"] = torch.bincount(selected.flatten(), minlength=config.n_experts)
    h1, _ = block0(x)
    cap_in = block1.ln_2(h1 + block1.attn(block1.ln_1(h1)))
    out_einsum, cap_logits = block1.moe(cap_in)
    fixed_results["capacity_out"] = out_einsum
    fixed_results["capacity_loop_out"] = block1.moe.forward_loop(cap_in)
    route = block1.moe.route(cap_in.view(-1, config.n_embd))
    fixed_results["capacity"] = route[6]
    fixed_results["capacity_kept"] = route[4]
    fixed_results["capacity_slot"] = route[5]
    fixed_results["counts1"] = torch.bincount(route[2], minlength=config.n_experts)
    fixed_results["dropped"] = block1.moe.dropped
    fixed_results["balance_loss"] = load_balancing_loss(r_logits, 4, 2).item()
    fixed_results["z_loss"] = router_z_loss(r_logits).item()
    h2, _ = block1(h1)
    ds_in = block2.ln_2(h2 + block2.attn(block2.ln_1(h2)))
    block2.moe.train()  # (the boolean-mask dispatch and the gate's balance loss)
    ds_train, _ = block2.moe(ds_in)
    fixed_results["deepseek_train_out"] = ds_train
    fixed_results["deepseek_aux"] = block2.moe.aux_loss.item()
    fixed_results["deepseek_selected"] = block2.moe.last_selected.sort(dim=-1).values
    fixed_results["deepseek_counts"] = torch.bincount(block2.moe.last_selected.flatten(),
                                                      minlength=config.n_experts)
    block2.moe.eval()
    ds_infer, _ = block2.moe(ds_in)
    fixed_results["deepseek_infer_out"] = ds_infer
    # the whole model in bfloat16 autocast, as a CPU user evaluates it
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        amp_logits, amp_loss, _ = fixed_model(fx, fy)
    fixed_results["amp_dtype"] = amp_logits.dtype == torch.bfloat16
    fixed_results["amp_loss"] = amp_loss.item()
    fixed_results["eval_loss"] = fixed_model(fx, fy)[1].item()
fixed_model.train()

fixed_optimizer = fixed_model.configure_optimizers(weight_decay=0.1, learning_rate=1e-2,
                                                   betas=(0.9, 0.95))
fixed_optimizer.step()
fixed_results["after_step"] = {n: p.detach().clone() for n, p in fixed_model.named_parameters()}
