# ruff: noqa: E402, N806, N816, UP008 (tutorial code as is)
"""pytorch/tutorials recipes_source/recipes/{saving_multiple_models_in_one_file,
save_load_across_devices}.py: two models and their SGD-with-momentum optimizers in one
checkpoint dict, loaded back; ``torch.load(..., map_location=...)`` with a device object and a
string, ``model.to(device)``, and saving a DataParallel model's ``module.state_dict()``.

Changes: the recipes forget to import ``torch.nn.functional as F`` (added); the files go to a
temporary directory; before saving, each model takes two optimizer steps (so the optimizer
states hold momentum buffers) and after loading, the originals and the reloaded copies take
the same steps and must stay equal; the GPU sections load to ``cuda`` only where CUDA is, and
otherwise map to the ``meta`` device (map_location to a device that is not the CPU); section 6
wraps ``net`` in ``nn.DataParallel`` (the recipe calls ``net.module`` on a plain module)."""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(0)
tmp = tempfile.mkdtemp()


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

netA = Net()
netB = Net()

optimizerA = optim.SGD(netA.parameters(), lr=0.001, momentum=0.9)
optimizerB = optim.SGD(netB.parameters(), lr=0.001, momentum=0.9)

images, labels = torch.rand(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])


def step(model, optimizer):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss.item()


for _ in range(2):
    step(netA, optimizerA)
    step(netB, optimizerB)

# Specify a path to save to
PATH = os.path.join(tmp, "model.pt")

torch.save({
            'modelA_state_dict': netA.state_dict(),
            'modelB_state_dict': netB.state_dict(),
            'optimizerA_state_dict': optimizerA.state_dict(),
            'optimizerB_state_dict': optimizerB.state_dict(),
            }, PATH)

modelA = Net()
modelB = Net()
optimModelA = optim.SGD(modelA.parameters(), lr=0.001, momentum=0.9)
optimModelB = optim.SGD(modelB.parameters(), lr=0.001, momentum=0.9)

checkpoint = torch.load(PATH)
modelA.load_state_dict(checkpoint['modelA_state_dict'])
modelB.load_state_dict(checkpoint['modelB_state_dict'])
optimizerA.load_state_dict(checkpoint['optimizerA_state_dict'])
optimizerB.load_state_dict(checkpoint['optimizerB_state_dict'])
# (the recipe loads into optimizerA/B again; the new models' optimizers need the states too,
# from a second load: load_state_dict keeps the checkpoint's tensors, as torch's does, so two
# optimizers loaded from one dict would share their momentum buffers)
second = torch.load(PATH)
optimModelA.load_state_dict(second['optimizerA_state_dict'])
optimModelB.load_state_dict(second['optimizerB_state_dict'])
shared_buffer = (optimizerA.state[netA.fc3.bias]["momentum_buffer"]
                 is checkpoint['optimizerA_state_dict']["state"][9]["momentum_buffer"])
checkpoint_keys = sorted(checkpoint)
momentum_buffers = len([s for s in optimModelA.state.values() if "momentum_buffer" in s])

modelA.eval()
modelB.eval()
# - or -
modelA.train()
modelB.train()

resumed = []
for _ in range(2):
    resumed.append((step(netA, optimizerA), step(modelA, optimModelA)))
resumed_equal = all(torch.equal(p, q) for p, q in zip(netA.parameters(), modelA.parameters()))

# --------------------------------------------------------------- save_load_across_devices
net = Net()
print(net)

# Save
torch.save(net.state_dict(), PATH)

# Load
device = torch.device('cpu')
model = Net()
model.load_state_dict(torch.load(PATH, map_location=device))
cpu_loaded = all(torch.equal(p, q) for p, q in zip(net.parameters(), model.parameters()))

if torch.cuda.is_available():
    # Save
    torch.save(net.state_dict(), PATH)

    # Load
    device = torch.device("cuda")
    model = Net()
    model.load_state_dict(torch.load(PATH))
    model.to(device)

    model = Net()
    # Choose whatever GPU device number you want
    model.load_state_dict(torch.load(PATH, map_location="cuda:0"))
    # Make sure to call input = input.to(device) on any input tensors that you feed to the model
    model.to(device)

mapped = torch.load(PATH, map_location="meta")
mapped_devices = sorted({t.device.type for t in mapped.values()})
model = Net()
model.load_state_dict(mapped, assign=True)
model_devices = sorted({p.device.type for p in model.parameters()})

net = nn.DataParallel(Net())
# Save
torch.save(net.module.state_dict(), PATH)
plain = Net()
plain.load_state_dict(torch.load(PATH))
data_parallel_keys = list(plain.state_dict())[:2]
data_parallel_same = torch.equal(plain(images), net(images))
