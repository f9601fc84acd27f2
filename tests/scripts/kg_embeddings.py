# ruff: noqa: N812 (the usual F alias)
"""Knowledge-graph embedding models, written for these tests the way PyKEEN, OpenKE and the
RotatE authors' ``KnowledgeGraphEmbedding`` code write them in plain torch (not a copy of any):

- TransE: ``-||h + r - t||_p`` through ``torch.norm`` and ``torch.linalg.vector_norm`` (p = 1
  and 2), entity renormalisation under ``torch.no_grad`` with ``F.normalize``, OpenKE's margin
  loss ``torch.max(p - n, -margin).mean() + margin`` with a frozen ``nn.Parameter`` margin,
  ``nn.MarginRankingLoss`` and ``F.relu(margin + pos - neg)``;
- DistMult ``sum(h * r * t)`` with N3/L2 regularisation, trained with ``Adagrad``;
- ComplEx: ``Re(sum(h * r * conj(t)))`` on complex tensors made by ``torch.view_as_complex``
  and ``torch.complex`` (``.real``, ``torch.conj``), against OpenKE's four real products;
- RotatE: relation phases, ``torch.polar`` and ``torch.cos/sin``, ``abs`` of complex
  differences, ``gamma - distance`` with ``embedding_range`` initialisation, self-adversarial
  negative weighting (``F.softmax(...).detach()`` with ``F.logsigmoid``), trained with ``Adam``;
- negative sampling by corrupting heads or tails (``torch.randint``, ``torch.rand``,
  ``torch.where``); ``nn.Embedding(max_norm=...)`` renormalising looked-up rows in place, and
  ``nn.Embedding(sparse=True)`` with ``optim.SparseAdam``;
- filtered ranking evaluation: a filter mask built with ``scatter_``, ``masked_fill(-inf)``,
  ranks by comparison and by ``argsort`` + ``nonzero``, MRR and Hits@k;
- ``gradcheck`` of every score in float64 (complex128 inputs for ComplEx and RotatE).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

# ------------------------------------------------------------------------------- data

NUM_ENTITIES, NUM_RELATIONS = 12, 3


def build_triples(n):
    """A chain of entities: r0: h -> h + 1, r1: h -> h + 3, r2: even h -> h + 1 and h + 2
    (one-to-many), no wrapping around (TransE cannot close a cycle of translations)."""
    rows = []
    for h in range(n):
        for r, steps in ((0, (1,)), (1, (3,)), (2, (1, 2) if h % 2 == 0 else ())):
            rows.extend((h, r, h + s) for s in steps if h + s < n)
    return torch.tensor(rows, dtype=torch.long)


all_triples = build_triples(NUM_ENTITIES)
perm = torch.randperm(all_triples.shape[0])
n_test = all_triples.shape[0] // 6
test_triples = all_triples[perm[:n_test]]
train_triples = all_triples[perm[n_test:]]


def corrupt(triples, num_negs, num_entities, generator=None):
    """Replace the head or the tail (a fair coin per positive) by random entities."""
    B = triples.shape[0]
    h, r, t = triples[:, 0:1], triples[:, 1:2], triples[:, 2:3]
    random_ents = torch.randint(0, num_entities, (B, num_negs), generator=generator)
    corrupt_head = (torch.rand(B, 1, generator=generator) < 0.5).expand(B, num_negs)
    neg_h = torch.where(corrupt_head, random_ents, h.expand(B, num_negs))
    neg_t = torch.where(corrupt_head, t.expand(B, num_negs), random_ents)
    return torch.stack([neg_h, r.expand(B, num_negs), neg_t], dim=-1)  # (B, N, 3)


def bernoulli_head_probability(triples, num_relations):
    """OpenKE's "bern" sampling (Wang et al., TransH): corrupt the head with probability
    tph / (tph + hpt), tails per head over heads per tail of each relation."""
    def mean_group_size(cols):
        groups, counts = torch.unique(triples[:, cols], dim=0, return_counts=True)
        total = torch.zeros(num_relations, dtype=torch.float64).index_add_(
            0, groups[:, 0], counts.double())
        return total / torch.bincount(groups[:, 0], minlength=num_relations)
    tph = mean_group_size([1, 0])  # (relation, head) groups: tails per head
    hpt = mean_group_size([1, 2])
    return tph / (tph + hpt)


def corrupt_bern(triples, num_negs, num_entities, head_prob, generator=None):
    B = triples.shape[0]
    corrupt_head = torch.bernoulli(head_prob[triples[:, 1]], generator=generator).bool()
    random_ents = torch.randint(num_entities, (B, num_negs), generator=generator)
    neg = triples[:, None].repeat(1, num_negs, 1)
    neg[..., 0] = torch.where(corrupt_head[:, None], random_ents, neg[..., 0])
    neg[..., 2] = torch.where(corrupt_head[:, None], neg[..., 2], random_ents)
    return neg


# ------------------------------------------------------------------------ score functions


def transe_score(h, r, t, p=1):
    return -torch.norm(h + r - t, p=p, dim=-1)


def transe_score_linalg(h, r, t, p=1):
    return -torch.linalg.vector_norm(h + (r - t), ord=p, dim=-1)


def distmult_score(h, r, t):
    return (h * r * t).sum(dim=-1)


def complex_score(h, r, t):
    """h, r, t complex: Re(<h, r, conj(t)>)."""
    return torch.real(torch.sum(h * r * torch.conj(t), dim=-1))


def complex_score_real(h, r, t):
    """OpenKE's form on [re | im] halves."""
    re_h, im_h = torch.chunk(h, 2, dim=-1)
    re_r, im_r = torch.chunk(r, 2, dim=-1)
    re_t, im_t = torch.chunk(t, 2, dim=-1)
    return torch.sum(re_h * re_t * re_r + im_h * im_t * re_r
                     + re_h * im_t * im_r - im_h * re_t * im_r, dim=-1)


