# ruff: noqa: E402, E501, F401, F841, N801, N802, N803, N806, N815, UP008, UP031 (Andras7's code as is)
"""Andras7/word2vec-pytorch word2vec/{data_reader,model,trainer}.py: skip-gram with negative
sampling, its SkipGramModel of two nn.Embedding(..., sparse=True) tables (init.uniform_ and
init.constant_ on .weight.data; torch.mul, torch.sum, torch.clamp, F.logsigmoid, torch.bmm),
the DataReader's unigram**0.5 negative table and frequent-word subsampling, the Dataset that
reads the corpus line by line with a collate_fn building torch.LongTensor batches, and the
trainer's loop: optim.SparseAdam with optim.lr_scheduler.CosineAnnealingLR over the
DataLoader, scheduler.step() before optimizer.step() as written, and save_embedding.

Changes: the package's three modules in one script (the imports between them dropped); the
corpus is a small synthetic text written to a temporary file (three topics of six words, each
line drawn from one topic with "the" between, and a rare word under min_count), since the
source trains on a text of its user's; the negative table has 1e4 entries, not 1e8; the
subsampling threshold t is 0.01, not 0.0001 (on a 19-word vocabulary 1e-4 would drop 95% of
every word); tqdm is not installed here, so a stand-in iterates; the trainer's arguments are
smaller or faster (16 dimensions, not 100; 10 iterations, not 3; lr 0.05, not 0.001); the
output file goes to a temporary directory; torch.manual_seed for repeatable runs. Sections
marked "(added)" are not Andras7's: they record the losses, learning rates and warnings, a
fixed-weight model's loss, sparse gradients and SparseAdam steps to compare with torch, and
how close the trained embeddings of words of one topic are.
"""
import os
import tempfile
import warnings

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.nn import init
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader
from jitgrad.utils.data import Dataset
# from tqdm import tqdm

import numpy as np


class tqdm:  # (stand-in for tqdm.tqdm: iterates)
    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)


# ------------------------------------------------------------------------------ data_reader.py

np.random.seed(12345)


class DataReader:
    NEGATIVE_TABLE_SIZE = 1e4  # (1e8 in the source)

    def __init__(self, inputFileName, min_count):

        self.negatives = []
        self.discards = []
        self.negpos = 0

        self.word2id = dict()
        self.id2word = dict()
        self.sentences_count = 0
        self.token_count = 0
        self.word_frequency = dict()

        self.inputFileName = inputFileName
        self.read_words(min_count)
        self.initTableNegatives()
        self.initTableDiscards()

    def read_words(self, min_count):
        word_frequency = dict()
        for line in open(self.inputFileName, encoding="utf8"):
            line = line.split()
            if len(line) > 1:
                self.sentences_count += 1
                for word in line:
                    if len(word) > 0:
                        self.token_count += 1
                        word_frequency[word] = word_frequency.get(word, 0) + 1

                        if self.token_count % 1000000 == 0:
                            print("Read " + str(int(self.token_count / 1000000)) + "M words.")

        wid = 0
        for w, c in word_frequency.items():
            if c < min_count:
                continue
            self.word2id[w] = wid
            self.id2word[wid] = w
            self.word_frequency[wid] = c
            wid += 1
        print("Total embeddings: " + str(len(self.word2id)))

    def initTableDiscards(self):
        t = 0.01  # (0.0001 in the source)
        f = np.array(list(self.word_frequency.values())) / self.token_count
        self.discards = np.sqrt(t / f) + (t / f)

    def initTableNegatives(self):
        pow_frequency = np.array(list(self.word_frequency.values())) ** 0.5
        words_pow = sum(pow_frequency)
        ratio = pow_frequency / words_pow
        count = np.round(ratio * DataReader.NEGATIVE_TABLE_SIZE)
        for wid, c in enumerate(count):
            self.negatives += [wid] * int(c)
        self.negatives = np.array(self.negatives)
        np.random.shuffle(self.negatives)

    def getNegatives(self, target, size):  # TODO check equality with target
        response = self.negatives[self.negpos:self.negpos + size]
        self.negpos = (self.negpos + size) % len(self.negatives)
        if len(response) != size:
            return np.concatenate((response, self.negatives[0:self.negpos]))
        return response


# -----------------------------------------------------------------------------------------------------------------

