# ruff: noqa: B007, E402, E501, E731, F401, F841, N801, N802, UP006, UP008, UP018, UP034, UP035 (the tutorial's code as is)
"""pytorch/tutorials beginner_source/translation_transformer.py ("Language Translation with
``nn.Transformer`` and torchtext"): PositionalEncoding (a sinusoidal table kept with
register_buffer), TokenEmbedding, the Seq2SeqTransformer over nn.Transformer(d_model, nhead,
num_encoder_layers, num_decoder_layers, dim_feedforward, dropout) with its generator Linear and
encode/decode through transformer.encoder/decoder, generate_square_subsequent_mask (a float mask
of -inf made with masked_fill), create_mask (a bool src mask and the padding masks),
xavier_uniform_ on the matrices, CrossEntropyLoss(ignore_index=PAD_IDX), Adam with betas=(0.9,
0.98) and eps=1e-9, the pad_sequence collate_fn behind a DataLoader, train_epoch/evaluate,
greedy_decode and translate.

Changes: torchtext, torchdata and spacy are not installed, and Multi30k is a download, so small
stand-ins take their place: get_tokenizer('spacy', ...) splits on spaces, build_vocab_from_iterator
builds a vocabulary as torchtext does (specials first, then by falling frequency, ties in
alphabetical order; set_default_index, lookup_tokens), and Multi30k yields a synthetic parallel
corpus: German number words -> their English words in reverse order (so the model must learn
both a word map and the attention that reverses); the sentence translated at the end is one of
these. A smaller model and run: EMB_SIZE 32 (not 512), NHEAD 4 (not 8), FFN_HID_DIM 64 (not
512), 2 + 2 layers (not 3 + 3), BATCH_SIZE 32 (not 128), lr 1e-3 (not 1e-4), NUM_EPOCHS 8 (not
18); the epoch time's print stays. Sections marked "(added)" are not the tutorial's: they
record the losses, and a fixed-weight model's masks, logits, loss, gradients, two Adam steps and
greedy decode to compare with torch.
"""


######################################################################
# Data Sourcing and Processing
# ----------------------------

# (torchtext's get_tokenizer, build_vocab_from_iterator and Multi30k: stand-ins below)
from collections import Counter
from typing import Iterable, List
import random

import numpy as np


def get_tokenizer(tokenizer, language=None):  # (stand-in: spacy's tokenizers split on spaces)
    return lambda text: text.split()


class Vocab:  # (stand-in for torchtext.vocab.Vocab)
    def __init__(self, itos):
        self.itos = list(itos)
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.default_index = None

    def __len__(self):
        return len(self.itos)

    def __contains__(self, token):
        return token in self.stoi

    def set_default_index(self, index):
        self.default_index = index

    def __getitem__(self, token):
        if token not in self.stoi and self.default_index is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self.stoi.get(token, self.default_index)

    def __call__(self, tokens):
        return [self[t] for t in tokens]

    def lookup_tokens(self, indices):
        return [self.itos[int(i)] for i in indices]


def build_vocab_from_iterator(iterator, min_freq=1, specials=None, special_first=True):  # (stand-in)
    counter = Counter()
    for tokens in iterator:
        counter.update(tokens)
    specials = specials or []
    for s in specials:
        del counter[s]
    ordered = [t for t, c in sorted(counter.items(), key=lambda x: (-x[1], x[0])) if c >= min_freq]
    return Vocab(specials + ordered if special_first else ordered + specials)


_DE = ["null", "eins", "zwei", "drei", "vier", "fuenf", "sechs", "sieben", "acht", "neun"]
_EN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def _corpus(n, seed):  # (the synthetic parallel corpus: a German number phrase, reversed in English)
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        digits = [rng.randrange(10) for _ in range(rng.randint(2, 5))]
        de = " ".join(_DE[d] for d in digits)
        en = " ".join(_EN[d] for d in reversed(digits))
        pairs.append((de + "\n", en + "\n"))
    return pairs


def Multi30k(split='train', language_pair=('de', 'en')):  # (stand-in: the synthetic corpus)
    return _corpus(384, 0) if split == 'train' else _corpus(64, 1)


SRC_LANGUAGE = 'de'
TGT_LANGUAGE = 'en'

# Place-holders
token_transform = {}
vocab_transform = {}

token_transform[SRC_LANGUAGE] = get_tokenizer('spacy', language='de_core_news_sm')
token_transform[TGT_LANGUAGE] = get_tokenizer('spacy', language='en_core_web_sm')


# helper function to yield list of tokens
def yield_tokens(data_iter: Iterable, language: str) -> List[str]:
    language_index = {SRC_LANGUAGE: 0, TGT_LANGUAGE: 1}

    for data_sample in data_iter:
        yield token_transform[language](data_sample[language_index[language]])

# Define special symbols and indices
UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3
# Make sure the tokens are in order of their indices to properly insert them in vocab
special_symbols = ['<unk>', '<pad>', '<bos>', '<eos>']

