"""Attention and Transformers for a toy English->French translation task, written for these
tests in the way the d2l.ai book (Dive into Deep Learning, chapters 10-11) commonly writes its
PyTorch code (modelled on the API usage of that book, not a copy of it), on the d2l-style
classes of d2l_lib.py next to this file (MTFraEng, Seq2SeqEncoder, Seq2Seq, bleu). It exercises:

- the translation DataModule (int64 token arrays, valid lengths, ``build`` for new pairs);
- a masked softmax (``X[~mask] = value``, ``repeat_interleave`` of 1-D lengths), scaled
  dot-product attention (``torch.bmm``, ``transpose(1, 2)``) and additive attention
  (``LazyLinear(bias=False)``, broadcasting ``unsqueeze``, ``tanh``, ``squeeze``);
- a GRU decoder with additive attention over the encoder outputs (``permute``, ``torch.cat``),
  trained with Adam and gradient clipping, greedy decoding with its attention weights, BLEU;
- multi-head attention (head split/merge by ``reshape``/``permute``), sinusoidal positional
  encoding (``torch.pow``, strided slice assignment), position-wise FFN, residual + LayerNorm,
  ``LazyBatchNorm1d``, a Transformer encoder and a decoder that caches keys/values per block
  while decoding (causal valid lengths from ``arange(...).repeat``), trained the same way;
- fixed-weight losses, gradients, attention weights and greedy outputs (compared with torch).
The sentence pairs are generated (d2l_lib.MTFraEng); 8 epochs of small models.
"""
import math

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F

import d2l_lib as d2l

torch.manual_seed(0)
results = {}
PAIRS = [("go .", "va !"), ("i lost .", "j'ai perdu ."), ("he's calm .", "il est calme ."),
         ("i'm home .", "je suis chez moi .")]
ENGLISH, FRENCH = [en for en, _ in PAIRS], [fr for _, fr in PAIRS]


def board_last(model):
    return {curve: float(pts[-1].y) for curve, pts in model.board.data.items()}


# ----------------------------------------------------------------------------- data
small = d2l.MTFraEng(batch_size=3)
src, dec_in, src_len, dec_out = next(iter(small.train_dataloader()))
results["mt_batch"] = (src.dtype, tuple(src.shape), src_len.dtype, tuple(dec_out.shape))
new_src, new_tgt = small.build(["hi ."], ["salut ."])[:2]
results["built"] = (small.src_vocab.to_tokens(d2l.astype(new_src[0], d2l.int32)),
                    small.tgt_vocab.to_tokens(d2l.astype(new_tgt[0], d2l.int32)))


# ----------------------------------------------------------------------------- scoring
def fill_past(X, lengths, value):
    """Rows of X (2-D) with every column at or beyond the row's length set to ``value``."""
    cols = torch.arange(X.size(1), dtype=torch.float32, device=X.device)
    keep = cols[None, :] < lengths[:, None]
    X[~keep] = value
    return X


def masked_softmax(scores, valid_lens):
    """Softmax over the last axis that ignores keys past each valid length (1-D: one per
    batch row; 2-D: one per query)."""
    if valid_lens is None:
        return F.softmax(scores, dim=-1)
    shape = scores.shape
    if valid_lens.dim() < 2:
        lengths = torch.repeat_interleave(valid_lens, shape[1])
    else:
        lengths = valid_lens.reshape(-1)
    flat = fill_past(scores.reshape(-1, shape[-1]), lengths, -1e6)
    return F.softmax(flat.reshape(shape), dim=-1)


results["masked_1d"] = (masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])) > 0).tolist()
results["masked_2d"] = (masked_softmax(torch.rand(2, 2, 4),
                                       d2l.tensor([[1, 3], [2, 4]])) > 0).tolist()
d2l.check_shape(torch.bmm(d2l.ones((2, 3, 4)), d2l.ones((2, 4, 6))), (2, 3, 6))


class ScaledDot(nn.Module):
    """softmax(Q K^T / sqrt(d)) V, with dropout on the weights."""
    def __init__(self, dropout: float):
        super().__init__()
        self.drop = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None) -> torch.Tensor:
        scale = math.sqrt(queries.shape[-1])
        self.attention_weights = masked_softmax(torch.bmm(queries, keys.transpose(1, 2)) / scale,
                                                valid_lens)
        return torch.bmm(self.drop(self.attention_weights), values)


