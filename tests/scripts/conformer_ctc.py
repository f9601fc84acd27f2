# ruff: noqa: N812 (the usual F alias of nn.functional)
"""A tiny Conformer-CTC speech recognizer on synthetic "keywords", written for these tests the
way ESPnet's, wenet's and torchaudio's encoders write torch code (not a copy of any of them):

- "speech": each utterance is a sequence of sinusoid bursts in noise whose frequency encodes
  the token; features are a log power spectrum from ``Tensor.unfold`` frames, a Hann window and
  ``torch.fft.rfft``, pooled by ``F.avg_pool1d``; global mean/variance normalization;
  batches padded by ``nn.utils.rnn.pad_sequence`` (targets padded with ``-1``);
- SpecAugment as ESPnet's ``MaskAlongAxis`` writes it: widths and positions from
  ``torch.randint``, masks from ``torch.arange`` comparisons, ``masked_fill``;
- ESPnet's ``Conv2dSubsampling`` (two stride-2 ``Conv2d``, the ``((L - 1) // 2 - 1) // 2``
  length update, the mask sliced ``[:, :, 2::2]`` twice as wenet does) and
  ``RelPositionalEncoding`` (sines for positions ``T - 1 .. -(T - 1)``, ``torch.flip``);
- relative-position multi-head self-attention with ``pos_bias_u``/``pos_bias_v`` and the
  Transformer-XL ``rel_shift`` by ``F.pad`` and ``view``, masked by ``torch.finfo().min``;
- the convolution module (pointwise ``Conv1d``, ``F.glu(dim=1)``, depthwise ``Conv1d`` with
  ``groups=channels``, ``BatchNorm1d``, ``nn.SiLU``, pointwise ``Conv1d``), macaron
  feed-forward halves with Swish, ``nn.LayerNorm``, dropout;
- a torchaudio-style Conformer (``nn.MultiheadAttention`` on ``(T, B, D)`` with a
  ``key_padding_mask`` from lengths, ``nn.GLU``, ``nn.GroupNorm``, convolution first);
- ``F.ctc_loss`` on ``(T, B, V)`` log-probabilities with concatenated targets,
  ``zero_infinity=True``, ``reduction="sum"`` divided by the batch (ESPnet) and ``"mean"``,
  ``nn.CTCLoss`` on padded targets; CTC checked against a brute-force sum over alignments;
- greedy CTC decoding (``argmax``, ``torch.unique_consecutive``, blanks removed) and the
  character error rate by edit distance;
- ``AdamW`` with parameter groups, a Noam warm-up schedule by ``LambdaLR``,
  ``clip_grad_norm_``, and ESPnet's checkpoint averaging of ``state_dict`` snapshots (saved
  and loaded through ``torch.save``/``torch.load``).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import io
import itertools
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
fixed_results = {}

BLANK, IGNORE_ID = 0, -1
TOKEN_HZ = [None, 180.0, 300.0, 440.0, 620.0, 820.0]  # tokens 1..5; 0 is CTC's blank
VOCAB = len(TOKEN_HZ)
SAMPLE_RATE, WIN, HOP = 2000, 64, 32

# ------------------------------------------------------------------------------- data


def synth_utterance(tokens, generator):
    """Silence, then a Hann-shaped sine burst per token, in white noise."""
    pieces = []
    for tok in tokens:
        gap = int(torch.randint(3, 7, (1,), generator=generator)) * HOP
        dur = int(torch.randint(10, 16, (1,), generator=generator)) * HOP
        t = torch.arange(dur) / SAMPLE_RATE
        phase = 2 * math.pi * torch.rand(1, generator=generator)
        amp = 0.5 + 0.5 * torch.rand(1, generator=generator)
        burst = amp * torch.hann_window(dur, periodic=False) * torch.sin(
            2 * math.pi * TOKEN_HZ[tok] * t + phase)
        pieces += [torch.zeros(gap), burst]
    pieces.append(torch.zeros(4 * HOP))
    wave = torch.cat(pieces)
    return wave + 0.05 * torch.randn(wave.shape, generator=generator)


def log_spectrum(wave):
    frames = wave.unfold(0, WIN, HOP)  # (T, WIN)
    spec = torch.fft.rfft(frames * torch.hann_window(WIN), dim=-1).abs().pow(2)
    spec = F.avg_pool1d(spec[None, :, 1:], kernel_size=2).squeeze(0)  # (T, 16)
    return torch.log(spec + 1e-6)


def make_dataset(n, generator):
    data = []
    for _ in range(n):
        n_tok = int(torch.randint(2, 5, (1,), generator=generator))
        tokens = torch.randint(1, VOCAB, (n_tok,), generator=generator)
        data.append((log_spectrum(synth_utterance(tokens.tolist(), generator)), tokens))
    return data


data_gen = torch.Generator().manual_seed(1234)
train_set = make_dataset(160, data_gen)
valid_set = make_dataset(32, data_gen)
N_FEATS = train_set[0][0].shape[1]

# global CMVN from the training frames (ESPnet's GlobalMVN)
all_frames = torch.cat([feats for feats, _ in train_set])
feat_mean, feat_std = all_frames.mean(dim=0), all_frames.std(dim=0)


def pad_batch(feats, ys):
    ilens = torch.tensor([f.size(0) for f in feats])
    ylens = torch.tensor([len(y) for y in ys])
    return (pad_sequence(feats, batch_first=True), ilens,
            pad_sequence(ys, batch_first=True, padding_value=IGNORE_ID), ylens)


def collate(batch):
    return pad_batch([(f - feat_mean) / feat_std for f, _ in batch], [y for _, y in batch])


def make_pad_mask(lengths, maxlen=None):
    maxlen = int(lengths.max()) if maxlen is None else maxlen
    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    return seq_range.unsqueeze(0).expand(lengths.size(0), maxlen) >= lengths.unsqueeze(-1)


# ----------------------------------------------------------------------- SpecAugment


def mask_along_axis(spec, mask_width_range, num_mask, dim, generator=None):
    """ESPnet's MaskAlongAxis: ``num_mask`` bands per utterance along time (1) or freq (2)."""
    B, D = spec.shape[0], spec.shape[dim]
    mask_length = torch.randint(mask_width_range[0], mask_width_range[1], (B, num_mask),
                                generator=generator).unsqueeze(2)
    # (a one-element tensor as ``high``, as ESPnet writes it)
    mask_pos = torch.randint(0, max(1, D - mask_length.max()), (B, num_mask),
                             generator=generator).unsqueeze(2)
    aran = torch.arange(D)[None, None, :]
    mask = (mask_pos <= aran) * (aran < (mask_pos + mask_length))
    mask = mask.any(dim=1)
    mask = mask.unsqueeze(2) if dim == 1 else mask.unsqueeze(1)
    return spec.masked_fill(mask, 0.0)


