# ruff: noqa: B007, E402, E501, E731, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/tutorials beginner_source/introyt/modelsyt_tutorial.py: nn.Module and nn.Parameter
(printing a model, its parameters), Linear, a LeNet with torch.functional imported as F
(defined, never run, as in the tutorial: torch.functional has no max_pool2d), an LSTM tagger,
MaxPool2d, BatchNorm1d, Dropout, and Softmax without dim."""
import jitgrad as torch

det = {}


class TinyModel(torch.nn.Module):

    def __init__(self):
        super(TinyModel, self).__init__()

        self.linear1 = torch.nn.Linear(100, 200)
        self.activation = torch.nn.ReLU()
        self.linear2 = torch.nn.Linear(200, 10)
        self.softmax = torch.nn.Softmax()

    def forward(self, x):
        x = self.linear1(x)
        x = self.activation(x)
        x = self.linear2(x)
        x = self.softmax(x)
        return x


tinymodel = TinyModel()

print('The model:')
print(tinymodel)

print('\n\nJust one layer:')
print(tinymodel.linear2)

print('\n\nModel params:')
for param in tinymodel.parameters():
    print(param)

print('\n\nLayer params:')
for param in tinymodel.linear2.parameters():
    print(param)
det["model"] = (repr(tinymodel), repr(tinymodel.linear2))
det["params"] = [(tuple(p.shape), type(p).__name__, p.requires_grad) for p in tinymodel.parameters()]
probs = tinymodel(torch.rand(3, 100))
det["softmax_rows"] = probs.sum(1).tolist()

lin = torch.nn.Linear(3, 2)
x = torch.rand(1, 3)
print('Input:')
print(x)

print('\n\nWeight and Bias parameters:')
for param in lin.parameters():
    print(param)

y = lin(x)
print('\n\nOutput:')
print(y)
linear_ok = torch.allclose(y, x @ lin.weight.T + lin.bias)
det["param_repr_head"] = repr(lin.weight).split("\n")[0].split("[")[0]

import jitgrad.functional as F


class LeNet(torch.nn.Module):

    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel (black & white), 6 output channels, 3x3 square convolution
        # kernel
        self.conv1 = torch.nn.Conv2d(1, 6, 5)
        self.conv2 = torch.nn.Conv2d(6, 16, 3)
        # an affine operation: y = Wx + b
        self.fc1 = torch.nn.Linear(16 * 6 * 6, 120)  # 6*6 from image dimension
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10)

    def forward(self, x):
        # Max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # If the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

    def num_flat_features(self, x):
        size = x.size()[1:]  # all dimensions except the batch dimension
        num_features = 1
        for s in size:
            num_features *= s
        return num_features


try:  # (as in torch: torch.functional has no max_pool2d; the tutorial never runs LeNet)
    LeNet()(torch.rand(1, 1, 32, 32))
except AttributeError as e:
    det["lenet_error"] = str(e)
det["lenet_params"] = sum(p.numel() for p in LeNet().parameters())


class LSTMTagger(torch.nn.Module):

    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()
        self.hidden_dim = hidden_dim

        self.word_embeddings = torch.nn.Embedding(vocab_size, embedding_dim)

        # The LSTM takes word embeddings as inputs, and outputs hidden states
        # with dimensionality hidden_dim.
        self.lstm = torch.nn.LSTM(embedding_dim, hidden_dim)

        # The linear layer that maps from hidden state space to tag space
        self.hidden2tag = torch.nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores


try:  # (F is torch.functional here too: it has no log_softmax either)
    LSTMTagger(6, 6, 9, 3)(torch.tensor([0, 4, 2]))
except AttributeError as e:
    det["tagger_error"] = str(e)
det["tagger"] = repr(LSTMTagger(6, 6, 9, 3))

my_tensor = torch.rand(1, 6, 6)
print(my_tensor)

maxpool_layer = torch.nn.MaxPool2d(3)
print(maxpool_layer(my_tensor))
pooled = maxpool_layer(my_tensor)
maxpool_ok = torch.equal(pooled[0, 1, 0], my_tensor[0, 3:, :3].max())

my_tensor = torch.rand(1, 4, 4) * 20 + 5
print(my_tensor)

print(my_tensor.mean())
input_mean = my_tensor.mean().item()

norm_layer = torch.nn.BatchNorm1d(4)
normed_tensor = norm_layer(my_tensor)
print(normed_tensor)

print(normed_tensor.mean())
normed_mean = normed_tensor.mean().item()
det["norm_layer"] = repr(norm_layer)

my_tensor = torch.rand(1, 4, 4)

dropout = torch.nn.Dropout(p=0.4)
print(dropout(my_tensor))
print(dropout(my_tensor))
dropped = dropout(my_tensor)
dropout_ok = bool(((dropped == 0) | torch.isclose(dropped, my_tensor / 0.6)).all())

# a deterministic part to compare with torch: TinyModel and BatchNorm1d with fixed weights
with torch.no_grad():
    for k, p in enumerate(tinymodel.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 10)
fixed_x = torch.cos(torch.arange(2 * 100, dtype=torch.float32)).view(2, 100)
det["tiny_out"] = tinymodel(fixed_x).tolist()
bn_in = torch.arange(32, dtype=torch.float32).view(2, 4, 4) ** 1.5
det["bn_out"] = torch.nn.BatchNorm1d(4)(bn_in).tolist()
