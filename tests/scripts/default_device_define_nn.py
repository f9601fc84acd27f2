# ruff: noqa: E111, E211, E402, E501, UP008 (tutorial code as is)
"""pytorch/tutorials recipes_source/recipes/{changing_default_device,
defining_a_neural_network}.py: the device-agnostic ``if USE_CUDA`` pattern, the ``with
torch.device(...)`` context manager and ``torch.set_default_device``; then the MNIST Net of the
"Defining a Neural Network" recipe (its Dropout2d layers also see the flattened 2-D input)
run on one random image.

Changes: the device recipe's ``'cuda'`` is ``'meta'`` here (no GPU on a test machine: the
factories and the module land on the device all the same), and the default device is put back
to the CPU at the end; results are recorded."""
import warnings

import jitgrad as torch

torch.manual_seed(0)
USE_CUDA = False

mod = torch.nn.Linear(20, 30)
if USE_CUDA:
    mod.cuda()

device = 'cpu'
if USE_CUDA:
    device = 'cuda'
inp = torch.randn(128, 20, device=device)
print(mod(inp).device)
devices = [mod(inp).device.type]

with torch.device('meta'):
    mod = torch.nn.Linear(20, 30)
    print(mod.weight.device)
    print(mod(torch.randn(128, 20)).device)
    devices += [mod.weight.device.type, mod(torch.randn(128, 20)).device.type]
devices.append(torch.randn(2).device.type)  # (back to the CPU after the block)

torch.set_default_device('meta')

mod = torch.nn.Linear(20, 30)
print(mod.weight.device)
print(mod(torch.randn(128, 20)).device)
devices += [mod.weight.device.type, mod(torch.randn(128, 20)).device.type,
            str(torch.get_default_device())]
torch.set_default_device(None)
devices.append(str(torch.get_default_device()))

# ------------------------------------------------------------ defining_a_neural_network
import jitgrad.nn as nn
import jitgrad.nn.functional as F


class Net(nn.Module):
    def __init__(self):
      super(Net, self).__init__()

      # First 2D convolutional layer, taking in 1 input channel (image),
      # outputting 32 convolutional features, with a square kernel size of 3
      self.conv1 = nn.Conv2d(1, 32, 3, 1)
      # Second 2D convolutional layer, taking in the 32 input layers,
      # outputting 64 convolutional features, with a square kernel size of 3
      self.conv2 = nn.Conv2d(32, 64, 3, 1)

      # Designed to ensure that adjacent pixels are either all 0s or all active
      # with an input probability
      self.dropout1 = nn.Dropout2d(0.25)
      self.dropout2 = nn.Dropout2d(0.5)

      # First fully connected layer
      self.fc1 = nn.Linear(9216, 128)
      # Second fully connected layer that outputs our 10 labels
      self.fc2 = nn.Linear(128, 10)

my_nn = Net()
print(my_nn)
first_repr = repr(my_nn)


class Net(nn.Module):
    def __init__(self):
      super(Net, self).__init__()
      self.conv1 = nn.Conv2d(1, 32, 3, 1)
      self.conv2 = nn.Conv2d(32, 64, 3, 1)
      self.dropout1 = nn.Dropout2d(0.25)
      self.dropout2 = nn.Dropout2d(0.5)
      self.fc1 = nn.Linear(9216, 128)
      self.fc2 = nn.Linear(128, 10)

    # x represents our data
    def forward(self, x):
      # Pass data through conv1
      x = self.conv1(x)
      # Use the rectified-linear activation function over x
      x = F.relu(x)

      x = self.conv2(x)
      x = F.relu(x)

      # Run max pooling over x
      x = F.max_pool2d(x, 2)
      # Pass data through dropout1
      x = self.dropout1(x)
      # Flatten x with start_dim=1
      x = x.flatten(start_dim=1)
      # Pass data through fc1
      x = self.fc1(x)
      x = F.relu(x)
      x = self.dropout2(x)
      x = self.fc2(x)

      # Apply softmax to x
      output = F.log_softmax(x, dim=1)
      return output


# Equates to one random 28x28 image
random_data = torch.rand((1, 1, 28, 28))

my_nn = Net()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    result = my_nn(random_data)
print (result)
dropout_warnings = sorted({str(w.message) for w in caught})
result_info = (tuple(result.shape), result.grad_fn.name(), float(result.exp().sum()))

# (the two Dropout2d layers on what each sees: 4-D, then the 2-D (1, 128) hidden layer,
# which torch treats as one sample of 128 channels without a batch dimension)
drop = nn.Dropout2d(0.5)
hidden = torch.ones(1, 128)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dropped = drop(hidden)
dropped_values = sorted(set(dropped.flatten().tolist()))
my_nn.eval()
eval_same = torch.equal(my_nn(random_data), my_nn(random_data))