def spec_augment(xs, generator=None):
    xs = mask_along_axis(xs, (0, 4), num_mask=2, dim=2, generator=generator)
    return mask_along_axis(xs, (0, 8), num_mask=2, dim=1, generator=generator)


# ----------------------------------------------------------- ESPnet-style Conformer


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class RelPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout_rate, max_len=32):
        super().__init__()
        self.d_model = d_model
        self.xscale = math.sqrt(d_model)
        self.dropout = nn.Dropout(p=dropout_rate)
        self.pe = None
        self.extend_pe(torch.tensor(0.0).expand(1, max_len))

    def extend_pe(self, x):
        if self.pe is not None and self.pe.size(1) >= x.size(1) * 2 - 1:
            return
        pe_positive = torch.zeros(x.size(1), self.d_model)
        pe_negative = torch.zeros(x.size(1), self.d_model)
        position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32)
                             * -(math.log(10000.0) / self.d_model))
        pe_positive[:, 0::2] = torch.sin(position * div_term)
        pe_positive[:, 1::2] = torch.cos(position * div_term)
        pe_negative[:, 0::2] = torch.sin(-1 * position * div_term)
        pe_negative[:, 1::2] = torch.cos(-1 * position * div_term)
        pe_positive = torch.flip(pe_positive, [0]).unsqueeze(0)
        pe_negative = pe_negative[1:].unsqueeze(0)
        self.pe = torch.cat([pe_positive, pe_negative], dim=1).to(dtype=x.dtype)

    def forward(self, x):
        self.extend_pe(x)
        x = x * self.xscale
        center = self.pe.size(1) // 2
        pos_emb = self.pe[:, center - x.size(1) + 1:center + x.size(1)]
        return self.dropout(x), self.dropout(pos_emb)


class Conv2dSubsampling(nn.Module):
    """(B, T, idim) -> (B, ((T - 1) // 2 - 1) // 2, odim)."""

    def __init__(self, idim, odim, pos_enc):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, odim, 3, 2), nn.ReLU(),
                                  nn.Conv2d(odim, odim, 3, 2), nn.ReLU())
        self.out = nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim)
        self.pos_enc = pos_enc

    def forward(self, x, x_mask):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        x, pos_emb = self.pos_enc(x)
        # (wenet's slicing: output frame t is valid when its last input frame 2t + 2 is)
        return x, pos_emb, x_mask[:, :, 2::2][:, :, 2::2]


