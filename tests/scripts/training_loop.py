# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/tutorials beginner_source/introyt/trainingyt.py: Dataset and DataLoader, a LeNet-like
GarmentClassifier, CrossEntropyLoss on dummy outputs, SGD with momentum, the per-epoch train
and validation loops, and saving the best model's state_dict (then loading it back).

Fashion-MNIST is a download: scikit-learn's bundled 8x8 digits, scaled 3x and padded to 28x28,
stand in for it (with the tutorial's Normalize((0.5,), (0.5,))). tensorboard and torchvision
are not installed: a small SummaryWriter stand-in records the scalars, and the image grid is
made by hand."""
import os
import tempfile

import jitgrad as torch
from jitgrad.utils.data import Dataset

from datetime import datetime

import numpy as np
from sklearn.datasets import load_digits

torch.manual_seed(0)


class SummaryWriter:  # (stand-in for torch.utils.tensorboard.SummaryWriter)
    def __init__(self, log_dir):
        self.log_dir, self.scalars = log_dir, []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, float(value), step))

    def add_scalars(self, tag, values, step):
        for k, v in values.items():
            self.add_scalar(f"{tag}/{k}", v, step)

    def flush(self):
        pass


class Digits28(Dataset):
    """sklearn's digits as 1x28x28 images in [-1, 1] (ToTensor, then Normalize((0.5,), (0.5,)))."""

    def __init__(self, train):
        digits = load_digits()
        split = slice(0, 1200) if train else slice(1200, 1600)
        images = np.kron(digits.images[split] / 16.0, np.ones((3, 3)))  # 24x24
        images = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None].astype(np.float32)
        self.images = (torch.from_numpy(images) - 0.5) / 0.5
        self.targets = torch.from_numpy(digits.target[split]).long()

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.images[i], self.targets[i]


# Create datasets for training & validation
training_set = Digits28(train=True)
validation_set = Digits28(train=False)

# Create data loaders for our datasets; shuffle for training, not for validation
training_loader = torch.utils.data.DataLoader(training_set, batch_size=4, shuffle=True, num_workers=2)
validation_loader = torch.utils.data.DataLoader(validation_set, batch_size=4, shuffle=False, num_workers=2)

# Class labels
classes = tuple(str(d) for d in range(10))

# Report split sizes
print('Training set has {} instances'.format(len(training_set)))
print('Validation set has {} instances'.format(len(validation_set)))


# Helper function for inline image display
def matplotlib_imshow(img, one_channel=False):
    if one_channel:
        img = img.mean(dim=0)
    img = img / 2 + 0.5     # unnormalize
    npimg = img.numpy()
    return npimg  # (plt.imshow(npimg, cmap="Greys") with matplotlib)


dataiter = iter(training_loader)
images, labels = next(dataiter)

# Create a grid from the images and show them (torchvision.utils.make_grid, by hand)
img_grid = torch.cat(list(images), dim=2)
shown = matplotlib_imshow(img_grid, one_channel=True)
print('  '.join(classes[labels[j]] for j in range(4)))
first_batch = (tuple(images.shape), tuple(labels.shape), shown.shape)

import jitgrad.nn as nn
import jitgrad.nn.functional as F


# PyTorch models inherit from ``torch.nn.Module``
class GarmentClassifier(nn.Module):
    def __init__(self):
        super(GarmentClassifier, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 4 * 4)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


model = GarmentClassifier()

loss_fn = torch.nn.CrossEntropyLoss()

# NB: Loss functions expect data in batches, so we're creating batches of 4
# Represents the model's confidence in each of the 10 classes for a given input
dummy_outputs = torch.rand(4, 10)
# Represents the correct class among the 10 being tested
dummy_labels = torch.tensor([1, 5, 3, 7])

print(dummy_outputs)
print(dummy_labels)

loss = loss_fn(dummy_outputs, dummy_labels)
print('Total loss for this batch: {}'.format(loss.item()))
dummy_loss_ok = abs(loss.item() - (-torch.log_softmax(dummy_outputs, 1)[range(4), dummy_labels]).mean().item()) < 1e-6

