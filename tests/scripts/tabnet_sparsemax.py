# ruff: noqa: N801, N802, N803, N806, N812 (pytorch-tabnet's names: GLU_Block, M_loss, the F alias)
"""TabNet with sparsemax and entmax-1.5 attention, written for these tests the way
dreamquark-ai's pytorch-tabnet (``sparsemax.py``, ``tab_network.py``) and the entmax package
write torch code (not a copy of either):

- ``SparsemaxFunction`` and ``Entmax15Function`` as ``torch.autograd.Function`` subclasses:
  the threshold from ``torch.sort(descending=True)``, ``cumsum``, ``gather`` of the support
  size, ``torch.clamp``; ``ctx.save_for_backward`` and hand-written backward formulas;
  ``nn.Module`` wrappers (``Sparsemax(dim)``, ``Entmax15(dim)``);
- ``GBN`` (ghost batch norm: ``x.chunk`` into virtual batches, each through one
  ``nn.BatchNorm1d``, ``torch.cat``), ``GLU_Layer`` (``Linear`` -> ``GBN`` -> ``x[:, :d] *
  sigmoid(x[:, d:])``) and the same through ``F.glu``, ``GLU_Block`` with ``sqrt(0.5)``
  residual scaling, shared and step-dependent ``FeatTransformer``\\ s;
- ``AttentiveTransformer`` (``Linear`` -> ``GBN`` -> ``* prior`` -> sparsemax), the prior update
  ``prior * (gamma - M)``, the sparsity regulariser (mean entropy of the masks, ``+ 1e-15``),
  a group attention matrix, ``forward_masks`` and feature importances through
  ``torch.einsum``; an embedding of a categorical column (``nn.Embedding``, ``torch.cat``);
  xavier initialisation with TabNet's gains;
- training on seeded synthetic tabular data: a classifier (sparsemax masks,
  ``F.cross_entropy``) and a regressor (entmax masks, ``F.mse_loss``), ``Adam``,
  ``StepLR``, ``clip_grad_norm_``, ``lambda_sparse``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.autograd import Function

torch.manual_seed(0)
np.random.seed(0)
fixed_results = {}


# --------------------------------------------------------------------- sparsemax, entmax


def _make_ix_like(X, dim):
    """1, 2, ..., d shaped to broadcast along ``dim``."""
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


class SparsemaxFunction(Function):
    """sparsemax(z) = argmin_p ||p - z||^2 over the simplex (Martins & Astudillo, 2016)."""

    @staticmethod
    def forward(ctx, X, dim=-1):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val  # shift invariance, as in softmax
        tau, supp_size = SparsemaxFunction._threshold_and_support(X, dim=dim)
        output = torch.clamp(X - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None

    @staticmethod
    def _threshold_and_support(X, dim=-1):
        X_srt, _ = torch.sort(X, descending=True, dim=dim)
        X_cumsum = X_srt.cumsum(dim) - 1
        rhos = _make_ix_like(X, dim)
        support = rhos * X_srt > X_cumsum
        support_size = support.sum(dim=dim).unsqueeze(dim)
        tau = X_cumsum.gather(dim, support_size - 1)
        tau /= support_size.to(X.dtype)
        return tau, support_size


class Entmax15Function(Function):
    """1.5-entmax (Peters et al., 2019): the exact sort-based threshold."""

    @staticmethod
    def forward(ctx, X, dim=-1):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = (X - max_val) / 2
        tau_star, _ = Entmax15Function._threshold_and_support(X, dim)
        Y = torch.clamp(X - tau_star, min=0) ** 2
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY):
        (Y,) = ctx.saved_tensors
        gppr = Y.sqrt()  # = 1 / (p'') on the support
        dX = dY * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        return dX, None

    @staticmethod
    def _threshold_and_support(X, dim=-1):
        Xsrt, _ = torch.sort(X, descending=True, dim=dim)
        rho = _make_ix_like(X, dim)
        mean = Xsrt.cumsum(dim) / rho
        mean_sq = (Xsrt ** 2).cumsum(dim) / rho
        ss = rho * (mean_sq - mean ** 2)
        delta = (1 - ss) / rho
        delta_nz = torch.clamp(delta, 0)
        tau = mean - torch.sqrt(delta_nz)
        support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
        tau_star = tau.gather(dim, support_size - 1)
        return tau_star, support_size


sparsemax = SparsemaxFunction.apply
entmax15 = Entmax15Function.apply


class Sparsemax(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, input):
        return sparsemax(input, self.dim)


class Entmax15(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, input):
        return entmax15(input, self.dim)


def sparsemax_autograd(z, dim=-1):
    """The same map by differentiable ops only (the threshold through a sort and a gather):
    autograd's gradient should equal the hand-written backward."""
    z = z - z.amax(dim=dim, keepdim=True).detach()
    z_srt = torch.sort(z, dim=dim, descending=True).values
    k = torch.arange(1, z.size(dim) + 1, dtype=z.dtype)
    shape = [1] * z.dim()
    shape[dim] = -1
    k = k.view(shape)
    cssv = z_srt.cumsum(dim)
    k_z = (1 + k * z_srt > cssv).sum(dim=dim, keepdim=True)
    tau = (cssv.gather(dim, k_z - 1) - 1) / k_z.to(z.dtype)
    return F.relu(z - tau)


