# ruff: noqa: B007, E402, E501, F841, N801, N802, N803, N806, UP004, UP008, UP031, UP032
# (tutorial code as is)
"""pytorch/examples word_language_model: RNNModel (LSTM/GRU, tied weights) and TransformerModel.

data.py's Corpus reads wikitext-2 from disk; here a tiny corpus of repeating sentences is
tokenized by the same Dictionary/Corpus code.
"""
import math
import os
import time
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F


# ---- data.py ----
class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, texts):
        self.dictionary = Dictionary()
        self.train = self.tokenize(texts['train'])
        self.valid = self.tokenize(texts['valid'])
        self.test = self.tokenize(texts['test'])

    def tokenize(self, lines):
        """Tokenizes a text file."""
        # Add words to the dictionary
        for line in lines:
            words = line.split() + ['<eos>']
            for word in words:
                self.dictionary.add_word(word)

        # Tokenize file content
        idss = []
        for line in lines:
            words = line.split() + ['<eos>']
            ids = []
            for word in words:
                ids.append(self.dictionary.word2idx[word])
            idss.append(torch.tensor(ids).type(torch.int64))
        ids = torch.cat(idss)
        return ids


# ---- model.py ----
class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # Optionally tie weights as in:
        # "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


# Temporarily leave PositionalEncoding module here. Will be moved somewhere else.
class PositionalEncoding(nn.Module):
    r"""Inject some information about the relative or absolute position of the tokens in the sequence.
        The positional encodings have the same dimension as the embeddings, so that the two can be
        summed. Here, we use sine and cosine functions of different frequencies.
    .. math:
        \text{PosEncoder}(pos, 2i) = sin(pos/10000^(2i/d_model))
        \text{PosEncoder}(pos, 2i+1) = cos(pos/10000^(2i/d_model))
        \text{where pos is the word position and i is the embed idx)
    Args:
        d_model: the embed dim (required).
        dropout: the dropout value (default=0.1).
        max_len: the max. length of the incoming sequence (default=5000).
    Examples:
        >>> pos_encoder = PositionalEncoding(d_model)
    """

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        r"""Inputs of forward function
        Args:
            x: the sequence fed to the positional encoder model (required).
        Shape:
            x: [sequence length, batch size, embed dim]
            output: [sequence length, batch size, embed dim]
        Examples:
            >>> output = pos_encoder(x)
        """

        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                               num_encoder_layers=nlayers)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


# ---- main.py ----
class Args:
    emsize = 16
    nhid = 16
    nlayers = 2
    lr = 20
    clip = 0.25
    epochs = 8
    batch_size = 4
    bptt = 6
    dropout = 0.2
    tied = True
    seed = 1111
    log_interval = 200
    nhead = 2
    dry_run = False


args = Args()
torch.manual_seed(args.seed)
device = torch.device("cpu")

sentences = ['the cat sat on the mat', 'a dog ran in the park', 'the bird sang a song',
             'my cat likes the warm mat']
corpus = Corpus({'train': sentences * 6, 'valid': sentences * 2, 'test': sentences[::-1] * 2})


# Starting from sequential data, batchify arranges the dataset into columns.
# For instance, with the alphabet as the sequence and batch size 4, we'd get
# ┌ a g m s ┐
# │ b h n t │
# │ c i o u │
# │ d j p v │
# │ e k q w │
# └ f l r x ┘.
# These columns are treated as independent by the model, which means that the
# dependence of e. g. 'g' on 'f' can not be learned, but allows more efficient
# batch processing.

def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


eval_batch_size = 2
train_data = batchify(corpus.train, args.batch_size)
val_data = batchify(corpus.valid, eval_batch_size)
test_data = batchify(corpus.test, eval_batch_size)
ntokens = len(corpus.dictionary)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


# get_batch subdivides the source data into chunks of length args.bptt.
# If source is equal to the example output of the batchify function, with
# a bptt-limit of 2, we'd get the following two Variables for i = 0:
# ┌ a g m s ┐ ┌ b h n t ┐
# └ b h n t ┘ └ c i o u ┘
# Note that despite the name of the function, the subdivison of data is not
# done along the batch dimension (i.e. dimension 1), since that was handled
# by the batchify function. The chunks are along dimension 0, corresponding
# to the seq_len dimension in the LSTM.