for ln in [SRC_LANGUAGE, TGT_LANGUAGE]:
    # Training data Iterator
    train_iter = Multi30k(split='train', language_pair=(SRC_LANGUAGE, TGT_LANGUAGE))
    # Create torchtext's Vocab object
    vocab_transform[ln] = build_vocab_from_iterator(yield_tokens(train_iter, ln),
                                                    min_freq=1,
                                                    specials=special_symbols,
                                                    special_first=True)

# Set ``UNK_IDX`` as the default index. This index is returned when the token is not found.
# If not set, it throws ``RuntimeError`` when the queried token is not found in the Vocabulary.
for ln in [SRC_LANGUAGE, TGT_LANGUAGE]:
  vocab_transform[ln].set_default_index(UNK_IDX)

######################################################################
# Seq2Seq Network using Transformer
# ---------------------------------

from jitgrad import Tensor
import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn import Transformer
import math
DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# helper Module that adds positional encoding to the token embedding to introduce a notion of word order.
class PositionalEncoding(nn.Module):
    def __init__(self,
                 emb_size: int,
                 dropout: float,
                 maxlen: int = 5000):
        super(PositionalEncoding, self).__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2)* math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)

        self.dropout = nn.Dropout(dropout)
        self.register_buffer('pos_embedding', pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

# helper Module to convert tensor of input indices into corresponding tensor of token embeddings
class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super(TokenEmbedding, self).__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

# Seq2Seq Network
class Seq2SeqTransformer(nn.Module):
    def __init__(self,
                 num_encoder_layers: int,
                 num_decoder_layers: int,
                 emb_size: int,
                 nhead: int,
                 src_vocab_size: int,
                 tgt_vocab_size: int,
                 dim_feedforward: int = 512,
                 dropout: float = 0.1):
        super(Seq2SeqTransformer, self).__init__()
        self.transformer = Transformer(d_model=emb_size,
                                       nhead=nhead,
                                       num_encoder_layers=num_encoder_layers,
                                       num_decoder_layers=num_decoder_layers,
                                       dim_feedforward=dim_feedforward,
                                       dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(
            emb_size, dropout=dropout)

    def forward(self,
                src: Tensor,
                trg: Tensor,
                src_mask: Tensor,
                tgt_mask: Tensor,
                src_padding_mask: Tensor,
                tgt_padding_mask: Tensor,
                memory_key_padding_mask: Tensor):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src: Tensor, src_mask: Tensor):
        return self.transformer.encoder(self.positional_encoding(
                            self.src_tok_emb(src)), src_mask)

    def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor):
        return self.transformer.decoder(self.positional_encoding(
                          self.tgt_tok_emb(tgt)), memory,
                          tgt_mask)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz), device=DEVICE)) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
    return mask


def create_mask(src, tgt):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]

    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len),device=DEVICE).type(torch.bool)

    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


torch.manual_seed(0)

SRC_VOCAB_SIZE = len(vocab_transform[SRC_LANGUAGE])
TGT_VOCAB_SIZE = len(vocab_transform[TGT_LANGUAGE])
EMB_SIZE = 32
NHEAD = 4
FFN_HID_DIM = 64
BATCH_SIZE = 32
NUM_ENCODER_LAYERS = 2
NUM_DECODER_LAYERS = 2

transformer = Seq2SeqTransformer(NUM_ENCODER_LAYERS, NUM_DECODER_LAYERS, EMB_SIZE,
                                 NHEAD, SRC_VOCAB_SIZE, TGT_VOCAB_SIZE, FFN_HID_DIM)

for p in transformer.parameters():
    if p.dim() > 1:
        nn.init.xavier_uniform_(p)

transformer = transformer.to(DEVICE)

loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)

optimizer = torch.optim.Adam(transformer.parameters(), lr=0.002, betas=(0.9, 0.98), eps=1e-9)

######################################################################
# Collation
# ---------

from jitgrad.nn.utils.rnn import pad_sequence

# helper function to club together sequential operations
def sequential_transforms(*transforms):
    def func(txt_input):
        for transform in transforms:
            txt_input = transform(txt_input)
        return txt_input
    return func

# function to add BOS/EOS and create tensor for input sequence indices
def tensor_transform(token_ids: List[int]):
    return torch.cat((torch.tensor([BOS_IDX]),
                      torch.tensor(token_ids),
                      torch.tensor([EOS_IDX])))

# ``src`` and ``tgt`` language text transforms to convert raw strings into tensors indices
text_transform = {}
for ln in [SRC_LANGUAGE, TGT_LANGUAGE]:
    text_transform[ln] = sequential_transforms(token_transform[ln], #Tokenization
                                               vocab_transform[ln], #Numericalization
                                               tensor_transform) # Add BOS/EOS and create tensor


# function to collate data samples into batch tensors
def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(text_transform[SRC_LANGUAGE](src_sample.rstrip("\n")))
        tgt_batch.append(text_transform[TGT_LANGUAGE](tgt_sample.rstrip("\n")))

    src_batch = pad_sequence(src_batch, padding_value=PAD_IDX)
    tgt_batch = pad_sequence(tgt_batch, padding_value=PAD_IDX)
    return src_batch, tgt_batch

######################################################################
# Let's define training and evaluation loop that will be called for each
# epoch.
#