# ----------------------------------------------------------------------- TabNet blocks


def initialize_non_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(4 * input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


def initialize_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


class GBN(nn.Module):
    """Ghost batch normalisation: batch statistics over virtual batches."""

    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super().__init__()
        self.input_dim = input_dim
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        res = [self.bn(x_) for x_ in chunks]
        return torch.cat(res, dim=0)


class GLU_Layer(nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02,
                 use_F_glu=False):
        super().__init__()
        self.output_dim = output_dim
        self.use_F_glu = use_F_glu
        if fc:
            self.fc = fc
        else:
            self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
        initialize_glu(self.fc, input_dim, 2 * output_dim)
        self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        x = self.fc(x)
        x = self.bn(x)
        if self.use_F_glu:
            return F.glu(x, dim=-1)
        return torch.mul(x[:, :self.output_dim], torch.sigmoid(x[:, self.output_dim:]))


class GLU_Block(nn.Module):
    """n_glu GLU layers; all but the first of a shared block add a sqrt(0.5)-scaled residual."""

    def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None,
                 virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.first = first
        self.shared_layers = shared_layers
        self.n_glu = n_glu
        self.glu_layers = nn.ModuleList()
        params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
        fc = shared_layers[0] if shared_layers else None
        self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc, **params))
        for glu_id in range(1, self.n_glu):
            fc = shared_layers[glu_id] if shared_layers else None
            self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc, **params))

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
        if self.first:  # the first layer of the block has no residual
            x = self.glu_layers[0](x)
            layers_left = range(1, self.n_glu)
        else:
            layers_left = range(self.n_glu)
        for glu_id in layers_left:
            x = torch.add(x, self.glu_layers[glu_id](x))
            x = x * scale
        return x


class FeatTransformer(nn.Module):
    def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent,
                 virtual_batch_size=128, momentum=0.02):
        super().__init__()
        params = {"n_glu": n_glu_independent, "virtual_batch_size": virtual_batch_size,
                  "momentum": momentum}
        if shared_layers is None:
            self.shared = nn.Identity()
            is_first = True
        else:
            self.shared = GLU_Block(input_dim, output_dim, first=True,
                                    shared_layers=shared_layers, n_glu=len(shared_layers),
                                    virtual_batch_size=virtual_batch_size, momentum=momentum)
            is_first = False
        if n_glu_independent == 0:
            self.specifics = nn.Identity()
        else:
            spec_input_dim = input_dim if is_first else output_dim
            self.specifics = GLU_Block(spec_input_dim, output_dim, first=is_first, **params)

    def forward(self, x):
        x = self.shared(x)
        return self.specifics(x)


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, virtual_batch_size=128, momentum=0.02,
                 mask_type="sparsemax"):
        super().__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        initialize_non_glu(self.fc, input_dim, group_dim)
        self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
        if mask_type == "sparsemax":
            self.selector = Sparsemax(dim=-1)
        elif mask_type == "entmax":
            self.selector = Entmax15(dim=-1)
        else:
            raise NotImplementedError("Please choose either sparsemax or entmax as masktype")

    def forward(self, priors, processed_feat):
        x = self.fc(processed_feat)
        x = self.bn(x)
        x = torch.mul(x, priors)
        return self.selector(x)


