"""Sparse mixture-of-experts routing outside a transformer, written for these tests in the
way the widely copied Shazeer noisy-gating code and expert-choice routing write torch code
(modelled on the API usage of such code, not a copy of any):

- Shazeer's noisy top-k gating (``nn.Softplus``, ``torch.randn_like`` noise, the load through
  ``torch.distributions.normal.Normal(...).cdf``, ``torch.gather`` / ``torch.gt`` /
  ``torch.where``, the cv^2 loss with ``var()``) and its SparseDispatcher (``torch.nonzero
  (gates).sort(0)``, ``split(1, dim=1)``, ``torch.split`` by part sizes, ``index_add``);
  expert-choice routing (``torch.topk`` over ``scores.t()``, three-operand ``einsum``);
- a training-mode call (noise drawn by torch's generator, gradients of the output and the
  balance loss) and an eval-mode call under ``torch.no_grad()`` compared with the dense mixture,
  expert counts by ``torch.histc``.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

N_EMBD, EXPERT_HIDDEN, N_EXPERTS = 32, 48, 4


class SwiGLUExpert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseDispatcher:
    """Shazeer-style dispatch (as the widely copied noisy-gating code writes it): the
    nonzero gates sorted by expert, the inputs split per expert, the outputs stitched back."""

    def __init__(self, num_experts, gates):
        self._gates = gates
        self._num_experts = num_experts
        sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
        _, self._expert_index = sorted_experts.split(1, dim=1)
        self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
        self._part_sizes = (gates > 0).sum(0).tolist()
        gates_exp = gates[self._batch_index.flatten()]
        self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

    def dispatch(self, inp):
        inp_exp = inp[self._batch_index].squeeze(1)
        return torch.split(inp_exp, self._part_sizes, dim=0)

    def combine(self, expert_out, multiply_by_gates=True):
        stitched = torch.cat(expert_out, 0)
        if multiply_by_gates:
            stitched = stitched.mul(self._nonzero_gates)
        zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1),
                            device=stitched.device, dtype=stitched.dtype)
        return zeros.index_add(0, self._batch_index, stitched.float())


class NoisyTopkMoE(nn.Module):
    """Noisy top-k gating (Shazeer et al. 2017): softplus noise, the smooth load estimate
    through the normal CDF, and the cv^2 importance / load losses."""

    def __init__(self, dim, hidden, num_experts, k=2, noisy_gating=True):
        super().__init__()
        self.num_experts, self.k, self.noisy_gating = num_experts, k, noisy_gating
        self.experts = nn.ModuleList([SwiGLUExpert(dim, hidden) for _ in range(num_experts)])
        self.w_gate = nn.Parameter(torch.zeros(dim, num_experts), requires_grad=True)
        self.w_noise = nn.Parameter(torch.zeros(dim, num_experts), requires_grad=True)
        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)
        self.register_buffer("mean", torch.tensor([0.0]))
        self.register_buffer("std", torch.tensor([1.0]))

    def cv_squared(self, x):
        eps = 1e-10
        if x.shape[0] == 1:
            return torch.tensor([0], device=x.device, dtype=x.dtype)
        return x.float().var() / (x.float().mean() ** 2 + eps)

    def _gates_to_load(self, gates):
        return (gates > 0).sum(0)

    def _prob_in_top_k(self, clean_values, noisy_values, noise_stddev, noisy_top_values):
        batch = clean_values.size(0)
        m = noisy_top_values.size(1)
        top_values_flat = noisy_top_values.flatten()
        threshold_positions_if_in = torch.arange(batch, device=clean_values.device) * m + self.k
        threshold_if_in = torch.unsqueeze(
            torch.gather(top_values_flat, 0, threshold_positions_if_in), 1)
        is_in = torch.gt(noisy_values, threshold_if_in)
        threshold_positions_if_out = threshold_positions_if_in - 1
        threshold_if_out = torch.unsqueeze(
            torch.gather(top_values_flat, 0, threshold_positions_if_out), 1)
        normal = torch.distributions.normal.Normal(self.mean, self.std)
        prob_if_in = normal.cdf((clean_values - threshold_if_in) / noise_stddev)
        prob_if_out = normal.cdf((clean_values - threshold_if_out) / noise_stddev)
        return torch.where(is_in, prob_if_in, prob_if_out)

    def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
        clean_logits = x @ self.w_gate
        if self.noisy_gating and train:
            raw_noise_stddev = x @ self.w_noise
            noise_stddev = self.softplus(raw_noise_stddev) + noise_epsilon
            noisy_logits = clean_logits + (torch.randn_like(clean_logits) * noise_stddev)
            logits = noisy_logits
        else:
            logits = clean_logits
        logits = self.softmax(logits)
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, :self.k]
        top_k_indices = top_indices[:, :self.k]
        top_k_gates = top_k_logits / (top_k_logits.sum(1, keepdim=True) + 1e-6)
        zeros = torch.zeros_like(logits, requires_grad=True)
        gates = zeros.scatter(1, top_k_indices, top_k_gates)
        if self.noisy_gating and self.k < self.num_experts and train:
            load = self._prob_in_top_k(clean_logits, noisy_logits, noise_stddev,
                                       top_logits).sum(0)
        else:
            load = self._gates_to_load(gates)
        return gates, load

    def forward(self, x, loss_coef=1e-2):
        gates, load = self.noisy_top_k_gating(x, self.training)
        importance = gates.sum(0)
        loss = (self.cv_squared(importance) + self.cv_squared(load)) * loss_coef
        dispatcher = SparseDispatcher(self.num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
        y = dispatcher.combine(expert_outputs)
        return y, loss, gates, load


def expert_choice(tokens, router, experts, capacity):
    """Expert-choice routing: each expert takes its ``capacity`` highest-scoring tokens."""
    scores = F.softmax(router(tokens), dim=-1)  # (n, E)
    gating, index = torch.topk(scores.t(), capacity, dim=-1)  # (E, C)
    dispatch = F.one_hot(index, num_classes=tokens.shape[0]).to(tokens.dtype)  # (E, C, n)
    expert_in = torch.einsum("ecn,nd->ecd", dispatch, tokens)
    expert_out = torch.stack([experts[e](expert_in[e]) for e in range(len(experts))])
    out = torch.einsum("ecn,ec,ecd->nd", dispatch, gating, expert_out)
    return out, index


# Shazeer's noisy top-k gating with the sparse dispatcher, in training mode (the noise from
# torch's random numbers) and in eval mode, and expert-choice routing
torch.manual_seed(11)
results = {}
noisy = NoisyTopkMoE(N_EMBD, EXPERT_HIDDEN, N_EXPERTS, k=2)
nn.init.normal_(noisy.w_gate, std=0.5)
nn.init.normal_(noisy.w_noise, std=0.5)
noisy_in = torch.randn(24, N_EMBD)
y, aux, noisy_gates, load = noisy(noisy_in)
(y.pow(2).mean() + aux).backward()
results["noisy_y"] = y.detach()
results["noisy_aux"] = aux.item()
results["noisy_gates"] = noisy_gates.detach()
results["noisy_load"] = load.detach()
results["noisy_grads"] = {n: p.grad.clone() for n, p in noisy.named_parameters()
                          if p.grad is not None}
noisy.eval()
with torch.no_grad():
    y_eval, aux_eval, gates_eval, load_eval = noisy(noisy_in)
results["noisy_eval_y"] = y_eval
results["noisy_eval_aux"] = aux_eval.item()
results["noisy_eval_load"] = load_eval
results["noisy_dense_y"] = sum(gates_eval[:, i:i + 1] * noisy.experts[i](noisy_in)
                               for i in range(N_EXPERTS)).detach()
results["histc"] = torch.histc(gates_eval.argmax(1).float(), bins=N_EXPERTS,
                               min=0, max=N_EXPERTS - 1)
torch.manual_seed(12)
router = nn.Linear(N_EMBD, N_EXPERTS, bias=False)
ec_experts = nn.ModuleList([SwiGLUExpert(N_EMBD, EXPERT_HIDDEN) for _ in range(N_EXPERTS)])
ec_tokens = noisy_in.clone().requires_grad_()
ec_out, ec_index = expert_choice(ec_tokens, router, ec_experts, capacity=8)
ec_out.sum().backward()
results["expert_choice_out"] = ec_out.detach()
results["expert_choice_index"] = ec_index
results["expert_choice_grad"] = ec_tokens.grad
