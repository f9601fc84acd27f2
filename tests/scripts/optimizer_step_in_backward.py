"""Running the optimizer inside backward via post-accumulate-grad hooks, written for these tests
in the way the PyTorch intermediate tutorials commonly write torch code (modelled on the API usage
of the tutorial "How to save memory by fusing the optimizer step into the backward pass", not a
copy of it):

- a small patch transformer (nn.Conv2d patches, flatten/transpose, a class-token nn.Parameter
  expanded and torch.cat'ed, learnt positions, nn.TransformerEncoder of pre-norm GELU
  nn.TransformerEncoderLayer's with enable_nested_tensor=False, nn.LayerNorm, nn.Linear);
- three steps of the usual Adam loop on torch.rand images, against a copy.deepcopy of the model
  whose parameters each get their own Adam(foreach=False), stepped and zeroed in a hook given to
  Tensor.register_post_accumulate_grad_hook;
- the CUDA memory-history recorder and snapshot, only where torch.cuda.is_available();
- outputs before and after two hooked steps from sin-valued weights, for the torch comparison.
"""
import copy
import pickle

import jitgrad as torch
import jitgrad.nn as nn

torch.manual_seed(11)
device = "cuda" if torch.cuda.is_available() else "cpu"


class PatchClassifier(nn.Module):
    """24x24 RGB images cut into 6x6 patches, read out from a class token."""

    def __init__(self, side=24, patch=6, width=24, layers=2, heads=3, classes=5):
        super().__init__()
        self.patchify = nn.Conv2d(3, width, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.where = nn.Parameter(0.02 * torch.randn(1, 1 + (side // patch) ** 2, width))
        block = nn.TransformerEncoderLayer(width, heads, dim_feedforward=3 * width, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, classes)

    def forward(self, images):
        tokens = self.patchify(images).flatten(2).transpose(1, 2)
        cls = self.cls.expand(tokens.shape[0], -1, -1)
        seq = torch.cat([cls, tokens], dim=1) + self.where
        return self.out(self.norm(self.body(seq))[:, 0])


net = PatchClassifier().to(device)
twin = copy.deepcopy(net)
batches = torch.rand(3, 2, 3, 24, 24)

# --- the usual loop: one optimizer, stepped after backward
adam = torch.optim.Adam(net.parameters())
recording = torch.cuda.is_available()
if recording:
    torch.cuda.memory._record_memory_history(enabled="all")
for x in batches:
    net.forward(x.to(device)).sum().backward()
    adam.step()
    adam.zero_grad()
if recording:
    with open("fused_snapshot.pickle", "wb") as fh:
        pickle.dump(torch.cuda.memory._snapshot(), fh)
    torch.cuda.memory._record_memory_history(enabled=None)
del adam

# --- the fused loop: every parameter steps as soon as its gradient is complete
per_param = {p: torch.optim.Adam([p], foreach=False) for p in twin.parameters()}
hook_calls = []


def step_now(param) -> None:
    hook_calls.append(param.grad is not None)
    per_param[param].step()
    per_param[param].zero_grad()


for p in twin.parameters():
    p.register_post_accumulate_grad_hook(step_now)

for x in batches:
    twin(x.to(device)).sum().backward()  # no optimizer calls here

n_params = sum(1 for _ in twin.parameters())
grads_left = [p.grad for p in twin.parameters() if p.grad is not None]
max_param_diff = max((a - b).abs().max().item() for a, b in zip(twin.parameters(),
                                                                net.parameters()))
print(n_params, "parameters,", len(hook_calls), "hook calls, max difference", max_param_diff)

# --- fixed weights and input for the torch comparison
with torch.no_grad():
    for k, p in enumerate(twin.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 4)
per_param.update({p: torch.optim.Adam([p], foreach=False) for p in twin.parameters()})
probe = torch.cos(torch.arange(2 * 3 * 24 * 24, dtype=torch.float32)).view(2, 3, 24, 24)
with torch.no_grad():
    fixed_out_before = twin(probe).tolist()
for _ in range(2):
    twin(probe).sum().backward()
with torch.no_grad():
    fixed_out = twin(probe).tolist()
