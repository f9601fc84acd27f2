# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, N816, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""Four pytorch/tutorials recipes on the same CIFAR-10 Net, one section each:
recipes/zeroing_out_gradients.py (the training loop with optimizer.zero_grad(), and
model.zero_grad()), recipes/what_is_state_dict.py (the model's and the optimizer's
state_dict), recipes/warmstarting_model_using_parameters_from_a_different_model.py
(load_state_dict(strict=False), also with renamed and missing keys) and
recipes/saving_and_loading_models_for_inference.py (a state_dict, then the entire model,
which torch.load, like torch's since 2.6, unpickles only with weights_only=False).

CIFAR-10 is a download: 3x32x32 images made of noisy class prototypes stand in for it, and
files go to a temporary directory."""
import os
import tempfile

import jitgrad as torch

import jitgrad.nn as nn
import jitgrad.nn.functional as F

import jitgrad.optim as optim
from jitgrad.utils.data import TensorDataset

torch.manual_seed(0)
workdir = tempfile.mkdtemp()

# ---- 2. Load and normalize the dataset (transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)))
protos = torch.rand(10, 3, 32, 32)
labels = torch.randint(0, 10, (160,))
images = ((0.7 * protos[labels] + 0.3 * torch.rand(160, 3, 32, 32)) - 0.5) / 0.5
trainset = TensorDataset(images, labels)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=4,
                                          shuffle=True, num_workers=2)

classes = ('plane', 'car', 'bird', 'cat',
           'deer', 'dog', 'frog', 'horse', 'ship', 'truck')


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


# ---- zeroing out gradients
net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.02, momentum=0.9)  # (lr=0.001 in the recipe)

epoch_losses = []
for epoch in range(3):  # loop over the dataset multiple times

    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        # get the inputs; data is a list of [inputs, labels]
        inputs, labels = data

        # zero the parameter gradients
        optimizer.zero_grad()

        # forward + backward + optimize
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        # print statistics
        running_loss += loss.item()
        if i % 20 == 19:    # print every 20 mini-batches (2000 in the recipe)
            print('[%d, %5d] loss: %.3f' %
                  (epoch + 1, i + 1, running_loss / 20))
            epoch_losses.append(running_loss / 20)
            running_loss = 0.0

print('Finished Training')
net.zero_grad()  # "the same as optimizer.zero_grad() as long as all parameters are in it"
grads_after_model_zero_grad = [p.grad for p in net.parameters()]

# ---- what is a state_dict
print(net)

# Print model's state_dict
print("Model's state_dict:")
for param_tensor in net.state_dict():
    print(param_tensor, "\t", net.state_dict()[param_tensor].size())
model_state_sizes = [(k, tuple(v.size())) for k, v in net.state_dict().items()]

print()

# Print optimizer's state_dict
print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])
optimizer_state = optimizer.state_dict()
fresh_optimizer_state = optim.SGD(Net().parameters(), lr=0.001, momentum=0.9).state_dict()

# ---- warmstarting a model using parameters from a different model
netA = net


class NetB(nn.Module):
    def __init__(self):
        super(NetB, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


netB = NetB()

# Specify a path to save to
PATH = os.path.join(workdir, "model.pt")

torch.save(netA.state_dict(), PATH)

warm_result = netB.load_state_dict(torch.load(PATH), strict=False)
print(warm_result)  # "You can see that all keys matched successfully!"
warm_same = all(torch.equal(a, b) for a, b in zip(netA.parameters(), netB.parameters()))


class NetC(nn.Module):  # a different model: the first conv renamed, a new head
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.head = nn.Linear(16 * 5 * 5, 10)


netC = NetC()
state = torch.load(PATH)
state = {k.replace("conv1.", "stem."): v for k, v in state.items()}  # rename keys to match
partial_result = netC.load_state_dict(state, strict=False)
print(partial_result)
partial_keys = (sorted(partial_result.missing_keys), sorted(partial_result.unexpected_keys))
try:
    netC.load_state_dict(state)
except RuntimeError as e:
    strict_error = str(e)

# ---- saving and loading models for inference
PATH = os.path.join(workdir, "state_dict_model.pt")

# Save
torch.save(net.state_dict(), PATH)

# Load
model = Net()
model.load_state_dict(torch.load(PATH))
model.eval()
probe = images[:8]
with torch.no_grad():
    state_dict_inference_same = torch.equal(model(probe), net.eval()(probe))

PATH = os.path.join(workdir, "entire_model.pt")

# Save
torch.save(net, PATH)

# Load
try:
    torch.load(PATH)
except Exception as e:  # (weights_only=True by default)
    entire_default_error = type(e).__name__
model = torch.load(PATH, weights_only=False)
model.eval()
with torch.no_grad():
    entire_inference_same = type(model).__name__ == "Net" and torch.equal(model(probe), net(probe))

# a deterministic part to compare with torch: three SGD-with-momentum steps from fixed weights,
# then the optimizer's state_dict
fixed = Net()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 5)
fixed_opt = optim.SGD(fixed.parameters(), lr=0.005, momentum=0.9)
fixed_x = torch.cos(torch.arange(4 * 3 * 32 * 32, dtype=torch.float32)).view(4, 3, 32, 32)
fixed_losses = []
for _ in range(3):
    fixed_opt.zero_grad()
    loss = criterion(fixed(fixed_x), torch.tensor([1, 5, 3, 7]))
    loss.backward()
    fixed_opt.step()
    fixed_losses.append(loss.item())
fixed_opt_state = fixed_opt.state_dict()
fixed_momentum = {k: v["momentum_buffer"].tolist() for k, v in fixed_opt_state["state"].items()}
fixed_param_groups = fixed_opt_state["param_groups"]