def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def evaluate(data_source):
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            if args.model == 'Transformer':
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    # Turn on training mode which enables dropout.
    model.train()
    total_loss = 0.
    start_time = time.time()
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(args.batch_size)
    epoch_loss, nbatches = 0., 0
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        model.zero_grad()
        if args.model == 'Transformer':
            output = model(data)
            output = output.view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()
        epoch_loss += loss.item()
        nbatches += 1

        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | '
                  'loss {:5.2f} | ppl {:8.2f}'.format(
                      epoch, batch, len(train_data) // args.bptt, lr,
                      elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
            total_loss = 0
            start_time = time.time()
        if args.dry_run:
            break
    return epoch_loss / nbatches


results = {}
checkpoint_dir = tempfile.mkdtemp()
for model_name, lr0, tied in (('LSTM', 5, True), ('GRU', 5, False), ('Transformer', 1.0, False)):
    args.model, args.lr, args.tied = model_name, lr0, tied
    torch.manual_seed(args.seed)
    if args.model == 'Transformer':
        model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers,
                                 args.dropout).to(device)
    else:
        model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout,
                         args.tied).to(device)
    criterion = nn.NLLLoss()

    # Loop over epochs.
    lr = args.lr
    best_val_loss = None
    train_losses, val_losses = [], []
    first_val = evaluate(val_data)
    if True:  # (main.py's --save path: one checkpoint per model, for generate.py below)
        save = os.path.join(checkpoint_dir, model_name + '.pt')
        for epoch in range(1, args.epochs + 1):
            epoch_start_time = time.time()
            train_losses.append(train())
            val_loss = evaluate(val_data)
            val_losses.append(val_loss)
            print('-' * 89)
            print('| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | '
                  'valid ppl {:8.2f}'.format(epoch, (time.time() - epoch_start_time),
                                             val_loss, math.exp(val_loss)))
            print('-' * 89)
            # Save the model if the validation loss is the best we've seen so far.
            if not best_val_loss or val_loss < best_val_loss:
                with open(save, 'wb') as f:
                    torch.save(model, f)
                best_val_loss = val_loss
            else:
                # Anneal the learning rate if no improvement has been seen in the validation set.
                lr /= 4.0

        # Load the best saved model.
        with open(save, 'rb') as f:
            model = torch.load(f, weights_only=False)
            # after load the rnn params are not a continuous chunk of memory
            # this makes them a continuous chunk, and will speed up forward pass
            # Currently, only rnn model supports flatten_parameters function.
            if args.model in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
                model.rnn.flatten_parameters()

    # Run on test data.
    test_loss = evaluate(test_data)
    print('=' * 89)
    print('| End of training | test loss {:5.2f} | test ppl {:8.2f}'.format(
        test_loss, math.exp(test_loss)))
    print('=' * 89)
    results[model_name] = dict(first_val=first_val, train_losses=train_losses,
                               val_losses=val_losses, best_val_loss=best_val_loss,
                               test_loss=test_loss, test_ppl=math.exp(test_loss), lr=lr)

lstm_tied = RNNModel('LSTM', ntokens, 16, 16, 2, tie_weights=True)
tied_same_object = lstm_tied.decoder.weight is lstm_tied.encoder.weight
tied_param_count = len(list(lstm_tied.parameters()))
try:
    RNNModel('LSTM', ntokens, 16, 8, 2, tie_weights=True)
except ValueError as e:
    tie_error = str(e)

# ---- generate.py ----
class GenerateArgs:
    words = 30
    seed = 1111
    temperature = 1.0
    log_interval = 10