def rotate_score(h, phase, t, gamma):
    """h, t complex; the relation a unit rotation exp(i phase)."""
    rotation = torch.polar(torch.ones_like(phase), phase)
    return gamma - (h * rotation - t).abs().sum(dim=-1)


def rotate_score_real(head, phase, tail, gamma):
    """The RotatE authors' form on [re | im] halves with cos/sin and a stacked norm."""
    re_head, im_head = torch.chunk(head, 2, dim=-1)
    re_tail, im_tail = torch.chunk(tail, 2, dim=-1)
    re_relation, im_relation = torch.cos(phase), torch.sin(phase)
    re_score = re_head * re_relation - im_head * im_relation - re_tail
    im_score = re_head * im_relation + im_head * re_relation - im_tail
    score = torch.stack([re_score, im_score], dim=0).norm(dim=0)
    return gamma - score.sum(dim=-1)


# ------------------------------------------------------------------------------ models


class KGModel(nn.Module):
    """Entity and relation embeddings; ``forward`` scores (..., 3) index triples."""

    def score_embeddings(self, h, r, t):
        raise NotImplementedError

    def lookup(self, triples):
        h = self.entity(triples[..., 0])
        r = self.relation(triples[..., 1])
        t = self.entity(triples[..., 2])
        return h, r, t

    def forward(self, triples):
        return self.score_embeddings(*self.lookup(triples))

    def score_all_tails(self, hr):
        """(B, 2) heads and relations against every entity: (B, E)."""
        h = self.entity(hr[:, 0])[:, None]
        r = self.relation(hr[:, 1])[:, None]
        t = self.entity.weight[None]
        return self.score_embeddings(h, r, t)


class TransE(KGModel):
    def __init__(self, num_entities, num_relations, dim, p_norm=1, max_norm=None):
        super().__init__()
        self.p_norm = p_norm
        self.entity = nn.Embedding(num_entities, dim, max_norm=max_norm)
        self.relation = nn.Embedding(num_relations, dim)
        bound = 6 / math.sqrt(dim)
        nn.init.uniform_(self.entity.weight, -bound, bound)
        nn.init.uniform_(self.relation.weight, -bound, bound)
        with torch.no_grad():
            self.relation.weight.copy_(F.normalize(self.relation.weight, p=2, dim=1))

    def score_embeddings(self, h, r, t):
        return transe_score(h, r, t, self.p_norm)

    @torch.no_grad()
    def renormalize(self):
        self.entity.weight.data = F.normalize(self.entity.weight.data, p=2, dim=-1)