class TabNetEncoder(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3,
                 n_independent=2, n_shared=2, epsilon=1e-15, virtual_batch_size=128,
                 momentum=0.02, mask_type="sparsemax", group_attention_matrix=None):
        super().__init__()
        self.input_dim, self.output_dim = input_dim, output_dim
        self.n_d, self.n_a, self.n_steps = n_d, n_a, n_steps
        self.gamma, self.epsilon = gamma, epsilon
        self.virtual_batch_size = virtual_batch_size
        self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)
        if group_attention_matrix is None:
            group_attention_matrix = torch.eye(self.input_dim)
        # (a buffer: it follows .to() and .double() and is saved in the state_dict)
        self.register_buffer("group_attention_matrix", group_attention_matrix)
        self.attention_dim = self.group_attention_matrix.shape[0]

        if n_shared > 0:
            shared_feat_transform = nn.ModuleList()
            for i in range(n_shared):
                fan_in = self.input_dim if i == 0 else n_d + n_a
                shared_feat_transform.append(nn.Linear(fan_in, 2 * (n_d + n_a), bias=False))
        else:
            shared_feat_transform = None

        params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
        self.initial_splitter = FeatTransformer(self.input_dim, n_d + n_a,
                                                shared_feat_transform, n_independent, **params)
        self.feat_transformers = nn.ModuleList()
        self.att_transformers = nn.ModuleList()
        for _ in range(n_steps):
            self.feat_transformers.append(FeatTransformer(
                self.input_dim, n_d + n_a, shared_feat_transform, n_independent, **params))
            self.att_transformers.append(AttentiveTransformer(
                n_a, self.attention_dim, mask_type=mask_type, **params))

    def forward(self, x, prior=None):
        x = self.initial_bn(x)
        bs = x.shape[0]
        if prior is None:
            prior = torch.ones((bs, self.attention_dim)).to(x.device)
        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d:]
        steps_output = []
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_feature_level = torch.matmul(M, self.group_attention_matrix)
            M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
            prior = torch.mul(self.gamma - M, prior)  # features used now are less available
            masked_x = torch.mul(M_feature_level, x)
            out = self.feat_transformers[step](masked_x)
            d = nn.ReLU()(out[:, :self.n_d])
            steps_output.append(d)
            att = out[:, self.n_d:]
        M_loss /= self.n_steps
        return steps_output, M_loss

    def forward_masks(self, x):
        x = self.initial_bn(x)
        bs = x.shape[0]
        prior = torch.ones((bs, self.attention_dim)).to(x.device)
        M_explain = torch.zeros(x.shape).to(x.device)
        att = self.initial_splitter(x)[:, self.n_d:]
        masks = {}
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_feature_level = torch.matmul(M, self.group_attention_matrix)
            masks[step] = M_feature_level
            prior = torch.mul(self.gamma - M, prior)
            masked_x = torch.mul(M_feature_level, x)
            out = self.feat_transformers[step](masked_x)
            d = nn.ReLU()(out[:, :self.n_d])
            step_importance = torch.sum(d, axis=1)
            M_explain += torch.einsum("bf,b->bf", M_feature_level, step_importance)
            att = out[:, self.n_d:]
        return M_explain, masks