key_set = d2l.normal(0, 1, (2, 10, 2))
vals = d2l.normal(0, 1, (2, 10, 4))
lens = d2l.tensor([2, 6])
dot = ScaledDot(dropout=0.5)
dot.eval()
d2l.check_shape(dot(d2l.normal(0, 1, (2, 1, 2)), key_set, vals, lens), (2, 1, 4))
results["dot_weights_nonzero"] = (dot.attention_weights > 1e-9).sum(-1).reshape(-1).tolist()


class Additive(nn.Module):
    """w_v^T tanh(W_q q + W_k k) scores."""
    def __init__(self, num_hiddens: int, dropout: float, **kwargs):
        super().__init__(**kwargs)
        self.key_proj, self.query_proj = (nn.LazyLinear(num_hiddens, bias=False)
                                          for _ in range(2))
        self.score = nn.LazyLinear(1, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens) -> torch.Tensor:
        # (batch, queries, 1, h) + (batch, 1, keys, h) -> (batch, queries, keys, h)
        q, k = self.query_proj(queries), self.key_proj(keys)
        hidden = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
        self.attention_weights = masked_softmax(self.score(hidden).squeeze(-1), valid_lens)
        return torch.bmm(self.drop(self.attention_weights), values)


additive = Additive(num_hiddens=8, dropout=0.1)
additive.eval()
d2l.check_shape(additive(d2l.normal(0, 1, (2, 1, 20)), key_set, vals, lens), (2, 1, 4))


# ----------------------------------------------------------------------------- GRU + attention
class AttnDecoderBase(d2l.Decoder):
    """A decoder that exposes the attention weights of its last forward."""
    @property
    def attention_weights(self) -> list:
        return self._weights


class GRUAttnDecoder(AttnDecoderBase):
    """Each step queries the encoder outputs with the top GRU state and feeds the context,
    concatenated with the token embedding, to the GRU."""
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
        super().__init__()
        self.attention = Additive(num_hiddens, dropout)
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.out = nn.LazyLinear(vocab_size)
        self.apply(d2l.init_seq2seq)

    def init_state(self, enc_outputs, src_valid_lens):
        outs, hidden = enc_outputs  # outs: (time, batch, h)
        return (outs.permute(1, 0, 2), hidden, src_valid_lens)

    def forward(self, tokens, state):
        memory, hidden, memory_lens = state
        steps, self._weights = [], []
        for emb in self.embed(tokens).permute(1, 0, 2):  # one time step: (batch, embed)
            context = self.attention(torch.unsqueeze(hidden[-1], dim=1), memory, memory,
                                     memory_lens)
            step_in = torch.cat((context, torch.unsqueeze(emb, dim=1)), dim=-1)
            out, hidden = self.rnn(step_in.permute(1, 0, 2), hidden)
            steps.append(out)
            self._weights.append(self.attention.attention_weights)
        logits = self.out(torch.cat(steps, dim=0))
        return logits.permute(1, 0, 2), [memory, hidden, memory_lens]


enc = d2l.Seq2SeqEncoder(10, 8, 16, 2)
dec = GRUAttnDecoder(10, 8, 16, 2)
toy = d2l.zeros((4, 7), dtype=torch.long)
logits, toy_state = dec(toy, dec.init_state(enc(toy), None))
d2l.check_shape(logits, (4, 7, 10))
d2l.check_shape(toy_state[0], (4, 7, 16))
d2l.check_shape(toy_state[1][0], (4, 16))


def first_run_loss(model):
    return float(model.board.data["train_loss"][0].y)


def translate(model, data):
    """Greedy translations of PAIRS (cut at <eos>) with their BLEU-2 scores."""
    model.eval()
    preds, _ = model.predict_step(data.build(ENGLISH, FRENCH), d2l.try_gpu(), data.num_steps)
    out = []
    for en, fr, row in zip(ENGLISH, FRENCH, preds):
        words = []
        for token in data.tgt_vocab.to_tokens(row):
            if token == "<eos>":
                break
            words.append(token)
        text = " ".join(words)
        score = d2l.bleu(text, fr, k=2)
        print(f"{en!r} -> {text!r} (bleu {score:.3f})")
        out.append((text, score))
    return out


def attention_steps(model, data):
    """Decode the last pair once more, keeping each step's attention weights."""
    return model.predict_step(data.build(ENGLISH[-1:], FRENCH[-1:]), d2l.try_gpu(),
                              data.num_steps, True)[1]