class DistMult(KGModel):
    def __init__(self, num_entities, num_relations, dim):
        super().__init__()
        self.entity = nn.Embedding(num_entities, dim)
        self.relation = nn.Embedding(num_relations, dim)
        nn.init.xavier_uniform_(self.entity.weight.data)
        nn.init.xavier_uniform_(self.relation.weight.data)

    def score_embeddings(self, h, r, t):
        return distmult_score(h, r, t)


class ComplEx(KGModel):
    """PyKEEN's layout: a (E, 2 * dim) real weight viewed as (E, dim) complex numbers."""

    def __init__(self, num_entities, num_relations, dim):
        super().__init__()
        self.entity = nn.Embedding(num_entities, 2 * dim)
        self.relation = nn.Embedding(num_relations, 2 * dim)
        nn.init.normal_(self.entity.weight, std=0.3)
        nn.init.normal_(self.relation.weight, std=0.3)

    @staticmethod
    def as_complex(x):
        return torch.view_as_complex(x.view(*x.shape[:-1], -1, 2))

    def score_embeddings(self, h, r, t):
        return complex_score(self.as_complex(h), self.as_complex(r), self.as_complex(t))


class RotatE(nn.Module):
    """The RotatE authors' parameters: raw tensors, ``gamma``/``embedding_range`` frozen."""

    def __init__(self, num_entities, num_relations, dim, gamma=6.0, epsilon=2.0):
        super().__init__()
        self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
        self.embedding_range = nn.Parameter(torch.Tensor([(gamma + epsilon) / dim]),
                                            requires_grad=False)
        self.entity_embedding = nn.Parameter(torch.zeros(num_entities, dim * 2))
        nn.init.uniform_(self.entity_embedding, a=-self.embedding_range.item(),
                         b=self.embedding_range.item())
        self.relation_embedding = nn.Parameter(torch.zeros(num_relations, dim))
        nn.init.uniform_(self.relation_embedding, a=-self.embedding_range.item(),
                         b=self.embedding_range.item())

    def phase(self, relation):
        return relation / (self.embedding_range.item() / math.pi)

    def forward(self, triples):
        head = torch.index_select(self.entity_embedding, 0, triples[..., 0].reshape(-1))
        relation = torch.index_select(self.relation_embedding, 0, triples[..., 1].reshape(-1))
        tail = torch.index_select(self.entity_embedding, 0, triples[..., 2].reshape(-1))
        shape = triples.shape[:-1]
        score = rotate_score_real(head, self.phase(relation), tail, self.gamma.item())
        return score.view(shape)

    def forward_complex(self, triples):
        e = torch.complex(*torch.chunk(self.entity_embedding, 2, dim=-1))
        return rotate_score(e[triples[..., 0]], self.phase(self.relation_embedding)[
            triples[..., 1]], e[triples[..., 2]], self.gamma)

    def score_all_tails(self, hr):
        e = torch.complex(*torch.chunk(self.entity_embedding, 2, dim=-1))
        phase = self.phase(self.relation_embedding[hr[:, 1]])
        return rotate_score(e[hr[:, 0], None], phase[:, None], e[None], self.gamma.item())


# ------------------------------------------------------------------------------ losses


class MarginLoss(nn.Module):
    """OpenKE: max(p - n, -margin) + margin on distances (p, n >= 0: lower is better)."""

    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = nn.Parameter(torch.Tensor([margin]))
        self.margin.requires_grad = False

    def forward(self, p_score, n_score):
        return (torch.max(p_score - n_score, -self.margin)).mean() + self.margin


def self_adversarial_loss(positive_score, negative_score, temperature=1.0, weights=None):
    """RotatE: negatives weighted by a detached softmax of their own scores."""
    if weights is None:
        weights = F.softmax(negative_score * temperature, dim=1).detach()
    negative_loss = -(weights * F.logsigmoid(-negative_score)).sum(dim=1).mean()
    positive_loss = -F.logsigmoid(positive_score).mean()
    return (positive_loss + negative_loss) / 2, weights


# ------------------------------------------------------------------- filtered evaluation


