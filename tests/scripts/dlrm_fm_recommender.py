"""A tiny DLRM click-through model beside a factorization machine, written for these tests the
way facebookresearch/dlrm and public FM/DeepFM code write torch code (not a copy of either):

- sparse features as bags: ``nn.EmbeddingBag`` with ``offsets`` (ragged bags, empty bags,
  ``include_last_offset``), with a 2-D ``(B, L)`` input, modes ``sum``/``mean``/``max``,
  ``per_sample_weights`` (mode ``sum``), ``padding_idx`` (2-D bags padded with 0),
  ``EmbeddingBag.from_pretrained`` and ``F.embedding_bag``;
- ``sparse=True`` gradients: ``weight.grad.is_sparse``, ``.coalesce()``, ``.indices()``,
  ``.values()``, ``._nnz()``, ``.to_dense()``, sparse gradients accumulated over two
  backward passes; ``torch.optim.SparseAdam`` for the tables together with ``torch.optim.Adam``
  for the MLPs (and the dense ``max`` table), the parameters split by ``named_parameters``;
- DLRM's dot interaction: ``torch.cat``/``view`` into ``(B, F, d)``, ``torch.bmm`` with the
  transpose, the strictly lower triangle picked with ``torch.tril_indices(F, F, offset=-1)``;
- the FM second-order term ``0.5 * ((sum v)^2 - sum v^2)`` from an ``EmbeddingBag``, first
  order from a ``(V, 1)`` bag; ``torch.autograd.gradcheck`` of the interaction in float64;
- ``nn.BCEWithLogitsLoss(pos_weight=...)`` for the rare clicks; a ``Dataset``/``DataLoader``
  with a collate function that builds the offsets; AUC computed by sorting (rank sum, and the
  ROC curve from ``torch.argsort``/``cumsum`` integrated by ``torch.trapezoid``).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, Dataset

torch.manual_seed(0)
fixed_results = {}

N_DENSE, EMB_DIM = 4, 8
HIST_VOCAB, TAG_VOCAB, CAT_VOCAB, DEV_VOCAB = 40, 16, 12, 6
CAT_LEN = 3


# --------------------------------------------------------------------------- synthetic data


def make_clicks(n, generator):
    """Dense features, ragged item histories (with recency weights), tag bags (some empty),
    padded category lists and one device id per sample; clicks from a hidden logistic rule."""
    dense = torch.randn(n, N_DENSE, generator=generator)
    hist_len = torch.randint(1, 6, (n,), generator=generator)
    tag_len = torch.randint(0, 3, (n,), generator=generator)
    history, recency, tags = [], [], []
    for i in range(n):
        items = torch.randint(0, HIST_VOCAB, (int(hist_len[i]),), generator=generator)
        history.append(items)
        recency.append(0.5 ** torch.arange(len(items), dtype=torch.float32))
        tags.append(torch.randint(0, TAG_VOCAB, (int(tag_len[i]),), generator=generator))
    cats = torch.randint(1, CAT_VOCAB, (n, CAT_LEN), generator=generator)
    n_cats = torch.randint(1, CAT_LEN + 1, (n,), generator=generator)
    cats = cats.masked_fill(torch.arange(CAT_LEN)[None, :] >= n_cats[:, None], 0)  # padding
    device = torch.randint(0, DEV_VOCAB, (n,), generator=generator)
    return dense, history, recency, tags, cats, device


hidden = torch.Generator().manual_seed(123)
item_effect = torch.randn(HIST_VOCAB, generator=hidden)
cat_effect = torch.randn(CAT_VOCAB, generator=hidden)
dense_effect = torch.tensor([1.0, -0.5, 0.0, 0.8])


def true_logit(dense, history, recency, cats):
    hist = torch.stack([(item_effect[h] * w).sum() for h, w in zip(history, recency)])
    cat = torch.where(cats > 0, cat_effect[cats], torch.zeros(())).amax(dim=1)
    return dense @ dense_effect + 1.2 * hist + cat * dense[:, 0] - 2.0


class ClickDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.dense, self.history, self.recency, self.tags, self.cats, self.device = \
            make_clicks(n, g)
        logit = true_logit(self.dense, self.history, self.recency, self.cats)
        noise = 0.3 * torch.randn(n, generator=g)
        self.labels = (logit + noise > 0).float()
        # one tuple per sample, made once (rows by unbind rather than an index per access)
        self.samples = list(zip(self.dense.unbind(0), self.history, self.recency, self.tags,
                                self.cats.unbind(0), self.device.unbind(0),
                                self.labels.unbind(0)))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def bag_offsets(bags):
    lengths = torch.tensor([len(b) for b in bags])
    return torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)[:-1]])


def collate_clicks(samples):
    """DLRM-style: flatten every ragged feature and keep where each sample's bag starts."""
    dense, history, recency, tags, cats, device, labels = zip(*samples)
    return {
        "dense": torch.stack(dense),
        "hist": (torch.cat(history), bag_offsets(history), torch.cat(recency)),
        "tags": (torch.cat(tags).long(), bag_offsets(tags)),
        "cats": torch.stack(cats),
        "device": torch.stack(device),
        "label": torch.stack(labels),
    }


