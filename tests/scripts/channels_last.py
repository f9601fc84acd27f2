# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Tutorial "Channels Last Memory Format in PyTorch" (tiny sizes): strides of channels_last
tensors, conversions, is_contiguous(memory_format=...), and models converted with .to()."""
import jitgrad as torch

torch.manual_seed(0)

N, C, H, W = 10, 3, 32, 32
x = torch.empty(N, C, H, W)
print(x.stride())  # Outputs: (3072, 1024, 32, 1)
strides = {"contiguous": x.stride()}

x = x.to(memory_format=torch.channels_last)
print(x.shape)  # Outputs: (10, 3, 32, 32) as dimensions order preserved
print(x.stride())  # Outputs: (3072, 1, 96, 3)
strides["to_channels_last"] = x.stride()
shape_kept = tuple(x.shape)

x = x.to(memory_format=torch.contiguous_format)
print(x.stride())  # Outputs: (3072, 1024, 32, 1)
strides["back"] = x.stride()

x = x.contiguous(memory_format=torch.channels_last)
print(x.stride())  # Outputs: (3072, 1, 96, 3)
strides["contiguous_cl"] = x.stride()

print(x.is_contiguous(memory_format=torch.channels_last))  # Outputs: True
is_cl = (x.is_contiguous(memory_format=torch.channels_last), x.is_contiguous())

special_x = torch.empty(4, 1, 4, 4)
print(special_x.is_contiguous(memory_format=torch.channels_last))  # Outputs: True
print(special_x.is_contiguous(memory_format=torch.contiguous_format))  # Outputs: True
special = (special_x.is_contiguous(memory_format=torch.channels_last),
           special_x.is_contiguous(memory_format=torch.contiguous_format))

x = torch.empty(N, C, H, W, memory_format=torch.channels_last)
print(x.stride())  # Outputs: (3072, 1, 96, 3)
strides["empty_cl"] = x.stride()

# the permute way: NHWC data seen as NCHW
x = torch.empty(N, H, W, C)
x = x.permute(0, 3, 1, 2)
print(x.stride())  # Outputs: (3072, 1, 96, 3)
strides["permuted"] = x.stride()
permuted_is_cl = x.is_contiguous(memory_format=torch.channels_last)

# pointwise operators keep the memory format
x = torch.randn(N, C, H, W).contiguous(memory_format=torch.channels_last)
y = (x * 2 + 1).relu()
pointwise_keeps = y.is_contiguous(memory_format=torch.channels_last)
clone_keeps = x.clone().is_contiguous(memory_format=torch.channels_last)
values_same = torch.equal(x.contiguous(), x)

# Conv keeps the format
input = torch.randint(1, 10, (2, 8, 4, 4), dtype=torch.float32, requires_grad=True)
model = torch.nn.Conv2d(8, 4, 3)
ref = model(input)
input_leaf = input

input = input.contiguous(memory_format=torch.channels_last)
model = model.to(memory_format=torch.channels_last)
out = model(input)
print(out.is_contiguous(memory_format=torch.channels_last))  # Ouputs: True
conv_keeps = out.is_contiguous(memory_format=torch.channels_last)
weight_cl = model.weight.is_contiguous(memory_format=torch.channels_last)
conv_same_values = torch.allclose(out, ref, atol=1e-5)
out.sum().backward()
input_grad_shape = tuple(input_leaf.grad.shape)


# Converting existing models
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.max_pool2d(self.conv2(x), 1)
        return self.fc(x.flatten(1))


model = Net()
data = torch.randn(8, 3, 8, 8)
target = torch.randint(0, 5, (8,))
model = model.to(memory_format=torch.channels_last)  # Replace with your model
input = data.to(memory_format=torch.channels_last)  # Replace with your input
output = model(input)
model_weights_cl = all(p.is_contiguous(memory_format=torch.channels_last)
                       for p in model.parameters() if p.dim() == 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
cl_losses = []
for step in range(15):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(input), target)
    loss.backward()
    optimizer.step()
    cl_losses.append(loss.item())
grads_cl = model.conv1.weight.grad.shape == model.conv1.weight.shape

# deterministic parts to compare with torch
fixed_x = torch.sin(torch.arange(2 * 3 * 5 * 5, dtype=torch.float32)).view(2, 3, 5, 5)
fixed_conv = torch.nn.Conv2d(3, 2, 3)
with torch.no_grad():
    fixed_conv.weight.copy_(torch.cos(torch.arange(54, dtype=torch.float32)).view(2, 3, 3, 3))
    fixed_conv.bias.fill_(0.1)
fixed_conv = fixed_conv.to(memory_format=torch.channels_last)
fixed_out = fixed_conv(fixed_x.contiguous(memory_format=torch.channels_last))
fixed_results = {"out": fixed_out.tolist(), "out_stride": fixed_out.stride(),
                 "weight_stride": fixed_conv.weight.stride()}