class EmbeddingGenerator(nn.Module):
    """Categorical columns through nn.Embedding, numeric ones passed through, concatenated
    in the original column order."""

    def __init__(self, input_dim, cat_dims, cat_idxs, cat_emb_dims):
        super().__init__()
        self.embeddings = nn.ModuleList(
            nn.Embedding(n, d) for n, d in zip(cat_dims, cat_emb_dims))
        self.continuous_idx = torch.ones(input_dim, dtype=torch.bool)
        self.continuous_idx[cat_idxs] = 0  # (an empty list when no column is categorical)
        self.cat_idxs = cat_idxs
        self.post_embed_dim = int(input_dim + sum(cat_emb_dims) - len(cat_emb_dims))

    def forward(self, x):
        cols, cat_feat_counter = [], 0
        for feat_init_idx, is_continuous in enumerate(self.continuous_idx.tolist()):
            if is_continuous:
                cols.append(x[:, feat_init_idx].float().view(-1, 1))
            else:
                cols.append(self.embeddings[cat_feat_counter](x[:, feat_init_idx].long()))
                cat_feat_counter += 1
        return torch.cat(cols, dim=1)


class TabNet(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3,
                 cat_idxs=(), cat_dims=(), cat_emb_dim=1, n_independent=2, n_shared=2,
                 virtual_batch_size=128, momentum=0.02, mask_type="sparsemax",
                 grouped_features=None):
        super().__init__()
        self.embedder = EmbeddingGenerator(input_dim, list(cat_dims), list(cat_idxs),
                                           [cat_emb_dim] * len(cat_dims))
        self.post_embed_dim = self.embedder.post_embed_dim
        group_matrix = create_group_matrix(grouped_features or [], self.post_embed_dim)
        self.encoder = TabNetEncoder(self.post_embed_dim, output_dim, n_d=n_d, n_a=n_a,
                                     n_steps=n_steps, gamma=gamma, n_independent=n_independent,
                                     n_shared=n_shared, virtual_batch_size=virtual_batch_size,
                                     momentum=momentum, mask_type=mask_type,
                                     group_attention_matrix=group_matrix)
        self.final_mapping = nn.Linear(n_d, output_dim, bias=False)
        initialize_non_glu(self.final_mapping, n_d, output_dim)

    def forward(self, x):
        x = self.embedder(x)
        steps_output, M_loss = self.encoder(x)
        res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
        return self.final_mapping(res), M_loss

    def forward_masks(self, x):
        return self.encoder.forward_masks(self.embedder(x))


def create_group_matrix(list_groups, input_dim):
    """(n_groups, input_dim): each row spreads a group's attention evenly over its features;
    features in no group are their own group."""
    if len(list_groups) == 0:
        return torch.eye(input_dim)
    n_groups = input_dim - int(np.sum([len(g) - 1 for g in list_groups]))
    group_matrix = torch.zeros((n_groups, input_dim))
    remaining = list(range(input_dim))
    current = 0
    for group in list_groups:
        for elem_idx in group:
            group_matrix[current, elem_idx] = 1 / len(group)
            remaining.remove(elem_idx)
        current += 1
    for idx in remaining:
        group_matrix[current, idx] = 1
        current += 1
    return group_matrix


def feature_importances(model, X):
    """pytorch-tabnet's explain: the step-weighted masks summed over rows, normalised."""
    model.eval()
    with torch.no_grad():
        M_explain, masks = model.forward_masks(X)
    importances = M_explain.sum(dim=0)
    return importances / importances.sum(), masks


# -------------------------------------------------------------------------------- data

N_NUM = 8
CAT_LEVELS = 4