def true_tail_mask(hr, triples, num_entities):
    """(B, E) boolean: every known tail of each (head, relation), built with scatter_."""
    mask = torch.zeros(hr.shape[0], num_entities, dtype=torch.bool)
    for i in range(hr.shape[0]):
        match = (triples[:, 0] == hr[i, 0]) & (triples[:, 1] == hr[i, 1])
        tails = triples[match, 2]
        mask[i].scatter_(0, tails, True)
    return mask


def filtered_ranks(scores, targets, filter_mask):
    """Ranks of ``targets`` among ``scores`` (B, E), other true tails left out."""
    target_scores = scores.gather(1, targets[:, None])
    others = filter_mask.clone()
    others.scatter_(1, targets[:, None], False)
    scores = scores.masked_fill(others, float("-inf"))
    optimistic = (scores > target_scores).sum(dim=1) + 1
    pessimistic = (scores >= target_scores).sum(dim=1) + 1
    argsort = torch.argsort(scores, dim=1, descending=True)
    by_argsort = (argsort == targets[:, None]).nonzero()[:, 1] + 1
    return optimistic, pessimistic, by_argsort


def rank_metrics(ranks):
    ranks = ranks.float()
    return {"mrr": (1.0 / ranks).mean().item(),
            "hits@1": (ranks <= 1).float().mean().item(),
            "hits@3": (ranks <= 3).float().mean().item(),
            "mean_rank": ranks.mean().item()}


def evaluate(model, triples, known):
    with torch.no_grad():
        hr = triples[:, :2]
        scores = model.score_all_tails(hr)
        mask = true_tail_mask(hr, known, NUM_ENTITIES)
        optimistic, pessimistic, by_argsort = filtered_ranks(scores, triples[:, 2], mask)
        raw = (scores > scores.gather(1, triples[:, 2:3])).sum(dim=1) + 1
    return optimistic, pessimistic, by_argsort, raw


# ----------------------------------------------------- fixed-weight checks (recorded)

# score functions in float64 with gradients, two norms and two spellings of each
B, N, D = 3, 4, 5
h64 = torch.randn(B, 1, D, dtype=torch.float64, requires_grad=True)
r64 = torch.randn(B, 1, D, dtype=torch.float64, requires_grad=True)
t64 = torch.randn(B, N, D, dtype=torch.float64, requires_grad=True)
score_values, score_grads, score_agree = {}, {}, {}
for name, fn, alt in (
        ("transe_l1", lambda h, r, t: transe_score(h, r, t, 1),
         lambda h, r, t: transe_score_linalg(h, r, t, 1)),
        ("transe_l2", lambda h, r, t: transe_score(h, r, t, 2),
         lambda h, r, t: transe_score_linalg(h, r, t, 2)),
        ("distmult", distmult_score, lambda h, r, t: torch.einsum("bnd,bnd,bnd->bn", h.expand_as(
            t), r.expand_as(t), t)),
        ("complex", lambda h, r, t: complex_score_real(h, r, t),
         lambda h, r, t: complex_score(
             torch.complex(*torch.chunk(h, 2, -1)), torch.complex(*torch.chunk(r, 2, -1)),
             torch.complex(*torch.chunk(t, 2, -1))))):
    hh, rr, tt = (x[..., :4] for x in (h64, r64, t64)) if name == "complex" else (
        h64, r64, t64)
    out = fn(hh, rr, tt)
    score_values[name] = out.detach()
    score_grads[name] = torch.autograd.grad(out.sin().sum(), (h64, r64, t64))
    alt_out = alt(hh, rr, tt)
    alt_grads = torch.autograd.grad(alt_out.sin().sum(), (h64, r64, t64))
    score_agree[name] = (torch.allclose(out, alt_out, rtol=1e-12, atol=1e-12) and all(
        torch.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(score_grads[name],
                                                                      alt_grads)))
phase64 = torch.randn(B, 1, 2, dtype=torch.float64, requires_grad=True)
rot = rotate_score_real(h64[..., :4], phase64, t64[..., :4], 6.0)
score_values["rotate"] = rot.detach()
score_grads["rotate"] = torch.autograd.grad(rot.sin().sum(), (h64, phase64, t64))
rot_c = rotate_score(torch.complex(*torch.chunk(h64[..., :4], 2, -1)), phase64,
                     torch.complex(*torch.chunk(t64[..., :4], 2, -1)), 6.0)