mt = d2l.MTFraEng(batch_size=128)
pad = mt.tgt_vocab["<pad>"]
bahdanau = d2l.Seq2Seq(d2l.Seq2SeqEncoder(len(mt.src_vocab), 32, 32, 2, 0.2),
                       GRUAttnDecoder(len(mt.tgt_vocab), 32, 32, 2, 0.2), tgt_pad=pad, lr=0.01)
d2l.Trainer(max_epochs=8, gradient_clip_val=1, num_gpus=1).fit(bahdanau, mt)
results["bahdanau"] = board_last(bahdanau)
results["bahdanau_first_train_loss"] = first_run_loss(bahdanau)
results["translations"] = translate(bahdanau, mt)
per_step = attention_steps(bahdanau, mt)
heat = d2l.reshape(d2l.concat([w[0][0][0] for w in per_step], 0), (1, 1, -1, mt.num_steps))
n_src = len(ENGLISH[-1].split()) + 1  # (and <eos>)
results["attention_heatmap"] = heat[:, :, :, :n_src].cpu()


# ----------------------------------------------------------------------------- multi-head
class MultiHead(d2l.Module):
    def __init__(self, num_hiddens: int, num_heads: int, dropout: float, bias=False, **kwargs):
        super().__init__()
        self.heads = num_heads
        self.attention = ScaledDot(dropout)
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.LazyLinear(num_hiddens, bias=bias)
                                                  for _ in range(4))

    def split_heads(self, X):
        """(batch, n, h) -> (batch * heads, n, h / heads)."""
        b, n = X.shape[0], X.shape[1]
        return X.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3).reshape(b * self.heads, n, -1)

    def merge_heads(self, X):
        """(batch * heads, n, h / heads) -> (batch, n, h)."""
        n, d = X.shape[1], X.shape[2]
        return X.reshape(-1, self.heads, n, d).permute(0, 2, 1, 3).reshape(-1, n, d * self.heads)

    def forward(self, queries, keys, values, valid_lens) -> torch.Tensor:
        q, k, v = (self.split_heads(W(t)) for W, t in
                   ((self.W_q, queries), (self.W_k, keys), (self.W_v, values)))
        if valid_lens is not None:  # (each row's lengths once per head)
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.heads, dim=0)
        return self.W_o(self.merge_heads(self.attention(q, k, v, valid_lens)))


heads = MultiHead(100, 5, 0.5)
d2l.check_shape(heads(d2l.ones((2, 4, 100)), d2l.ones((2, 6, 100)), d2l.ones((2, 6, 100)),
                      d2l.tensor([3, 2])), (2, 4, 100))


# ----------------------------------------------------------------------------- Transformer
class SinusoidalPositions(nn.Module):
    def __init__(self, num_hiddens: int, dropout: float, max_len: int = 1000):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        pos = d2l.arange(max_len, dtype=torch.float32).reshape(-1, 1)
        freq = torch.pow(10000, torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P = d2l.zeros((1, max_len, num_hiddens))  # (a plain attribute, not a buffer)
        self.P[:, :, 0::2] = torch.sin(pos / freq)
        self.P[:, :, 1::2] = torch.cos(pos / freq)

    def forward(self, X):
        return self.drop(X + self.P[:, :X.shape[1], :].to(X.device))


positions = SinusoidalPositions(32, 0)
positions(d2l.zeros((1, 60, 32)))
results["positional"] = positions.P[0, :60, 6:10].T


class FeedForward(nn.Module):
    def __init__(self, hidden: int, outputs: int):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(hidden), nn.ReLU(), nn.LazyLinear(outputs))

    def forward(self, X):
        return self.net(X)


ffn = FeedForward(4, 8)
ffn.eval()
ffn_out = ffn(d2l.ones((2, 3, 4)))
results["ffn_rows_equal"] = bool((ffn_out[0] == ffn_out[0][0]).all())
pair = d2l.tensor([[1, 2], [2, 3]], dtype=torch.float32)
layer_norm, batch_norm = nn.LayerNorm(2), nn.LazyBatchNorm1d()
print("layer norm:", layer_norm(pair), "batch norm:", batch_norm(pair))
results["ln_bn"] = (layer_norm(pair).tolist(), batch_norm(pair).tolist())


