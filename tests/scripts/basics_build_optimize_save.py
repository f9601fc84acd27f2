# ruff: noqa: E225, E231, E501, F841, N801, UP004, UP008, UP032 (tutorial code as is)
"""pytorch/tutorials beginner_source/basics/{buildmodel_tutorial,optimization_tutorial,
saveloadrun_tutorial}.py (Learn the Basics: Build Model, Optimization, Save & Load): the
FashionMNIST network taken apart layer by layer (Flatten, Linear, ReLU, Sequential, Softmax,
named_parameters previews), the train/test loops with SGD and CrossEntropyLoss, then state_dict
and whole-model save/load.

Changes: FashionMNIST is replaced by random class prototypes plus noise (28x28, 10 classes,
512 training and 128 test images); 3 epochs at lr 0.05 instead of 10 at 1e-3 (the tutorial
trains on 60000 images); torchvision's vgg16 (pretrained weights are a download) by a small
VGG-style network defined here; the files go to a temporary directory; the whole-model load
passes ``weights_only=False``, as the current tutorial does (the default refuses a pickled
module, which is recorded); ONNX export is left out (torch.onnx needs the onnx package)."""
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

device = 'cuda' if torch.cuda.is_available() else 'cpu'
print('Using {} device'.format(device))

class NeuralNetwork(nn.Module):
    def __init__(self):
        super(NeuralNetwork, self).__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
            nn.ReLU()
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork().to(device)
print(model)
model_repr = repr(model)

X = torch.rand(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print(f"Predicted class: {y_pred}")
predicted_class_text = f"{y_pred}"[:len("tensor([")]

input_image = torch.rand(3,28,28)
print(input_image.size())

flatten = nn.Flatten()
flat_image = flatten(input_image)
print(flat_image.size())

layer1 = nn.Linear(in_features=28*28, out_features=20)
hidden1 = layer1(flat_image)
print(hidden1.size())
layer_sizes = [tuple(t.size()) for t in (input_image, flat_image, hidden1)]

print(f"Before ReLU: {hidden1}\n\n")
hidden1 = nn.ReLU()(hidden1)
print(f"After ReLU: {hidden1}")
relu_nonnegative = bool((hidden1 >= 0).all())

seq_modules = nn.Sequential(
    flatten,
    layer1,
    nn.ReLU(),
    nn.Linear(20, 10)
)
input_image = torch.rand(3,28,28)
logits = seq_modules(input_image)

softmax = nn.Softmax(dim=1)
pred_probab = softmax(logits)
prob_sums = pred_probab.sum(1).tolist()

print("Model structure: ", model, "\n\n")

previews = []
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2]} \n")
    previews.append((name, f"{param.size()}", tuple(param[:2].shape)))

# ------------------------------------------------------------ optimization_tutorial
def fake_fashion_mnist(n, seed):
    g = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, 10, (n,), generator=g)
    protos = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    images = (protos[targets] + 0.5 * torch.rand(n, 1, 28, 28, generator=g)).clamp(0, 1)
    return TensorDataset(images, targets)

training_data = fake_fashion_mnist(512, 1)
test_data = fake_fashion_mnist(128, 2)

train_dataloader = DataLoader(training_data, batch_size=64)
test_dataloader = DataLoader(test_data, batch_size=64)

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

learning_rate = 5e-2
batch_size = 64
epochs = 3

loss_fn = nn.CrossEntropyLoss()

optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

train_losses = []

def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    # Set the model to training mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        # Compute prediction and loss
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_losses.append(loss.item())

        if batch % 100 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    # Set the model to evaluation mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0

    # Evaluating the model with torch.no_grad() ensures that no gradients are computed during test mode
    # also serves to reduce unnecessary gradient computations and memory usage for tensors with requires_grad=True
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()

    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

history = [test_loop(test_dataloader, model, loss_fn)]
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    train_loop(train_dataloader, model, loss_fn, optimizer)
    history.append(test_loop(test_dataloader, model, loss_fn))
print("Done!")

# ------------------------------------------------------------ saveloadrun_tutorial
class SmallVGG(nn.Module):  # (stands in for torchvision.models.vgg16)
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 7 * 7, 64), nn.ReLU(True), nn.Dropout(p=0.5),
            nn.Linear(64, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)

class models:  # (the torchvision.models names the tutorial calls)
    @staticmethod
    def vgg16(weights=None):
        return SmallVGG()

tmp = tempfile.mkdtemp()

model = models.vgg16(weights='IMAGENET1K_V1')
torch.save(model.state_dict(), os.path.join(tmp, 'model_weights.pth'))

input_image = torch.rand((1,3,56,56))
model.eval()
expected = model(input_image)

model = models.vgg16() # we do not specify ``weights``, i.e. create untrained model
model.load_state_dict(torch.load(os.path.join(tmp, 'model_weights.pth'), weights_only=True))
model.eval()
state_dict_roundtrip = torch.equal(model(input_image), expected)

torch.save(model, os.path.join(tmp, 'model.pth'))

try:
    torch.load(os.path.join(tmp, 'model.pth'))
except Exception as e:
    default_load_error = type(e).__name__

model = torch.load(os.path.join(tmp, 'model.pth'), weights_only=False)
whole_model_roundtrip = (type(model).__name__, model.training, torch.equal(model(input_image), expected))