def generate(checkpoint, outf_path):
    args = GenerateArgs()
    args.checkpoint, args.outf = checkpoint, outf_path
    # Set the random seed manually for reproducibility.
    torch.manual_seed(args.seed)
    if args.temperature < 1e-3:
        raise ValueError("--temperature has to be greater or equal 1e-3.")

    with open(args.checkpoint, 'rb') as f:
        model = torch.load(f, map_location=device, weights_only=False)
    model.eval()

    ntokens = len(corpus.dictionary)

    is_transformer_model = hasattr(model, 'model_type') and model.model_type == 'Transformer'
    if not is_transformer_model:
        hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long).to(device)

    with open(args.outf, 'w') as outf:
        with torch.no_grad():  # no tracking history
            for i in range(args.words):
                if is_transformer_model:
                    output = model(input, False)
                    word_weights = output[-1].squeeze().div(args.temperature).exp().cpu()
                    word_idx = torch.multinomial(word_weights, 1)[0]
                    word_tensor = torch.Tensor([[word_idx]]).long().to(device)
                    input = torch.cat([input, word_tensor], 0)
                else:
                    output, hidden = model(input, hidden)
                    word_weights = output.squeeze().div(args.temperature).exp().cpu()
                    word_idx = torch.multinomial(word_weights, 1)[0]
                    input.fill_(word_idx)

                word = corpus.dictionary.idx2word[word_idx]

                outf.write(word + ('\n' if i % 20 == 19 else ' '))

                if i % args.log_interval == 0:
                    print('| Generated {}/{} words'.format(i, args.words))
    return model, input


generated = {}
for model_name in ('LSTM', 'Transformer'):
    outf_path = os.path.join(checkpoint_dir, model_name + '.txt')
    loaded, last_input = generate(os.path.join(checkpoint_dir, model_name + '.pt'), outf_path)
    with open(outf_path) as f:
        generated[model_name] = f.read()
    print(generated[model_name])
lstm_loaded = loaded_lstm = generate(os.path.join(checkpoint_dir, 'LSTM.pt'), os.devnull)[0]
loaded_tied_shared = loaded_lstm.decoder.weight is loaded_lstm.encoder.weight
transformer_input_shape = tuple(last_input.shape)

# deterministic parts to compare with torch: fixed-weight forwards of both models
fixed_results, fixed_steps = {}, {}
for kind in ('LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU', 'Transformer'):
    if kind == 'Transformer':
        fixed = TransformerModel(7, 8, 2, 12, 1, dropout=0.0)
    else:
        fixed = RNNModel(kind, 7, 8, 8, 2, dropout=0.0, tie_weights=True)
    with torch.no_grad():
        for k, (name, p) in enumerate(fixed.named_parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + k)
                    .view_as(p) * 0.4)
    fixed.eval()
    tokens = torch.tensor([[1, 2], [3, 4], [5, 6], [0, 1]])
    if kind == 'Transformer':
        fixed_results[kind] = fixed(tokens).tolist()
    else:
        out, hidden = fixed(tokens, fixed.init_hidden(2))
        hidden = repackage_hidden(hidden)
        fixed_results[kind] = (out.tolist(), [h.tolist() for h in hidden]
                               if isinstance(hidden, tuple) else hidden.tolist())
    # one training step (main.py's train()) from the fixed weights, dropout 0 in train mode:
    # the tied weight's gradient sums the encoder's and the decoder's, then gets clipped
    fixed.train()
    for m in fixed.modules():  # (nn.Transformer's layers keep their default dropout of 0.1)
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        elif isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
    fixed.zero_grad()
    targets = torch.tensor([2, 3, 4, 5, 6, 0, 1, 2])
    if kind == 'Transformer':
        loss = nn.NLLLoss()(fixed(tokens).view(-1, 7), targets)
    else:
        out, hidden = fixed(tokens, fixed.init_hidden(2))
        loss = nn.NLLLoss()(out, targets)
    loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(fixed.parameters(), 0.05)
    for p in fixed.parameters():
        p.data.add_(p.grad, alpha=-20)
    fixed_steps[kind] = (loss.item(), total_norm.item(),
                         {name: p.tolist() for name, p in fixed.named_parameters()})
fixed_mask = TransformerModel(7, 8, 2, 12, 1)._generate_square_subsequent_mask(4).tolist()
batchified = batchify(torch.arange(26), 4).tolist()