class Residual(nn.Module):
    """LayerNorm(X + dropout(Y))."""
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.drop, self.norm = nn.Dropout(dropout), nn.LayerNorm(width)

    def forward(self, X, Y):
        return self.norm(X + self.drop(Y))


d2l.check_shape(Residual(4, 0.5)(d2l.ones((2, 3, 4)), d2l.ones((2, 3, 4))), (2, 3, 4))


class EncoderLayer(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHead(num_hiddens, num_heads, dropout, use_bias)
        self.res1 = Residual(num_hiddens, dropout)
        self.ffn = FeedForward(ffn_num_hiddens, num_hiddens)
        self.res2 = Residual(num_hiddens, dropout)

    def forward(self, X, valid_lens) -> torch.Tensor:
        H = self.res1(X, self.attention(X, X, X, valid_lens))
        return self.res2(H, self.ffn(H))


two_lens = d2l.tensor([3, 2])
enc_layer = EncoderLayer(24, 48, 8, 0.5)
enc_layer.eval()
d2l.check_shape(enc_layer(d2l.ones((2, 100, 24)), two_lens), (2, 100, 24))


def embed_scaled(embedding, positions, X, width):
    """Token embeddings scaled by sqrt(width) (to the encodings' range), plus positions."""
    return positions(embedding(X) * math.sqrt(width))


class TfEncoder(d2l.Encoder):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                 use_bias=False):
        super().__init__()
        self.width = num_hiddens
        self.embed = nn.Embedding(vocab_size, num_hiddens)
        self.positions = SinusoidalPositions(num_hiddens, dropout)
        self.layers = nn.Sequential()
        for b in range(num_blks):
            self.layers.add_module(f"layer{b}", EncoderLayer(num_hiddens, ffn_num_hiddens,
                                                           num_heads, dropout, use_bias))

    def forward(self, tokens, valid_lens) -> torch.Tensor:
        H = embed_scaled(self.embed, self.positions, tokens, self.width)
        self.attention_weights = []
        for layer in self.layers:
            H = layer(H, valid_lens)
            self.attention_weights.append(layer.attention.attention.attention_weights)
        return H


tf_enc = TfEncoder(200, 24, 48, 8, 2, 0.5)
d2l.check_shape(tf_enc(d2l.ones((2, 100), dtype=torch.long), two_lens), (2, 100, 24))
results["encoder_weights"] = [tuple(w.shape) for w in tf_enc.attention_weights]


class DecoderLayer(nn.Module):
    """Self-attention over the tokens so far (cached in state[2][index] while decoding step
    by step), attention over the encoder outputs, FFN; each with a residual LayerNorm."""
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, index):
        super().__init__()
        self.index = index
        self.self_attn = MultiHead(num_hiddens, num_heads, dropout)
        self.res1 = Residual(num_hiddens, dropout)
        self.cross_attn = MultiHead(num_hiddens, num_heads, dropout)
        self.res2 = Residual(num_hiddens, dropout)
        self.ffn = FeedForward(ffn_num_hiddens, num_hiddens)
        self.res3 = Residual(num_hiddens, dropout)

    def forward(self, X, state: list):
        memory, memory_lens, cache = state
        seen = X if cache[self.index] is None else torch.cat((cache[self.index], X), dim=1)
        cache[self.index] = seen
        causal = None
        if self.training:  # (all target positions at once: position t sees 1..t)
            n, t = X.shape[0], X.shape[1]
            causal = torch.arange(1, t + 1, device=X.device).repeat(n, 1)
        H = self.res1(X, self.self_attn(X, seen, seen, causal))
        H = self.res2(H, self.cross_attn(H, memory, memory, memory_lens))
        return self.res3(H, self.ffn(H)), state


ones_seq = d2l.ones((2, 100, 24))
dec_layer = DecoderLayer(24, 48, 8, 0.5, 0)
d2l.check_shape(dec_layer(ones_seq, [enc_layer(ones_seq, two_lens), two_lens, [None]])[0],
                (2, 100, 24))


