# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032 (tutorial code as is)
"""pytorch/tutorials beginner_source/nlp/sequence_models_tutorial.py: nn.LSTM stepped one element
at a time and over a whole sequence, then an LSTM part-of-speech tagger (autograd.Variable,
LongTensor, log_softmax without dim), plus the tutorial's exercise: character-level LSTM
features concatenated to the word embeddings."""
import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(1)

lstm = nn.LSTM(3, 3)  # Input dim is 3, output dim is 3
inputs = [autograd.Variable(torch.randn((1, 3)))
          for _ in range(5)]  # make a sequence of length 5

# initialize the hidden state.
hidden = (autograd.Variable(torch.randn(1, 1, 3)),
          autograd.Variable(torch.randn((1, 1, 3))))
for i in inputs:
    # Step through the sequence one element at a time.
    # after each step, hidden contains the hidden state.
    out, hidden = lstm(i.view(1, 1, -1), hidden)
stepped = (out, hidden)

inputs = torch.cat(inputs).view(len(inputs), 1, -1)
hidden = (autograd.Variable(torch.randn(1, 1, 3)), autograd.Variable(
    torch.randn((1, 1, 3))))  # clean out hidden state
out, hidden = lstm(inputs, hidden)
print(out)
print(hidden)
whole_sequence = (out.tolist(), hidden[0].tolist(), hidden[1].tolist())
last_slice_is_hidden = torch.equal(out[-1], hidden[0][0])


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    tensor = torch.LongTensor(idxs)
    return autograd.Variable(tensor)


training_data = [
    ("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("Everybody read that book".split(), ["NN", "V", "DET", "NN"])
]
word_to_ix = {}
for sent, tags in training_data:
    for word in sent:
        if word not in word_to_ix:
            word_to_ix[word] = len(word_to_ix)
print(word_to_ix)
tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

EMBEDDING_DIM = 6
HIDDEN_DIM = 6


class LSTMTagger(nn.Module):

    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()
        self.hidden_dim = hidden_dim

        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)

        # The LSTM takes word embeddings as inputs, and outputs hidden states
        # with dimensionality hidden_dim.
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)

        # The linear layer that maps from hidden state space to tag space
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        # The axes semantics are (num_layers, minibatch_size, hidden_dim)
        return (autograd.Variable(torch.zeros(1, 1, self.hidden_dim)),
                autograd.Variable(torch.zeros(1, 1, self.hidden_dim)))

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, self.hidden = self.lstm(
            embeds.view(len(sentence), 1, -1), self.hidden)
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space)
        return tag_scores


model = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, len(word_to_ix), len(tag_to_ix))
loss_function = nn.NLLLoss()
optimizer = optim.SGD(model.parameters(), lr=0.1)

# See what the scores are before training
inputs = prepare_sequence(training_data[0][0], word_to_ix)
tag_scores = model(inputs)
print(tag_scores)
scores_before = tag_scores.tolist()

losses = []
for epoch in range(300):  # again, normally you would NOT do 300 epochs, it is toy data
    for sentence, tags in training_data:
        model.zero_grad()
        model.hidden = model.init_hidden()
        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = prepare_sequence(tags, tag_to_ix)
        tag_scores = model(sentence_in)
        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

# See what the scores are after training
inputs = prepare_sequence(training_data[0][0], word_to_ix)
tag_scores = model(inputs)
print(tag_scores)
predicted_tags = tag_scores.argmax(1).tolist()  # DET NN V DET NN: [0, 1, 2, 0, 1]
scores_after = tag_scores.tolist()


# ---- the exercise: augmenting the tagger with character-level features ----
char_to_ix = {}
for sent, _ in training_data:
    for word in sent:
        for c in word:
            char_to_ix.setdefault(c, len(char_to_ix))
CHAR_EMBEDDING_DIM = 3
CHAR_HIDDEN_DIM = 3


class CharLSTMTagger(nn.Module):

    def __init__(self, embedding_dim, char_dim, char_hidden, hidden_dim, vocab_size, n_chars,
                 tagset_size):
        super(CharLSTMTagger, self).__init__()
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.char_embeddings = nn.Embedding(n_chars, char_dim)
        self.char_lstm = nn.LSTM(char_dim, char_hidden)
        self.lstm = nn.LSTM(embedding_dim + char_hidden, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence, words):
        embeds = self.word_embeddings(sentence)
        char_reps = []
        for word in words:
            chars = prepare_sequence(word, char_to_ix)
            _, (h_n, _) = self.char_lstm(self.char_embeddings(chars).view(len(word), 1, -1))
            char_reps.append(h_n.view(-1))
        combined = torch.cat([embeds, torch.stack(char_reps)], dim=1)
        lstm_out, _ = self.lstm(combined.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        return F.log_softmax(tag_space, dim=1)


char_model = CharLSTMTagger(EMBEDDING_DIM, CHAR_EMBEDDING_DIM, CHAR_HIDDEN_DIM, HIDDEN_DIM,
                            len(word_to_ix), len(char_to_ix), len(tag_to_ix))
optimizer = optim.SGD(char_model.parameters(), lr=0.1)
char_losses = []
for epoch in range(100):
    total = 0.0
    for sentence, tags in training_data:
        char_model.zero_grad()
        tag_scores = char_model(prepare_sequence(sentence, word_to_ix), sentence)
        loss = loss_function(tag_scores, prepare_sequence(tags, tag_to_ix))
        loss.backward()
        optimizer.step()
        total += loss.item()
    char_losses.append(total / len(training_data))
with torch.no_grad():
    char_predicted = [char_model(prepare_sequence(s, word_to_ix), s).argmax(1).tolist()
                      for s, _ in training_data]
print('char-level tagger loss', char_losses[0], '->', char_losses[-1], char_predicted)

# a deterministic part to compare with torch: the tagger with fixed weights, trained 20 epochs
fixed = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, len(word_to_ix), len(tag_to_ix))
with torch.no_grad():
    for k, (name, p) in enumerate(fixed.named_parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (k + 1)).view_as(p) / 2)
optimizer = optim.SGD(fixed.parameters(), lr=0.1)
fixed_losses = []
for epoch in range(20):
    for sentence, tags in training_data:
        fixed.zero_grad()
        fixed.hidden = fixed.init_hidden()
        loss = loss_function(fixed(prepare_sequence(sentence, word_to_ix)),
                             prepare_sequence(tags, tag_to_ix))
        loss.backward()
        optimizer.step()
        fixed_losses.append(loss.item())
fixed_grads = {name: p.grad.tolist() for name, p in fixed.named_parameters()}