train_set, test_set = ClickDataset(384, seed=1), ClickDataset(256, seed=2)
positive_rate = float(train_set.labels.mean())
empty_tag_bags = sum(len(t) == 0 for t in train_set.tags)


# --------------------------------------------------------------------------------- models


def mlp(sizes):
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class Interaction(nn.Module):
    """DLRM's 'dot' interaction: pairwise dot products of the feature vectors, the strictly
    lower triangle of the (F, F) Gram matrix, concatenated with the dense vector."""

    def __init__(self, n_features):
        super().__init__()
        li, lj = torch.tril_indices(n_features, n_features, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)

    def forward(self, x, embs):
        batch_size, d = x.shape
        T = torch.cat([x] + embs, dim=1).view((batch_size, -1, d))
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        Zflat = Z[:, self.li, self.lj]
        return torch.cat([x, Zflat], dim=1)


class DLRM(nn.Module):
    def __init__(self, sparse=True):
        super().__init__()
        self.bot_l = mlp([N_DENSE, 16, EMB_DIM])
        self.emb_hist = nn.EmbeddingBag(HIST_VOCAB, EMB_DIM, mode="sum", sparse=sparse)
        self.emb_tags = nn.EmbeddingBag(TAG_VOCAB, EMB_DIM, mode="mean", sparse=sparse)
        self.emb_cats = nn.EmbeddingBag(CAT_VOCAB, EMB_DIM, mode="mean", sparse=sparse,
                                        padding_idx=0)
        self.emb_device = nn.EmbeddingBag(DEV_VOCAB, EMB_DIM, mode="max")  # (max: dense only)
        for table in (self.emb_hist, self.emb_tags, self.emb_cats, self.emb_device):
            with torch.no_grad():  # DLRM's uniform(-1/sqrt(n), 1/sqrt(n)) initialisation
                bound = 1.0 / table.num_embeddings ** 0.5
                table.weight.uniform_(-bound, bound)
                if table.padding_idx is not None:
                    table.weight[table.padding_idx].fill_(0)
        self.interact = Interaction(5)
        n_pairs = 5 * 4 // 2
        self.top_l = mlp([EMB_DIM + n_pairs, 16, 1])

    def forward(self, batch):
        x = self.bot_l(batch["dense"])
        items, item_offsets, recency = batch["hist"]
        tags, tag_offsets = batch["tags"]
        n = len(batch["dense"])
        device_offsets = torch.arange(n)
        embs = [
            self.emb_hist(items, item_offsets, per_sample_weights=recency),
            self.emb_tags(tags, tag_offsets),
            self.emb_cats(batch["cats"]),  # 2-D input: one bag per row, no offsets
            self.emb_device(batch["device"], device_offsets),
        ]
        return self.top_l(self.interact(x, embs)).squeeze(1)