rot_c_grads = torch.autograd.grad(rot_c.sin().sum(), (h64, phase64, t64))
score_agree["rotate"] = (torch.allclose(rot, rot_c, rtol=1e-12, atol=1e-12) and all(
    torch.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(score_grads["rotate"],
                                                                  rot_c_grads)))
# view_as_complex / view_as_real round trip and the interleaved layout
pairs = torch.randn(2, 3, 2, dtype=torch.float64)
as_c = torch.view_as_complex(pairs)
fixed_results["view_as_complex"] = {"real": as_c.real.clone(), "imag": as_c.imag.clone()}
view_roundtrip = torch.equal(torch.view_as_real(as_c), pairs)
angles = torch.linspace(-math.pi, math.pi, 7, dtype=torch.float64)
unit = torch.polar(torch.full_like(angles, 2.0), angles)
polar_agrees = (torch.allclose(unit.real, 2 * torch.cos(angles))
                and torch.allclose(unit.imag, 2 * torch.sin(angles))
                and torch.allclose(unit.abs(), torch.full_like(angles, 2.0))
                and torch.allclose(unit.angle()[1:], angles[1:]))
fixed_results["scores"] = score_values
fixed_results["score_grads"] = {k: dict(zip("hrt", v)) for k, v in score_grads.items()}

# gradcheck: real scores in float64; ComplEx and RotatE on complex128 inputs
def leaf(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype).requires_grad_()


gh, gr, gt = leaf(2, 3), leaf(2, 3), leaf(2, 3)
ch, cr, ct = (leaf(2, 3, dtype=torch.complex128) for _ in range(3))
h2, r2, t2, p1 = leaf(2, 2), leaf(2, 2), leaf(2, 2), leaf(2, 1)
pos1 = leaf(2)
gradcheck_results = {
    "transe_l1": torch.autograd.gradcheck(lambda h, r, t: transe_score(h, r, t, 1),
                                          (gh, gr, gt)),
    "transe_l2": torch.autograd.gradcheck(lambda h, r, t: transe_score_linalg(h, r, t, 2),
                                          (gh, gr, gt)),
    "distmult": torch.autograd.gradcheck(distmult_score, (gh, gr, gt)),
    "complex_real": torch.autograd.gradcheck(complex_score_real, (h2, r2, t2)),
    "complex": torch.autograd.gradcheck(complex_score, (ch, cr, ct)),
    "rotate": torch.autograd.gradcheck(lambda h, p, t: rotate_score(h, p, t, 6.0),
                                       (ch, gr, ct)),
    "rotate_real": torch.autograd.gradcheck(lambda h, p, t: rotate_score_real(h, p, t, 6.0),
                                            (h2, p1, t2)),
}
# the softmax weights are detached: the loss's gradient is the one with the weights held fixed
fixed_weights = F.softmax(gt.detach() * 0.5, dim=1)
gradcheck_results["self_adversarial_fixed_weights"] = torch.autograd.gradcheck(
    lambda p, n: self_adversarial_loss(p, n, weights=fixed_weights)[0], (pos1, gt))
adv_grads = torch.autograd.grad(self_adversarial_loss(pos1, gt, 0.5)[0], (pos1, gt))
adv_grads_fixed = torch.autograd.grad(
    self_adversarial_loss(pos1, gt, weights=fixed_weights)[0], (pos1, gt))
detach_holds_weights = all(torch.allclose(a, b, rtol=1e-12, atol=1e-15)
                           for a, b in zip(adv_grads, adv_grads_fixed))
fixed_results["self_adversarial_grads"] = dict(zip(("pos", "neg"), adv_grads))

# negative sampling with a generator: heads or tails replaced, relation kept
gen = torch.Generator().manual_seed(7)
negatives = corrupt(train_triples[:6], 5, NUM_ENTITIES, generator=gen)
fixed_results["negatives"] = negatives
positives = train_triples[:6, None].expand_as(negatives)
same_h = negatives[..., 0] == positives[..., 0]
same_t = negatives[..., 2] == positives[..., 2]
corruption_valid = bool((negatives[..., 1] == positives[..., 1]).all()
                        and (same_h | same_t).all())

