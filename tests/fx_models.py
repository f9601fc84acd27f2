"""Models and helpers the fx tests share."""

from __future__ import annotations

import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F


def as_np(t):
    return t.detach().numpy()


def torch_fx():
    """(torch, torch.fx, torch.nn, torch.nn.functional) or a skip."""
    torch = pytest.importorskip("torch")
    import torch.fx as tfx
    import torch.nn.functional as TF

    return torch, tfx, torch.nn, TF


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = jitgrad.tanh(h) + h.sigmoid() * 0.5
        return F.log_softmax(self.fc2(h), dim=-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 5 * 5, 2)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.max_pool2d(x, 2)
        x = jitgrad.flatten(x, 1)
        return self.head(x.view(x.shape[0], -1))
