# The Hogwild example (github.com/pytorch/examples/tree/main/mnist_hogwild), with random
# 28x28 data and a smaller network: workers forked by torch.multiprocessing train one model
# whose parameters live in shared memory. Only the import lines changed.
import jitgrad as torch
import jitgrad.multiprocessing as mp
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.fc1 = nn.Linear(4 * 12 * 12, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 4 * 12 * 12)
        return F.log_softmax(self.fc1(x), dim=1)


def train(rank, model, dataset, seed):
    torch.manual_seed(seed + rank)
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def test(model, dataset):
    model.eval()
    with torch.no_grad():
        data, target = dataset.tensors
        return F.nll_loss(model(data), target, reduction="mean").item()


if __name__ == "__main__":
    torch.manual_seed(1)
    images = torch.randn(128, 1, 28, 28)
    labels = (images[:, 0, :14].mean((1, 2)) > 0).long() + 2 * (images[:, 0, 14:].mean((1, 2))
                                                                  > 0).long()
    dataset = TensorDataset(images, labels)
    model = Net()
    model.share_memory()  # gradients are allocated lazily, so they are not shared
    loss_before = test(model, dataset)
    context = mp.get_context("fork")  # (workers share the model's memory only when forked)
    processes = []
    for rank in range(2):
        p = context.Process(target=train, args=(rank, model, dataset, 1))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    exit_codes = [p.exitcode for p in processes]
    loss_after = test(model, dataset)
    print(loss_before, loss_after, exit_codes)
