# ruff: noqa: N812, N806 (the usual F alias, the paper's capital-letter set names X, H, O)
"""The Set Transformer (Lee et al., 2019) beside DeepSets, written for these tests the way
public PyTorch code of the kind writes it (the authors' ``modules.py`` with heads split and
concatenated along the batch, and re-implementations on ``nn.MultiheadAttention``; not a copy
of any of them):

- MAB / SAB / ISAB / PMA by hand: ``nn.Linear`` projections, heads by ``Tensor.split`` and
  ``torch.cat`` along dim 0, ``torch.bmm`` scores, ``torch.softmax``, a boolean set mask
  ``repeat``-ed over the heads and ``masked_fill(-inf)``; inducing points and seeds as
  ``nn.Parameter(torch.Tensor(...))`` with ``nn.init.xavier_uniform_``;
- the same blocks on ``nn.MultiheadAttention(batch_first=True, kdim=, vdim=)`` with
  ``key_padding_mask`` (post-norm ``LayerNorm(H + rFF(H))``), checked against a hand
  multi-head attention (``view``/``transpose``, ``@``) and ``F.scaled_dot_product_attention``
  with a boolean ``attn_mask``, with ``need_weights=True`` and ``average_attn_weights``
  False/True;
- DeepSets with masked sum / mean / max pooling (``masked_fill``, ``amax``, ``clamp``);
- variable-size sets padded by ``nn.utils.rnn.pad_sequence`` with ``torch.arange`` masks;
- permutation invariance (``torch.randperm``, ``torch.gather``) and equivariance checked
  numerically, padding content shown not to matter, gradients at padded slots exactly zero;
- training on two seeded tasks: the maximum of a set (L1, as in the paper) and the number of
  distinct values of a set (cross-entropy); ``Adam``, ``StepLR``, ``clip_grad_norm_``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
fixed_results = {}


# ---------------------------------------------------------------- blocks, by hand


class MAB(nn.Module):
    """Multihead attention block of the authors' code: heads stacked along the batch."""

    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
        super().__init__()
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K, mask=None):
        """``mask``: (B, N_K), True where K holds an element of the set."""
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)

        dim_split = self.dim_V // self.num_heads
        Q_ = torch.cat(Q.split(dim_split, 2), 0)
        K_ = torch.cat(K.split(dim_split, 2), 0)
        V_ = torch.cat(V.split(dim_split, 2), 0)

        scores = Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V)
        if mask is not None:
            scores = scores.masked_fill(~mask.repeat(self.num_heads, 1).unsqueeze(1),
                                        float("-inf"))
        A = torch.softmax(scores, 2)
        self.attention = A.detach()
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
        O = O if getattr(self, "ln0", None) is None else self.ln0(O)
        O = O + F.relu(self.fc_o(O))
        O = O if getattr(self, "ln1", None) is None else self.ln1(O)
        return O


class SAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, ln=False):
        super().__init__()
        self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

    def forward(self, X, mask=None):
        return self.mab(X, X, mask)


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X, mask=None):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X, mask)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=False):
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X, mask=None):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X, mask)


class SetTransformer(nn.Module):
    def __init__(self, dim_input, num_outputs, dim_output, num_inds=8, dim_hidden=32,
                 num_heads=4, ln=True):
        super().__init__()
        self.enc = nn.ModuleList([ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
                                  ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln)])
        self.pma = PMA(dim_hidden, num_heads, num_outputs, ln=ln)
        self.sab = SAB(dim_hidden, dim_hidden, num_heads, ln=ln)
        self.out = nn.Linear(dim_hidden, dim_output)

    def forward(self, X, mask=None):
        for isab in self.enc:
            X = isab(X, mask)
        return self.out(self.sab(self.pma(X, mask)))


# ------------------------------------------------- blocks on nn.MultiheadAttention


class MABTorch(nn.Module):
    """MAB(X, Y) = LayerNorm(H + rFF(H)), H = LayerNorm(X + Multihead(X, Y, Y))."""

    def __init__(self, dim_Q, dim_K, dim, num_heads):
        super().__init__()
        self.proj_q = nn.Linear(dim_Q, dim) if dim_Q != dim else nn.Identity()
        self.attn = nn.MultiheadAttention(dim, num_heads, kdim=dim_K, vdim=dim_K,
                                          batch_first=True)
        self.norm0 = nn.LayerNorm(dim)
        self.norm1 = nn.LayerNorm(dim)
        self.rff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, X, Y, key_padding_mask=None):
        X = self.proj_q(X)
        h, _ = self.attn(X, Y, Y, key_padding_mask=key_padding_mask, need_weights=False)
        H = self.norm0(X + h)
        return self.norm1(H + self.rff(H))