def make_tabular(n, generator):
    """Eight numeric columns and one categorical column (index 8). Only x0, x1, x2 and the
    category matter: the class is the sign of a nonlinear score; the regression target is
    smooth in the same columns."""
    num = torch.randn(n, N_NUM, generator=generator)
    cat = torch.randint(0, CAT_LEVELS, (n,), generator=generator)
    offsets = torch.tensor([-1.0, -0.3, 0.4, 1.2])[cat]
    score = num[:, 0] * num[:, 1] + torch.sin(2 * num[:, 2]) + offsets
    y_class = (score > 0).long()
    y_reg = (0.8 * num[:, 0] - 0.5 * num[:, 1] ** 2 + offsets + 0.5).unsqueeze(1)
    X = torch.cat([num, cat.float().unsqueeze(1)], dim=1)
    return X, y_class, y_reg


# -------------------------------------------------- sparsemax / entmax checks (recorded)

z = torch.tensor([[1.5, 0.3, 1.2, -2.0, 0.0],
                  [0.1, 0.1, 0.1, 0.1, 0.1],
                  [3.0, -1.0, -1.0, 0.5, 2.6]])
p_sparse = sparsemax(z, -1)
p_entmax = entmax15(z, -1)
fixed_results["sparsemax"] = p_sparse
fixed_results["entmax15"] = p_entmax
sparse_row_sums = p_sparse.sum(dim=-1)
entmax_row_sums = p_entmax.sum(dim=-1)
sparse_zero_counts = (p_sparse == 0).sum(dim=-1).tolist()
entmax_zero_counts = (p_entmax == 0).sum(dim=-1).tolist()
fixed_results["sparsemax_module_dim0"] = Sparsemax(dim=0)(z)
fixed_results["entmax_module_dim0"] = Entmax15(dim=0)(z)

# hand-written backward vs autograd through the sort/gather form, float64
z64 = torch.randn(6, 7, dtype=torch.float64, requires_grad=True)
upstream = torch.randn(6, 7, dtype=torch.float64)
out_custom = sparsemax(z64, -1)
(grad_custom,) = torch.autograd.grad(out_custom, z64, upstream)
out_auto = sparsemax_autograd(z64, -1)
(grad_auto,) = torch.autograd.grad(out_auto, z64, upstream)
sparsemax_custom_vs_autograd = (
    (out_custom - out_auto).abs().max().item(), (grad_custom - grad_auto).abs().max().item())
fixed_results["sparsemax_grad"] = grad_custom
fixed_results["entmax_grad"] = torch.autograd.grad(entmax15(z64, -1), z64, upstream)[0]
# the gradient sums to zero along the simplex dimension and vanishes off the support
sparse_grad_row_sums = grad_custom.sum(dim=-1)
grad_off_support = grad_custom[out_custom.detach() == 0].abs().max().item()

# finite differences (inputs with well-separated entries: no ties at the support's edge)
gc_input = (torch.randn(3, 5, dtype=torch.float64) * 2).requires_grad_()
gradcheck_results = {
    "sparsemax": torch.autograd.gradcheck(lambda t: sparsemax(t, -1), (gc_input,)),
    "sparsemax_dim0": torch.autograd.gradcheck(lambda t: sparsemax(t, 0), (gc_input,)),
    "entmax15": torch.autograd.gradcheck(lambda t: entmax15(t, -1), (gc_input,)),
    "entmax15_dim0": torch.autograd.gradcheck(lambda t: entmax15(t, 0), (gc_input,)),
}
# scaled up, sparsemax and entmax become the one-hot argmax (rows without ties)
distinct = z[[0, 2]] * 100
one_hot_argmax = F.one_hot(distinct.argmax(-1), 5).float()
sharp_is_argmax = (torch.equal(sparsemax(distinct, -1), one_hot_argmax)
                   and torch.equal(entmax15(distinct, -1), one_hot_argmax))
# small inputs spread mass: sparsemax of a constant row is uniform
uniform_row = p_sparse[1]

# ghost batch norm: each virtual batch normalised by its own statistics
gbn = GBN(4, virtual_batch_size=5, momentum=0.1)
xg = torch.randn(13, 4) * 3 + 1
with torch.no_grad():  # (training mode: the running statistics still update)
    yg = gbn(xg)
