"""Building blocks of torch.nn, tried one by one, written for these tests in the way the PyTorch
introductory ("introyt") tutorials commonly write torch code (modelled on the API usage of the
tutorial "Building Models with PyTorch", not a copy of it):

- a subclassed torch.nn.Module (Linear, ReLU, Softmax without ``dim``) printed whole, by layer
  and by parameters (their type and requires_grad);
- torch.nn.Linear against ``x @ W.T + b``, the repr of a Parameter;
- a LeNet-style CNN that calls max_pool2d through ``import jitgrad.functional as F``, which has
  none (the AttributeError is recorded), and its parameter count; an LSTM tagger likewise;
- torch.nn.MaxPool2d, BatchNorm1d (mean near 0 after), Dropout(p=...) scaling the survivors;
- sin-valued weights and fixed inputs for the comparison with torch.
"""
import jitgrad as torch

det = {}


class ScoreNet(torch.nn.Module):
    def __init__(self, n_in=64, n_hidden=128, n_out=5):
        super().__init__()
        self.inp = torch.nn.Linear(n_in, n_hidden)
        self.act = torch.nn.ReLU()
        self.out = torch.nn.Linear(n_hidden, n_out)
        self.norm = torch.nn.Softmax()  # no dim: the deprecated implicit choice

    def forward(self, x):
        return self.norm(self.out(self.act(self.inp(x))))


net = ScoreNet()
print(net)
print(net.out)
for p in net.parameters():
    print(p.shape)
for p in net.out.parameters():
    print(p)
det["model"] = (repr(net), repr(net.out))
det["params"] = [(tuple(p.shape), type(p).__name__, p.requires_grad) for p in net.parameters()]
det["softmax_rows"] = net(torch.rand(4, 64)).sum(1).tolist()

layer = torch.nn.Linear(4, 3)
v = torch.rand(2, 4)
w = layer(v)
print(v, list(layer.parameters()), w)
linear_ok = torch.allclose(w, v @ layer.weight.T + layer.bias)
det["param_repr_head"] = repr(layer.weight).split("\n")[0].split("[")[0]

import jitgrad.functional as F  # noqa: E402  (torch.functional, not torch.nn.functional)


class SmallLeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 8, 5)     # 32 -> 28, pooled to 14
        self.c2 = torch.nn.Conv2d(8, 16, 3)    # 14 -> 12, pooled to 6
        self.f1 = torch.nn.Linear(16 * 6 * 6, 100)
        self.f2 = torch.nn.Linear(100, 50)
        self.f3 = torch.nn.Linear(50, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = x.view(-1, self.flat_size(x))
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))

    @staticmethod
    def flat_size(x):
        n = 1
        for d in x.size()[1:]:
            n *= d
        return n


try:
    SmallLeNet()(torch.rand(1, 1, 32, 32))
except AttributeError as err:
    det["lenet_error"] = str(err)
det["lenet_params"] = sum(p.numel() for p in SmallLeNet().parameters())


class WordTagger(torch.nn.Module):
    def __init__(self, vocab, emb, hid, tags):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, emb)
        self.rnn = torch.nn.LSTM(emb, hid)
        self.head = torch.nn.Linear(hid, tags)

    def forward(self, ids):
        out, _ = self.rnn(self.emb(ids).view(len(ids), 1, -1))
        return F.log_softmax(self.head(out.view(len(ids), -1)), dim=1)


try:
    WordTagger(12, 4, 5, 3)(torch.tensor([1, 7, 3, 0]))
except AttributeError as err:
    det["tagger_error"] = str(err)
det["tagger"] = repr(WordTagger(12, 4, 5, 3))

grid = torch.rand(1, 6, 6)
pool = torch.nn.MaxPool2d(3)
pooled = pool(grid)
print(pooled)
maxpool_ok = torch.equal(pooled[0, 0, 1], grid[0, :3, 3:].max())

shifted = torch.rand(1, 4, 4) * 20 + 5  # far from zero mean
input_mean = shifted.mean().item()
bn = torch.nn.BatchNorm1d(4)
normed_mean = bn(shifted).mean().item()
print(input_mean, "->", normed_mean)
det["norm_layer"] = repr(bn)

ones_ish = torch.rand(1, 4, 4)
drop = torch.nn.Dropout(p=0.4)
kept = drop(ones_ish)
dropout_ok = bool(((kept == 0) | torch.isclose(kept, ones_ish / 0.6)).all())

# fixed weights and inputs for the torch comparison
with torch.no_grad():
    for k, p in enumerate(net.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 10)
det["tiny_out"] = net(torch.cos(torch.arange(3 * 64, dtype=torch.float32)).view(3, 64)).tolist()
det["bn_out"] = torch.nn.BatchNorm1d(4)(torch.arange(24, dtype=torch.float32).view(2, 4, 3)
                                        ** 1.5).tolist()
