# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032 (tutorial code as is)
"""pytorch/tutorials beginner_source/nlp/word_embeddings_tutorial.py: an nn.Embedding lookup, the
N-gram language model on Shakespeare's Sonnet 2 (torch.Tensor([0]) accumulating loss.data),
and the tutorial's exercise, a continuous bag-of-words (CBOW) model, filled in."""
import jitgrad as torch
import jitgrad.autograd as autograd
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(1)

word_to_ix = {"hello": 0, "world": 1}
embeds = nn.Embedding(2, 5)  # 2 words in vocab, 5 dimensional embeddings
lookup_tensor = torch.LongTensor([word_to_ix["hello"]])
hello_embed = embeds(autograd.Variable(lookup_tensor))
print(hello_embed)
hello_is_row_0 = torch.equal(hello_embed[0], embeds.weight[0])

CONTEXT_SIZE = 2
EMBEDDING_DIM = 10
# We will use Shakespeare Sonnet 2
test_sentence = """When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now,
Will be a totter'd weed of small worth held:
Then being asked, where all thy beauty lies,
Where all the treasure of thy lusty days;
To say, within thine own deep sunken eyes,
Were an all-eating shame, and thriftless praise.
How much more praise deserv'd thy beauty's use,
If thou couldst answer 'This fair child of mine
Shall sum my count, and make my old excuse,'
Proving his beauty by succession thine!
This were to be new made when thou art old,
And see thy blood warm when thou feel'st it cold.""".split()
# build a list of tuples.  Each tuple is ([ word_i-2, word_i-1 ], target word)
trigrams = [([test_sentence[i], test_sentence[i + 1]], test_sentence[i + 2])
            for i in range(len(test_sentence) - 2)]
# print the first 3, just so you can see what they look like
print(trigrams[:3])

vocab = set(test_sentence)
word_to_ix = {word: i for i, word in enumerate(vocab)}


class NGramLanguageModeler(nn.Module):

    def __init__(self, vocab_size, embedding_dim, context_size):
        super(NGramLanguageModeler, self).__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, 128)
        self.linear2 = nn.Linear(128, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        log_probs = F.log_softmax(out, dim=1)
        return log_probs


losses = []
loss_function = nn.NLLLoss()
model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
optimizer = optim.SGD(model.parameters(), lr=0.001)

for epoch in range(10):
    total_loss = torch.Tensor([0])
    for context, target in trigrams:
        context_idxs = [word_to_ix[w] for w in context]
        context_var = autograd.Variable(torch.LongTensor(context_idxs))
        model.zero_grad()
        log_probs = model(context_var)
        loss = loss_function(log_probs, autograd.Variable(
            torch.LongTensor([word_to_ix[target]])))
        loss.backward()
        optimizer.step()

        total_loss += loss.data
    losses.append(total_loss)
print(losses)  # The loss decreased every iteration over the training data!
ngram_losses = [x.item() for x in losses]
# To get the embedding of a particular word, e.g. "beauty"
beauty_embedding_shape = tuple(model.embeddings.weight[word_to_ix["beauty"]].shape)


# ---- the exercise: Continuous Bag-of-Words ----
CONTEXT_SIZE = 2  # 2 words to the left, 2 to the right
raw_text = """We are about to study the idea of a computational process.
Computational processes are abstract beings that inhabit computers.
As they evolve, processes manipulate other abstract things called data.
The evolution of a process is directed by a pattern of rules
called a program. People create programs to direct processes. In effect,
we conjure the spirits of the computer with our spells.""".split()

# By deriving a set from `raw_text`, we deduplicate the array
vocab = set(raw_text)
vocab_size = len(vocab)

word_to_ix = {word: i for i, word in enumerate(vocab)}
ix_to_word = {i: word for word, i in word_to_ix.items()}
data = []
for i in range(2, len(raw_text) - 2):
    context = [raw_text[i - 2], raw_text[i - 1],
               raw_text[i + 1], raw_text[i + 2]]
    target = raw_text[i]
    data.append((context, target))
print(data[:5])


class CBOW(nn.Module):

    def __init__(self, vocab_size, embedding_dim):
        super(CBOW, self).__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear = nn.Linear(embedding_dim, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).sum(dim=0, keepdim=True)
        return F.log_softmax(self.linear(embeds), dim=1)


def make_context_vector(context, word_to_ix):
    idxs = [word_to_ix[w] for w in context]
    tensor = torch.LongTensor(idxs)
    return autograd.Variable(tensor)


make_context_vector(data[0][0], word_to_ix)  # example

cbow = CBOW(vocab_size, EMBEDDING_DIM)
optimizer = optim.SGD(cbow.parameters(), lr=0.05)
cbow_losses = []
for epoch in range(30):
    total_loss = 0.0
    for context, target in data:
        cbow.zero_grad()
        loss = loss_function(cbow(make_context_vector(context, word_to_ix)),
                             torch.LongTensor([word_to_ix[target]]))
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    cbow_losses.append(total_loss / len(data))
with torch.no_grad():
    cbow_accuracy = sum(
        ix_to_word[cbow(make_context_vector(c, word_to_ix)).argmax(1).item()] == t
        for c, t in data) / len(data)
print('CBOW loss', cbow_losses[0], '->', cbow_losses[-1], 'train accuracy', cbow_accuracy)

# a deterministic part to compare with torch: CBOW with fixed weights, 3 epochs
fixed = CBOW(vocab_size, EMBEDDING_DIM)
with torch.no_grad():
    fixed.embeddings.weight.copy_(torch.sin(torch.arange(vocab_size * EMBEDDING_DIM,
                                                         dtype=torch.float32)).view(vocab_size, -1))
    fixed.linear.weight.copy_(torch.cos(torch.arange(vocab_size * EMBEDDING_DIM,
                                                     dtype=torch.float32)).view(vocab_size, -1) / 3)
    fixed.linear.bias.zero_()
optimizer = optim.SGD(fixed.parameters(), lr=0.05, momentum=0.9)
fixed_losses = []
for epoch in range(3):
    for context, target in data:  # (word_to_ix's order is the same for torch in one process)
        fixed.zero_grad()
        loss = loss_function(fixed(make_context_vector(context, word_to_ix)),
                             torch.LongTensor([word_to_ix[target]]))
        loss.backward()
        optimizer.step()
        fixed_losses.append(loss.item())
