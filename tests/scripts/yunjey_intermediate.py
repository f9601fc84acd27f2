# ruff: noqa: B007, C408, E201, E202, E203, E211, E231, E261, E262, E265, E266, E302, E303, E305, E402, E501, E701, E702, E703, E711, E712, E713, E731, E741, F401, F811, F841, N801, N802, N803, N806, N812, N817, S102, SIM115, UP004, UP008, UP015, UP031, UP032
# (the tutorials' code as is)
"""yunjey/pytorch-tutorial, tutorials/02-intermediate: convolutional_neural_network (two
conv-BatchNorm-ReLU-MaxPool layers, eval mode for the test) and deep_residual_network (the
CIFAR-10 ResNet of the paper's section 4.2: residual blocks with a downsampling shortcut,
ReLU(inplace=True), `out += residual`, Pad / RandomHorizontalFlip / RandomCrop augmentation, a
learning rate lowered through param_groups).

Changes: the two main.py files are one script, one section each; MNIST and CIFAR-10 are
downloads, so scikit-learn's 8 x 8 digits stand in (the torchvision stand-ins are in
vision_standin.py), and the sizes follow: the CNN's fc takes 2*2*32, the ResNet's pooling
is AvgPool2d(2) after 2 x 2 maps, with one block a stage and Pad(1) / RandomCrop(8); fewer
epochs and a larger learning rate; checkpoints go to a temporary directory; each section records
its losses and accuracy.
"""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn

N_TRAIN, N_TEST = 600, 300
# -----------------------------------------------------------------------------
# (added) torchvision stand-ins (scikit-learn's digits for MNIST and CIFAR-10: see the module)
import random

import numpy as np
from vision_standin import standin

torchvision = standin(N_TRAIN, N_TEST)
transforms = torchvision.transforms
save_image = torchvision.utils.save_image

WORK = tempfile.mkdtemp(prefix="yunjey_intermediate_")
results = {}
torch.manual_seed(0)
random.seed(0)

# =============================================================================
# 02-intermediate/convolutional_neural_network/main.py

# Device configuration
device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')

# Hyper parameters
num_epochs = 2
num_classes = 10
batch_size = 100
learning_rate = 0.01

# MNIST dataset
train_dataset = torchvision.datasets.MNIST(root='../../data/',
                                           train=True,
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data/',
                                          train=False,
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=batch_size,
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size,
                                          shuffle=False)

# Convolutional neural network (two convolutional layers)
class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super(ConvNet, self).__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(2*2*32, num_classes)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.reshape(out.size(0), -1)
        out = self.fc(out)
        return out

model = ConvNet(num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
losses = []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.to(device)
        labels = labels.to(device)

        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)

        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

        if (i+1) % 100 == 0:
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}'
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
model.eval()  # eval mode (batchnorm uses moving mean/variance instead of mini-batch mean/variance)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))
results["cnn"] = {"losses": losses, "accuracy": 100 * correct / total,
                  "running_var": model.layer1[1].running_var.tolist()}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(WORK, 'model.ckpt'))


# =============================================================================
# 02-intermediate/deep_residual_network/main.py

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
num_epochs = 4
batch_size = 100
learning_rate = 0.01

# Image preprocessing modules
transform = transforms.Compose([
    transforms.Pad(1),
    transforms.RandomHorizontalFlip(),
    transforms.RandomCrop(8),
    transforms.ToTensor()])

# CIFAR-10 dataset
train_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                             train=True,
                                             transform=transform,
                                             download=True)

test_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                            train=False,
                                            transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=batch_size,
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size,
                                          shuffle=False)

# 3x3 convolution
def conv3x3(in_channels, out_channels, stride=1):
    return nn.Conv2d(in_channels, out_channels, kernel_size=3,
                     stride=stride, padding=1, bias=False)

# Residual block
class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, downsample=None):
        super(ResidualBlock, self).__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(out_channels, out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out

# ResNet
class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10):
        super(ResNet, self).__init__()
        self.in_channels = 16
        self.conv = conv3x3(3, 16)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self.make_layer(block, 16, layers[0])
        self.layer2 = self.make_layer(block, 32, layers[1], 2)
        self.layer3 = self.make_layer(block, 64, layers[2], 2)
        self.avg_pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(64, num_classes)

    def make_layer(self, block, out_channels, blocks, stride=1):
        downsample = None
        if (stride != 1) or (self.in_channels != out_channels):
            downsample = nn.Sequential(
                conv3x3(self.in_channels, out_channels, stride=stride),
                nn.BatchNorm2d(out_channels))
        layers = []
        layers.append(block(self.in_channels, out_channels, stride, downsample))
        self.in_channels = out_channels
        for i in range(1, blocks):
            layers.append(block(out_channels, out_channels))
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv(x)
        out = self.bn(out)
        out = self.relu(out)
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.avg_pool(out)
        out = out.view(out.size(0), -1)
        out = self.fc(out)
        return out

model = ResNet(ResidualBlock, [1, 1, 1]).to(device)


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# For updating learning rate
def update_lr(optimizer, lr):
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr

# Train the model
total_step = len(train_loader)
curr_lr = learning_rate
losses, lrs = [], []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.to(device)
        labels = labels.to(device)

        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)

        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

        if (i+1) % 100 == 0:
            print ("Epoch [{}/{}], Step [{}/{}] Loss: {:.4f}"
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

    # Decay learning rate
    if (epoch+1) % 2 == 0:
        curr_lr /= 3
        update_lr(optimizer, curr_lr)
    lrs.append(optimizer.param_groups[0]['lr'])

# Test the model
model.eval()
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Accuracy of the model on the test images: {} %'.format(100 * correct / total))
results["resnet"] = {"losses": losses, "accuracy": 100 * correct / total, "lrs": lrs}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(WORK, 'resnet.ckpt'))


# =============================================================================
# (added) a deterministic part to compare with torch: the models above with fixed weights, their
# loss and gradients on the first test images, in float64 (batch norm over a few values
# amplifies float32 rounding)
def fixed_run(model, inputs, labels, criterion):
    model.double()
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float64) * (k + 1)).view_as(p) / 3)
    model.train()
    model.zero_grad()
    loss = criterion(model(inputs.double() if inputs.is_floating_point() else inputs), labels)
    loss.backward()
    return {"loss": loss.item(), **{n: p.grad.tolist() for n, p in model.named_parameters()}}


fixed_images = torch.stack([test_dataset[i][0] for i in range(20)])
fixed_labels = torch.tensor([test_dataset[i][1] for i in range(20)])
fixed_results = {}
fixed_results["cnn"] = fixed_run(ConvNet(num_classes), fixed_images[:, :1], fixed_labels, nn.CrossEntropyLoss())
fixed_results["resnet"] = fixed_run(ResNet(ResidualBlock, [1, 1, 1]), fixed_images, fixed_labels, nn.CrossEntropyLoss())
