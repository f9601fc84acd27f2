# ruff: noqa: B007, C408, E201, E202, E203, E211, E231, E261, E262, E265, E266, E302, E303, E305, E402, E501, E701, E702, E703, E711, E712, E731, E741, F401, F811, F841, N801, N802, N803, N806, N812, N817, S102, SIM115, UP004, UP008, UP015, UP031, UP032
# (the tutorials' code as is)
"""yunjey/pytorch-tutorial, tutorials/01-basics: pytorch_basics (autograd on scalars, a Linear
layer's gradients and one SGD step, NumPy round trips, the input pipeline over a dataset with a
DataLoader, a custom Dataset, fine-tuning only a replaced top layer, saving and loading the
whole model and its state_dict), linear_regression (SGD on the toy data), logistic_regression
and feedforward_neural_network (MNIST classifiers with CrossEntropyLoss, SGD and Adam).

Changes: the four main.py files are one script, one section each; MNIST and CIFAR-10 are
downloads, so scikit-learn's 8 x 8 digits stand in (input_size 64 instead of 28 * 28; the
torchvision stand-ins are in vision_standin.py); fewer epochs; the pretrained ResNet-18 (a
download) is the feedforward network trained above; matplotlib's plot is left out; checkpoints
go to a temporary directory; each section records what it printed.
"""
import os
import tempfile

import jitgrad as torch

N_TRAIN, N_TEST = 1000, 400
# -----------------------------------------------------------------------------
# (added) torchvision stand-ins (scikit-learn's digits for MNIST and CIFAR-10: see the module)
import random

import numpy as np
from vision_standin import standin

torchvision = standin(N_TRAIN, N_TEST)
transforms = torchvision.transforms
save_image = torchvision.utils.save_image

CKPT = tempfile.mkdtemp(prefix="yunjey_basics_")
results = {}
torch.manual_seed(0)  # (added, as each script here)

# =============================================================================
# 01-basics/pytorch_basics/main.py
import jitgrad.nn as nn

# ================================================================== #
#                     1. Basic autograd example 1                    #
# ================================================================== #

# Create tensors.
x = torch.tensor(1., requires_grad=True)
w = torch.tensor(2., requires_grad=True)
b = torch.tensor(3., requires_grad=True)

# Build a computational graph.
y = w * x + b    # y = 2 * x + 3

# Compute gradients.
y.backward()

# Print out the gradients.
print(x.grad)    # x.grad = 2
print(w.grad)    # w.grad = 1
print(b.grad)    # b.grad = 1
results["autograd1"] = [x.grad.item(), w.grad.item(), b.grad.item()]


# ================================================================== #
#                    2. Basic autograd example 2                     #
# ================================================================== #

# Create tensors of shape (10, 3) and (10, 2).
x = torch.randn(10, 3)
y = torch.randn(10, 2)

# Build a fully connected layer.
linear = nn.Linear(3, 2)
print ('w: ', linear.weight)
print ('b: ', linear.bias)

# Build loss function and optimizer.
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)

# Forward pass.
pred = linear(x)

# Compute loss.
loss = criterion(pred, y)
print('loss: ', loss.item())
loss_before = loss.item()

# Backward pass.
loss.backward()

# Print out the gradients.
print ('dL/dw: ', linear.weight.grad)
print ('dL/db: ', linear.bias.grad)
# (recorded: the gradients equal the closed form of MSELoss's)
results["autograd2_grads_ok"] = bool(torch.allclose(
    linear.weight.grad, 2 * (pred - y).t() @ x / pred.numel(), atol=1e-6))

# 1-step gradient descent.
optimizer.step()

# You can also perform gradient descent at the low level.
# linear.weight.data.sub_(0.01 * linear.weight.grad.data)
# linear.bias.data.sub_(0.01 * linear.bias.grad.data)

# Print out the loss after 1-step gradient descent.
pred = linear(x)
loss = criterion(pred, y)
print('loss after 1 step optimization: ', loss.item())
results["autograd2_losses"] = [loss_before, loss.item()]