class FactorizationMachine(nn.Module):
    """y = w0 + <w, x> + 0.5 * sum_f ((sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2) over every active
    id of every field; the fields share one table (categories first: id 0 is their padding)."""

    def __init__(self, k=4):
        super().__init__()
        starts = torch.tensor([0, CAT_VOCAB, CAT_VOCAB + HIST_VOCAB,
                               CAT_VOCAB + HIST_VOCAB + TAG_VOCAB])
        self.register_buffer("field_starts", starts, persistent=False)
        n = CAT_VOCAB + HIST_VOCAB + TAG_VOCAB + DEV_VOCAB
        self.linear = nn.EmbeddingBag(n, 1, mode="sum", sparse=True, padding_idx=0)
        # jitgrad-diff: a sparse gradient through ``weight ** 2`` (the squares term below with
        # sparse=True) comes out dense in jitgrad (right values); torch keeps it sparse, which
        # SparseAdam needs. Dense here.
        self.factors = nn.EmbeddingBag(n, k, mode="sum", padding_idx=0)
        self.dense = nn.Linear(N_DENSE, 1)
        nn.init.normal_(self.factors.weight, std=0.05)
        nn.init.zeros_(self.linear.weight)

    def fields(self, batch):
        items, item_offsets, recency = batch["hist"]
        tags, tag_offsets = batch["tags"]
        n = len(batch["dense"])
        yield batch["cats"], None, None  # 2-D, padded with 0
        yield items + self.field_starts[1], item_offsets, recency
        yield tags + self.field_starts[2], tag_offsets, None
        yield batch["device"] + self.field_starts[3], torch.arange(n), None

    def forward(self, batch):
        first = self.dense(batch["dense"]).squeeze(1)
        summed = squares = 0
        for ids, offsets, weights in self.fields(batch):
            first = first + self.linear(ids, offsets, per_sample_weights=weights).squeeze(1)
            summed = summed + self.factors(ids, offsets, per_sample_weights=weights)
            squares = squares + F.embedding_bag(
                ids, self.factors.weight ** 2, offsets, mode="sum", padding_idx=0,
                per_sample_weights=None if weights is None else weights ** 2)
        return first + 0.5 * (summed.pow(2) - squares).sum(dim=1)


def split_optimizers(model, lr=0.01):
    """SparseAdam for the tables that produce sparse gradients, Adam for the rest."""
    sparse_params, dense_params = [], []
    for _, module in model.named_modules():
        if isinstance(module, nn.EmbeddingBag) and module.sparse:
            sparse_params.append(module.weight)
    sparse_ids = {id(p) for p in sparse_params}
    for _, p in model.named_parameters():
        if id(p) not in sparse_ids:
            dense_params.append(p)
    return [torch.optim.SparseAdam(sparse_params, lr=lr), torch.optim.Adam(dense_params, lr=lr)]


# -------------------------------------------------------------------------------- metrics


def auc_rank(scores, labels):
    """Mann-Whitney U: the rank sum of the positives (scores sorted ascending)."""
    order = torch.argsort(scores)
    ranks = torch.empty_like(scores)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=scores.dtype)
    n_pos = labels.sum()
    n_neg = len(labels) - n_pos
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auc_curve(scores, labels):
    """The ROC curve walked from the highest score down, integrated by trapezoids."""
    sorted_scores, order = torch.sort(scores, descending=True)
    y = labels[order]
    tps = torch.cumsum(y, dim=0)
    fps = torch.cumsum(1 - y, dim=0)
    tpr = torch.cat([torch.zeros(1), tps / tps[-1]])
    fpr = torch.cat([torch.zeros(1), fps / fps[-1]])
    return float(torch.trapezoid(tpr, fpr)), sorted_scores


# ------------------------------------------------------------ bags on fixed tables (recorded)

with torch.no_grad():
    table = torch.arange(30, dtype=torch.float32).view(10, 3) / 10 - 1
values = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offsets = torch.tensor([0, 0, 3, 5])  # the first bag is empty
for mode in ("sum", "mean", "max"):
    bag = nn.EmbeddingBag.from_pretrained(table, mode=mode, freeze=False)
    fixed_results[f"bag_{mode}"] = bag(values, offsets).detach()
    fixed_results[f"bag_{mode}_2d"] = bag(values.view(2, 4)).detach()
last = nn.EmbeddingBag.from_pretrained(table, mode="sum", include_last_offset=True)
fixed_results["bag_include_last"] = last(values, torch.tensor([0, 3, 5, 8]))
weights = torch.linspace(0.5, 2.0, 8)
fixed_results["bag_weighted"] = F.embedding_bag(values, table, offsets, mode="sum",
                                                per_sample_weights=weights)
manual = torch.stack([torch.zeros(3), (table[[1, 2, 4]] * weights[:3, None]).sum(0),
                      (table[[5, 4]] * weights[3:5, None]).sum(0),
                      (table[[3, 2, 9]] * weights[5:, None]).sum(0)])
weighted_matches_manual = torch.allclose(fixed_results["bag_weighted"], manual, atol=1e-6)
padded = nn.EmbeddingBag.from_pretrained(table, mode="mean", padding_idx=2)
fixed_results["bag_mean_padding"] = padded(values, offsets)  # row 2 neither summed nor counted
fixed_results["bag_max_padding"] = nn.EmbeddingBag.from_pretrained(
    table, mode="max", padding_idx=4)(values.view(2, 4))
try:
    F.embedding_bag(values, table, offsets, mode="mean", per_sample_weights=weights)
    mean_weights_error = None
