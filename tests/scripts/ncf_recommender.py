# ruff: noqa: N812 (the usual F alias)
"""Neural collaborative filtering on synthetic implicit feedback, written for these tests the way
recommender code in torch (NCF/NeuMF reimplementations, BPR-MF tutorials, the YouTube-DNN style
"mean of the history" user tower) is written, not a copy of any:

- a synthetic dataset: users and items with latent factors and item popularity, each user's
  interactions drawn without replacement by ``torch.multinomial``; leave-one-out split (the last
  interaction is the test item), a boolean ``seen`` matrix filled by index assignment;
- a ``Dataset`` of (user, positive item) pairs and a ``DataLoader`` with a custom
  ``collate_fn`` that draws negatives by ``torch.randint`` and redraws the ones the user has seen
  (rejection through ``torch.isin`` on ``user * n_items + item`` codes), and packs each user's
  history, less the positive, as a flat ``input`` plus ``offsets`` (``torch.cumsum``);
- BPR matrix factorisation with ``nn.Embedding(sparse=True)`` trained by ``optim.SparseAdam``
  (sparse COO gradients, ``coalesce``, ``to_dense``) and the same model dense, trained by
  ``Adam``; item biases as a one-column embedding;
- NeuMF: a GMF tower (element-wise product), an MLP tower over ``torch.cat`` of the user's
  embedding plus ``nn.EmbeddingBag(mode="mean")`` of the history and the item's embedding, a
  ``nn.Linear`` over both; BPR loss ``-F.logsigmoid(pos - neg)``; ``nn.init.normal_``/
  ``xavier_uniform_``/``kaiming_uniform_``; weight decay by ``AdamW``;
- evaluation on every item: ``masked_fill`` of the seen items with ``-inf``, hit rate and NDCG at
  10 from ``torch.topk`` and from ranks by ``torch.argsort`` + ``torch.gather``,
  ``torch.log2``, ``torch.where``; ``torch.no_grad`` and ``model.eval()``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, Dataset

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------ data

n_users, n_items, true_dim = 300, 120, 6
user_factors = torch.randn(n_users, true_dim)
item_factors = torch.randn(n_items, true_dim)
popularity = 0.5 * torch.randn(n_items)
affinity = user_factors @ item_factors.T / math.sqrt(true_dim) * 3.0 + popularity
n_interactions = torch.randint(8, 20, (n_users,))
sequences = [torch.multinomial(torch.softmax(affinity[u], 0), int(n_interactions[u]))
             for u in range(n_users)]
train_items = [seq[:-1] for seq in sequences]
test_items = torch.stack([seq[-1] for seq in sequences])
seen = torch.zeros(n_users, n_items, dtype=torch.bool)
for u, items in enumerate(train_items):
    seen[u, items] = True
train_codes = torch.cat([u * n_items + items for u, items in enumerate(train_items)])
random_hr = sum(10 / (n_items - len(items)) for items in train_items) / n_users


class InteractionDataset(Dataset):
    """(user, item) pairs kept as Python lists, as a data frame's columns turned ``tolist``."""

    def __init__(self, train_items):
        self.users = torch.cat([torch.full((len(items),), u, dtype=torch.long)
                                for u, items in enumerate(train_items)]).tolist()
        self.items = torch.cat(train_items).tolist()

    def __len__(self):
        return len(self.users)

    def __getitem__(self, idx):
        return self.users[idx], self.items[idx]


def sample_negatives(users, n_items=n_items):
    negatives = torch.randint(0, n_items, users.shape)
    rejected = torch.isin(users * n_items + negatives, train_codes)
    rounds = 0
    while rejected.any():
        negatives[rejected] = torch.randint(0, n_items, (int(rejected.sum()),))
        rejected = torch.isin(users * n_items + negatives, train_codes)
        rounds += 1
    return negatives, rounds


rejection_rounds = []
history_lists = [items.tolist() for items in train_items]


