# ruff: noqa: B006, B007, E402, E501, F841, N801, N802, N803, N806, UP008, UP031, UP032
# (tutorial code as is)
"""Adversarial Example Generation (FGSM) tutorial: the gradient of the loss with respect to the
input image, ``data_grad.sign()``, clamping, and accuracy against epsilon.

The tutorial loads a LeNet trained on MNIST ("data/lenet_mnist_model.pth"); here the same Net
(pytorch/examples mnist) is first trained for a moment on random 12x12 "digits" (a fixed
pattern per class plus noise) and saved, and the few lines of torchvision it uses
(ToTensor/Normalize, a dataset) are written out.
"""
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim


# ---- the few lines torchvision would provide ----
class transforms:
    class Normalize(nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.mean, self.std = mean, std

        def forward(self, tensor):
            mean = torch.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
            std = torch.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
            return (tensor - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)

    class ToTensor:
        def __call__(self, pic):
            return torch.from_numpy(np.asarray(pic, dtype=np.float32)[None] / 255.0)

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, x):
            for t in self.transforms:
                x = t(x)
            return x


class FakeDigits(torch.utils.data.Dataset):
    """uint8 12x12 images: a fixed random pattern per class, shifted noise on top."""

    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 256, size=(10, 12, 12))

    def __init__(self, n, seed, transform=None):
        rng = np.random.default_rng(seed)
        self.targets = rng.integers(0, 10, size=n)
        noise = rng.normal(0, 40, size=(n, 12, 12))
        self.data = np.clip(self.patterns[self.targets] + noise, 0, 255).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        img = self.data[i]
        if self.transform is not None:
            img = self.transform(img)
        return img, int(self.targets[i])


# ---- the tutorial ----
epsilons = [0, .05, .1, .15, .2, .25, .3]
tmpdir = tempfile.mkdtemp()
pretrained_model = os.path.join(tmpdir, "lenet_mnist_model.pth")
use_cuda = True
# Set random seed for reproducibility
torch.manual_seed(42)


# LeNet Model definition
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(1024, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


# (pytorch/examples mnist main.py's train loop makes the "pretrained" model)
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.1307,), (0.3081,)),
])
train_loader = torch.utils.data.DataLoader(FakeDigits(256, seed=1, transform=transform),
                                           batch_size=32, shuffle=True)
pre = Net()
optimizer = optim.Adadelta(pre.parameters(), lr=1.0)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
train_losses = []
for epoch in range(1, 4):
    pre.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = pre(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        train_losses.append(loss.item())
    scheduler.step()
torch.save(pre.state_dict(), pretrained_model)

# MNIST Test dataset and dataloader declaration
test_loader = torch.utils.data.DataLoader(
    FakeDigits(30, seed=2, transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,)),
    ])),
    batch_size=1, shuffle=True)

# We want to be able to train our model on an `accelerator <https://pytorch.org/docs/stable/torch.html#accelerators>`__
# such as CUDA, MPS, MTIA, or XPU. If the current accelerator is available, we will use it. Otherwise, we use the CPU.
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() \
    else "cpu"
print(f"Using {device} device")

# Initialize the network
model = Net().to(device)

# Load the pretrained model
model.load_state_dict(torch.load(pretrained_model, map_location=device, weights_only=True))

# Set the model in evaluation mode. In this case this is for the Dropout layers
model.eval()


# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon * sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    # Return the perturbed image
    return perturbed_image


# restores the tensors to their original scale
def denorm(batch, mean=[0.1307], std=[0.3081]):
    """
    Convert a batch of tensors to their original scale.

    Args:
        batch (torch.Tensor): Batch of normalized tensors.
        mean (torch.Tensor or list): Mean used for normalization.
        std (torch.Tensor or list): Standard deviation used for normalization.

    Returns:
        torch.Tensor: batch of tensors without normalization applied to them.
    """
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)

    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def test(model, device, test_loader, epsilon):

    # Accuracy counter
    correct = 0
    adv_examples = []

    # Loop over all examples in test set
    for data, target in test_loader:

        # Send the data and label to the device
        data, target = data.to(device), target.to(device)

        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True

        # Forward pass the data through the model
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability

        # If the initial prediction is wrong, don't bother attacking, just move on
        if init_pred.item() != target.item():
            continue

        # Calculate the loss
        loss = F.nll_loss(output, target)

        # Zero all existing gradients
        model.zero_grad()

        # Calculate gradients of model in backward pass
        loss.backward()

        # Collect ``datagrad``
        data_grad = data.grad.data

        # Restore the data to its original scale
        data_denorm = denorm(data)

        # Call FGSM Attack
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)

        # Reapply normalization
        perturbed_data_normalized = transforms.Normalize((0.1307,), (0.3081,))(perturbed_data)

        # Re-classify the perturbed image
        output = model(perturbed_data_normalized)

        # Check for success
        final_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability
        if final_pred.item() == target.item():
            correct += 1
            # Special case for saving 0 epsilon examples
            if epsilon == 0 and len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
        else:
            # Save some adv examples for visualization later
            if len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))

    # Calculate final accuracy for this epsilon
    final_acc = correct / float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}")

    # Return the accuracy and an adversarial example
    return final_acc, adv_examples


accuracies = []
examples = []

# Run test for each epsilon
for eps in epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    examples.append(ex)

# (the plots of accuracies and examples are left out)
loaded_same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                   pre.state_dict().values()))

# a deterministic part to compare with torch: one attack on fixed weights
fixed = Net()
with torch.no_grad():
    for k, p in enumerate(fixed.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.61 + k).view_as(p)
                * 0.1)
fixed.eval()
image = torch.from_numpy(FakeDigits.patterns[3:4, None].astype(np.float32) / 255.0)
normalize = transforms.Normalize((0.1307,), (0.3081,))
x = normalize(image).clone().requires_grad_(True)
fixed_loss = F.nll_loss(fixed(x), torch.tensor([3]))
fixed_loss.backward()
fixed_grad = x.grad.tolist()
fixed_perturbed = fgsm_attack(denorm(x.detach()), 0.1, x.grad.data)
fixed_adv_logits = fixed(normalize(fixed_perturbed)).tolist()
fixed_loss = fixed_loss.item()