except NotImplementedError as err:
    mean_weights_error = "only supported for mode='sum'" in str(err)
try:
    nn.EmbeddingBag(10, 3, mode="max", sparse=True)(values, offsets)
    max_sparse_error = None
except ValueError as err:
    max_sparse_error = str(err)


# -------------------------------------------------------- sparse gradients (recorded)

sparse_bag = nn.EmbeddingBag.from_pretrained(table.clone(), mode="sum", freeze=False,
                                             sparse=True)
dense_bag = nn.EmbeddingBag.from_pretrained(table.clone(), mode="sum", freeze=False)
target = torch.linspace(-1, 1, 12).view(4, 3)
for bag in (sparse_bag, dense_bag):
    (bag(values, offsets, per_sample_weights=weights) - target).pow(2).sum().backward()
grad = sparse_bag.weight.grad
sparse_info = {"is_sparse": grad.is_sparse, "dense_is_sparse": dense_bag.weight.grad.is_sparse,
               "layout": str(grad.layout).split(".")[-1], "nnz": grad._nnz(),
               "is_coalesced": grad.is_coalesced()}
coalesced = grad.coalesce()
sparse_info["coalesced_nnz"] = coalesced._nnz()
sparse_info["coalesced_rows"] = coalesced.indices()[0].tolist()
fixed_results["sparse_grad_values"] = coalesced.values()
fixed_results["sparse_grad_dense"] = grad.to_dense()
fixed_results["dense_grad"] = dense_bag.weight.grad
# a second backward accumulates into the sparse gradient, which stays sparse
sparse_bag(values.view(2, 4)).sum().backward()
sparse_info["accumulated_sparse"] = sparse_bag.weight.grad.is_sparse
sparse_info["accumulated_nnz"] = sparse_bag.weight.grad._nnz()
fixed_results["sparse_grad_accumulated"] = sparse_bag.weight.grad.to_dense()
mean_bag = nn.EmbeddingBag.from_pretrained(table.clone(), mode="mean", freeze=False,
                                           sparse=True, padding_idx=0)
mean_bag(torch.tensor([[0, 3, 3], [5, 0, 0]])).sum().backward()
fixed_results["sparse_grad_mean_padding"] = mean_bag.weight.grad.coalesce().values()
sparse_info["mean_padding_rows"] = mean_bag.weight.grad.coalesce().indices()[0].tolist()

# SparseAdam touches only the rows in the gradient; Adam refuses a sparse gradient
sparse_bag.weight.grad = None
opt = torch.optim.SparseAdam(sparse_bag.parameters(), lr=0.1)
before = sparse_bag.weight.detach().clone()
for _ in range(3):
    opt.zero_grad()
    (sparse_bag(values, offsets, per_sample_weights=weights) - target).pow(2).sum().backward()
    opt.step()
fixed_results["sparse_adam_weight"] = sparse_bag.weight.detach().clone()
changed_rows = (sparse_bag.weight.detach() != before).any(dim=1).nonzero().flatten().tolist()
sparse_adam_state = {"keys": sorted(opt.state[sparse_bag.weight]),
                     "step": int(opt.state[sparse_bag.weight]["step"]),
                     "exp_avg_sparse": opt.state[sparse_bag.weight]["exp_avg"].is_sparse}
fixed_results["sparse_adam_exp_avg"] = opt.state[sparse_bag.weight]["exp_avg"]
try:
    adam = torch.optim.Adam(sparse_bag.parameters())
    sparse_bag(values, offsets).sum().backward()
    adam.step()
    adam_sparse_error = None
except RuntimeError as err:
    adam_sparse_error = str(err)


# ------------------------------------------------------------- interaction (recorded)

torch.manual_seed(1)
interaction = Interaction(4)
x_dense = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
embs = [torch.randn(3, 5, dtype=torch.float64, requires_grad=True) for _ in range(3)]
fixed_results["interaction"] = interaction(x_dense, embs).detach()
gram = torch.stack([torch.cat([x_dense[b:b + 1]] + [e[b:b + 1] for e in embs])
                    for b in range(3)])
loop_pairs = torch.stack([torch.stack([gram[b, i] @ gram[b, j] for i in range(4)
                                       for j in range(i)]) for b in range(3)])