class MultiHeadedAttention(nn.Module):
    def __init__(self, n_head, n_feat, dropout_rate):
        super().__init__()
        assert n_feat % n_head == 0
        self.d_k, self.h = n_feat // n_head, n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout_rate)

    def forward_qkv(self, query, key, value):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def forward_attention(self, value, scores, mask):
        n_batch = value.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1).eq(0)  # (B, 1, 1, T2): True where padded
            min_value = torch.finfo(scores.dtype).min
            scores = scores.masked_fill(mask, min_value)
            self.attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        else:
            self.attn = torch.softmax(scores, dim=-1)
        x = torch.matmul(self.dropout(self.attn), value)
        x = x.transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)
        return self.linear_out(x)


class RelPositionMultiHeadedAttention(MultiHeadedAttention):
    """Transformer-XL attention: content (bias u) and position (bias v) terms."""

    def __init__(self, n_head, n_feat, dropout_rate):
        super().__init__(n_head, n_feat, dropout_rate)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.pos_bias_u = nn.Parameter(torch.Tensor(self.h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.Tensor(self.h, self.d_k))
        nn.init.xavier_uniform_(self.pos_bias_u)
        nn.init.xavier_uniform_(self.pos_bias_v)

    @staticmethod
    def rel_shift(x):
        """(B, H, T, 2T - 1) scores per relative position -> (B, H, T, T) per key."""
        b, h, t1, t2 = x.size()
        x = F.pad(x, (1, 0))
        x = x.view(b, h, t2 + 1, t1)
        return x[:, :, 1:].view(b, h, t1, t2)[:, :, :, :t2 // 2 + 1]

    def forward(self, query, key, value, pos_emb, mask):
        q, k, v = self.forward_qkv(query, key, value)
        q = q.transpose(1, 2)  # (B, T, H, d_k)
        n_batch_pos = pos_emb.size(0)
        p = self.linear_pos(pos_emb).view(n_batch_pos, -1, self.h, self.d_k).transpose(1, 2)
        q_with_bias_u = (q + self.pos_bias_u).transpose(1, 2)
        q_with_bias_v = (q + self.pos_bias_v).transpose(1, 2)
        matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))
        matrix_bd = self.rel_shift(torch.matmul(q_with_bias_v, p.transpose(-2, -1)))
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        return self.forward_attention(v, scores, mask)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, idim, hidden_units, dropout_rate, activation=None):
        super().__init__()
        self.w_1 = nn.Linear(idim, hidden_units)
        self.w_2 = nn.Linear(hidden_units, idim)
        self.dropout = nn.Dropout(dropout_rate)
        self.activation = Swish() if activation is None else activation

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class ConvolutionModule(nn.Module):
    def __init__(self, channels, kernel_size, bias=True):
        super().__init__()
        assert (kernel_size - 1) % 2 == 0
        self.pointwise_conv1 = nn.Conv1d(channels, 2 * channels, kernel_size=1, bias=bias)
        self.depthwise_conv = nn.Conv1d(channels, channels, kernel_size,
                                        padding=(kernel_size - 1) // 2, groups=channels,
                                        bias=bias)
        self.norm = nn.BatchNorm1d(channels)
        self.pointwise_conv2 = nn.Conv1d(channels, channels, kernel_size=1, bias=bias)
        self.activation = nn.SiLU()

    def forward(self, x, mask_pad=None):
        x = x.transpose(1, 2)  # (B, C, T)
        if mask_pad is not None:
            x = x.masked_fill(~mask_pad, 0.0)
        x = F.glu(self.pointwise_conv1(x), dim=1)
        if mask_pad is not None:  # padded frames stay zero for the depthwise kernel
            x = x.masked_fill(~mask_pad, 0.0)
        x = self.activation(self.norm(self.depthwise_conv(x)))
        x = self.pointwise_conv2(x)
        if mask_pad is not None:
            x = x.masked_fill(~mask_pad, 0.0)
        return x.transpose(1, 2)


class ConformerEncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, feed_forward_macaron, conv_module,
                 dropout_rate):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.feed_forward_macaron = feed_forward_macaron
        self.conv_module = conv_module
        self.norm_ff = nn.LayerNorm(size, eps=1e-12)
        self.norm_mha = nn.LayerNorm(size, eps=1e-12)
        self.norm_ff_macaron = nn.LayerNorm(size, eps=1e-12)
        self.norm_conv = nn.LayerNorm(size, eps=1e-12)
        self.norm_final = nn.LayerNorm(size, eps=1e-12)
        self.dropout = nn.Dropout(dropout_rate)
        self.ff_scale = 0.5

    def forward(self, x, pos_emb, mask):
        residual = x
        x = self.norm_ff_macaron(x)
        x = residual + self.ff_scale * self.dropout(self.feed_forward_macaron(x))
        residual = x
        x = self.norm_mha(x)
        x = residual + self.dropout(self.self_attn(x, x, x, pos_emb, mask))
        residual = x
        x = self.norm_conv(x)
        x = residual + self.dropout(self.conv_module(x, mask))
        residual = x
        x = self.norm_ff(x)
        x = residual + self.ff_scale * self.dropout(self.feed_forward(x))
        return self.norm_final(x), mask


