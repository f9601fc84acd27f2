# The "How to use TensorBoard with PyTorch" recipe
# (pytorch.org/tutorials/recipes/recipes/tensorboard_with_pytorch): a linear regression whose
# training loss is logged with SummaryWriter to runs/<date>_<host>; only the imports changed.
import jitgrad as torch
from jitgrad.utils.tensorboard import SummaryWriter

writer = SummaryWriter()

x = torch.arange(-5, 5, 0.1).view(-1, 1)
y = -5 * x + 0.1 * torch.randn(x.size())

model = torch.nn.Linear(1, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_model(iter):
    for epoch in range(iter):
        y1 = model(x)
        loss = criterion(y1, y)
        writer.add_scalar("Loss/train", loss, epoch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


train_model(10)
writer.flush()

writer.close()
