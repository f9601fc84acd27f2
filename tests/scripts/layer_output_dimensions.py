# ruff: noqa: E501 (tutorial code as is)
"""pytorch/tutorials recipes_source/calculating_layer_output_dimensions.py: the shape error of
a guessed ``Linear(64 * 10 * 10, 128)`` after two convolutions and a pool, the output-size
formula by hand, and the shapes printed from inside ``forward`` (a module and a Sequential).

Changes: the printed lines are recorded; the ``torchinfo.summary`` section is left out
(torchinfo is a separate package, not installed here)."""
import math

import jitgrad as torch

lines = []


def show(line):
    print(line)
    lines.append(line)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.pool = torch.nn.MaxPool2d(kernel_size=(2, 2))
        self.flatten = torch.nn.Flatten()
        self.fc1 = torch.nn.Linear(64 * 10 * 10, 128)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        return x

model = Net()

# Simulate a single data point from the dataset
x = torch.ones(1, 1, 28, 28)  # batch_size, channels, height, width
try:
    _ = model(x)
except RuntimeError as e:
    show(f'Error occured: {e}')


def calc_shape(c_in, h_in, w_in, c_out=None, kernel=(3, 3), padding=(0, 0), dilation=(1, 1), stride=(1, 1)):
    """
    Helper function to determine output shape after convolution or pool layer.
    """
    c_out = c_in if c_out is None else c_out
    h_out = math.floor(((h_in + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) / stride[0]) + 1)
    w_out = math.floor(((w_in + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / stride[1]) + 1)
    return c_out, h_out, w_out


# Start with image that is 28x28 pixels with 1 channel
input_h_w = (1, 28, 28)
show(f"Input shape (c, h, w) : {input_h_w}")

# Simulated Conv2d with 32 channels output
conv1_out = calc_shape(*input_h_w, c_out=32)
show(f"Post Conv2d.0 shape   : {conv1_out}")

# Simulated Conv2d with 64 channels output
conv2_out = calc_shape(*conv1_out, c_out=64)
show(f"Post Conv2d.1 shape   : {conv2_out}")

# Simulated MaxPool2d with 2x2 kernel
# (the default value of stride is the kernel_size)
pool_out = calc_shape(*conv2_out, kernel=(2, 2), stride=(2, 2))
show(f"Post MaxPool2d.0 shape: {pool_out}")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.pool = torch.nn.MaxPool2d(kernel_size=(2, 2))
        self.flatten = torch.nn.Flatten()
        self.fc1 = torch.nn.Linear(64 * 12 * 12, 128)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        return x

model = Net()
x = torch.ones(1, 1, 28, 28)  # batch_size, channels, height, width
try:
    fixed_shape = tuple(model(x).shape)
except RuntimeError as e:
    show(f'Error occured: {e}')


class DebugNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.pool = torch.nn.MaxPool2d(kernel_size=(2, 2))
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        show(f"input shape: {x.shape}")
        x = self.relu(self.conv1(x))
        show(f"after conv1 shape: {x.shape}")
        x = self.relu(self.conv2(x))
        show(f"after conv2 shape: {x.shape}")
        x = self.pool(x)
        show(f"after pool shape: {x.shape}")

model = DebugNet()
x = torch.ones(1, 1, 28, 28)  # batch_size, channels, height, width
try:
    _ = model(x)
except RuntimeError as e:
    show(f'Error occured: {e}')


class DebugNet2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3),
            torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(32, 64, 3),
            torch.nn.ReLU(inplace=True),
            torch.nn.MaxPool2d(kernel_size=(2, 2)),
        )
        self.classifier = torch.nn.Sequential(
            torch.nn.Flatten(),
            torch.nn.Linear(64 * 12 * 12, 128),
            torch.nn.ReLU(inplace=True),
            torch.nn.Linear(128, 10),
        )

    def forward(self, x):
        show(f"input shape: {x.shape}")
        x = self.features(x)
        show(f"post features shape: {x.shape}")
        x = self.classifier(x)
        return x

model = DebugNet2()
x = torch.ones(1, 1, 28, 28)  # batch_size, channels, height, width
try:
    final_shape = tuple(model(x).shape)
except RuntimeError as e:
    show(f'Error occured: {e}')