class ConformerEncoder(nn.Module):
    def __init__(self, idim, d_model=32, attention_heads=4, linear_units=64, num_blocks=2,
                 cnn_module_kernel=7, dropout_rate=0.1):
        super().__init__()
        self.embed = Conv2dSubsampling(idim, d_model,
                                       RelPositionalEncoding(d_model, dropout_rate))
        self.encoders = nn.ModuleList([
            ConformerEncoderLayer(
                d_model,
                RelPositionMultiHeadedAttention(attention_heads, d_model, dropout_rate),
                PositionwiseFeedForward(d_model, linear_units, dropout_rate),
                PositionwiseFeedForward(d_model, linear_units, dropout_rate),
                ConvolutionModule(d_model, cnn_module_kernel),
                dropout_rate)
            for _ in range(num_blocks)])

    def output_size(self):
        return self.embed.out.out_features

    def forward(self, xs_pad, ilens):
        masks = (~make_pad_mask(ilens, xs_pad.size(1)))[:, None, :]
        xs, pos_emb, masks = self.embed(xs_pad, masks)
        for layer in self.encoders:
            xs, masks = layer(xs, pos_emb, masks)
        return xs, masks.squeeze(1).sum(1)


class CTC(nn.Module):
    """ESPnet's CTC head: a projection, log-softmax over ``(T, B, V)``, summed loss / B."""

    def __init__(self, odim, eprojs, dropout_rate=0.0):
        super().__init__()
        self.dropout_rate = dropout_rate
        self.ctc_lo = nn.Linear(eprojs, odim)

    def forward(self, hs_pad, hlens, ys_pad, ys_lens):
        ys_hat = self.ctc_lo(F.dropout(hs_pad, p=self.dropout_rate, training=self.training))
        ys_hat = ys_hat.transpose(0, 1).log_softmax(2)
        ys_true = torch.cat([y[y != IGNORE_ID] for y in ys_pad])
        loss = F.ctc_loss(ys_hat, ys_true, hlens, ys_lens, blank=BLANK, reduction="sum",
                          zero_infinity=True)
        return loss / ys_hat.size(1)

    def log_softmax(self, hs_pad):
        return F.log_softmax(self.ctc_lo(hs_pad), dim=2)


class ConformerCTC(nn.Module):
    def __init__(self, idim, vocab_size, **encoder_conf):
        super().__init__()
        self.encoder = ConformerEncoder(idim, **encoder_conf)
        self.ctc = CTC(vocab_size, self.encoder.output_size())

    def forward(self, xs_pad, ilens, ys_pad, ys_lens):
        hs, hlens = self.encoder(xs_pad, ilens)
        return self.ctc(hs, hlens, ys_pad, ys_lens), hs, hlens


# ------------------------------------------------------------- torchaudio-style Conformer


def lengths_to_padding_mask(lengths):
    batch_size = lengths.shape[0]
    max_length = int(torch.max(lengths).item())
    return torch.arange(max_length, dtype=lengths.dtype).expand(
        batch_size, max_length) >= lengths.unsqueeze(1)


class FeedForwardModule(nn.Module):
    def __init__(self, input_dim, hidden_dim, dropout=0.0):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(input_dim), nn.Linear(input_dim, hidden_dim), nn.SiLU(),
            nn.Dropout(dropout), nn.Linear(hidden_dim, input_dim), nn.Dropout(dropout))

    def forward(self, x):
        return self.sequential(x)


