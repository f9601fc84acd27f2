"""Build a classifier, train it, save and reload it, written for these tests in the way
PyTorch's "Learn the Basics" model / optimization / save-load pages are commonly written
(modelled on the API usage of those pages, not a copy of them):

- a ``nn.Module`` with ``nn.Flatten`` and an ``nn.Sequential`` of ``nn.Linear`` / ``nn.ReLU``,
  ``.to(device)``, ``nn.Softmax(dim=1)`` and ``argmax(1)`` on one random image;
- the layers one at a time (``Linear(in_features=, out_features=)``, ``ReLU``, a
  ``Sequential`` of them), ``named_parameters`` previews with ``param[:2]``;
- train/test loops over ``DataLoader(TensorDataset)`` of synthetic 28x28 images (class
  templates plus noise from ``torch.Generator``): ``nn.CrossEntropyLoss``, ``optim.SGD``,
  ``train()`` / ``eval()``, ``no_grad``, ``.type(torch.float)``;
- a small VGG-like conv net (``Conv2d(padding=1)``, ``ReLU(inplace=True)``, ``MaxPool2d``,
  ``AdaptiveAvgPool2d``, ``Dropout``): ``torch.save`` / ``torch.load(weights_only=True)`` of
  its state_dict, and of the whole module (refused by default, loaded with
  ``weights_only=False``).
"""
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"device: {device}")
PIXELS = 28 * 28


class MLP(nn.Module):
    def __init__(self, final_relu=False):
        super().__init__()
        self.flatten = nn.Flatten()
        layers = [nn.Linear(PIXELS, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                  nn.Linear(512, 10)]
        if final_relu:
            layers.append(nn.ReLU())
        self.stack = nn.Sequential(*layers)

    def forward(self, x):
        return self.stack(self.flatten(x))


net = MLP(final_relu=True).to(device)
model_repr = repr(net)
print(model_repr)
probs = nn.Softmax(dim=1)(net(torch.rand(1, 28, 28, device=device)))
winner = probs.argmax(1)
predicted_class_text = f"{winner}"[:len("tensor([")]
print("predicted:", winner)

# ---- the pieces, one at a time
three = torch.rand(3, 28, 28)
flat = nn.Flatten()(three)
to_hidden = nn.Linear(in_features=PIXELS, out_features=20)
hid = to_hidden(flat)
layer_sizes = [tuple(t.size()) for t in (three, flat, hid)]
hid = nn.ReLU()(hid)
relu_nonnegative = bool((hid >= 0).all())
pipeline = nn.Sequential(nn.Flatten(), to_hidden, nn.ReLU(), nn.Linear(20, 10))
prob_sums = nn.Softmax(dim=1)(pipeline(torch.rand(3, 28, 28))).sum(1).tolist()

previews = []
for name, param in net.named_parameters():
    head = param[:2]
    print(f"{name}: {param.size()} first rows {head}")
    previews.append((name, f"{param.size()}", tuple(head.shape)))


# ---- training on synthetic images
def template_dataset(count, seed, noise=0.5):
    templates = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (count,), generator=gen)
    jitter = noise * torch.rand(count, 1, 28, 28, generator=gen)
    return TensorDataset((templates[labels] + jitter).clamp(0, 1), labels)


BATCH, EPOCHS, LR = 64, 3, 0.05
train_dl = DataLoader(template_dataset(512, 1), batch_size=BATCH)
test_dl = DataLoader(template_dataset(128, 2), batch_size=BATCH)
clf = MLP()
criterion = nn.CrossEntropyLoss()
sgd = torch.optim.SGD(clf.parameters(), lr=LR)
train_losses = []


def fit_epoch():
    clf.train()
    for i, (xb, yb) in enumerate(train_dl):
        loss = criterion(clf(xb), yb)
        sgd.zero_grad()
        loss.backward()
        sgd.step()
        train_losses.append(loss.item())
        if i % 4 == 0:
            print(f"  batch {i}: loss {loss.item():.4f}")


def score():
    clf.eval()
    loss_sum, right = 0.0, 0.0
    with torch.no_grad():
        for xb, yb in test_dl:
            out = clf(xb)
            loss_sum += criterion(out, yb).item()
            right += (out.argmax(1) == yb).type(torch.float).sum().item()
    return loss_sum / len(test_dl), right / len(test_dl.dataset)


history = [score()]
for epoch in range(EPOCHS):
    fit_epoch()
    history.append(score())
    print(f"epoch {epoch + 1}: test loss {history[-1][0]:.4f}, accuracy {history[-1][1]:.2%}")


# ---- saving and loading
class SmallVGG(nn.Module):
    def __init__(self, classes=10):
        super().__init__()

        def conv(cin, cout):
            return [nn.Conv2d(cin, cout, kernel_size=3, padding=1), nn.ReLU(inplace=True)]

        self.features = nn.Sequential(*conv(3, 8), *conv(8, 8),
                                      nn.MaxPool2d(kernel_size=2, stride=2),
                                      *conv(8, 16), nn.MaxPool2d(kernel_size=2, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(16 * 49, 64), nn.ReLU(True),
                                        nn.Dropout(p=0.5), nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


folder = tempfile.mkdtemp()
weights_file = os.path.join(folder, "vgg_weights.pth")
module_file = os.path.join(folder, "vgg_module.pth")

vgg = SmallVGG()
torch.save(vgg.state_dict(), weights_file)
picture = torch.rand((1, 3, 56, 56))
vgg.eval()
reference = vgg(picture)

restored = SmallVGG()
restored.load_state_dict(torch.load(weights_file, weights_only=True))
restored.eval()
state_dict_roundtrip = torch.equal(restored(picture), reference)

torch.save(restored, module_file)
default_load_error = None
try:
    torch.load(module_file)  # weights_only=True by default: a pickled module is refused
except Exception as err:
    default_load_error = type(err).__name__
whole = torch.load(module_file, weights_only=False)
whole_model_roundtrip = (type(whole).__name__, whole.training,
                         torch.equal(whole(picture), reference))
print(state_dict_roundtrip, default_load_error, whole_model_roundtrip)