chunk_sizes = [len(c) for c in xg.chunk(int(np.ceil(13 / 5)), 0)]  # 5, 5, 3
chunk_means = torch.stack([c.mean(0) for c in yg.split(chunk_sizes)])
chunk_vars = torch.stack([c.var(0, unbiased=False) for c in yg.split(chunk_sizes)])
fixed_results["gbn_out"] = yg
fixed_results["gbn_running_mean"] = gbn.bn.running_mean.clone()
fixed_results["gbn_running_var"] = gbn.bn.running_var.clone()
gbn_batches_tracked = int(gbn.bn.num_batches_tracked)

# GLU by slicing vs F.glu on the same weights
glu_manual = GLU_Layer(6, 5, virtual_batch_size=16)
glu_f = GLU_Layer(6, 5, virtual_batch_size=16, use_F_glu=True)
glu_f.load_state_dict(glu_manual.state_dict())
xglu = torch.randn(16, 6)
with torch.no_grad():
    glu_agree = torch.allclose(glu_manual(xglu), glu_f(xglu), atol=1e-6)
    fixed_results["glu"] = glu_manual(xglu)

group_matrix = create_group_matrix([[3, 4, 5]], N_NUM + 1)
fixed_results["group_matrix"] = group_matrix

# ----------------------------------------------------- TabNet on fixed weights (recorded)

gen = torch.Generator().manual_seed(1234)
X_train, yc_train, yr_train = make_tabular(1024, gen)
X_valid, yc_valid, yr_valid = make_tabular(512, gen)

torch.manual_seed(1)
clf = TabNet(N_NUM + 1, 2, n_d=8, n_a=8, n_steps=3, gamma=1.3, cat_idxs=[N_NUM],
             cat_dims=[CAT_LEVELS], cat_emb_dim=3, n_independent=2, n_shared=2,
             virtual_batch_size=64, momentum=0.02, mask_type="sparsemax")
# the same model in float64 (a deep copy): the chain of batch norms and sparsemax supports
# amplifies float32 rounding, float64 leaves the algorithm to compare
clf64 = copy.deepcopy(clf).double()
clf.train()
xb, yb = X_train[:128], yc_train[:128]
logits, M_loss = clf(xb)
lambda_sparse = 1e-3
loss = F.cross_entropy(logits, yb) - lambda_sparse * M_loss
loss.backward()
fixed_results["clf_logits"] = logits.detach()
fixed_results["clf_M_loss"] = M_loss.item()
fixed_results["clf_loss"] = loss.item()
fixed_results["clf_grads"] = {n: clf.get_parameter(n).grad.clone() for n in (
    "encoder.att_transformers.0.fc.weight", "encoder.att_transformers.2.bn.bn.weight",
    "encoder.feat_transformers.1.specifics.glu_layers.1.fc.weight",
    "encoder.initial_splitter.shared.glu_layers.0.fc.weight",
    "embedder.embeddings.0.weight", "final_mapping.weight")}
shared_fc_is_shared = (clf.encoder.feat_transformers[0].shared.glu_layers[0].fc
                       is clf.encoder.initial_splitter.shared.glu_layers[0].fc)
n_params = sum(p.numel() for p in clf.parameters() if p.requires_grad)
clf.zero_grad()

logits64, M_loss64 = clf64(xb)
loss64 = F.cross_entropy(logits64, yb) - lambda_sparse * M_loss64
loss64.backward()
fixed_results["clf64_logits"] = logits64.detach()
fixed_results["clf64_loss"] = loss64.item()
fixed_results["clf64_grads"] = {n: p.grad.clone() for n, p in clf64.named_parameters()}
clf64_dtypes = {str(t.dtype) for t in clf64.state_dict().values() if t.is_floating_point()}
optimizer64 = torch.optim.Adam(clf64.parameters(), lr=2e-2)
clf64_losses = []
for step in range(6):
    idx = torch.arange(step * 128, (step + 1) * 128)
    output, M_loss64 = clf64(X_train[idx])
    loss64 = F.cross_entropy(output, yc_train[idx]) - lambda_sparse * M_loss64
    optimizer64.zero_grad()
    loss64.backward()
    nn.utils.clip_grad_norm_(clf64.parameters(), 1.0)
    optimizer64.step()
    clf64_losses.append(loss64.item())