# ================================================================== #
#                     3. Loading data from numpy                     #
# ================================================================== #

# Create a numpy array.
x = np.array([[1, 2], [3, 4]])

# Convert the numpy array to a torch tensor.
y = torch.from_numpy(x)

# Convert the torch tensor to a numpy array.
z = y.numpy()
results["numpy"] = (str(y.dtype), z.dtype.name, np.shares_memory(x, z))


# ================================================================== #
#                         4. Input pipeline                           #
# ================================================================== #

# Download and construct CIFAR-10 dataset.
train_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                             train=True,
                                             transform=transforms.ToTensor(),
                                             download=True)

# Fetch one data pair (read data from disk).
image, label = train_dataset[0]
print (image.size())
print (label)
results["pipeline_item"] = (tuple(image.size()), label)

# Data loader (this provides queues and threads in a very simple way).
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=64,
                                           shuffle=True)

# When iteration starts, queue and thread start to load data from files.
data_iter = iter(train_loader)

# Mini-batch images and labels.
images, labels = next(data_iter)  # (the tutorial's data_iter.next() is Python 2's spelling)
results["pipeline_batch"] = (tuple(images.shape), tuple(labels.shape), str(labels.dtype))

# Actual usage of the data loader is as below.
n_batches = 0
for images, labels in train_loader:
    # Training code should be written here.
    n_batches += 1
results["pipeline_batches"] = n_batches


# ================================================================== #
#                5. Input pipeline for custom dataset                 #
# ================================================================== #

# You should build your custom dataset as below.
class CustomDataset(torch.utils.data.Dataset):
    def __init__(self):
        # TODO
        # 1. Initialize file paths or a list of file names.
        pass
    def __getitem__(self, index):
        # TODO
        # 1. Read one data from file (e.g. using numpy.fromfile, PIL.Image.open).
        # 2. Preprocess the data (e.g. torchvision.Transform).
        # 3. Return a data pair (e.g. image and label).
        pass
    def __len__(self):
        # You should change 0 to the total size of your dataset.
        return 0

# You can then use the prebuilt data loader.
custom_dataset = CustomDataset()
train_loader = torch.utils.data.DataLoader(dataset=custom_dataset,
                                           batch_size=64,
                                           shuffle=False)  # (shuffle=True raises for 0 samples, as torch)
results["custom_batches"] = len(list(train_loader))


# =============================================================================
# 01-basics/linear_regression/main.py

# Hyper-parameters
input_size = 1
output_size = 1
num_epochs = 60
learning_rate = 0.001

# Toy dataset
x_train = np.array([[3.3], [4.4], [5.5], [6.71], [6.93], [4.168],
                    [9.779], [6.182], [7.59], [2.167], [7.042],
                    [10.791], [5.313], [7.997], [3.1]], dtype=np.float32)

y_train = np.array([[1.7], [2.76], [2.09], [3.19], [1.694], [1.573],
                    [3.366], [2.596], [2.53], [1.221], [2.827],
                    [3.465], [1.65], [2.904], [1.3]], dtype=np.float32)

# Linear regression model
model = nn.Linear(input_size, output_size)
with torch.no_grad():  # (added: fixed initial weights, so the run can be compared with torch's)
    model.weight.fill_(-0.3)
    model.bias.fill_(0.2)

# Loss and optimizer
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

# Train the model
linreg_losses = []
for epoch in range(num_epochs):
    # Convert numpy arrays to torch tensors
    inputs = torch.from_numpy(x_train)
    targets = torch.from_numpy(y_train)

    # Forward pass
    outputs = model(inputs)
    loss = criterion(outputs, targets)

    # Backward and optimize
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    linreg_losses.append(loss.item())

    if (epoch+1) % 5 == 0:
        print ('Epoch [{}/{}], Loss: {:.4f}'.format(epoch+1, num_epochs, loss.item()))

# Plot the graph
predicted = model(torch.from_numpy(x_train)).detach().numpy()
results["linreg"] = {"losses": linreg_losses, "predicted": predicted.ravel().tolist()}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(CKPT, 'model.ckpt'))