head_prob = bernoulli_head_probability(all_triples, NUM_RELATIONS)
fixed_results["bern_head_probability"] = head_prob
bern_negatives = corrupt_bern(train_triples[:6], 5, NUM_ENTITIES, head_prob, generator=gen)
fixed_results["bern_negatives"] = bern_negatives
bern_same_h = bern_negatives[..., 0] == positives[..., 0]
bern_same_t = bern_negatives[..., 2] == positives[..., 2]
corruption_valid = corruption_valid and bool(
    (bern_negatives[..., 1] == positives[..., 1]).all() and (bern_same_h | bern_same_t).all())

# losses: MarginRankingLoss, relu hinge and OpenKE's max form agree (distances)
pos_d = torch.rand(6, 1, dtype=torch.float64) * 3
neg_d = torch.rand(6, 5, dtype=torch.float64) * 3
margin_rank = nn.MarginRankingLoss(margin=1.0)(neg_d, pos_d.expand_as(neg_d),
                                               torch.ones_like(neg_d))
relu_hinge = F.relu(1.0 + pos_d - neg_d).mean()
openke = MarginLoss(1.0).double()(pos_d.expand_as(neg_d), neg_d)
fixed_results["margin_losses"] = torch.stack([margin_rank, relu_hinge, openke.squeeze()])
adv_loss, adv_weights = self_adversarial_loss(-pos_d.squeeze(1), -neg_d, temperature=1.0)
fixed_results["self_adversarial"] = {"loss": adv_loss, "weights": adv_weights}

# TransE on fixed float32 weights: scores, margin loss, gradients
torch.manual_seed(1)
transe = TransE(NUM_ENTITIES, NUM_RELATIONS, 8, p_norm=1)
batch = train_triples[:8]
neg = corrupt(batch, 4, NUM_ENTITIES)
pos_s = transe(batch)
neg_s = transe(neg)
loss = nn.MarginRankingLoss(margin=2.0)(pos_s[:, None].expand_as(neg_s), neg_s,
                                        torch.ones_like(neg_s))
loss.backward()
fixed_results["transe"] = {"pos": pos_s.detach(), "neg": neg_s.detach(), "loss": loss.item(),
                           "grad_entity": transe.entity.weight.grad.clone(),
                           "grad_relation": transe.relation.weight.grad.clone()}
linalg_agrees = torch.allclose(transe_score_linalg(*transe.lookup(batch), p=1), pos_s)
# PyKEEN scores TransE against every tail with cdist
with torch.no_grad():
    hr_emb = transe.entity(batch[:, 0]) + transe.relation(batch[:, 1])
    cdist_tails = -torch.cdist(hr_emb, transe.entity.weight, p=1)
fixed_results["transe_cdist"] = cdist_tails
cdist_agrees = torch.allclose(cdist_tails, transe.score_all_tails(batch[:, :2]), atol=1e-5)
transe.renormalize()
fixed_results["transe_renormalized"] = transe.entity.weight.detach().clone()
entity_norms = transe.entity.weight.norm(dim=1)

# nn.Embedding(max_norm): looking rows up renormalises them in place, the others stay
torch.manual_seed(2)
capped = nn.Embedding(6, 4, max_norm=1.0)
before = capped.weight.detach().clone()
looked_up = capped(torch.tensor([[0, 2], [2, 5]]))
after = capped.weight.detach()
fixed_results["max_norm"] = {"looked_up": looked_up.detach(), "weight": after.clone()}
max_norm_rows = {
    "looked_up_capped": bool((after[[0, 2, 5]].norm(dim=1) <= 1.0 + 1e-6).all()),
    "others_untouched": torch.equal(after[[1, 3, 4]], before[[1, 3, 4]]),
}
capped(torch.tensor([1, 3])).pow(2).sum().backward()
fixed_results["max_norm"]["grad"] = capped.weight.grad.clone()

# ComplEx and DistMult on fixed float32 weights: all-tail scores and gradients
torch.manual_seed(3)
complex_model = ComplEx(NUM_ENTITIES, NUM_RELATIONS, 4)
all_tails = complex_model.score_all_tails(test_triples[:, :2])
all_tails.logsumexp(1).sum().backward()
fixed_results["complex"] = {"all_tails": all_tails.detach(),
                            "grad_entity": complex_model.entity.weight.grad.clone()}