class Word2vecDataset(Dataset):
    def __init__(self, data, window_size):
        self.data = data
        self.window_size = window_size
        self.input_file = open(data.inputFileName, encoding="utf8")

    def __len__(self):
        return self.data.sentences_count

    def __getitem__(self, idx):
        while True:
            line = self.input_file.readline()
            if not line:
                self.input_file.seek(0, 0)
                line = self.input_file.readline()

            if len(line) > 1:
                words = line.split()

                if len(words) > 1:
                    word_ids = [self.data.word2id[w] for w in words if
                                w in self.data.word2id and np.random.rand() < self.data.discards[self.data.word2id[w]]]

                    boundary = np.random.randint(1, self.window_size)
                    return [(u, v, self.data.getNegatives(v, 5)) for i, u in enumerate(word_ids) for j, v in
                            enumerate(word_ids[max(i - boundary, 0):i + boundary]) if u != v]

    @staticmethod
    def collate(batches):
        all_u = [u for batch in batches for u, _, _ in batch if len(batch) > 0]
        all_v = [v for batch in batches for _, v, _ in batch if len(batch) > 0]
        all_neg_v = [neg_v for batch in batches for _, _, neg_v in batch if len(batch) > 0]

        return torch.LongTensor(all_u), torch.LongTensor(all_v), torch.LongTensor(all_neg_v)


# ------------------------------------------------------------------------------------ model.py

"""
    u_embedding: Embedding for center word.
    v_embedding: Embedding for neighbor words.
"""


class SkipGramModel(nn.Module):

    def __init__(self, emb_size, emb_dimension):
        super(SkipGramModel, self).__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)

        initrange = 1.0 / self.emb_dimension
        init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)

        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)

        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)

        return torch.mean(score + neg_score)

    def save_embedding(self, id2word, file_name):
        embedding = self.u_embeddings.weight.cpu().data.numpy()
        with open(file_name, 'w') as f:
            f.write('%d %d\n' % (len(id2word), self.emb_dimension))
            for wid, w in id2word.items():
                e = ' '.join(map(lambda x: str(x), embedding[wid]))
                f.write('%s %s\n' % (w, e))


# ---------------------------------------------------------------------------------- trainer.py

losses, lrs = [], []  # (added)


class Word2VecTrainer:
    def __init__(self, input_file, output_file, emb_dimension=100, batch_size=32, window_size=5, iterations=3,
                 initial_lr=0.001, min_count=12):

        self.data = DataReader(input_file, min_count)
        dataset = Word2vecDataset(self.data, window_size)
        self.dataloader = DataLoader(dataset, batch_size=batch_size,
                                     shuffle=False, num_workers=0, collate_fn=dataset.collate)

        self.output_file_name = output_file
        self.emb_size = len(self.data.word2id)
        self.emb_dimension = emb_dimension
        self.batch_size = batch_size
        self.iterations = iterations
        self.initial_lr = initial_lr
        self.skip_gram_model = SkipGramModel(self.emb_size, self.emb_dimension)

        self.use_cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if self.use_cuda else "cpu")
        if self.use_cuda:
            self.skip_gram_model.cuda()

    def train(self):

        for iteration in range(self.iterations):

            print("\n\n\nIteration: " + str(iteration + 1))
            optimizer = optim.SparseAdam(self.skip_gram_model.parameters(), lr=self.initial_lr)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, len(self.dataloader))

            running_loss = 0.0
            for i, sample_batched in enumerate(tqdm(self.dataloader)):

                if len(sample_batched[0]) > 1:
                    pos_u = sample_batched[0].to(self.device)
                    pos_v = sample_batched[1].to(self.device)
                    neg_v = sample_batched[2].to(self.device)

                    scheduler.step()
                    optimizer.zero_grad()
                    loss = self.skip_gram_model.forward(pos_u, pos_v, neg_v)
                    loss.backward()
                    optimizer.step()

                    running_loss = running_loss * 0.9 + loss.item() * 0.1
                    losses.append(loss.item())  # (added)
                    lrs.append(scheduler.get_last_lr()[0])  # (added)
                    if i > 0 and i % 500 == 0:
                        print(" Loss: " + str(running_loss))

            self.skip_gram_model.save_embedding(self.data.id2word, self.output_file_name)


# (added) the corpus: each line one topic's words in random order, "the" between some of them;
# "zebra" comes 5 times, under min_count
topics = {"animals": ["cat", "dog", "horse", "cow", "sheep", "goat"],
          "vehicles": ["car", "bus", "train", "truck", "bike", "boat"],
          "fruits": ["apple", "banana", "cherry", "grape", "lemon", "mango"]}