# =============================================================================
# 01-basics/logistic_regression/main.py

# Hyper-parameters
input_size = 8 * 8    # 64 (the digits' 8 x 8)
num_classes = 10
num_epochs = 5
batch_size = 100
learning_rate = 0.1  # (0.001 over 5 epochs of 60000 images; 10 steps an epoch here)

# MNIST dataset (images and labels)
train_dataset = torchvision.datasets.MNIST(root='../../data',
                                           train=True,
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data',
                                          train=False,
                                          transform=transforms.ToTensor())

# Data loader (input pipeline)
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=batch_size,
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size,
                                          shuffle=False)

# Logistic regression model
model = nn.Linear(input_size, num_classes)

# Loss and optimizer
# nn.CrossEntropyLoss() computes softmax internally
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
logreg_losses = []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        # Reshape images to (batch_size, input_size)
        images = images.reshape(-1, input_size)

        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)

        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logreg_losses.append(loss.item())

        if (i+1) % 100 == 0:
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}'
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
# In test phase, we don't need to compute gradients (for memory efficiency)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, input_size)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum()

    print('Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))
results["logreg"] = {"losses": logreg_losses, "accuracy": (100 * correct / total).item(),
                     "correct_type": type(correct).__name__}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(CKPT, 'model.ckpt'))


# =============================================================================
# 01-basics/feedforward_neural_network/main.py

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
input_size = 64
hidden_size = 100
num_classes = 10
num_epochs = 5
batch_size = 100
learning_rate = 0.001

# MNIST dataset
train_dataset = torchvision.datasets.MNIST(root='../../data',
                                           train=True,
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data',
                                          train=False,
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=batch_size,
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size,
                                          shuffle=False)

# Fully connected neural network with one hidden layer
class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super(NeuralNet, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        out = self.fc1(x)
        out = self.relu(out)
        out = self.fc2(out)
        return out

model = NeuralNet(input_size, hidden_size, num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
ffn_losses = []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        # Move tensors to the configured device
        images = images.reshape(-1, 8*8).to(device)
        labels = labels.to(device)

        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)

        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ffn_losses.append(loss.item())

        if (i+1) % 100 == 0:
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}'
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
# In test phase, we don't need to compute gradients (for memory efficiency)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, 8*8).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Accuracy of the network on the 10000 test images: {} %'.format(100 * correct / total))
results["ffn"] = {"losses": ffn_losses, "accuracy": 100 * correct / total}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(CKPT, 'model.ckpt'))


# =============================================================================
# pytorch_basics, sections 6 and 7, with the network above in place of the pretrained ResNet-18

# ================================================================== #
#                        6. Pretrained model                         #
# ================================================================== #

# Download and load the pretrained ResNet-18.
resnet = model

# If you want to finetune only the top layer of the model, set as below.
for param in resnet.parameters():
    param.requires_grad = False

# Replace the top layer for finetuning.
resnet.fc2 = nn.Linear(resnet.fc2.in_features, 100)  # 100 is an example.

# Forward pass.
images = torch.randn(64, 64)
outputs = resnet(images)
print (outputs.size())     # (64, 100)
results["finetune"] = (tuple(outputs.size()), outputs.requires_grad,
                       [n for n, p in resnet.named_parameters() if p.requires_grad])

# ================================================================== #
#                      7. Save and load the model                    #
# ================================================================== #

# Save and load the entire model.
torch.save(resnet, os.path.join(CKPT, 'model.ckpt'))
model = torch.load(os.path.join(CKPT, 'model.ckpt'), weights_only=False)  # (torch >= 2.6 loads weights only by default)

# Save and load only the model parameters (recommended).
torch.save(resnet.state_dict(), os.path.join(CKPT, 'params.ckpt'))
resnet.load_state_dict(torch.load(os.path.join(CKPT, 'params.ckpt')))
results["reloaded_equal"] = bool(torch.equal(model(images), resnet(images)))