def collate_fn(batch, with_history=True):
    users = torch.tensor([u for u, _ in batch])
    positives = torch.tensor([i for _, i in batch])
    negatives, rounds = sample_negatives(users)
    rejection_rounds.append(rounds)
    out = {"users": users, "positives": positives, "negatives": negatives}
    if with_history:  # the user's other training items, as one flat bag input
        histories = [[j for j in history_lists[u] if j != i] for u, i in batch]
        lengths = torch.tensor([len(h) for h in histories])
        out["offsets"] = torch.cat([torch.zeros(1, dtype=torch.long),
                                    torch.cumsum(lengths, 0)[:-1]])
        out["history"] = torch.tensor([j for h in histories for j in h])
    return out


def collate_pairs(batch):
    return collate_fn(batch, with_history=False)


# ----------------------------------------------------------------------------- models


class BPRMF(nn.Module):
    def __init__(self, n_users, n_items, dim=16, sparse=False):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim, sparse=sparse)
        self.item_emb = nn.Embedding(n_items, dim, sparse=sparse)
        self.item_bias = nn.Embedding(n_items, 1, sparse=sparse)
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, users, items):
        u = self.user_emb(users)
        i = self.item_emb(items)
        return (u * i).sum(-1) + self.item_bias(items).squeeze(-1)

    def full_scores(self):
        return self.user_emb.weight @ self.item_emb.weight.T + self.item_bias.weight.T


class NeuMF(nn.Module):
    def __init__(self, n_users, n_items, gmf_dim=8, mlp_dim=16, layers=(32, 16)):
        super().__init__()
        self.gmf_user = nn.Embedding(n_users, gmf_dim)
        self.gmf_item = nn.Embedding(n_items, gmf_dim)
        self.mlp_user = nn.Embedding(n_users, mlp_dim)
        self.mlp_item = nn.Embedding(n_items, mlp_dim)
        self.history = nn.EmbeddingBag(n_items, mlp_dim, mode="mean")
        tower, width = [], 2 * mlp_dim
        for size in layers:
            tower += [nn.Linear(width, size), nn.ReLU()]
            width = size
        self.mlp = nn.Sequential(*tower)
        self.predict = nn.Linear(gmf_dim + width, 1)
        for emb in (self.gmf_user, self.gmf_item, self.mlp_user, self.mlp_item, self.history):
            nn.init.normal_(emb.weight, std=0.1)
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        nn.init.kaiming_uniform_(self.predict.weight, a=1, nonlinearity="sigmoid")
        nn.init.zeros_(self.predict.bias)

    def user_vectors(self, users, history, offsets):
        """(GMF, MLP) user representations; the MLP one adds the mean of the history."""
        return self.gmf_user(users), self.mlp_user(users) + self.history(history, offsets)

    def score(self, gmf_u, mlp_u, items):
        gmf = gmf_u * self.gmf_item(items)
        mlp = self.mlp(torch.cat([mlp_u, self.mlp_item(items)], dim=-1))
        return self.predict(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)

    def forward(self, users, items, history, offsets):
        return self.score(*self.user_vectors(users, history, offsets), items)

    def full_scores(self, users, history, offsets):
        gmf_u, mlp_u = self.user_vectors(users, history, offsets)
        n_u, n_i = gmf_u.shape[0], self.gmf_item.num_embeddings
        items = torch.arange(n_i).repeat(n_u)
        scores = self.score(gmf_u.repeat_interleave(n_i, dim=0),
                            mlp_u.repeat_interleave(n_i, dim=0), items)
        return scores.view(n_u, n_i)


def bpr_loss(pos_scores, neg_scores):
    return -F.logsigmoid(pos_scores - neg_scores).mean()


# --------------------------------------------------------------------------- evaluation