fixed_results["clf64_state"] = {k: v.clone() for k, v in clf64.state_dict().items()
                                if k.endswith(("running_mean", "final_mapping.weight"))}

# masks of the untrained model: each row of each step's mask is on the simplex
_, masks0 = feature_importances(clf, X_valid[:64])
mask_row_sums = torch.stack([m.sum(dim=1) for m in masks0.values()])
mask_sparsity_untrained = float(np.mean([(m == 0).float().mean().item()
                                         for m in masks0.values()]))

# --------------------------------------------------------------------- training


def train_tabnet(model, X, y, loss_fn, epochs, batch_size, lr, gen, clip=1.0):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.8)
    losses, step_losses = [], []
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(X.shape[0], generator=gen)
        epoch_loss = 0.0
        for i in range(0, X.shape[0], batch_size):
            idx = perm[i:i + batch_size]
            output, M_loss = model(X[idx])
            loss = loss_fn(output, y[idx]) - lambda_sparse * M_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            epoch_loss += loss.item() * len(idx)
            step_losses.append(loss.item())
        scheduler.step()
        losses.append(epoch_loss / X.shape[0])
    return losses, step_losses


train_gen = torch.Generator().manual_seed(7)
clf_losses, clf_step_losses = train_tabnet(clf, X_train, yc_train, F.cross_entropy, epochs=25,
                          batch_size=256, lr=2e-2, gen=train_gen)
clf.eval()
with torch.no_grad():
    valid_logits, _ = clf(X_valid)
    valid_probs = torch.softmax(valid_logits, dim=1)
clf_accuracy = (valid_probs.argmax(1) == yc_valid).float().mean().item()
clf_importances, clf_masks = feature_importances(clf, X_valid)

torch.manual_seed(2)
reg = TabNet(N_NUM + 1, 1, n_d=8, n_a=8, n_steps=2, gamma=1.5, cat_idxs=[N_NUM],
             cat_dims=[CAT_LEVELS], cat_emb_dim=2, n_independent=1, n_shared=1,
             virtual_batch_size=64, mask_type="entmax")
reg_losses, reg_step_losses = train_tabnet(reg, X_train, yr_train, F.mse_loss, epochs=12,
                                           batch_size=256, lr=2e-2, gen=train_gen)
reg.eval()
with torch.no_grad():
    reg_pred, _ = reg(X_valid)
reg_valid_mse = F.mse_loss(reg_pred, yr_valid).item()
target_variance = yr_valid.var(unbiased=False).item()
reg_importances, reg_masks = feature_importances(reg, X_valid)

# the grouped-features variant: x3, x4, x5 share one attention weight
torch.manual_seed(3)
grouped = TabNet(N_NUM + 1, 2, n_d=4, n_a=4, n_steps=2, grouped_features=[[3, 4, 5]],
                 virtual_batch_size=64)
grouped.eval()
_, grouped_masks = feature_importances(grouped, X_valid[:32])
grouped_equal = all(torch.allclose(m[:, 3], m[:, 4]) and torch.allclose(m[:, 4], m[:, 5])
                    for m in grouped_masks.values())
grouped_attention_dim = grouped.encoder.attention_dim

print("clf losses", [round(v, 4) for v in clf_losses], "acc", clf_accuracy)
print("reg losses", [round(v, 4) for v in reg_losses], "mse", reg_valid_mse,
      "var", target_variance)
print("importances clf", [round(v, 3) for v in clf_importances.tolist()])
print("importances reg", [round(v, 3) for v in reg_importances.tolist()])
print("sqrt(0.5) scale", math.sqrt(0.5))
