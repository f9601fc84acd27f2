# ruff: noqa: N812 (the usual F alias of nn.functional)
"""An FT-Transformer (feature tokenizer + transformer) for tabular data, written for these tests
the way rtdl's FT-Transformer, TabTransformer ports and Kaggle tabular notebooks write torch
code (not a copy of any), on a synthetic table with categorical and numerical columns and an
imbalanced binary target:

- a categorical tokenizer of per-column ``nn.Embedding``s in an ``nn.ModuleList``
  (``torch.stack`` over the columns) and a numerical tokenizer
  ``weight[None] * x[..., None] + bias``; a class token appended with ``expand`` + ``cat``
  and read out at the end;
- ``nn.TransformerEncoder(nn.TransformerEncoderLayer(batch_first=True, norm_first=True))``
  (``enable_nested_tensor=False``), a LayerNorm/ReLU/Linear head;
- ``nn.BCEWithLogitsLoss(pos_weight=...)`` for the imbalance; ``random_split`` with a seeded
  ``torch.Generator``; ``TensorDataset``/``DataLoader``; ``WeightedRandomSampler`` (inverse
  class frequency) for the baseline;
- AdamW, early stopping on the validation AUROC keeping ``copy.deepcopy(model.state_dict())``
  and restoring it with ``load_state_dict``;
- AUROC and average precision by hand (``argsort``, ``cumsum``, ``diff``/``nonzero`` for ties,
  ``torch.trapezoid``);
- a logistic-regression baseline on ``F.one_hot`` codes beside the numerical columns.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset, WeightedRandomSampler, random_split

torch.manual_seed(0)
fixed_results = {}


# ---------------------------------------------------------------------------------- data

CARDINALITIES = [4, 6, 3]
N_NUM = 5


def make_table(n, generator):
    """Categorical codes (n, 3), numerical columns (n, 5) and a ~15% positive target whose
    log-odds hold interactions a linear model cannot express."""
    x_cat = torch.stack([torch.randint(0, c, (n,), generator=generator) for c in CARDINALITIES],
                        dim=1)
    x_num = torch.randn(n, N_NUM, generator=generator)
    cat_effect = torch.tensor([0.0, 1.0, -1.0, 0.5])[x_cat[:, 0]]
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])[x_cat[:, 1]]  # flips a slope
    logit = (2.0 * x_num[:, 0] * x_num[:, 1] + 2.0 * sign * x_num[:, 2]
             + 1.5 * torch.sin(2.0 * x_num[:, 3]) + cat_effect
             + 0.8 * (x_cat[:, 2] == 2).float() - 3.9)
    y = torch.bernoulli(torch.sigmoid(logit), generator=generator)
    return x_cat, x_num, y


data_generator = torch.Generator().manual_seed(1234)
x_cat, x_num, y = make_table(2400, data_generator)
positive_rate = y.mean().item()
dataset = TensorDataset(x_cat, x_num, y)
train_set, val_set, test_set = random_split(dataset, [0.7, 0.15, 0.15],
                                            generator=torch.Generator().manual_seed(42))
split_sizes = [len(train_set), len(val_set), len(test_set)]
train_idx = torch.tensor(train_set.indices)
mean = x_num[train_idx].mean(0)
std = x_num[train_idx].std(0)


def tensors(subset):
    idx = torch.tensor(subset.indices)
    return x_cat[idx], (x_num[idx] - mean) / std, y[idx]


train_tensors, val_tensors, test_tensors = tensors(train_set), tensors(val_set), \
    tensors(test_set)


# ------------------------------------------------------------------------------ metrics


def _ranked(scores, labels):
    """Labels in descending score order and the last index of each distinct score."""
    order = torch.argsort(scores, descending=True)
    scores, labels = scores[order], labels[order].float()
    distinct = torch.nonzero(torch.diff(scores)).squeeze(1)
    threshold_idx = torch.cat([distinct, torch.tensor([labels.numel() - 1])])
    return labels, threshold_idx


def roc_auc(scores, labels):
    labels, idx = _ranked(scores, labels)
    tps = torch.cumsum(labels, 0)[idx]
    fps = (1 + idx) - tps
    tpr = torch.cat([torch.zeros(1), tps / tps[-1]])
    fpr = torch.cat([torch.zeros(1), fps / fps[-1]])
    return torch.trapezoid(tpr, fpr).item()


def average_precision(scores, labels):
    labels, idx = _ranked(scores, labels)
    tps = torch.cumsum(labels, 0)[idx]
    precision = tps / (1 + idx)
    recall = tps / tps[-1]
    recall_steps = torch.diff(recall, prepend=torch.zeros(1))
    return (recall_steps * precision).sum().item()


# -------------------------------------------------------------------------------- model


class NumericalTokenizer(nn.Module):
    def __init__(self, n_features, d_token):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_features, d_token))
        self.bias = nn.Parameter(torch.empty(n_features, d_token))
        bound = 1 / math.sqrt(d_token)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return self.weight[None] * x[..., None] + self.bias[None]  # (B, n, d)


class CategoricalTokenizer(nn.Module):
    def __init__(self, cardinalities, d_token):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, d_token) for c in cardinalities])
        bound = 1 / math.sqrt(d_token)
        for emb in self.embeddings:
            nn.init.uniform_(emb.weight, -bound, bound)

    def forward(self, x):
        return torch.stack([emb(x[:, i]) for i, emb in enumerate(self.embeddings)], dim=1)


class FTTransformer(nn.Module):
    def __init__(self, cardinalities, n_num, d_token=32, n_layers=2, n_heads=4, ffn_factor=2,
                 dropout=0.1):
        super().__init__()
        self.cat_tokenizer = CategoricalTokenizer(cardinalities, d_token)
        self.num_tokenizer = NumericalTokenizer(n_num, d_token)
        self.cls_token = nn.Parameter(torch.empty(1, 1, d_token))
        nn.init.uniform_(self.cls_token, -1 / math.sqrt(d_token), 1 / math.sqrt(d_token))
        layer = nn.TransformerEncoderLayer(d_token, n_heads, dim_feedforward=ffn_factor * d_token,
                                           dropout=dropout, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.ReLU(), nn.Linear(d_token, 1))

    def forward(self, x_cat, x_num):
        tokens = torch.cat([self.cat_tokenizer(x_cat), self.num_tokenizer(x_num)], dim=1)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        x = self.encoder(torch.cat([tokens, cls], dim=1))
        return self.head(x[:, -1]).squeeze(-1)


def one_hot_features(x_cat, x_num):
    codes = [F.one_hot(x_cat[:, i], num_classes=c).float() for i, c in enumerate(CARDINALITIES)]
    return torch.cat(codes + [x_num], dim=1)


@torch.no_grad()
def predict(model, x_cat, x_num, batch_size=256):
    model.eval()
    out = [model(x_cat[i:i + batch_size], x_num[i:i + batch_size])
           for i in range(0, len(x_cat), batch_size)]
    return torch.cat(out)


# ------------------------------------------------------------ fixed-weight checks (recorded)

torch.manual_seed(1)
fixed_model = FTTransformer(CARDINALITIES, N_NUM)
fx_cat, fx_num, fy = (t[:24] for t in train_tensors)
fixed_results["num_tokens"] = fixed_model.num_tokenizer(fx_num[:2]).detach()
num_tokens_by_loop = torch.stack([fixed_model.num_tokenizer.weight[j] * fx_num[:2, j, None]
                                  + fixed_model.num_tokenizer.bias[j] for j in range(N_NUM)], 1)
num_tokenizer_difference = (fixed_results["num_tokens"] - num_tokens_by_loop).abs().max().item()
fixed_results["logits_eval"] = predict(fixed_model, fx_cat, fx_num)
with torch.inference_mode():
    inference_logits = fixed_model(fx_cat, fx_num)
fixed_model.train()
fixed_model.zero_grad()
pos_weight = torch.tensor([(1 - positive_rate) / positive_rate])
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
torch.manual_seed(5)
train_logits = fixed_model(fx_cat, fx_num)
loss = criterion(train_logits, fy)
loss.backward()
fixed_results["train_logits"] = train_logits.detach()
fixed_results["loss"] = loss.item()
fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed_model.named_parameters()}
# pos_weight by hand: -[w y log s(z) + (1 - y) log(1 - s(z))]
z = train_logits.detach()
loss_by_hand = -(pos_weight * fy * F.logsigmoid(z) + (1 - fy) * F.logsigmoid(-z)).mean().item()

# the metrics on tied and untied scores, float64 against each other in the tests
metric_scores = torch.randn(300, generator=torch.Generator().manual_seed(3))
metric_labels = (torch.rand(300, generator=torch.Generator().manual_seed(4)) < 0.3).long()
tied_scores = torch.round(metric_scores * 2) / 2
fixed_results["metrics"] = {
    "auroc": roc_auc(metric_scores, metric_labels),
    "ap": average_precision(metric_scores, metric_labels),
    "auroc_tied": roc_auc(tied_scores, metric_labels),
    "ap_tied": average_precision(tied_scores, metric_labels),
}


# ------------------------------------------------------------------------------ training

torch.manual_seed(7)
model = FTTransformer(CARDINALITIES, N_NUM)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-5)
train_loader = DataLoader(TensorDataset(*train_tensors), batch_size=128, shuffle=True,
                          generator=torch.Generator().manual_seed(11))
max_epochs, patience = 20, 4
losses, val_scores = [], []
best_score, best_epoch, best_state, bad_epochs = -math.inf, -1, None, 0
for epoch in range(max_epochs):
    model.train()
    for xb_cat, xb_num, yb in train_loader:
        loss = criterion(model(xb_cat, xb_num), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    val_auroc = roc_auc(predict(model, *val_tensors[:2]), val_tensors[2])
    val_scores.append(val_auroc)
    if val_auroc > best_score:
        best_score, best_epoch, bad_epochs = val_auroc, epoch, 0
        best_state = copy.deepcopy(model.state_dict())
    else:
        bad_epochs += 1
        if bad_epochs >= patience:
            print(f"early stop at epoch {epoch}")
            break
    print(f"epoch {epoch}: loss {sum(losses[-len(train_loader):]) / len(train_loader):.4f} "
          f"val auroc {val_auroc:.4f}")
epochs_run = len(val_scores)
last_state_score = val_scores[-1]
model.load_state_dict(best_state)
restored_val_auroc = roc_auc(predict(model, *val_tensors[:2]), val_tensors[2])
best_state_is_a_copy = best_state["head.2.weight"].data_ptr() != \
    model.state_dict()["head.2.weight"].data_ptr()
test_scores = predict(model, *test_tensors[:2])
test_auroc = roc_auc(test_scores, test_tensors[2])
test_ap = average_precision(test_scores, test_tensors[2])


# ----------------------------------------------------------- baseline: logistic regression

torch.manual_seed(13)
train_labels = train_tensors[2].long()
class_counts = torch.bincount(train_labels, minlength=2)
sample_weights = (1.0 / class_counts.float())[train_labels]
sampler = WeightedRandomSampler(sample_weights, num_samples=len(train_labels), replacement=True,
                                generator=torch.Generator().manual_seed(17))
baseline_features = [one_hot_features(*t[:2]) for t in (train_tensors, test_tensors)]
baseline_loader = DataLoader(TensorDataset(baseline_features[0], train_tensors[2]),
                             batch_size=128, sampler=sampler)
baseline = nn.Linear(baseline_features[0].shape[1], 1)
baseline_optimizer = torch.optim.Adam(baseline.parameters(), lr=0.05)
baseline_criterion = nn.BCEWithLogitsLoss()
baseline_losses, sampled_positive_fraction = [], []
for _epoch in range(10):
    for xb, yb in baseline_loader:
        loss = baseline_criterion(baseline(xb).squeeze(-1), yb)
        baseline_optimizer.zero_grad()
        loss.backward()
        baseline_optimizer.step()
        baseline_losses.append(loss.item())
        sampled_positive_fraction.append(yb.mean().item())
with torch.no_grad():
    baseline_scores = baseline(baseline_features[1]).squeeze(-1)
baseline_auroc = roc_auc(baseline_scores, test_tensors[2])
baseline_ap = average_precision(baseline_scores, test_tensors[2])
fixed_results["one_hot"] = baseline_features[0][:3]

print(f"positives {positive_rate:.3f}; best epoch {best_epoch} val {best_score:.4f} "
      f"(restored {restored_val_auroc:.4f}); test auroc {test_auroc:.4f} ap {test_ap:.4f}; "
      f"baseline auroc {baseline_auroc:.4f} ap {baseline_ap:.4f}")