def evaluate(scores, seen, test_items, k=10):
    """Hit rate and NDCG at k over all items the user has not seen."""
    scores = scores.masked_fill(seen, float("-inf"))
    _, top_items = torch.topk(scores, k, dim=1)
    hits = top_items == test_items[:, None]
    hit_rate = hits.any(dim=1).float().mean().item()
    discounts = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float32))
    ndcg_topk = (hits.float() * discounts).sum(dim=1).mean().item()
    # the same from every item's rank
    order = torch.argsort(scores, dim=1, descending=True)
    ranks = torch.argsort(order, dim=1)
    test_rank = torch.gather(ranks, 1, test_items[:, None]).squeeze(1)
    ndcg = torch.where(test_rank < k, 1.0 / torch.log2(test_rank.float() + 2),
                       torch.zeros(())).mean().item()
    return {"hr": hit_rate, "ndcg": ndcg, "ndcg_topk": ndcg_topk,
            "hr_from_ranks": (test_rank < k).float().mean().item(), "test_rank": test_rank}


all_users = torch.arange(n_users)
full_histories = torch.cat(train_items)
full_offsets = torch.cat([torch.zeros(1, dtype=torch.long),
                          torch.cumsum(torch.tensor([len(h) for h in train_items]), 0)[:-1]])

# ----------------------------------------------------- fixed-weight checks (recorded)

dataset = InteractionDataset(train_items)
first_batch = collate_fn([dataset[i] for i in (0, 1, 2, 30, 31, 500, 501, 2000)])
fixed_results["collate"] = {k: v for k, v in first_batch.items()}
negatives_unseen = not seen[first_batch["users"], first_batch["negatives"]].any().item()

# the sparse and the dense MF from the same weights: scores, loss, gradients
torch.manual_seed(1)
mf_sparse = BPRMF(n_users, n_items, sparse=True)
torch.manual_seed(1)
mf_dense = BPRMF(n_users, n_items, sparse=False)
with torch.no_grad():
    for p in mf_sparse.parameters():
        p.add_(0.05 * torch.randn_like(p))
    for p_dense, p_sparse in zip(mf_dense.parameters(), mf_sparse.parameters()):
        p_dense.copy_(p_sparse)
mf_grads = {}
for name, model in (("sparse", mf_sparse), ("dense", mf_dense)):
    pos = model(first_batch["users"], first_batch["positives"])
    neg = model(first_batch["users"], first_batch["negatives"])
    loss = bpr_loss(pos, neg)
    model.zero_grad()
    loss.backward()
    fixed_results[f"mf_{name}_scores"] = torch.stack([pos, neg]).detach()
    fixed_results[f"mf_{name}_loss"] = loss.item()
    mf_grads[name] = {n: p.grad for n, p in model.named_parameters()}
sparse_grad = mf_grads["sparse"]["item_emb.weight"]
sparse_grad_layout = (sparse_grad.is_sparse, mf_grads["dense"]["item_emb.weight"].is_sparse)
coalesced = sparse_grad.coalesce()
fixed_results["sparse_grad_indices"] = coalesced.indices()
fixed_results["sparse_grad_values"] = coalesced.values()
fixed_results["mf_grads"] = {n: g.to_dense() for n, g in mf_grads["sparse"].items()}
fixed_results["mf_full_scores"] = mf_sparse.full_scores().detach()[:5]

# NeuMF: scores, loss and gradients through the EmbeddingBag
torch.manual_seed(2)
neumf = NeuMF(n_users, n_items)
b = first_batch
pos = neumf(b["users"], b["positives"], b["history"], b["offsets"])
neg = neumf(b["users"], b["negatives"], b["history"], b["offsets"])
loss = bpr_loss(pos, neg)
loss.backward()
fixed_results["neumf_scores"] = torch.stack([pos, neg]).detach()
fixed_results["neumf_loss"] = loss.item()
fixed_results["neumf_grads"] = {n: p.grad.clone() for n, p in neumf.named_parameters()
                                if n in ("history.weight", "gmf_user.weight", "mlp.0.weight",
                                         "predict.weight", "mlp_item.weight")}