complex_layouts_agree = torch.allclose(
    complex_model(test_triples), all_tails.gather(1, test_triples[:, 2:3]).squeeze(1),
    rtol=1e-5, atol=1e-6)

# filtered ranks on fixed scores: optimistic, pessimistic and argsort agree without ties
fixed_scores = torch.randn(n_test, NUM_ENTITIES, dtype=torch.float64)
fixed_mask = true_tail_mask(test_triples[:, :2], all_triples, NUM_ENTITIES)
opt, pes, by_sort = filtered_ranks(fixed_scores, test_triples[:, 2], fixed_mask)
fixed_results["ranks"] = {"optimistic": opt, "argsort": by_sort, "mask": fixed_mask.sum(1)}
# the other true tails boosted above the target: raw ranks count them, filtered ones do not
boosted = fixed_scores + 10 * fixed_mask - 5 * F.one_hot(test_triples[:, 2], NUM_ENTITIES)
boosted_filtered = filtered_ranks(boosted, test_triples[:, 2], fixed_mask)[0]
boosted_raw = (boosted > boosted.gather(1, test_triples[:, 2:3])).sum(1) + 1
fixed_results["boosted_ranks"] = {"filtered": boosted_filtered, "raw": boosted_raw}
fixed_results["rank_metrics"] = rank_metrics(opt)
# Hits@k by topk over the filtered scores
filtered = fixed_scores.masked_fill(fixed_mask.scatter(1, test_triples[:, 2:3], False),
                                    float("-inf"))
top3 = filtered.topk(3, dim=1).indices
fixed_results["hits@3_topk"] = (top3 == test_triples[:, 2:3]).any(dim=1).float().mean()
tie_scores = fixed_scores.round()
tie_opt, tie_pes, _ = filtered_ranks(tie_scores, test_triples[:, 2], fixed_mask)
fixed_results["tie_ranks"] = {"optimistic": tie_opt, "pessimistic": tie_pes,
                              "realistic": (tie_opt + tie_pes).double() / 2}

# --------------------------------------------------------------------------- training


def train(model, optimizer, steps, loss_fn, num_negs=4, batch_size=16, after_step=None,
          sparse_optimizer=None):
    losses = []
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randint(0, train_triples.shape[0], (batch_size,), generator=gen)
        pos = train_triples[idx]
        neg = corrupt(pos, num_negs, NUM_ENTITIES, generator=gen)
        optimizer.zero_grad()
        if sparse_optimizer is not None:
            sparse_optimizer.zero_grad()
        loss = loss_fn(model(pos), model(neg))
        loss.backward()
        optimizer.step()
        if sparse_optimizer is not None:
            sparse_optimizer.step()
        if after_step is not None:
            after_step()
        losses.append(loss.item())
    return losses


def transe_loss(pos, neg):  # scores are negative distances
    return F.relu(2.0 + neg - pos[:, None]).mean()


def distmult_loss(pos, neg):  # softplus loss with L2 regularisation on the batch
    return F.softplus(-pos).mean() + F.softplus(neg).mean()


def rotate_loss(pos, neg):
    return self_adversarial_loss(pos, neg, temperature=1.0)[0]


metrics, train_metrics = {}, {}


def record_metrics(name, model):
    """Filtered MRR and Hits@k on the held-out triples and on the training triples."""
    metrics[name] = rank_metrics(evaluate(model, test_triples, all_triples)[0])
    train_metrics[name] = rank_metrics(evaluate(model, train_triples, all_triples)[0])


torch.manual_seed(10)
transe = TransE(NUM_ENTITIES, NUM_RELATIONS, 16, p_norm=1)
transe.renormalize()
transe_losses = train(transe, torch.optim.Adam(transe.parameters(), lr=0.05), 60, transe_loss,
                      after_step=transe.renormalize)
record_metrics("transe", transe)

torch.manual_seed(11)
distmult = DistMult(NUM_ENTITIES, NUM_RELATIONS, 16)
distmult_losses = train(distmult, torch.optim.Adagrad(distmult.parameters(), lr=0.5), 60,
                        distmult_loss)
record_metrics("distmult", distmult)