_rng = np.random.default_rng(0)
_lines = []
for _k in range(360):
    _words = list(_rng.choice(topics[list(topics)[_k % 3]], size=6))
    for _at in sorted(_rng.choice(7, size=2, replace=False), reverse=True):
        _words.insert(int(_at), "the")
    _lines.append(" ".join(_words + (["zebra"] if _k % 70 == 1 else [])))
workdir = tempfile.mkdtemp()
input_file = os.path.join(workdir, "input.txt")
with open(input_file, "w", encoding="utf8") as _f:
    _f.write("\n".join(_lines) + "\n")


# (added) a fixed-weight model before training: 7 words of 4 dimensions, weights from NumPy
# (one pair of rows large enough that torch.clamp cuts its scores), a batch with repeated
# words; its loss and sparse gradients, then two SparseAdam steps under CosineAnnealingLR in
# the trainer's order
def fixed_run():
    model = SkipGramModel(7, 4)
    rng = np.random.default_rng(1)
    u = rng.normal(0.0, 0.5, (7, 4))
    v = rng.normal(0.0, 0.5, (7, 4))
    u[6], v[5] = 2.5, -2.5  # (word 6 with negative 5: a score of -25, clamped to -10)
    with torch.no_grad():
        model.u_embeddings.weight.copy_(torch.tensor(u, dtype=torch.float32))
        model.v_embeddings.weight.copy_(torch.tensor(v, dtype=torch.float32))
    pos_u = torch.LongTensor([0, 3, 3, 6, 1])
    pos_v = torch.LongTensor([1, 2, 4, 0, 1])
    neg_v = torch.LongTensor(np.array([[2, 5, 5, 0, 4], [1, 1, 6, 0, 2], [3, 4, 5, 6, 0],
                                       [5, 5, 2, 1, 3], [0, 2, 4, 6, 3]]))
    r = {"losses": [], "lrs": []}
    optimizer = optim.SparseAdam(model.parameters(), lr=0.05, betas=(0.8, 0.9))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 3)
    for step in range(2):
        scheduler.step()
        optimizer.zero_grad()
        loss = model.forward(pos_u, pos_v, neg_v)
        loss.backward()
        if step == 0:
            for name, p in model.named_parameters():
                g = p.grad
                c = g.coalesce()
                r[name] = {"is_sparse": g.is_sparse, "sparse_coo": g.layout == torch.sparse_coo,
                           "is_coalesced": g.is_coalesced(), "nnz": g._nnz(),
                           "shape": tuple(g.shape), "indices": g._indices().clone(),
                           "values": g._values().clone(), "coalesced_indices": c.indices(),
                           "coalesced_values": c.values(), "dense": g.to_dense(),
                           "coalesced_is_coalesced": c.is_coalesced()}
        optimizer.step()
        r["losses"].append(loss.item())
        r["lrs"].append(scheduler.get_last_lr()[0])
        r[f"weights_{step}"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    state = optimizer.state_dict()["state"]
    r["state"] = {k: {n: (v if n == "step" else v.clone()) for n, v in s.items()}
                  for k, s in state.items()}
    with torch.no_grad():
        r["scores"] = torch.sum(torch.mul(model.u_embeddings(pos_u), model.v_embeddings(pos_v)), dim=1)
    return r


torch.manual_seed(0)  # (added)
fixed_results = fixed_run()  # (added)


if __name__ == '__main__':
    output_file = os.path.join(workdir, "out.vec")  # (a temporary directory)
    w2v = Word2VecTrainer(input_file=input_file, output_file=output_file, emb_dimension=16,
                          batch_size=32, iterations=10, initial_lr=0.05)
    with warnings.catch_warnings(record=True) as train_warnings:  # (added)
        warnings.simplefilter("always")  # (added)
        w2v.train()

    # (added) the trained centre-word vectors: the cosine similarity of every pair of words,
    # and each topic word's nearest other word
    emb = w2v.skip_gram_model.u_embeddings.weight.detach()
    unit = emb / emb.norm(dim=1, keepdim=True)
    cosine = (unit @ unit.T).numpy()
    id2word, word2id = w2v.data.id2word, w2v.data.word2id
    nearest = {}
    for _topic, _words in topics.items():
        for _w in _words:
            _row = cosine[word2id[_w]].copy()
            _row[word2id[_w]] = -2.0
            _row[word2id["the"]] = -2.0
            nearest[_w] = id2word[int(_row.argmax())]
