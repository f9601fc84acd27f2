# ruff: noqa: B007, E402, E501, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/tutorials intermediate_source/optimizer_step_in_backward_tutorial.py: fusing the
optimizer step into the backward with ``Tensor.register_post_accumulate_grad_hook`` (one Adam
per parameter, stepped and zeroed by the hook), against the usual train loop.

torchvision's vit_l_16 is a download: a small vision transformer (patch conv, class token,
nn.TransformerEncoder, head) stands in for it, on 32x32 fake images. The CUDA memory snapshots
need a GPU (they raise on torch's CPU build too), so they run only where CUDA is available."""
import copy
from pickle import dump

import jitgrad as torch
import jitgrad.nn as nn

torch.manual_seed(0)


class TinyViT(nn.Module):
    def __init__(self, image_size=32, patch=8, dim=32, depth=2, heads=4, num_classes=10):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, (image_size // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(dim)
        self.heads = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        return self.heads(self.ln(self.encoder(x))[:, 0])


device = "cuda" if torch.cuda.is_available() else "cpu"
model = TinyViT().to(device)
reference = copy.deepcopy(model)  # trained the usual way, to compare with
optimizer = torch.optim.Adam(model.parameters())

IMAGE_SIZE = 32
images = torch.rand(4, 1, 3, IMAGE_SIZE, IMAGE_SIZE)  # (fake_image of each step, fixed)
step = 0


def train(model, optimizer):
    global step
    # create our fake image input: tensor shape is batch_size, channels, height, width
    fake_image = images[step % len(images)].to(device)
    step += 1

    # call our forward and backward
    loss = model.forward(fake_image)
    loss.sum().backward()

    # optimizer update
    optimizer.step()
    optimizer.zero_grad()


if torch.cuda.is_available():
    # tell CUDA to start recording memory allocations
    torch.cuda.memory._record_memory_history(enabled='all')

# train 3 steps
for _ in range(3):
    train(model, optimizer)

if torch.cuda.is_available():
    # save a snapshot of the memory allocations
    s = torch.cuda.memory._snapshot()
    with open("snapshot.pickle", "wb") as f:
        dump(s, f)
    # tell CUDA to stop recording memory allocations now
    torch.cuda.memory._record_memory_history(enabled=None)

# (the same 3 steps on the reference copy, to compare with the fused version below)
model_after_usual_steps = copy.deepcopy(model)
model = reference
step = 0

# Instead of having just *one* optimizer, we will have a ``dict`` of optimizers
# for every parameter so we could reference them in our hook.
optimizer_dict = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}
hook_calls = []


# Define our hook, which will call the optimizer ``step()`` and ``zero_grad()``
def optimizer_hook(parameter) -> None:
    hook_calls.append(parameter.grad is not None)
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()


# Register the hook onto every parameter
for p in model.parameters():
    p.register_post_accumulate_grad_hook(optimizer_hook)


# Now remember our previous ``train()`` function? Since the optimizer has been
# fused into the backward, we can remove the optimizer step and zero_grad calls.
def train(model):
    global step
    fake_image = images[step % len(images)].to(device)
    step += 1

    # call our forward and backward
    loss = model.forward(fake_image)
    loss.sum().backward()

    # optimizer update --> no longer needed!
    # optimizer.step()
    # optimizer.zero_grad()


# delete optimizer memory from before to get a clean slate for the next
# memory snapshot
del optimizer

# train 3 steps. note that we no longer pass the optimizer into train()
for _ in range(3):
    train(model)

n_params = len(list(model.parameters()))
grads_left = [p.grad for p in model.parameters() if p.grad is not None]
max_param_diff = max((a - b).abs().max().item() for a, b in
                     zip(model.parameters(), model_after_usual_steps.parameters()))
print(f"{len(hook_calls)} hook calls for {n_params} parameters x 3 steps; "
      f"largest difference from the usual loop: {max_param_diff:.3g}")

# a deterministic part to compare with torch: the fused-step model's output on fixed input
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 4)
optimizer_dict.update({p: torch.optim.Adam([p], foreach=False) for p in model.parameters()})
fixed_in = torch.cos(torch.arange(2 * 3 * 32 * 32, dtype=torch.float32)).view(2, 3, 32, 32)
with torch.no_grad():
    fixed_out_before = model(fixed_in).tolist()
for _ in range(2):
    train_out = model(fixed_in)
    train_out.sum().backward()
with torch.no_grad():
    fixed_out = model(fixed_in).tolist()
