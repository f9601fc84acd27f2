# ruff: noqa: B007, C408, E201, E202, E203, E211, E231, E261, E262, E265, E266, E302, E303, E305, E402, E501, E701, E702, E703, E711, E712, E713, E731, E741, F401, F811, F841, N801, N802, N803, N806, N812, N817, S102, SIM115, UP004, UP008, UP015, UP031, UP032
# (the tutorials' code as is)
"""yunjey/pytorch-tutorial, tutorials/02-intermediate: recurrent_neural_network and
bidirectional_recurrent_neural_network (a two-layer LSTM, one- and two-way, batch_first,
reading an image row by row from zero initial states; the last step's output classifies) and
language_model (data_utils.py's Dictionary and Corpus building a LongTensor of word ids, an
LSTM language model trained with truncated backpropagation through detached states and
clip_grad_norm_, then sampled word by word with multinomial and Tensor.fill_).

Changes: the three main.py files (and data_utils.py) are one script, one section each; MNIST is
a download, so scikit-learn's 8 x 8 digits stand in (read as 8 rows of 8; the torchvision stand-
ins are in vision_standin.py); Penn Treebank is a download, so data/train.txt holds
sentences of a small generated grammar; smaller hidden sizes and fewer epochs and samples; files
go to a temporary directory; each section records its losses and accuracy.
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

WORK = tempfile.mkdtemp(prefix="yunjey_recurrent_")
results = {}
torch.manual_seed(0)
random.seed(0)

# =============================================================================
# 02-intermediate/recurrent_neural_network/main.py

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
sequence_length = 8
input_size = 8
hidden_size = 32
num_layers = 2
num_classes = 10
batch_size = 100
num_epochs = 5
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

# Recurrent neural network (many-to-one)
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size)

        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out

model = RNN(input_size, hidden_size, num_layers, num_classes).to(device)


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
losses = []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.reshape(-1, sequence_length, input_size).to(device)
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
model.eval()
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))
results["rnn"] = {"losses": losses, "accuracy": 100 * correct / total}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(WORK, 'model.ckpt'))


# =============================================================================
# 02-intermediate/bidirectional_recurrent_neural_network/main.py

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
sequence_length = 8
input_size = 8
hidden_size = 32
num_layers = 2
num_classes = 10
batch_size = 100
num_epochs = 5
learning_rate = 0.01

# Bidirectional recurrent neural network (many-to-one)
class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BiRNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size*2, num_classes)  # 2 for bidirection

    def forward(self, x):
        # Set initial states
        h0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device) # 2 for bidirection
        c0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size*2)

        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out

model = BiRNN(input_size, hidden_size, num_layers, num_classes).to(device)


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
losses = []
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.reshape(-1, sequence_length, input_size).to(device)
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
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))
results["birnn"] = {"losses": losses, "accuracy": 100 * correct / total}

# Save the model checkpoint
torch.save(model.state_dict(), os.path.join(WORK, 'model.ckpt'))


# =============================================================================
# 02-intermediate/language_model/data_utils.py

class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0

    def add_word(self, word):
        if not word in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1

    def __len__(self):
        return len(self.word2idx)


class Corpus(object):
    def __init__(self):
        self.dictionary = Dictionary()

    def get_data(self, path, batch_size=20):
        # Add words to the dictionary
        with open(path, 'r') as f:
            tokens = 0
            for line in f:
                words = line.split() + ['<eos>']
                tokens += len(words)
                for word in words:
                    self.dictionary.add_word(word)

        # Tokenize the file content
        ids = torch.LongTensor(tokens)
        token = 0
        with open(path, 'r') as f:
            for line in f:
                words = line.split() + ['<eos>']
                for word in words:
                    ids[token] = self.dictionary.word2idx[word]
                    token += 1
        num_batches = ids.size(0) // batch_size
        ids = ids[:num_batches*batch_size]
        return ids.view(batch_size, -1)


# (added) data/train.txt: sentences of a small grammar stand in for Penn Treebank's
_rng = random.Random(0)
os.makedirs(os.path.join(WORK, 'data'), exist_ok=True)
with open(os.path.join(WORK, 'data', 'train.txt'), 'w') as f:
    for _ in range(150):
        subject = _rng.choice(['the cat', 'a dog', 'the bank', 'an investor'])
        verb = _rng.choice(['sees', 'buys', 'sells', 'likes'])
        obj = _rng.choice(['the stock', 'a bond', 'the house', 'some shares'])
        f.write(f' {subject} {verb} {obj} \n')


# =============================================================================
# 02-intermediate/language_model/main.py
from jitgrad.nn.utils import clip_grad_norm_

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
embed_size = 32
hidden_size = 64
num_layers = 1
num_epochs = 5
num_samples = 40     # number of words to be sampled
batch_size = 20
seq_length = 10
learning_rate = 0.01

# Load "Penn Treebank" dataset
corpus = Corpus()
ids = corpus.get_data(os.path.join(WORK, 'data/train.txt'), batch_size)
vocab_size = len(corpus.dictionary)
num_batches = ids.size(1) // seq_length


# RNN based language model
class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super(RNNLM, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        # Embed word ids to vectors
        x = self.embed(x)

        # Forward propagate LSTM
        out, (h, c) = self.lstm(x, h)

        # Reshape output to (batch_size*sequence_length, hidden_size)
        out = out.reshape(out.size(0)*out.size(1), out.size(2))

        # Decode hidden states of all time steps
        out = self.linear(out)
        return out, (h, c)

model = RNNLM(vocab_size, embed_size, hidden_size, num_layers).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Truncated backpropagation
def detach(states):
    return [state.detach() for state in states]

# Train the model
lm_losses = []
for epoch in range(num_epochs):
    # Set initial hidden and cell states
    states = (torch.zeros(num_layers, batch_size, hidden_size).to(device),
              torch.zeros(num_layers, batch_size, hidden_size).to(device))

    for i in range(0, ids.size(1) - seq_length, seq_length):
        # Get mini-batch inputs and targets
        inputs = ids[:, i:i+seq_length].to(device)
        targets = ids[:, (i+1):(i+1)+seq_length].to(device)

        # Forward pass
        states = detach(states)
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.reshape(-1))

        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        lm_losses.append(loss.item())

        step = (i+1) // seq_length
        if step % 100 == 0:
            print ('Epoch [{}/{}], Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}'
                   .format(epoch+1, num_epochs, step, num_batches, loss.item(), np.exp(loss.item())))

# Test the model
sampled_words = []
with torch.no_grad():
    with open(os.path.join(WORK, 'sample.txt'), 'w') as f:
        # Set intial hidden ane cell states
        state = (torch.zeros(num_layers, 1, hidden_size).to(device),
                 torch.zeros(num_layers, 1, hidden_size).to(device))

        # Select one word id randomly
        prob = torch.ones(vocab_size)
        input = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)

        for i in range(num_samples):
            # Forward propagate RNN
            output, state = model(input, state)

            # Sample a word id
            prob = output.exp()
            word_id = torch.multinomial(prob, num_samples=1).item()

            # Fill input with sampled word id for the next time step
            input.fill_(word_id)

            # File write
            word = corpus.dictionary.idx2word[word_id]
            word = '\n' if word == '<eos>' else word + ' '
            f.write(word)
            sampled_words.append(corpus.dictionary.idx2word[word_id])

            if (i+1) % 100 == 0:
                print('Sampled [{}/{}] words and save to {}'.format(i+1, num_samples, 'sample.txt'))
results["lm"] = {"losses": lm_losses, "vocab_size": vocab_size, "ids_shape": tuple(ids.shape),
                 "sampled": sampled_words}

# Save the model checkpoints
torch.save(model.state_dict(), os.path.join(WORK, 'model.ckpt'))


# =============================================================================
# (added) a deterministic part to compare with torch: the models above with fixed weights, their
# loss and gradients on the first test images
def fixed_run(model, inputs, labels, criterion):
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 3)
    model.train()
    model.zero_grad()
    loss = criterion(model(inputs), labels)
    loss.backward()
    return {"loss": loss.item(), **{n: p.grad.tolist() for n, p in model.named_parameters()}}


fixed_images = torch.stack([test_dataset[i][0] for i in range(20)])
fixed_labels = torch.tensor([test_dataset[i][1] for i in range(20)])
fixed_results = {}
fixed_images = fixed_images.reshape(-1, sequence_length, input_size)
fixed_results["rnn"] = fixed_run(RNN(input_size, hidden_size, num_layers, num_classes), fixed_images, fixed_labels, nn.CrossEntropyLoss())
fixed_results["birnn"] = fixed_run(BiRNN(input_size, hidden_size, num_layers, num_classes), fixed_images, fixed_labels, nn.CrossEntropyLoss())


class _LMLoss(nn.Module):  # (the language model's step as one module, for fixed_run)
    def __init__(self):
        super().__init__()
        self.lm = RNNLM(vocab_size, embed_size, hidden_size, num_layers)

    def forward(self, inputs):
        states = (torch.zeros(num_layers, batch_size, hidden_size), torch.zeros(num_layers, batch_size, hidden_size))
        outputs, states = self.lm(inputs, states)
        return outputs


fixed_results["lm"] = fixed_run(_LMLoss(), ids[:, :seq_length], ids[:, 1:seq_length + 1].reshape(-1), nn.CrossEntropyLoss())