class ConvModuleTA(nn.Module):
    def __init__(self, input_dim, num_channels, kernel_size, dropout=0.0, bias=False,
                 use_group_norm=False):
        super().__init__()
        self.layer_norm = nn.LayerNorm(input_dim)
        self.sequential = nn.Sequential(
            nn.Conv1d(input_dim, 2 * num_channels, 1, stride=1, padding=0, bias=bias),
            nn.GLU(dim=1),
            nn.Conv1d(num_channels, num_channels, kernel_size, stride=1,
                      padding=(kernel_size - 1) // 2, groups=num_channels, bias=bias),
            nn.GroupNorm(num_groups=1, num_channels=num_channels) if use_group_norm
            else nn.BatchNorm1d(num_channels),
            nn.SiLU(),
            nn.Conv1d(num_channels, input_dim, kernel_size=1, stride=1, padding=0, bias=bias),
            nn.Dropout(dropout))

    def forward(self, x):  # (B, T, D)
        return self.sequential(self.layer_norm(x).transpose(1, 2)).transpose(1, 2)


class ConformerLayerTA(nn.Module):
    def __init__(self, input_dim, ffn_dim, num_heads, kernel_size, dropout=0.0,
                 use_group_norm=False, convolution_first=False):
        super().__init__()
        self.ffn1 = FeedForwardModule(input_dim, ffn_dim, dropout)
        self.self_attn_layer_norm = nn.LayerNorm(input_dim)
        self.self_attn = nn.MultiheadAttention(input_dim, num_heads, dropout=dropout)
        self.self_attn_dropout = nn.Dropout(dropout)
        self.conv_module = ConvModuleTA(input_dim, input_dim, kernel_size, dropout,
                                        bias=True, use_group_norm=use_group_norm)
        self.ffn2 = FeedForwardModule(input_dim, ffn_dim, dropout)
        self.final_layer_norm = nn.LayerNorm(input_dim)
        self.convolution_first = convolution_first

    def _apply_convolution(self, x):
        return x + self.conv_module(x.transpose(0, 1)).transpose(0, 1)

    def forward(self, x, key_padding_mask):  # (T, B, D)
        x = 0.5 * self.ffn1(x) + x
        if self.convolution_first:
            x = self._apply_convolution(x)
        residual = x
        x = self.self_attn_layer_norm(x)
        x, weights = self.self_attn(query=x, key=x, value=x, key_padding_mask=key_padding_mask,
                                    need_weights=True)
        self.attn_weights = weights
        x = self.self_attn_dropout(x) + residual
        if not self.convolution_first:
            x = self._apply_convolution(x)
        x = 0.5 * self.ffn2(x) + x
        return self.final_layer_norm(x)


class ConformerTA(nn.Module):
    def __init__(self, input_dim, num_heads, ffn_dim, num_layers, kernel_size, dropout=0.0):
        super().__init__()
        self.conformer_layers = nn.ModuleList([
            ConformerLayerTA(input_dim, ffn_dim, num_heads, kernel_size, dropout,
                             use_group_norm=(i % 2 == 1), convolution_first=(i % 2 == 1))
            for i in range(num_layers)])

    def forward(self, x, lengths):  # (B, T, D)
        padding_mask = lengths_to_padding_mask(lengths)
        x = x.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, padding_mask)
        return x.transpose(0, 1), lengths


class TimeReduction(nn.Module):
    """torchaudio-style: stack ``stride`` consecutive frames into one."""

    def __init__(self, stride):
        super().__init__()
        self.stride = stride

    def forward(self, x, lengths):
        B, T, D = x.shape
        num_frames = T - (T % self.stride)
        x = x[:, :num_frames, :]
        lengths = lengths.div(self.stride, rounding_mode="trunc")
        return x.reshape(B, num_frames // self.stride, D * self.stride).contiguous(), lengths


class ConformerCTCTA(nn.Module):
    def __init__(self, idim, vocab_size, d_model=32, stride=4):
        super().__init__()
        self.time_reduction = TimeReduction(stride)
        self.input_linear = nn.Linear(idim * stride, d_model)
        self.conformer = ConformerTA(d_model, num_heads=4, ffn_dim=64, num_layers=2,
                                     kernel_size=7, dropout=0.1)
        self.output_linear = nn.Linear(d_model, vocab_size)

    def forward(self, x, lengths):
        x, lengths = self.time_reduction(x, lengths)
        x, lengths = self.conformer(self.input_linear(x), lengths)
        return F.log_softmax(self.output_linear(x), dim=-1), lengths


# --------------------------------------------------------------------- decoding, CER


def greedy_decode(log_probs, lengths):
    best = log_probs.argmax(dim=-1)
    hyps = []
    for seq, n in zip(best, lengths.tolist()):
        seq = torch.unique_consecutive(seq[:n])
        hyps.append(seq[seq != BLANK].tolist())
    return hyps


def edit_distance(ref, hyp):
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def cer(refs, hyps):
    return sum(edit_distance(r, h) for r, h in zip(refs, hyps)) / sum(len(r) for r in refs)


@torch.no_grad()
def evaluate(model, batch):
    model.eval()
    xs, ilens, ys, ylens = batch
    hs, hlens = model.encoder(xs, ilens)
    hyps = greedy_decode(model.ctc.log_softmax(hs), hlens)
    refs = [y[:n].tolist() for y, n in zip(ys, ylens.tolist())]
    return cer(refs, hyps), hyps, refs


# ---------------------------------------------------- fixed-weight checks (recorded)

fixed_results["features"] = train_set[0][0]
fixed_results["cmvn"] = {"mean": feat_mean, "std": feat_std}
utterance_frames = [f.size(0) for f, _ in train_set[:8]]
first_batch = collate(train_set[:6])

# the model checks take random "fbank" features, as encoder unit tests do: features from
# the FFT carry float32 rounding that the untrained encoder amplifies
torch.manual_seed(1)
batch = pad_batch([torch.randn(n, N_FEATS) for n in (61, 50, 43, 30, 47, 38)],
                  [torch.randint(1, VOCAB, (k,)) for k in (4, 3, 3, 2, 4, 1)])
xs_pad, ilens, ys_pad, ylens = batch
fixed_results["ilens"] = ilens
fixed_results["ys_pad"] = ys_pad

# SpecAugment with its own generator
augmented = spec_augment(xs_pad, generator=torch.Generator().manual_seed(7))
fixed_results["spec_augment"] = augmented
masked_fraction = ((augmented == 0) & (xs_pad != 0)).float().mean().item()

# rel_shift: the (i, j) entry is the score of relative position i - j
scores = torch.arange(2 * 4 * 7, dtype=torch.float64).view(1, 2, 4, 7)
shifted = RelPositionMultiHeadedAttention.rel_shift(scores)
fixed_results["rel_shift"] = shifted
i_idx, j_idx = torch.arange(4)[:, None], torch.arange(4)[None, :]
gathered = scores[:, :, i_idx, (4 - 1) - (i_idx - j_idx)]
rel_shift_is_gather = torch.equal(shifted, gathered)

# relative-position attention in float64: value, gradient, gradcheck
torch.manual_seed(3)
rel_attn = RelPositionMultiHeadedAttention(2, 8, 0.0).double()
pos_enc = RelPositionalEncoding(8, 0.0)
x64 = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
mask64 = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, :]
_, pos_emb = pos_enc(x64.detach())
fixed_results["pos_emb"] = pos_emb
pos64 = torch.randn(1, 9, 8, dtype=torch.float64)  # (float64 "positions": pe is float32)
attn_out = rel_attn(x64, x64, x64, pos64, mask64)
attn_out.pow(2).sum().backward()
fixed_results["rel_attention"] = {"out": attn_out.detach(), "attn": rel_attn.attn.detach(),
                                  "x_grad": x64.grad, "pos_bias_u_grad": rel_attn.pos_bias_u.grad,
                                  "pos_bias_v_grad": rel_attn.pos_bias_v.grad,
                                  "linear_pos_grad": rel_attn.linear_pos.weight.grad}