interaction_matches_loop = torch.allclose(fixed_results["interaction"][:, 5:], loop_pairs)
fixed_results["tril_indices"] = torch.tril_indices(4, 4, offset=-1)
fixed_results["tril_indices_rect"] = torch.tril_indices(3, 5, offset=1)
gradcheck_interaction = torch.autograd.gradcheck(
    lambda x, a, b, c: interaction(x, [a, b, c]), (x_dense, *embs))

# the FM identity on fixed vectors: 0.5 * ((sum v)^2 - sum v^2) = sum_{i<j} <v_i, v_j>
v = torch.randn(5, 4, dtype=torch.float64)
pairs = sum(v[i] @ v[j] for i in range(5) for j in range(i + 1, 5))
fm_identity = float(0.5 * (v.sum(0).pow(2) - v.pow(2).sum(0)).sum() - pairs)


# -------------------------------------------------------------------------------- training


def evaluate(model, loader):
    model.eval()
    scores, labels = [], []
    with torch.no_grad():
        for batch in loader:
            scores.append(model(batch))
            labels.append(batch["label"])
    model.train()
    return torch.cat(scores), torch.cat(labels)


def train(model, epochs, loader, loss_fn):
    optimizers = split_optimizers(model, lr=0.02)
    losses = []
    for _ in range(epochs):
        for batch in loader:
            for opt in optimizers:
                opt.zero_grad()
            loss = loss_fn(model(batch), batch["label"])
            loss.backward()
            for opt in optimizers:
                opt.step()
            losses.append(loss.item())
    return losses, optimizers


torch.manual_seed(0)
loader = DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=collate_clicks,
                    generator=torch.Generator().manual_seed(0))
test_loader = DataLoader(test_set, batch_size=128, collate_fn=collate_clicks)
pos_weight = torch.tensor((1 - positive_rate) / positive_rate)
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)

first_batch = next(iter(DataLoader(train_set, batch_size=8, collate_fn=collate_clicks)))
batch_shapes = {"hist": tuple(first_batch["hist"][0].shape),
                "hist_offsets": first_batch["hist"][1].tolist(),
                "cats": tuple(first_batch["cats"].shape)}

model = DLRM()
initial_scores, test_labels = evaluate(model, test_loader)
fixed_results["dlrm_initial_scores"] = initial_scores
fixed_results["dlrm_first_batch_logits"] = model(first_batch).detach()
first_loss = criterion(model(first_batch), first_batch["label"])
first_loss.backward()
fixed_results["dlrm_first_loss"] = first_loss.detach()
fixed_results["dlrm_first_grads"] = {
    "bot_l.0.weight": model.bot_l[0].weight.grad,
    "emb_hist": model.emb_hist.weight.grad.to_dense(),
    "emb_cats": model.emb_cats.weight.grad.to_dense(),
    "emb_device": model.emb_device.weight.grad,
}
grad_kinds = {name: p.grad.is_sparse for name, p in model.named_parameters()}
grad_norms = {}
for name, p in model.named_parameters():
    grad_norms[name] = p.grad.norm()
fixed_results["dlrm_grad_norms"] = grad_norms
model.zero_grad()
with torch.no_grad():
    big_batch = collate_clicks([train_set[i] for i in range(64)])
    logits, y = model(big_batch), big_batch["label"]
    weighted_loss = criterion(logits, y)
    plain_bce = F.binary_cross_entropy_with_logits(logits, y)
    weighted_by_hand = -(pos_weight * y * F.logsigmoid(logits)
                         + (1 - y) * F.logsigmoid(-logits)).mean()
pos_weight_by_hand = float((weighted_loss - weighted_by_hand).abs())
big_batch_positives = int(y.sum())

losses, optimizers = train(model, 6, loader, criterion)
scores, test_labels = evaluate(model, test_loader)
auc = auc_rank(scores, test_labels)
auc_trapezoid, sorted_scores = auc_curve(scores, test_labels)
initial_auc = auc_rank(initial_scores, test_labels)
test_scores = scores
optimizer_kinds = [type(opt).__name__ for opt in optimizers]
n_sparse_params = len(optimizers[0].param_groups[0]["params"])

fm = FactorizationMachine()
fm_initial = fm(first_batch).detach()
fixed_results["fm_first_batch"] = fm_initial
fm_losses, _ = train(fm, 6, loader, criterion)
fm_scores, _ = evaluate(fm, test_loader)
fm_auc = auc_rank(fm_scores, test_labels)

print(f"positives {positive_rate:.2f}, DLRM AUC {initial_auc:.3f} -> {auc:.3f}, FM AUC "
      f"{fm_auc:.3f}, losses {losses[0]:.3f} -> {losses[-1]:.3f}")
