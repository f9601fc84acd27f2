# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""Classifying names with a character-level RNN (manual RNN cell loop and nn.RNN)."""
import random
import string
import time

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
random.seed(0)

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
category_lines = {
    'English': ['Smith', 'Jones', 'Taylor', 'Brown', 'Wilson', 'Evans'],
    'Italian': ['Rossi', 'Russo', 'Ferrari', 'Esposito', 'Bianchi', 'Romano'],
    'Japanese': ['Sato', 'Suzuki', 'Takahashi', 'Tanaka', 'Watanabe', 'Ito'],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


print(letterToTensor('J'))
print(lineToTensor('Jones').size())


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


n_hidden = 32
rnn = RNN(n_letters, n_hidden, n_categories)
input = lineToTensor('Albert')
hidden = torch.zeros(1, n_hidden)
output, next_hidden = rnn(input[0], hidden)
print(output)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


print(categoryFromOutput(output))


def randomChoice(lst):
    return lst[random.randint(0, len(lst) - 1)]


def randomTrainingExample():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


criterion = nn.NLLLoss()
learning_rate = 0.005


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    rnn.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    # Add parameters' gradients to their values, multiplied by learning rate
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


def mean_loss():
    with torch.no_grad():
        total = 0.0
        for ci, category in enumerate(all_categories):
            for line in category_lines[category]:
                total += criterion(evaluate(lineToTensor(line)), torch.tensor([ci])).item()
    return total / sum(len(v) for v in category_lines.values())


n_iters = 300
start = time.time()
manual_before = mean_loss()
for iter in range(1, n_iters + 1):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
manual_after = mean_loss()
print('manual RNN cell mean loss', manual_before, '->', manual_after)


# the same task with nn.RNN on padded batches, log_softmax + nll_loss, Adam
class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        return F.log_softmax(output, dim=1)


model = CharRNN(n_letters, n_hidden, n_categories)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
examples = [(lineToTensor(line), torch.tensor([ci]))
            for ci, c in enumerate(all_categories) for line in category_lines[c]]
nn_rnn_losses = []
for epoch in range(15):
    model.train()
    random.shuffle(examples)
    total = 0.0
    for line_tensor, category_tensor in examples:
        optimizer.zero_grad()
        loss = F.nll_loss(model(line_tensor), category_tensor)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 3)
        optimizer.step()
        total += loss.item()
    nn_rnn_losses.append(total / len(examples))
model.eval()
with torch.no_grad():
    correct = sum(int(model(x).argmax(1).item() == y.item()) for x, y in examples)
nn_rnn_accuracy = correct / len(examples)
print('nn.RNN losses', nn_rnn_losses[0], '->', nn_rnn_losses[-1], 'accuracy', nn_rnn_accuracy)

# a deterministic part to compare with torch: nn.RNN with fixed weights
fixed = nn.RNN(4, 3, num_layers=2, nonlinearity='tanh', batch_first=True)
with torch.no_grad():
    for k, (name, p) in enumerate(fixed.named_parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).view_as(p) * (k + 1) / 4)
fixed_in = torch.sin(torch.arange(2 * 5 * 4, dtype=torch.float32)).view(2, 5, 4)
fixed_out, fixed_h = fixed(fixed_in)
fixed_result = (fixed_out.tolist(), fixed_h.tolist())