class ISABTorch(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds):
        super().__init__()
        self.inducing_points = nn.Parameter(torch.empty(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.inducing_points)
        self.mab0 = MABTorch(dim_out, dim_in, dim_out, num_heads)
        self.mab1 = MABTorch(dim_in, dim_out, dim_out, num_heads)

    def forward(self, X, key_padding_mask=None):
        I = self.inducing_points.expand(X.size(0), -1, -1)
        H = self.mab0(I, X, key_padding_mask)
        return self.mab1(X, H)


class PMATorch(nn.Module):
    def __init__(self, dim, num_heads, num_seeds):
        super().__init__()
        self.seeds = nn.Parameter(torch.empty(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.seeds)
        self.mab = MABTorch(dim, dim, dim, num_heads)

    def forward(self, X, key_padding_mask=None):
        return self.mab(self.seeds.expand(X.size(0), -1, -1), X, key_padding_mask)


class SetTransformerTorch(nn.Module):
    def __init__(self, dim_input, num_outputs, dim_output, num_inds=8, dim_hidden=32,
                 num_heads=4):
        super().__init__()
        self.isab = ISABTorch(dim_input, dim_hidden, num_heads, num_inds)
        self.pma = PMATorch(dim_hidden, num_heads, num_outputs)
        self.head = nn.Sequential(nn.LayerNorm(dim_hidden), nn.Linear(dim_hidden, dim_output))

    def forward(self, X, key_padding_mask=None):
        H = self.isab(X, key_padding_mask)
        return self.head(self.pma(H, key_padding_mask)).squeeze(1)


# ------------------------------------------------------------------------ DeepSets


class DeepSet(nn.Module):
    def __init__(self, dim_input, dim_output, dim_hidden=64, pool="sum"):
        super().__init__()
        self.pool = pool
        self.enc = nn.Sequential(nn.Linear(dim_input, dim_hidden), nn.ReLU(),
                                 nn.Linear(dim_hidden, dim_hidden), nn.ReLU(),
                                 nn.Linear(dim_hidden, dim_hidden))
        self.dec = nn.Sequential(nn.ReLU(), nn.Linear(dim_hidden, dim_hidden), nn.ReLU(),
                                 nn.Linear(dim_hidden, dim_output))

    def forward(self, X, mask):
        h = self.enc(X)
        m = mask.unsqueeze(-1)
        if self.pool == "sum":
            h = (h * m).sum(dim=1)
        elif self.pool == "mean":
            h = (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
        elif self.pool == "max":
            h = h.masked_fill(~m, float("-inf")).amax(dim=1)
        else:
            raise ValueError(self.pool)
        return self.dec(h)


# ---------------------------------------------------------------------------- data


def make_sets(batch_size, min_size=3, max_size=12, low=0.0, high=10.0):
    """Variable-size sets of scalars, padded with pad_sequence; mask True on elements."""
    sizes = torch.randint(min_size, max_size + 1, (batch_size,))
    sets = [torch.rand(int(n), 1) * (high - low) + low for n in sizes]
    X = pad_sequence(sets, batch_first=True, padding_value=0.0)
    mask = torch.arange(X.size(1))[None, :] < sizes[:, None]
    return X, mask, sizes


def set_max(X, mask):
    return X.squeeze(-1).masked_fill(~mask, float("-inf")).max(dim=1).values


def count_distinct(tokens, mask):
    """Number of distinct tokens per set: a one-hot presence count (padding excluded)."""
    present = F.one_hot(tokens, NUM_TOKENS) * mask[..., None]
    return (present.sum(dim=1) > 0).sum(dim=1)


NUM_TOKENS = 6


def make_token_sets(batch_size, min_size=2, max_size=8):
    sizes = torch.randint(min_size, max_size + 1, (batch_size,))
    tokens = pad_sequence([torch.randint(0, NUM_TOKENS, (int(n),)) for n in sizes],
                          batch_first=True)
    mask = torch.arange(tokens.size(1))[None, :] < sizes[:, None]
    return tokens, mask


def permute_sets(X, mask, generator=None):
    """Shuffles the elements of each set among its own slots (padding stays at the end)."""
    B, N = mask.shape
    keys = torch.rand(B, N, generator=generator).masked_fill(~mask, 2.0)
    order = keys.argsort(dim=1)
    index = order.unsqueeze(-1).expand(-1, -1, X.size(-1))
    return torch.gather(X, 1, index), torch.gather(mask, 1, order)


# --------------------------------------------- multi-head attention three ways (recorded)


def hand_multihead(q, k, v, mha, key_padding_mask=None):
    """What nn.MultiheadAttention computes, with view/transpose heads: (out, per-head attn)."""
    E, H = mha.embed_dim, mha.num_heads
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    B, L, S = q.size(0), q.size(1), k.size(1)
    qh = F.linear(q, w_q, b_q).view(B, L, H, E // H).transpose(1, 2)
    kh = F.linear(k, w_k, b_k).view(B, S, H, E // H).transpose(1, 2)
    vh = F.linear(v, w_v, b_v).view(B, S, H, E // H).transpose(1, 2)
    scores = qh @ kh.transpose(-2, -1) / math.sqrt(E // H)
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    attn = scores.softmax(dim=-1)
    out = (attn @ vh).transpose(1, 2).reshape(B, L, E)
    return mha.out_proj(out), attn


def sdpa_multihead(q, k, v, mha, key_padding_mask):
    H = mha.num_heads
    w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    B, L, S = q.size(0), q.size(1), k.size(1)
    qh = F.linear(q, w_q, b_q).reshape(B, L, H, -1).permute(0, 2, 1, 3)
    kh = F.linear(k, w_k, b_k).reshape(B, S, H, -1).permute(0, 2, 1, 3)
    vh = F.linear(v, w_v, b_v).reshape(B, S, H, -1).permute(0, 2, 1, 3)
    keep = ~key_padding_mask[:, None, None, :]  # SDPA's boolean mask: True takes part
    out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=keep)
    return mha.out_proj(out.permute(0, 2, 1, 3).flatten(2))


torch.manual_seed(1)
mha = nn.MultiheadAttention(16, 4, kdim=6, vdim=6, batch_first=True)
with torch.no_grad():
    mha.in_proj_bias.normal_(0, 0.1)  # (zero at initialisation)
X_set, set_mask, set_sizes = make_sets(3, min_size=2, max_size=7)
queries = torch.randn(3, 5, 16, requires_grad=True)
keys = (X_set * torch.linspace(-1, 1, 6)).requires_grad_()  # (3, N, 6) from scalars
pad = ~set_mask
attn_out, attn_heads = mha(queries, keys, keys, key_padding_mask=pad, need_weights=True,
                           average_attn_weights=False)
_, attn_avg = mha(queries, keys, keys, key_padding_mask=pad)  # averaged by default
hand_out, hand_heads = hand_multihead(queries, keys, keys, mha, pad)
sdpa_out = sdpa_multihead(queries, keys, keys, mha, pad)
upstream = torch.randn_like(attn_out)
mha_grads = torch.autograd.grad(attn_out, (queries, keys, mha.k_proj_weight, mha.in_proj_bias),
                                upstream)
hand_grads = torch.autograd.grad(hand_out, (queries, keys, mha.k_proj_weight,
                                            mha.in_proj_bias), upstream)
fixed_results["mha_out"] = attn_out.detach()
fixed_results["mha_attn_heads"] = attn_heads.detach()
fixed_results["mha_attn_avg"] = attn_avg.detach()
fixed_results["mha_grads"] = dict(zip(("queries", "keys", "k_proj_weight", "in_proj_bias"),
                                      mha_grads))
mha_checks = {
    "hand_out": (hand_out - attn_out).abs().max().item(),
    "hand_heads": (hand_heads - attn_heads).abs().max().item(),
    "sdpa_out": (sdpa_out - attn_out).abs().max().item(),
    "avg_is_mean": (attn_heads.mean(dim=1) - attn_avg).abs().max().item(),
    "grads": max((a - b).abs().max().item() for a, b in zip(mha_grads, hand_grads)),
}
# padded keys get no weight and no gradient; the rows still sum to one
padded_weight = attn_heads.masked_select(pad[:, None, None, :]).abs().max().item()
row_sums = attn_heads.sum(-1)
padded_key_grad = mha_grads[1][pad].abs().max().item()
# a self-attention MHA (packed in_proj_weight) with an additive float mask equal to the
# boolean key_padding_mask
self_mha = nn.MultiheadAttention(8, 2, batch_first=True, bias=True)
tokens8 = torch.randn(3, X_set.size(1), 8)
float_pad = torch.zeros(pad.shape).masked_fill(pad, float("-inf"))
self_out_bool, self_w_bool = self_mha(tokens8, tokens8, tokens8, key_padding_mask=pad,
                                      average_attn_weights=False)
self_out_float, _ = self_mha(tokens8, tokens8, tokens8, key_padding_mask=float_pad)
self_hand, _ = hand_multihead(tokens8, tokens8, tokens8, self_mha, pad)
fixed_results["self_mha_out"] = self_out_bool.detach()
fixed_results["self_mha_attn"] = self_w_bool.detach()
mha_checks["float_mask"] = (self_out_float - self_out_bool).abs().max().item()
mha_checks["self_hand"] = (self_hand - self_out_bool).abs().max().item()

# ---------------------------------------- the hand Set Transformer, fixed weights (recorded)

torch.manual_seed(2)
model = SetTransformer(dim_input=1, num_outputs=1, dim_output=1, num_inds=4, dim_hidden=16,
                       num_heads=4)
X, mask, sizes = make_sets(4, min_size=3, max_size=9)
X.requires_grad_()
out = model(X, mask).squeeze(-1).squeeze(-1)
loss = F.l1_loss(out, set_max(X.detach(), mask))
loss.backward()
fixed_results["st_out"] = out.detach()
fixed_results["st_loss"] = loss.item()
fixed_results["st_grads"] = {
    "enc.0.I": model.enc[0].I.grad, "pma.S": model.pma.S.grad,
    "enc.1.mab0.fc_k.weight": model.enc[1].mab0.fc_k.weight.grad,
    "sab.mab.ln1.weight": model.sab.mab.ln1.weight.grad, "out.bias": model.out.bias.grad,
    "X": X.grad.clone(),
}
fixed_results["st_pma_attention"] = model.pma.mab.attention  # (heads * B, 1, N)
padded_input_grad = X.grad[~mask].abs().max().item()
X = X.detach()

with torch.no_grad():
    # invariance: elements shuffled within each set, and garbage in the padded slots
    gen = torch.Generator().manual_seed(5)
    X_perm, mask_perm = permute_sets(X, mask, generator=gen)
    garbage = torch.where(mask[..., None], X, torch.full_like(X, 1e3))
    out_perm = model(X_perm, mask_perm).squeeze(-1).squeeze(-1)
    out_garbage = model(garbage, mask).squeeze(-1).squeeze(-1)
    # a set alone equals the set in a padded batch
    n0 = int(sizes[0])
    out_alone = model(X[:1, :n0], None).squeeze()
    # equivariance of SAB and ISAB on full sets (no padding)
    full = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    sab_out = model.sab(full)
    isab_out = model.enc[1](full)
    invariance = {
        "permuted": (out_perm - out).abs().max().item(),
        "padding_content": (out_garbage - out).abs().max().item(),
        "alone": abs(out_alone.item() - out[0].item()),
        "sab_equivariant": (model.sab(full[:, perm]) - sab_out[:, perm]).abs().max().item(),
        "isab_equivariant": (model.enc[1](full[:, perm]) - isab_out[:, perm]).abs().max().item(),
    }
fixed_results["sab_out"] = sab_out
fixed_results["isab_out"] = isab_out

# ------------------------------------------------- DeepSets pooling on fixed weights (recorded)

torch.manual_seed(3)
pool_outputs, pool_grads = {}, {}
for pool in ("sum", "mean", "max"):
    torch.manual_seed(3)
    ds = DeepSet(1, 1, dim_hidden=8, pool=pool)
    y = ds(X, mask).squeeze(-1)
    y.sum().backward()
    pool_outputs[pool] = y.detach()
    pool_grads[pool] = ds.enc[0].weight.grad.clone()
fixed_results["deepsets"] = pool_outputs
fixed_results["deepsets_grads"] = pool_grads
# ties in max pooling: amax shares the gradient among the tied entries, max(dim) does not
tied = torch.tensor([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, 9.0]], requires_grad=True)
tie_mask = torch.tensor([[True, True, True, False], [True, True, True, False]])
pooled = tied.masked_fill(~tie_mask, float("-inf")).amax(dim=1)
(tie_grad_amax,) = torch.autograd.grad(pooled.sum(), tied)
fixed_results["tie_grad_amax"] = tie_grad_amax
values, indices = tied.masked_fill(~tie_mask, float("-inf")).max(dim=1)
(tie_grad_max,) = torch.autograd.grad(values.sum(), tied)
fixed_results["tie_grad_max"] = tie_grad_max
fixed_results["tie_max_indices"] = indices

# ------------------------------------------------- the MHA Set Transformer, fixed (recorded)

torch.manual_seed(4)
mha_model = SetTransformerTorch(dim_input=1, num_outputs=1, dim_output=1, num_inds=4,
                                dim_hidden=16, num_heads=2)
mha_model.eval()
y_mha = mha_model(X, key_padding_mask=~mask).squeeze(-1)
y_mha.pow(2).mean().backward()
fixed_results["mha_st_out"] = y_mha.detach()
fixed_results["mha_st_grads"] = {
    "inducing_points": mha_model.isab.inducing_points.grad,
    "seeds": mha_model.pma.seeds.grad,
    "isab.mab0.attn.k_proj_weight": mha_model.isab.mab0.attn.k_proj_weight.grad,
    "isab.mab1.attn.in_proj_weight": mha_model.isab.mab1.attn.in_proj_weight.grad,
}
mha_model.zero_grad()
with torch.no_grad():
    X_perm, mask_perm = permute_sets(X, mask, generator=torch.Generator().manual_seed(7))
    mha_invariance = (mha_model(X_perm, ~mask_perm).squeeze(-1) - y_mha).abs().max().item()
    mha_padding = (mha_model(garbage, ~mask).squeeze(-1) - y_mha).abs().max().item()
    # with no_grad in eval, torch may take its fused path: the same numbers
    y_mha_nograd = mha_model(X, ~mask).squeeze(-1)
mha_nograd_difference = (y_mha_nograd - y_mha.detach()).abs().max().item()


# ------------------------------------------------------------------------ training


def train_max(model, steps, lr, batch_size=32, seed=10):
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=steps // 2, gamma=0.5)
    losses = []
    for _ in range(steps):
        X, mask, _ = make_sets(batch_size)
        target = set_max(X, mask)
        if isinstance(model, SetTransformerTorch):
            pred = model(X, ~mask).squeeze(-1)
        else:
            pred = model(X, mask).reshape(-1)
        loss = F.l1_loss(pred, target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


def evaluate_max(model, seed=99):
    torch.manual_seed(seed)
    X, mask, _ = make_sets(128)
    model.eval()
    with torch.no_grad():
        if isinstance(model, SetTransformerTorch):
            pred = model(X, ~mask).squeeze(-1)
        else:
            pred = model(X, mask).reshape(-1)
    model.train()
    return F.l1_loss(pred, set_max(X, mask)).item()


steps = 120
torch.manual_seed(20)
max_models = {
    "set_transformer": SetTransformer(1, 1, 1, num_inds=4, dim_hidden=16, num_heads=4),
    "set_transformer_mha": SetTransformerTorch(1, 1, 1, num_inds=4, dim_hidden=16,
                                               num_heads=2),
    "deepsets_sum": DeepSet(1, 1, dim_hidden=32, pool="sum"),
    "deepsets_max": DeepSet(1, 1, dim_hidden=32, pool="max"),
}
max_losses, max_eval = {}, {}
for name, m in max_models.items():
    max_losses[name] = train_max(m, steps, lr=3e-3)
    max_eval[name] = evaluate_max(m)
    print(f"max regression {name}: {max_losses[name][0]:.3f} -> "
          f"{sum(max_losses[name][-10:]) / 10:.3f}, eval L1 {max_eval[name]:.3f}")


# count of distinct tokens: a token embedding, the hand Set Transformer, cross-entropy
class DistinctCounter(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.embed = nn.Embedding(NUM_TOKENS, dim)
        self.st = SetTransformer(dim, 1, NUM_TOKENS + 1, num_inds=4, dim_hidden=dim,
                                 num_heads=4)

    def forward(self, tokens, mask):
        return self.st(self.embed(tokens), mask).squeeze(1)


torch.manual_seed(30)
counter = DistinctCounter()
count_optimizer = torch.optim.Adam(counter.parameters(), lr=5e-3)
count_losses = []
for _ in range(120):
    tokens, tmask = make_token_sets(32)
    logits = counter(tokens, tmask)
    loss = F.cross_entropy(logits, count_distinct(tokens, tmask))
    count_optimizer.zero_grad()
    loss.backward()
    count_optimizer.step()
    count_losses.append(loss.item())
torch.manual_seed(31)
tokens, tmask = make_token_sets(256)
with torch.no_grad():
    count_accuracy = (counter(tokens, tmask).argmax(-1) == count_distinct(tokens, tmask)) \
        .float().mean().item()
    majority = torch.bincount(count_distinct(tokens, tmask), minlength=NUM_TOKENS + 1)
majority_accuracy = (majority.max() / majority.sum()).item()

print(f"distinct count: {count_losses[0]:.3f} -> {sum(count_losses[-10:]) / 10:.3f}, "
      f"accuracy {count_accuracy:.3f} (majority {majority_accuracy:.3f}); "
      f"checks {mha_checks}, invariance {invariance}")