class TfDecoder(AttnDecoderBase):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout):
        super().__init__()
        self.width, self.depth = num_hiddens, num_blks
        self.embed = nn.Embedding(vocab_size, num_hiddens)
        self.positions = SinusoidalPositions(num_hiddens, dropout)
        self.layers = nn.Sequential()
        for b in range(num_blks):
            self.layers.add_module(f"layer{b}", DecoderLayer(num_hiddens, ffn_num_hiddens,
                                                             num_heads, dropout, b))
        self.out = nn.LazyLinear(vocab_size)

    def init_state(self, enc_outputs, src_valid_lens):
        return [enc_outputs, src_valid_lens, [None for _ in range(self.depth)]]

    def forward(self, tokens, state):
        H = embed_scaled(self.embed, self.positions, tokens, self.width)
        self_w, cross_w = [], []
        for layer in self.layers:
            H, state = layer(H, state)
            self_w.append(layer.self_attn.attention.attention_weights)
            cross_w.append(layer.cross_attn.attention.attention_weights)
        self._weights = [self_w, cross_w]
        return self.out(H), state


mt = d2l.MTFraEng(batch_size=128)
width, blocks, heads_n = 32, 2, 4
transformer = d2l.Seq2Seq(TfEncoder(len(mt.src_vocab), width, 64, heads_n, blocks, 0.1),
                          TfDecoder(len(mt.tgt_vocab), width, 64, heads_n, blocks, 0.1),
                          tgt_pad=mt.tgt_vocab["<pad>"], lr=0.005)
d2l.Trainer(max_epochs=8, gradient_clip_val=1, num_gpus=1).fit(transformer, mt)
results["transformer"] = board_last(transformer)
results["transformer_first_train_loss"] = first_run_loss(transformer)
results["transformer_translations"] = [text for text, _ in translate(transformer, mt)]
per_step = attention_steps(transformer, mt)
enc_heat = d2l.reshape(d2l.concat(transformer.encoder.attention_weights, 0),
                       (blocks, heads_n, -1, mt.num_steps))
d2l.check_shape(enc_heat, (blocks, heads_n, mt.num_steps, mt.num_steps))
results["dec_attention_steps"] = [[tuple(w.shape) for w in step[1]] for step in per_step[:2]]


# ----------------------------------------------------------------------------- fixed weights
# deterministic weights (no dropout): the GRU-attention seq2seq, a Transformer encoder and a
# whole Transformer: losses, outputs, attention weights, gradients and greedy predictions
def set_weights(module):
    with torch.no_grad():
        for k, (_, p) in enumerate(module.named_parameters(), start=1):
            p.copy_(torch.cos(0.8 * k * torch.arange(p.numel(), dtype=torch.float32))
                    .view_as(p) / 4)


def grads(module):
    return {n: p.grad.tolist() for n, p in module.named_parameters()}


fixed_results = {}
batch = [t[:6] for t in next(iter(mt.val_dataloader()))]
inputs, target = batch[:-1], batch[-1]
pad = mt.tgt_vocab["<pad>"]

net = d2l.Seq2Seq(d2l.Seq2SeqEncoder(len(mt.src_vocab), 8, 8, 2),
                  GRUAttnDecoder(len(mt.tgt_vocab), 8, 8, 2), tgt_pad=pad, lr=0.01)
net(*inputs)  # (the lazy layers take their shapes)
set_weights(net)
net.eval()
loss = net.loss(net(*inputs), target)
loss.backward()
preds, weights = net.predict_step(batch, d2l.cpu(), 4, True)
fixed_results["seq2seq"] = {"loss": loss.item(), "preds": preds.tolist(),
                            "weights": [w[0].tolist() for w in weights], **grads(net)}

tokens = torch.arange(24).reshape(2, 12) % 30  # (ids 0..23)
small_enc = TfEncoder(30, 8, 16, 2, 2, 0.0)
small_enc(tokens, two_lens)
set_weights(small_enc)
encoded = small_enc(tokens, two_lens)
(encoded ** 2).mean().backward()
fixed_results["transformer_encoder"] = {
    "out": encoded.tolist(), "weights": [w.tolist() for w in small_enc.attention_weights],
    **grads(small_enc)}

net = d2l.Seq2Seq(TfEncoder(len(mt.src_vocab), 8, 16, 2, 2, 0.0),
                  TfDecoder(len(mt.tgt_vocab), 8, 16, 2, 2, 0.0), tgt_pad=pad, lr=0.01)
net(*inputs)
set_weights(net)
loss = net.loss(net(*inputs), target)  # (training mode: causal self-attention lengths)
loss.backward()
net.eval()
preds, _ = net.predict_step(batch, d2l.cpu(), 4)
fixed_results["transformer"] = {"loss": loss.item(), "preds": preds.tolist(), **grads(net)}
