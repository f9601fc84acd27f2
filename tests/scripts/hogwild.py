"""Hogwild-style training, written for these tests in the way the PyTorch examples' Hogwild
MNIST trainer is commonly written (modelled on the API usage of that example, not a copy of it):

- a small conv net whose parameters go to shared memory with ``model.share_memory()``
- ``torch.multiprocessing.get_context("fork").Process`` workers that each train it with their
  own ``DataLoader(shuffle=True)`` and SGD with momentum, ``start``/``join``/``exitcode``
- ``F.nll_loss`` over ``F.log_softmax``, evaluated before and after in ``torch.no_grad()``
"""
import jitgrad as torch
import jitgrad.multiprocessing as mp
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader, TensorDataset

FEATURES = 4 * 12 * 12  # 4 maps of 28 -> 24 (conv 5) -> 12 (pool 2)


class QuadrantNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Conv2d(1, 4, kernel_size=5)
        self.head = nn.Linear(FEATURES, 10)

    def forward(self, img):
        h = F.max_pool2d(self.features(img), 2)
        h = F.relu(h).view(-1, FEATURES)
        return F.log_softmax(self.head(h), dim=1)


def worker(rank, shared_model, data, base_seed):
    """One Hogwild worker: plain SGD steps straight on the shared parameters."""
    torch.manual_seed(base_seed + rank)
    sgd = optim.SGD(shared_model.parameters(), lr=0.05, momentum=0.5)
    shared_model.train()
    for img, label in DataLoader(data, batch_size=16, shuffle=True):
        sgd.zero_grad()
        F.nll_loss(shared_model(img), label).backward()
        sgd.step()


def evaluate(model, data):
    model.eval()
    img, label = data.tensors
    with torch.no_grad():
        return F.nll_loss(model(img), label, reduction="mean").item()


if __name__ == "__main__":
    torch.manual_seed(1)
    pictures = torch.randn(128, 1, 28, 28)
    # label: which of the top and bottom halves are brighter than average (4 classes)
    top = pictures[:, 0, :14].mean((1, 2)) > 0
    bottom = pictures[:, 0, 14:].mean((1, 2)) > 0
    data = TensorDataset(pictures, top.long() + 2 * bottom.long())

    model = QuadrantNet()
    model.share_memory()  # (only the parameters: gradients are created later, per process)
    loss_before = evaluate(model, data)
    ctx = mp.get_context("fork")  # forked children see the same shared storage
    workers = [ctx.Process(target=worker, args=(rank, model, data, 1)) for rank in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    exit_codes = [w.exitcode for w in workers]
    loss_after = evaluate(model, data)
    print(f"nll {loss_before:.3f} -> {loss_after:.3f}; exit codes {exit_codes}")