# the bag's mean equals a mean over a Python loop of the users' histories
bag = neumf.history(b["history"], b["offsets"]).detach()
ends = torch.cat([b["offsets"][1:], torch.tensor([len(b["history"])])])
bag_loop = torch.stack([neumf.history.weight[b["history"][s:e]].mean(0).detach()
                        for s, e in zip(b["offsets"].tolist(), ends.tolist())])
bag_error = (bag - bag_loop).abs().max().item()
neumf.zero_grad()
with torch.no_grad():
    neumf_full = neumf.full_scores(all_users[:4], full_histories[:int(full_offsets[4])],
                                   full_offsets[:4])
    pointwise_items = torch.tensor([0, 119, 7, 50])
    neumf_pointwise = neumf(all_users[:4], pointwise_items,
                            full_histories[:int(full_offsets[4])], full_offsets[:4])
fixed_results["neumf_full_scores"] = neumf_full

# evaluation on fixed scores (ties only among the -inf of seen items)
torch.manual_seed(3)
fixed_scores = torch.randn(n_users, n_items)
fixed_metrics = evaluate(fixed_scores, seen, test_items)
fixed_results["fixed_metrics"] = {k: v for k, v in fixed_metrics.items()}

# ------------------------------------------------------------------------------ training


def train_mf(model, optimizer, epochs):
    loader = DataLoader(dataset, batch_size=256, shuffle=True, collate_fn=collate_pairs)
    losses = []
    for _ in range(epochs):
        model.train()
        for batch in loader:
            pos = model(batch["users"], batch["positives"])
            neg = model(batch["users"], batch["negatives"])
            loss = bpr_loss(pos, neg)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        return losses, evaluate(model.full_scores(), seen, test_items)


epochs = 10
torch.manual_seed(4)
sparse_model = BPRMF(n_users, n_items, sparse=True)
sparse_losses, sparse_metrics = train_mf(
    sparse_model, torch.optim.SparseAdam(list(sparse_model.parameters()), lr=0.02), epochs)
torch.manual_seed(4)
dense_model = BPRMF(n_users, n_items, sparse=False)
dense_losses, dense_metrics = train_mf(
    dense_model, torch.optim.Adam(dense_model.parameters(), lr=0.02), epochs)

torch.manual_seed(5)
neumf = NeuMF(n_users, n_items)
optimizer = torch.optim.AdamW(neumf.parameters(), lr=0.01, weight_decay=1e-4)
loader = DataLoader(dataset, batch_size=256, shuffle=True, collate_fn=collate_fn)
neumf_losses = []
for _ in range(epochs):
    neumf.train()
    for batch in loader:
        pos = neumf(batch["users"], batch["positives"], batch["history"], batch["offsets"])
        neg = neumf(batch["users"], batch["negatives"], batch["history"], batch["offsets"])
        loss = bpr_loss(pos, neg)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        neumf_losses.append(loss.item())
neumf.eval()
with torch.no_grad():
    neumf_scores = neumf.full_scores(all_users, full_histories, full_offsets)
    neumf_metrics = evaluate(neumf_scores, seen, test_items)
    # the scores the brute-force check ranks
    sparse_scores = sparse_model.full_scores()
popularity_metrics = evaluate(seen.float().sum(0).expand(n_users, n_items).clone(), seen,
                              test_items)

print(f"random HR@10 {random_hr:.3f}; popularity {popularity_metrics['hr']:.3f}; "
      f"MF sparse {sparse_metrics['hr']:.3f}/{sparse_metrics['ndcg']:.3f} "
      f"({sparse_losses[0]:.3f} -> {sparse_losses[-1]:.3f}); "
      f"dense {dense_metrics['hr']:.3f}/{dense_metrics['ndcg']:.3f}; "
      f"NeuMF {neumf_metrics['hr']:.3f}/{neumf_metrics['ndcg']:.3f} "
      f"({neumf_losses[0]:.3f} -> {neumf_losses[-1]:.3f})")