padded_keys_ignored = bool((rel_attn.attn[1, :, :, 3:] == 0).all())
gradcheck_rel_attention = torch.autograd.gradcheck(
    lambda q: rel_attn(q, q, q, pos64, mask64), (x64.detach()[:, :, :].requires_grad_(),))

# the Swish of ESPnet is SiLU
sw = torch.linspace(-6, 6, 25)
swish_is_silu = torch.allclose(Swish()(sw), F.silu(sw)) and torch.allclose(nn.SiLU()(sw),
                                                                           F.silu(sw))

# the whole model on fixed weights, train mode without dropout, then eval
torch.manual_seed(0)
model = ConformerCTC(N_FEATS, VOCAB, dropout_rate=0.0)
n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
loss, hs, hlens = model(xs_pad, ilens, ys_pad, ylens)
loss.backward()
fixed_results["encoder_out"] = hs.detach()
fixed_results["hlens"] = hlens
fixed_results["ctc_loss_sum_over_batch"] = loss.detach()
subsampled_lengths = torch.div(torch.div(ilens - 1, 2, rounding_mode="floor") - 1, 2,
                               rounding_mode="floor")
fixed_results["grads"] = {name: p.grad for name, p in model.named_parameters() if name in {
    "encoder.embed.conv.0.weight", "encoder.embed.out.weight",
    "encoder.encoders.0.self_attn.pos_bias_u", "encoder.encoders.0.self_attn.pos_bias_v",
    "encoder.encoders.0.self_attn.linear_pos.weight",
    "encoder.encoders.1.conv_module.depthwise_conv.weight",
    "encoder.encoders.1.conv_module.norm.weight", "encoder.encoders.1.norm_final.bias",
    "ctc.ctc_lo.weight", "ctc.ctc_lo.bias"}}
fixed_results["bn_running_var"] = model.encoder.encoders[0].conv_module.norm.running_var.clone()
model.zero_grad()

# CTC reductions and forms on the same log-probabilities
log_probs = model.ctc.log_softmax(hs.detach()).transpose(0, 1)  # (T, B, V)
targets_flat = torch.cat([y[y != IGNORE_ID] for y in ys_pad])
ctc_losses = {
    reduction: F.ctc_loss(log_probs, targets_flat, hlens, ylens, reduction=reduction,
                          zero_infinity=True)
    for reduction in ("none", "mean", "sum")}
ctc_losses["module_padded"] = nn.CTCLoss(blank=BLANK, zero_infinity=True)(
    log_probs, ys_pad.clamp(min=0), hlens, ylens)
ctc_losses["tuple_lengths"] = F.ctc_loss(log_probs, targets_flat, tuple(hlens.tolist()),
                                         tuple(ylens.tolist()), reduction="sum")
fixed_results["ctc_losses"] = {k: v.detach() for k, v in ctc_losses.items()}
mean_is_per_target = torch.allclose(ctc_losses["mean"],
                                    (ctc_losses["none"] / ylens).mean())