torch.manual_seed(12)
complex_model = ComplEx(NUM_ENTITIES, NUM_RELATIONS, 8)
complex_losses = train(complex_model, torch.optim.Adagrad(complex_model.parameters(), lr=0.5,
                                                          initial_accumulator_value=0.1),
                       60, distmult_loss)
record_metrics("complex", complex_model)

torch.manual_seed(13)
rotate = RotatE(NUM_ENTITIES, NUM_RELATIONS, 8, gamma=6.0)
rotate_losses = train(rotate, torch.optim.Adam(
    filter(lambda p: p.requires_grad, rotate.parameters()), lr=0.05), 60, rotate_loss)
record_metrics("rotate", rotate)
with torch.no_grad():
    rotate_forms_difference = (rotate(test_triples) - rotate.forward_complex(test_triples)).abs(
    ).max().item()
rotate_frozen = rotate.gamma.item() == 6.0 and rotate.gamma.grad is None

# sparse embeddings: SparseAdam on the embeddings, Adam on nothing else (no dense params)
torch.manual_seed(14)
sparse_model = DistMult(NUM_ENTITIES, NUM_RELATIONS, 8)
sparse_model.entity = nn.Embedding(NUM_ENTITIES, 8, sparse=True)
sparse_model.relation = nn.Embedding(NUM_RELATIONS, 8, sparse=True)
sparse_optimizer = torch.optim.SparseAdam(list(sparse_model.parameters()), lr=0.05)
sparse_losses = []
gen = torch.Generator().manual_seed(0)
for step in range(40):
    idx = torch.randint(0, train_triples.shape[0], (16,), generator=gen)
    pos = train_triples[idx]
    neg = corrupt(pos, 4, NUM_ENTITIES, generator=gen)
    sparse_optimizer.zero_grad()
    loss = distmult_loss(sparse_model(pos), sparse_model(neg))
    loss.backward()
    if step == 0:
        grad = sparse_model.entity.weight.grad
        # the same loss through F.embedding on a dense copy: the same gradient, densified
        dense_weight = sparse_model.entity.weight.detach().clone().requires_grad_()
        dense_relation = sparse_model.relation.weight.detach()
        dense_loss = distmult_loss(
            distmult_score(F.embedding(pos[:, 0], dense_weight), dense_relation[pos[:, 1]],
                           F.embedding(pos[:, 2], dense_weight)),
            distmult_score(F.embedding(neg[..., 0], dense_weight), dense_relation[neg[..., 1]],
                           F.embedding(neg[..., 2], dense_weight)))
        dense_loss.backward()
        used = torch.zeros(NUM_ENTITIES, dtype=torch.bool)
        used[pos[:, [0, 2]].reshape(-1)] = True
        used[neg[..., [0, 2]].reshape(-1)] = True
        sparse_grad_info = {"is_sparse": grad.is_sparse,
                            "dense": grad.to_dense().clone(),
                            "matches_dense": torch.allclose(grad.to_dense(), dense_weight.grad),
                            "rows": grad.coalesce().indices().shape[1],
                            "used_rows": int(used.sum())}
        before_step = sparse_model.entity.weight.detach().clone()
    sparse_optimizer.step()
    if step == 0:
        moved = (sparse_model.entity.weight.detach() != before_step).any(dim=1)
        sparse_grad_info["only_used_rows_moved"] = torch.equal(moved, used)
    sparse_losses.append(loss.item())
record_metrics("sparse_distmult", sparse_model)

print(f"TransE {transe_losses[0]:.3f} -> {transe_losses[-1]:.3f}, "
      f"DistMult {distmult_losses[0]:.3f} -> {distmult_losses[-1]:.3f}, "
      f"ComplEx {complex_losses[0]:.3f} -> {complex_losses[-1]:.3f}, "
      f"RotatE {rotate_losses[0]:.3f} -> {rotate_losses[-1]:.3f}, "
      f"sparse {sparse_losses[0]:.3f} -> {sparse_losses[-1]:.3f}")
for name, m in metrics.items():
    print(f"{name}: train MRR {train_metrics[name]['mrr']:.3f}, test MRR {m['mrr']:.3f} "
          f"hits@1 {m['hits@1']:.3f} hits@3 {m['hits@3']:.3f}")
