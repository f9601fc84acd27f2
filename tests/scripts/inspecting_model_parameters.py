# ruff: noqa: E226, E402, E501, F401 (tutorial code as is)
"""pytorch/tutorials recipes_source/inspecting_model_parameters.py: ``parameters()`` and
``named_parameters()`` shapes, ``numel`` totals, trainable counts after freezing a weight,
the same on a CNN (also against ``np.prod(param.size())``), and per-layer totals.

Changes: the ``torchinfo.summary`` calls are left out (torchinfo is a separate package, not
installed here); the printed lines are also recorded."""
import jitgrad as torch  # (the recipe imports only nn; the test harness reads torch)
from jitgrad import nn

lines = []


def show(*args):
    print(*args)
    lines.append(" ".join(str(a) for a in args))


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork()
show(model)

show([param.shape for param in model.parameters()])

for name, param in model.named_parameters():
    show(name, param.shape)

layer = nn.Linear(28*28, 512)

for name, param in layer.named_parameters():
    show(name, param.size())

for name, param in model.named_parameters():
    show(f'{name=}, {param.size()=}, {param.numel()=}')

show(f'Total model params: {sum(p.numel() for p in model.parameters()):,}')

show(f'Total model trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad):,}')

for name, param in model.named_parameters():
    if name == 'linear_relu_stack.0.weight':
        param.requires_grad = False
    show(f'{name=}, {param.size()=}, {param.numel()=}, {param.requires_grad=}')
show(f'Total model trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad):,}')


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels=1, out_channels=32, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channels=32, out_channels=64, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=(2, 2)),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 12 * 12, 128),
            nn.ReLU(inplace=True),
            nn.Linear(128, 10),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.classifier(x)
        return x

cnn_model = CNN()
show(cnn_model)
show('-'*72)
for name, param in cnn_model.named_parameters():
    show(f'{name=}, {param.size()=}, {param.numel()=}, {param.requires_grad=}')
show('-'*72)
show(f'Total model trainable params: {sum(p.numel() for p in cnn_model.parameters() if p.requires_grad):,}')

import numpy as np

for name, param in cnn_model.named_parameters():
    show(f'{name=}, {param.size()=}, {np.prod(param.size())=} == {param.numel()=}')

from collections import defaultdict
layer_params = defaultdict(int)

for name, param in model.named_parameters():
    # combine weight and bias together using layer name
    # linear_relu_stack.0 = linear_relu_stack.0.weight + linear_relu_stack.bias
    layer_params[name.rsplit('.', 1)[0]] += param.numel()

for name, total_params in layer_params.items():
    show(f'{name=} {total_params=:,}')

show('-'*72)
show(f'Manually gathered model trainable params: {sum(p.numel() for p in cnn_model.parameters() if p.requires_grad):,}')
show('-'*72)
show('Manually generated total number of parameters per layer:')
cnn_layer_params = defaultdict(int)

for name, param in cnn_model.named_parameters():
    cnn_layer_params[name.rsplit('.', 1)[0]] += param.numel()

for name, total_params in cnn_layer_params.items():
    show(f'{name=} {total_params=:,}')