# CTC against a brute-force log-sum over all alignments that collapse to the target, with
# gradients (float64); then gradcheck through log_softmax
torch.manual_seed(5)
small_logits = torch.randn(5, 1, 3, dtype=torch.float64, requires_grad=True)
small_lp = small_logits.log_softmax(-1)
small_target = [1, 1]  # a repeat: the alignments need a blank between
path_scores = []
for path in itertools.product(range(3), repeat=5):
    if [k for k, _ in itertools.groupby(path) if k != BLANK] == small_target:
        path_scores.append(small_lp[torch.arange(5), 0, torch.tensor(path)].sum())
n_alignments = len(path_scores)
brute_force_nll = -torch.logsumexp(torch.stack(path_scores), dim=0)
ctc_small = F.ctc_loss(small_lp, torch.tensor([small_target]), (5,), (2,), reduction="sum")
brute_force_grad = torch.autograd.grad(brute_force_nll, small_logits, retain_graph=True)[0]
ctc_small_grad = torch.autograd.grad(ctc_small, small_logits)[0]
fixed_results["ctc_small"] = {"loss": ctc_small.detach(), "grad": ctc_small_grad}
gradcheck_ctc = torch.autograd.gradcheck(
    lambda z: F.ctc_loss(z.log_softmax(-1), torch.tensor([[1, 2], [2, 2]]), (5, 4), (2, 2),
                         reduction="mean"),
    (torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True),))

# the torch.nn.CTCLoss documentation's example: gradient w.r.t. a log-probability leaf
torch.manual_seed(6)
T, C, N, S = 12, 6, 3, 4
leaf = torch.randn(T, N, C).log_softmax(2).detach().requires_grad_()
doc_targets = torch.randint(1, C, (N, S), dtype=torch.long)
doc_input_lengths = torch.full((N,), T, dtype=torch.long)
doc_target_lengths = torch.tensor([4, 2, 3])
doc_input_lengths[2] = 9
doc_loss = nn.CTCLoss()(leaf, doc_targets, doc_input_lengths, doc_target_lengths)
doc_loss.backward()
fixed_results["ctc_doc"] = {"loss": doc_loss.detach(), "leaf_grad": leaf.grad}

# the same loss through log_softmax of logits: the gradient a model actually receives
logits = torch.randn(T, N, C, requires_grad=True)
F.ctc_loss(logits.log_softmax(2), doc_targets, doc_input_lengths, doc_target_lengths,
           reduction="sum").backward()
fixed_results["ctc_logits_grad"] = logits.grad
beyond_length_grad_zero = bool((logits.grad[9:, 2] == 0).all())

# zero_infinity: a target longer than its input has no alignment
impossible_lp = torch.randn(3, 2, 4).log_softmax(2).requires_grad_()
impossible = {zi: F.ctc_loss(impossible_lp, torch.tensor([[1, 2, 1, 2], [1, 2, 0, 0]]),
                             (3, 3), (4, 2), reduction="none", zero_infinity=zi)
              for zi in (False, True)}
impossible[True].sum().backward()
fixed_results["zero_infinity"] = {"loss": impossible[True].detach(),
                                  "grad": impossible_lp.grad}
infinite_without = bool(torch.isinf(impossible[False][0]))

# greedy decoding on the untrained model, and padding invariance in eval mode
model.eval()
with torch.no_grad():
    hs_batch, hlens_batch = model.encoder(xs_pad, ilens)
    hs_alone, _ = model.encoder(xs_pad[:1, :ilens[0]], ilens[:1])
padding_invariance_error = (hs_batch[0, :hlens_batch[0]] - hs_alone[0]).abs().max().item()
fixed_results["eval_encoder_out"] = hs_batch
fixed_results["untrained_hyps"] = evaluate(model, batch)[1]

# torchaudio-style Conformer with nn.MultiheadAttention and a key padding mask
torch.manual_seed(11)
ta_conformer = ConformerTA(input_dim=16, num_heads=4, ffn_dim=32, num_layers=2, kernel_size=5)
ta_input = torch.randn(3, 9, 16)
ta_lengths = torch.tensor([9, 6, 4])
ta_out, ta_out_lengths = ta_conformer(ta_input, ta_lengths)
valid = ~lengths_to_padding_mask(ta_lengths)
(ta_out * valid[..., None] * torch.randn(16)).sum().backward()
fixed_results["torchaudio"] = {
    "out": ta_out.detach(),
    "attn_weights": ta_conformer.conformer_layers[0].attn_weights.detach(),
    "in_proj_grad": ta_conformer.conformer_layers[0].self_attn.in_proj_weight.grad,
    "group_norm_grad": ta_conformer.conformer_layers[1].conv_module.sequential[3].weight.grad,
    "depthwise_grad": ta_conformer.conformer_layers[0].conv_module.sequential[2].weight.grad}
