# The "Automatic Mixed Precision" recipe (pytorch.org/tutorials/recipes/recipes/amp_recipe),
# on the CPU (device="cpu", float16), with random data; only the import line changed.
import jitgrad as torch

torch.manual_seed(0)
device = "cpu"
batch_size, in_size, out_size, num_layers, num_batches, epochs = 64, 128, 32, 3, 6, 3


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).to(device=device)


data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
targets = [torch.randn(batch_size, out_size, device=device) for _ in range(num_batches)]
loss_fn = torch.nn.MSELoss().to(device)

# fixed weights, for the comparison with torch
fixed = make_model(in_size, out_size, num_layers)
with torch.no_grad():
    for i, p in enumerate(fixed.parameters()):
        p.copy_(torch.linspace(-0.05, 0.05, p.numel()).reshape(p.shape) * (i + 1))
fixed_input = torch.linspace(-1, 1, 4 * in_size).reshape(4, in_size)
with torch.autocast(device_type=device, dtype=torch.float16):
    fixed_out = fixed(fixed_input)
fixed_dtype = fixed_out.dtype
fixed_out = fixed_out.float().detach().numpy()

net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
use_amp = True
scaler = torch.amp.GradScaler("cpu", enabled=use_amp)
losses = []
for _epoch in range(epochs):
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
            output = net(input)
            assert output.dtype is torch.float16
            loss = loss_fn(output, target)
            assert loss.dtype is torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())

checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(),
              "scaler": scaler.state_dict()}
net2 = make_model(in_size, out_size, num_layers)
opt2 = torch.optim.SGD(net2.parameters(), lr=0.01)
scaler2 = torch.amp.GradScaler("cpu")
net2.load_state_dict(checkpoint["model"])
opt2.load_state_dict(checkpoint["optimizer"])
scaler2.load_state_dict(checkpoint["scaler"])
restored_scale = scaler2.get_scale()
print(losses[0], losses[-1], restored_scale)
