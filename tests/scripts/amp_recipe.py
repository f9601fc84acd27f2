"""Mixed-precision training on the CPU, written for these tests in the way the PyTorch AMP
recipe is commonly written (modelled on the API usage of that recipe, not a copy of it):

- ``torch.autocast(device_type="cpu", dtype=torch.float16)`` around the forward (float16
  activations, a float32 MSE loss), also with ``enabled=``
- ``torch.amp.GradScaler("cpu", enabled=...)``: scale, unscale_, clip_grad_norm_, step, update
- a checkpoint of model, optimizer and scaler state restored into fresh objects
"""
import jitgrad as torch

torch.manual_seed(0)
device = "cpu"
width, n_out, depth = 128, 32, 3
rows, steps_per_epoch, n_epochs = 64, 6, 3


def mlp(width, n_out, depth):
    """``depth`` Linear layers, ReLU between them."""
    blocks = []
    for _ in range(depth - 1):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    blocks.append(torch.nn.Linear(width, n_out))
    return torch.nn.Sequential(*tuple(blocks)).to(device=device)


batches = [(torch.randn(rows, width, device=device), torch.randn(rows, n_out, device=device))
           for _ in range(steps_per_epoch)]
criterion = torch.nn.MSELoss().to(device)

# A forward with weights set by formula, so torch and jitgrad can be compared.
probe = mlp(width, n_out, depth)
with torch.no_grad():
    for k, param in enumerate(probe.parameters(), start=1):
        ramp = torch.linspace(-0.05, 0.05, param.numel())
        param.copy_(k * ramp.reshape(param.shape))
probe_x = torch.linspace(-1, 1, 4 * width).reshape(4, width)
with torch.autocast(device_type=device, dtype=torch.float16):
    half = probe(probe_x)
fixed_dtype = half.dtype
fixed_out = half.float().detach().numpy()

amp_on = True
model = mlp(width, n_out, depth)
sgd = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", enabled=amp_on)
losses = []
for _ in range(n_epochs):
    for xb, yb in batches:
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=amp_on):
            pred = model(xb)
            loss = criterion(pred, yb)
        assert pred.dtype is torch.float16 and loss.dtype is torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(sgd)  # the gradients are true-sized again: clip them
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
        scaler.step(sgd)
        scaler.update()
        sgd.zero_grad(set_to_none=True)
        losses.append(loss.item())

saved = {"net": model.state_dict(), "sgd": sgd.state_dict(), "amp": scaler.state_dict()}
restored_model = mlp(width, n_out, depth)
restored_model.load_state_dict(saved["net"])
restored_sgd = torch.optim.SGD(restored_model.parameters(), lr=0.01)
restored_sgd.load_state_dict(saved["sgd"])
restored_scaler = torch.amp.GradScaler("cpu")
restored_scaler.load_state_dict(saved["amp"])
restored_scale = restored_scaler.get_scale()
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, scale {restored_scale}")
