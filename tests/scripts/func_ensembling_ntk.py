"""An ensemble of small MLPs run as one vmapped model, and the empirical neural tangent kernel
of a small CNN computed two ways, written for these tests in the way the torch.func ensembling
and NTK tutorials are commonly written (modelled on the API usage of those tutorials, not a copy
of them):

- ``func.stack_module_state``, ``func.functional_call`` with a (params, buffers) pair and an
  args tuple on a deep-copied base model, ``vmap`` with ``in_dims=(0, 0, None)``;
- ``utils.benchmark.Timer(stmt=..., globals=...).timeit``;
- the NTK as Jacobian contractions (``vmap(jacrev(f), (None, 0))`` and ``einsum`` for the
  full / trace / diagonal kernels) and as ``vjp`` followed by ``jvp`` of identity rows under
  nested ``vmap``s, which must agree.

jitgrad has no 'meta' device, so the base model keeps real (never read) weights.
"""
import copy

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F
from jitgrad.func import functional_call, jacrev, jvp, stack_module_state, vjp, vmap
from jitgrad.utils.benchmark import Timer

torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"


class Member(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(64, 32)
        self.mid = nn.Linear(32, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, img):
        h = F.relu(self.inp(img.flatten(1)))
        return self.out(F.relu(self.mid(h)))


def make_member():
    return Member()


n_members = 10
members = [make_member().to(dev) for _ in range(n_members)]
per_member_batches = torch.randn(n_members, 16, 1, 8, 8, device=dev)
shared_batch = per_member_batches[0]

looped_own = torch.stack([m(b) for m, b in zip(members, per_member_batches)])
looped_shared = torch.stack([m(shared_batch) for m in members])

stacked_params, stacked_buffers = stack_module_state(members)
template = copy.deepcopy(members[0])


def run_member(p, b, inp):
    return functional_call(template, (p, b), (inp,))


print("stacked leading dims:", {k: v.size(0) for k, v in stacked_params.items()})
vmapped_own = torch.vmap(run_member)(stacked_params, stacked_buffers, per_member_batches)
vmapped_shared = vmap(run_member, in_dims=(0, 0, None))(stacked_params, stacked_buffers,
                                                         shared_batch)
assert torch.allclose(vmapped_own, looped_own, atol=1e-3, rtol=1e-5)
assert torch.allclose(vmapped_shared, looped_shared, atol=1e-3, rtol=1e-5)
ensemble_max_diff = (vmapped_own - looped_own).abs().max()
ensemble_shapes = (tuple(vmapped_own.shape), tuple(vmapped_shared.shape))

loop_timer = Timer(stmt="[m(b) for m, b in zip(members, per_member_batches)]",
                   globals=globals())
vmap_timer = Timer(stmt="vmap(run_member)(stacked_params, stacked_buffers, per_member_batches)",
                   globals=globals())
print("python loop:", loop_timer.timeit(10))
print("vmap:", vmap_timer.timeit(10))


# ---- empirical NTK of a small convolutional regressor
class SmallConvNet(nn.Module):
    def __init__(self, outputs=3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, (3, 3)), nn.Tanh(),
                                      nn.Conv2d(4, 4, (3, 3), stride=2), nn.Tanh())
        self.out = nn.Linear(4 * 3 * 3, outputs)

    def forward(self, img):
        return self.out(self.features(img).flatten(1))


dev = "cuda" if torch.cuda.device_count() > 0 else "cpu"
cnet = SmallConvNet().to(dev)
train_pts = torch.randn(6, 3, 10, 10, device=dev)
test_pts = torch.randn(4, 3, 10, 10, device=dev)
weights = {k: v.detach() for k, v in cnet.named_parameters()}  # no .backward() here


def single(p, img):
    return functional_call(cnet, p, (img.unsqueeze(0),)).squeeze(0)


CONTRACTIONS = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}


def ntk_by_jacobians(p, left, right, mode="full"):
    def flat_jacobians(batch):
        per_param = vmap(jacrev(single), (None, 0))(p, batch)
        return [j.flatten(2) for j in per_param.values()]

    pairs = zip(flat_jacobians(left), flat_jacobians(right))
    return torch.stack([torch.einsum(CONTRACTIONS[mode], a, b) for a, b in pairs]).sum(0)


def ntk_by_products(p, left, right, mode="full"):
    def one_pair(a, b):
        out_a, pull_back = vjp(lambda q: single(q, a), p)

        def column(unit):
            (cotangent,) = pull_back(unit)
            return jvp(lambda q: single(q, b), (p,), (cotangent,))[1]

        eye = torch.eye(out_a.numel(), dtype=out_a.dtype, device=out_a.device)
        return vmap(column)(eye.view(out_a.numel(), -1))

    kernel = vmap(vmap(one_pair, (None, 0)), (0, None))(left, right)
    if mode == "trace":
        return torch.einsum("NMKK->NM", kernel)
    if mode == "diagonal":
        return torch.einsum("NMKK->NMK", kernel)
    return kernel


ntk_full_shape = tuple(ntk_by_jacobians(weights, train_pts, test_pts).shape)
ntk_trace = ntk_by_jacobians(weights, train_pts, test_pts, "trace")
print(ntk_full_shape, tuple(ntk_trace.shape))

full_j = ntk_by_jacobians(weights, test_pts, train_pts)
full_p = ntk_by_products(weights, test_pts, train_pts)
assert torch.allclose(full_j, full_p, atol=1e-5)
diag_j = ntk_by_jacobians(weights, test_pts, train_pts, "diagonal")
diag_p = ntk_by_products(weights, test_pts, train_pts, "diagonal")
assert torch.allclose(diag_j, diag_p, atol=1e-5)
ntk_vps_trace = ntk_by_products(weights, test_pts, train_pts, "trace")
ntk_max_diff = (diag_j - diag_p).abs().max().item()

# fixed weights and inputs, recorded for the comparison with torch
with torch.no_grad():
    for k, prm in enumerate(cnet.parameters()):
        prm.copy_(0.2 * torch.cos(torch.arange(prm.numel(), dtype=torch.float32) * 0.7 + k)
                  .view(prm.shape))
fixed_w = {k: v.detach() for k, v in cnet.named_parameters()}
img_a = torch.sin(torch.arange(600, dtype=torch.float32) * 0.3).view(2, 3, 10, 10)
img_b = torch.cos(torch.arange(900, dtype=torch.float32) * 0.2).view(3, 3, 10, 10)
fixed_ntk = ntk_by_jacobians(fixed_w, img_a, img_b)
fixed_ntk_vps = ntk_by_products(fixed_w, img_a, img_b, "diagonal")
three = {k: torch.stack([0.1 * torch.sin(torch.arange(v[0].numel(), dtype=torch.float32)
                                         * (j + 2)).view(v[0].shape) for j in range(3)])
         for k, v in stack_module_state(members[:3])[0].items()}
fixed_ensemble_out = vmap(run_member, in_dims=(0, None, None))(
    three, {}, img_a[:, 1, 1:9, 1:9].reshape(2, 1, 8, 8))