# Optimizers specified in the torch.optim package
optimizer = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)  # (lr=0.001 in the tutorial)


def train_one_epoch(epoch_index, tb_writer):
    running_loss = 0.
    last_loss = 0.

    # Here, we use enumerate(training_loader) instead of
    # iter(training_loader) so that we can track the batch
    # index and do some intra-epoch reporting
    for i, data in enumerate(training_loader):
        # Every data instance is an input + label pair
        inputs, labels = data

        # Zero your gradients for every batch!
        optimizer.zero_grad()

        # Make predictions for this batch
        outputs = model(inputs)

        # Compute the loss and its gradients
        loss = loss_fn(outputs, labels)
        loss.backward()

        # Adjust learning weights
        optimizer.step()

        # Gather data and report
        running_loss += loss.item()
        if i % 100 == 99:  # (every 1000 batches in the tutorial)
            last_loss = running_loss / 100  # loss per batch
            print('  batch {} loss: {}'.format(i + 1, last_loss))
            tb_x = epoch_index * len(training_loader) + i + 1
            tb_writer.add_scalar('Loss/train', last_loss, tb_x)
            running_loss = 0.

    return last_loss


# Initializing in a separate cell so we can easily add more epochs to the same run
timestamp = datetime.now().strftime('%Y%m%d_%H%M%S')
writer = SummaryWriter('runs/fashion_trainer_{}'.format(timestamp))
epoch_number = 0
save_dir = tempfile.mkdtemp()

EPOCHS = 2

best_vloss = 1_000_000.
vlosses, saved = [], []

for epoch in range(EPOCHS):
    print('EPOCH {}:'.format(epoch_number + 1))

    # Make sure gradient tracking is on, and do a pass over the data
    model.train(True)
    avg_loss = train_one_epoch(epoch_number, writer)

    # We don't need gradients on to do reporting
    model.train(False)

    running_vloss = 0.0
    for i, vdata in enumerate(validation_loader):
        vinputs, vlabels = vdata
        voutputs = model(vinputs)
        vloss = loss_fn(voutputs, vlabels)
        running_vloss += vloss

    avg_vloss = running_vloss / (i + 1)
    print('LOSS train {} valid {}'.format(avg_loss, avg_vloss))
    vlosses.append(avg_vloss.item())

    # Log the running loss averaged per batch
    # for both training and validation
    writer.add_scalars('Training vs. Validation Loss',
                       {'Training': avg_loss, 'Validation': avg_vloss},
                       epoch_number + 1)
    writer.flush()

    # Track best performance, and save the model's state
    if avg_vloss < best_vloss:
        best_vloss = avg_vloss
        model_path = os.path.join(save_dir, 'model_{}_{}'.format(timestamp, epoch_number))
        torch.save(model.state_dict(), model_path)
        saved.append(model_path)

    epoch_number += 1

saved_model = GarmentClassifier()
saved_model.load_state_dict(torch.load(saved[-1]))
saved_model.eval()
with torch.no_grad():
    correct = sum((saved_model(x).argmax(1) == y).sum().item() for x, y in validation_loader)
validation_accuracy = correct / len(validation_set)
print('validation accuracy of the saved model', validation_accuracy)
train_losses = [v for tag, v, _ in writer.scalars if tag == 'Loss/train']

# a deterministic part to compare with torch: 5 SGD-with-momentum steps from fixed weights on
# the first 20 training images, in order
fixed = GarmentClassifier()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 5)
optimizer = torch.optim.SGD(fixed.parameters(), lr=0.005, momentum=0.9)
fixed_losses = []
for inputs, labels in torch.utils.data.DataLoader(torch.utils.data.Subset(training_set, range(20)), batch_size=4):
    optimizer.zero_grad()
    loss = loss_fn(fixed(inputs), labels)
    loss.backward()
    optimizer.step()
    fixed_losses.append(loss.item())