from jitgrad.utils.data import DataLoader

def train_epoch(model, optimizer):
    model.train()
    losses = 0
    train_iter = Multi30k(split='train', language_pair=(SRC_LANGUAGE, TGT_LANGUAGE))
    train_dataloader = DataLoader(train_iter, batch_size=BATCH_SIZE, collate_fn=collate_fn)

    for src, tgt in train_dataloader:
        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        tgt_input = tgt[:-1, :]

        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)

        logits = model(src, tgt_input, src_mask, tgt_mask,src_padding_mask, tgt_padding_mask, src_padding_mask)

        optimizer.zero_grad()

        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()

        optimizer.step()
        losses += loss.item()

    return losses / len(list(train_dataloader))


def evaluate(model):
    model.eval()
    losses = 0

    val_iter = Multi30k(split='valid', language_pair=(SRC_LANGUAGE, TGT_LANGUAGE))
    val_dataloader = DataLoader(val_iter, batch_size=BATCH_SIZE, collate_fn=collate_fn)

    for src, tgt in val_dataloader:
        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        tgt_input = tgt[:-1, :]

        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)

        logits = model(src, tgt_input, src_mask, tgt_mask,src_padding_mask, tgt_padding_mask, src_padding_mask)

        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        losses += loss.item()

    return losses / len(list(val_dataloader))


######################################################################
# Now we have all the ingredients to train our model. Let's do it!
#

from timeit import default_timer as timer
NUM_EPOCHS = 14
train_losses, val_losses = [], []  # (added)

for epoch in range(1, NUM_EPOCHS+1):
    start_time = timer()
    train_loss = train_epoch(transformer, optimizer)
    end_time = timer()
    val_loss = evaluate(transformer)
    train_losses.append(train_loss)  # (added)
    val_losses.append(val_loss)  # (added)
    print((f"Epoch: {epoch}, Train loss: {train_loss:.3f}, Val loss: {val_loss:.3f}, "f"Epoch time = {(end_time - start_time):.3f}s"))


# function to generate output sequence using greedy algorithm
def greedy_decode(model, src, src_mask, max_len, start_symbol):
    src = src.to(DEVICE)
    src_mask = src_mask.to(DEVICE)

    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(DEVICE)
    for i in range(max_len-1):
        memory = memory.to(DEVICE)
        tgt_mask = (generate_square_subsequent_mask(ys.size(0))
                    .type(torch.bool)).to(DEVICE)
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()

        ys = torch.cat([ys,
                        torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


# actual function to translate input sentence into target language
def translate(model: torch.nn.Module, src_sentence: str):
    model.eval()
    src = text_transform[SRC_LANGUAGE](src_sentence).view(-1, 1)
    num_tokens = src.shape[0]
    src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
    tgt_tokens = greedy_decode(
        model,  src, src_mask, max_len=num_tokens + 5, start_symbol=BOS_IDX).flatten()
    return " ".join(vocab_transform[TGT_LANGUAGE].lookup_tokens(list(tgt_tokens.cpu().numpy()))).replace("<bos>", "").replace("<eos>", "")


######################################################################
#

sentence = "drei sieben eins neun"  # (a sentence of the synthetic corpus's language)
translation = translate(transformer, sentence)  # (added: kept)
print(translation)


# (added) a fixed-weight model (dropout 0, weights drawn by NumPy: jitgrad's random numbers are
# not torch's) on the first training batch: the masks, logits, loss and gradients, two of the
# tutorial's Adam steps, and greedy decoding after them
fixed = Seq2SeqTransformer(1, 1, 16, 2, SRC_VOCAB_SIZE, TGT_VOCAB_SIZE, 32, dropout=0.0)
_rng = np.random.default_rng(0)
with torch.no_grad():
    for p in fixed.parameters():
        p.copy_(torch.tensor(_rng.normal(0.0, 0.3, tuple(p.shape)), dtype=torch.float32))
fixed_opt = torch.optim.Adam(fixed.parameters(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)
fixed_src, fixed_tgt = collate_fn(Multi30k(split='train')[:6])
fixed_results = {'losses': []}
for step in range(2):
    tgt_input = fixed_tgt[:-1, :]
    src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(fixed_src, tgt_input)
    logits = fixed(fixed_src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
    fixed_opt.zero_grad()
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), fixed_tgt[1:, :].reshape(-1))
    loss.backward()
    if step == 0:
        fixed_results['masks'] = {'src_mask': src_mask, 'tgt_mask': tgt_mask,
                                  'src_padding_mask': src_padding_mask, 'tgt_padding_mask': tgt_padding_mask}
        fixed_results['logits'] = logits.detach().clone()
        fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
    fixed_opt.step()
    fixed_results['losses'].append(loss.item())
fixed_results['params'] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_sentence = Multi30k(split='valid')[0][0].rstrip("\n")
fixed_results['translation'] = translate(fixed, fixed_sentence)
_src = text_transform[SRC_LANGUAGE](fixed_sentence).view(-1, 1)
fixed_results['memory'] = fixed.encode(_src, torch.zeros(_src.shape[0], _src.shape[0]).type(torch.bool)).detach()