ta_padded_keys = ta_conformer.conformer_layers[1].attn_weights[2, :, 4:]

# --------------------------------------------------------------------------- training

torch.manual_seed(0)
model = ConformerCTC(N_FEATS, VOCAB, dropout_rate=0.1)
decay, no_decay = [], []
for name, p in model.named_parameters():
    (no_decay if p.ndim == 1 or "pos_bias" in name else decay).append(p)
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-3},
                               {"params": no_decay, "weight_decay": 0.0}],
                              lr=4e-3, betas=(0.9, 0.98), eps=1e-9)
warmup_steps = 20


def noam_lambda(step):
    step += 1
    return warmup_steps ** 0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_lambda)
train_loader = torch.utils.data.DataLoader(train_set, batch_size=16, shuffle=True,
                                           collate_fn=collate,
                                           generator=torch.Generator().manual_seed(2))
valid_batch = collate(valid_set)
augment_gen = torch.Generator().manual_seed(3)

epochs, average_last = 10, 3
losses, lrs, grad_norms, valid_cers, snapshots = [], [], [], [], []
valid_cers.append(evaluate(model, valid_batch)[0])
for epoch in range(epochs):
    model.train()
    for xs, xlens, ys, ylens_b in train_loader:
        xs = spec_augment(xs, generator=augment_gen)
        loss, _, _ = model(xs, xlens, ys, ylens_b)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        if torch.isfinite(grad_norm):
            optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        grad_norms.append(grad_norm.item())
        lrs.append(scheduler.get_last_lr()[0])
    valid_cers.append(evaluate(model, valid_batch)[0])
    if epoch >= epochs - average_last:
        snapshots.append({k: v.clone() for k, v in model.state_dict().items()})
    print(f"epoch {epoch}: loss {sum(losses[-10:]) / 10:.3f}, valid CER {valid_cers[-1]:.3f}")

# ESPnet's average_checkpoints: the mean of the last snapshots, integer buffers floor-divided
averaged = {}
for k in snapshots[0]:
    averaged[k] = sum(s[k] for s in snapshots)
    if averaged[k].is_floating_point():
        averaged[k] /= len(snapshots)
    else:
        averaged[k] = torch.div(averaged[k], len(snapshots), rounding_mode="floor")
buffer = io.BytesIO()
torch.save(averaged, buffer)
buffer.seek(0)
averaged_model = copy.deepcopy(model)
averaged_model.load_state_dict(torch.load(buffer, weights_only=True))
averaged_cer, averaged_hyps, valid_refs = evaluate(averaged_model, valid_batch)
final_cer, final_hyps, _ = evaluate(model, valid_batch)

# the torchaudio-style model: Adam, OneCycleLR, nn.CTCLoss("mean") on padded targets
torch.manual_seed(0)
ta_model = ConformerCTCTA(N_FEATS, VOCAB)
ta_criterion = nn.CTCLoss(blank=BLANK, reduction="mean", zero_infinity=True)
ta_epochs = 8
ta_optimizer = torch.optim.Adam(ta_model.parameters(), lr=3e-3)
ta_scheduler = torch.optim.lr_scheduler.OneCycleLR(
    ta_optimizer, max_lr=3e-3, total_steps=ta_epochs * len(train_loader), pct_start=0.2)


@torch.no_grad()
def evaluate_ta(batch):
    ta_model.eval()
    xs, xlens, ys, ylens_b = batch
    log_probs, out_lens = ta_model(xs, xlens)
    refs = [y[:n].tolist() for y, n in zip(ys, ylens_b.tolist())]
    return cer(refs, greedy_decode(log_probs, out_lens))


ta_losses, ta_cers = [], [evaluate_ta(valid_batch)]
for epoch in range(ta_epochs):
    ta_model.train()
    for xs, xlens, ys, ylens_b in train_loader:
        log_probs, out_lens = ta_model(spec_augment(xs, generator=augment_gen), xlens)
        loss = ta_criterion(log_probs.transpose(0, 1), ys.clamp(min=0), out_lens, ylens_b)
        ta_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(ta_model.parameters(), 1.0)
        ta_optimizer.step()
        ta_scheduler.step()
        ta_losses.append(loss.item())
    ta_cers.append(evaluate_ta(valid_batch))
    print(f"torchaudio-style epoch {epoch}: loss {ta_losses[-1]:.3f}, CER {ta_cers[-1]:.3f}")

print(f"{n_params} parameters; loss {losses[0]:.3f} -> {losses[-1]:.3f}; valid CER "
      f"{valid_cers[0]:.3f} -> {final_cer:.3f} (averaged {averaged_cer:.3f}); torchaudio-style "
      f"CER {ta_cers[0]:.3f} -> {ta_cers[-1]:.3f}")
