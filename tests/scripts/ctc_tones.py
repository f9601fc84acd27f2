# ruff: noqa: N812 (the usual F alias of nn.functional)
"""Sequence recognition with CTC on synthetic "speech", written for these tests the way small
speech-recognition code for PyTorch is commonly written (not a copy of one script):

- waveforms of different lengths, each a "word" of tone "letters" in noise, batched by
  ``nn.utils.rnn.pad_sequence(batch_first=True)`` in a ``collate_fn``;
- features: ``torch.stft`` with a Hann window, the power spectrum through a mel filterbank
  (built in NumPy, as torchaudio's ``melscale_fbanks`` builds it), ``10 * torch.log10`` of it
  clamped, per-utterance normalization over the valid frames only, SpecAugment-style masking
  by ``masked_fill`` with ``arange`` comparisons;
- a ``Conv1d``/``BatchNorm1d`` front end and a bidirectional ``GRU`` run on
  ``pack_padded_sequence(enforce_sorted=False)``, ``pad_packed_sequence`` back;
- ``nn.CTCLoss(blank=0, zero_infinity=True)`` on ``(T, N, C)`` log-probabilities with input and
  target lengths; greedy decoding by ``argmax`` and ``unique_consecutive``;
- ``Adam`` with ``SequentialLR(LinearLR warm-up, ExponentialLR)``, then stochastic weight
  averaging: ``swa_utils.AveragedModel``, ``SWALR`` and ``update_bn``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from jitgrad.optim.swa_utils import SWALR, AveragedModel, update_bn
from jitgrad.utils.data import DataLoader, Dataset

np.random.seed(0)
torch.manual_seed(0)

SAMPLE_RATE, N_FFT, HOP, N_MELS = 4000, 128, 32, 24
LETTER_HZ = [400.0, 700.0, 1100.0, 1600.0]  # letters 1..4; 0 is CTC's blank


def make_word(rng):
    letters = rng.integers(1, len(LETTER_HZ) + 1, size=rng.integers(2, 5))
    pieces = []
    for k in letters:
        n = int(rng.integers(160, 260))
        t = np.arange(n) / SAMPLE_RATE
        envelope = np.hanning(n)
        pieces.append(envelope * np.sin(2 * np.pi * LETTER_HZ[k - 1] * t + rng.uniform(0, 6)))
        pieces.append(np.zeros(int(rng.integers(20, 60))))
    wave = np.concatenate(pieces) + 0.05 * rng.standard_normal(sum(len(p) for p in pieces))
    return wave.astype(np.float32), letters


class Words(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.items = [make_word(rng) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        wave, letters = self.items[i]
        return torch.from_numpy(wave), torch.tensor(letters)


def collate(batch):
    waves, targets = zip(*batch)
    wave_lengths = torch.tensor([len(w) for w in waves])
    return (pad_sequence(waves, batch_first=True), wave_lengths, torch.cat(targets),
            torch.tensor([len(t) for t in targets]))


def mel_filterbank(n_freqs, n_mels, sample_rate):
    """Triangular filters equally spaced on the HTK mel scale, (n_freqs, n_mels)."""
    hz_to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    mel_to_hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)  # noqa: E731
    freqs = np.linspace(0, sample_rate // 2, n_freqs)
    points = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2))
    slopes = points[None, :] - freqs[:, None]
    down = -slopes[:, :-2] / np.diff(points)[:-1]
    up = slopes[:, 2:] / np.diff(points)[1:]
    return np.maximum(0.0, np.minimum(down, up)).astype(np.float32)


class Features(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("fbank", torch.from_numpy(mel_filterbank(N_FFT // 2 + 1, N_MELS,
                                                                      SAMPLE_RATE)))

    def forward(self, waves, wave_lengths):
        spec = torch.stft(waves, N_FFT, hop_length=HOP, window=self.window, center=True,
                          return_complex=True)
        power = spec.abs().pow(2)  # (N, freq, T)
        mel = torch.matmul(power.transpose(1, 2), self.fbank)  # (N, T, mels)
        logmel = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        lengths = wave_lengths // HOP + 1
        valid = (torch.arange(logmel.shape[1])[None, :] < lengths[:, None]).unsqueeze(-1)
        count = valid.sum(dim=(1, 2), keepdim=True) * N_MELS
        mean = (logmel * valid).sum(dim=(1, 2), keepdim=True) / count
        var = (((logmel - mean) * valid) ** 2).sum(dim=(1, 2), keepdim=True) / count
        return ((logmel - mean) / torch.sqrt(var + 1e-5)).masked_fill(~valid, 0.0), lengths


def spec_augment(x, rng, max_freq=4, max_time=3):
    """One frequency band and one time span zeroed per utterance."""
    n, t, f = x.shape
    f0 = torch.from_numpy(rng.integers(0, f - max_freq, size=(n, 1, 1)))
    fw = torch.from_numpy(rng.integers(0, max_freq + 1, size=(n, 1, 1)))
    t0 = torch.from_numpy(rng.integers(0, max(1, t - max_time), size=(n, 1, 1)))
    tw = torch.from_numpy(rng.integers(0, max_time + 1, size=(n, 1, 1)))
    freq = torch.arange(f).view(1, 1, f)
    time = torch.arange(t).view(1, t, 1)
    mask = ((freq >= f0) & (freq < f0 + fw)) | ((time >= t0) & (time < t0 + tw))
    return x.masked_fill(mask, 0.0)


class Recognizer(nn.Module):
    def __init__(self, hidden=32, classes=len(LETTER_HZ) + 1):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(N_MELS, hidden, 3, padding=1),
                                  nn.BatchNorm1d(hidden), nn.ReLU(),
                                  nn.Conv1d(hidden, hidden, 3, padding=2, dilation=2),
                                  nn.BatchNorm1d(hidden), nn.ReLU())
        self.rnn = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, x, lengths=None):
        x = self.conv(x.transpose(1, 2)).transpose(1, 2)  # (N, T, hidden)
        if lengths is None:
            x, _ = self.rnn(x)
        else:
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            x, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True,
                                       total_length=x.shape[1])
        return F.log_softmax(self.out(x), dim=-1)  # (N, T, C)


def greedy_decode(log_probs, lengths):
    words = []
    for row, n in zip(log_probs.argmax(dim=-1), lengths.tolist()):
        collapsed = torch.unique_consecutive(row[:n])
        words.append(collapsed[collapsed != 0].tolist())
    return words


def edit_distance(a, b):
    d = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return int(d[-1])


def evaluate(model, loader):
    model.eval()
    errors = total = 0
    with torch.no_grad():
        for waves, wave_lengths, targets, target_lengths in loader:
            feats, lengths = features(waves, wave_lengths)
            decoded = greedy_decode(model(feats, lengths), lengths)
            for word, truth in zip(decoded, targets.split(target_lengths.tolist())):
                errors += edit_distance(word, truth.tolist())
                total += len(truth)
    return errors / total


features = Features()
train_loader = DataLoader(Words(128, seed=1), batch_size=8, shuffle=True, collate_fn=collate)
test_loader = DataLoader(Words(48, seed=2), batch_size=24, collate_fn=collate)
model = Recognizer()
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=12)
decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.995)
scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, decay], milestones=[12])
aug_rng = np.random.default_rng(3)
losses, lrs, error_rates = [], [], []
swa_model = AveragedModel(model)
swa_scheduler = SWALR(optimizer, swa_lr=2e-3, anneal_epochs=2)
epochs, swa_start = 9, 7
for epoch in range(epochs):
    model.train()
    for waves, wave_lengths, targets, target_lengths in train_loader:
        feats, lengths = features(waves, wave_lengths)
        log_probs = model(spec_augment(feats, aug_rng), lengths)
        loss = ctc(log_probs.transpose(0, 1), targets, lengths, target_lengths)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        if epoch < swa_start:
            scheduler.step()
        losses.append(loss.item())
        lrs.append(optimizer.param_groups[0]["lr"])
    if epoch >= swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    error_rates.append(evaluate(model, test_loader))
    print(f"epoch {epoch}: ctc {np.mean(losses[-len(train_loader):]):.3f}, "
          f"letter error rate {error_rates[-1]:.3f}")

# update_bn: the averaged weights' BatchNorm statistics, from a pass over the training data
bn_loader = [features(w, wl)[0] for w, wl, _, _ in train_loader]
update_bn(bn_loader, swa_model)
swa_error_rate = evaluate(swa_model, test_loader)
print(f"SWA model: letter error rate {swa_error_rate:.3f}")

# ------------------------------------------------------------ (recorded) on fixed weights
fixed = Recognizer(hidden=8)
rng = np.random.default_rng(11)
with torch.no_grad():
    for p in fixed.parameters():
        p.copy_(torch.from_numpy(rng.normal(0.0, 0.4, size=tuple(p.shape)).astype(np.float32)))
waves, wave_lengths, targets, target_lengths = collate([Words(6, seed=9)[i] for i in range(6)])
fixed_results = {"wave_lengths": wave_lengths.tolist()}
feats, lengths = features(waves, wave_lengths)
fixed_results["features"] = feats
fixed_results["lengths"] = lengths.tolist()
fixed_results["fbank"] = features.fbank.clone()
fixed.train()
log_probs = fixed(feats, lengths)
fixed_results["log_probs"] = log_probs.detach().clone()
for reduction in ("mean", "sum", "none"):
    loss = F.ctc_loss(log_probs.transpose(0, 1), targets, lengths, target_lengths,
                      reduction=reduction, zero_infinity=True)
    fixed_results[f"ctc_{reduction}"] = loss.detach().clone()
loss = ctc(log_probs.transpose(0, 1), targets, lengths, target_lengths)
fixed.zero_grad()
loss.backward()
fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
fixed_results["running_mean"] = fixed.conv[1].running_mean.clone()
fixed_results["decoded"] = greedy_decode(log_probs.detach(), lengths)
waves.requires_grad_()
feats, _ = features(waves, wave_lengths)
(feats * torch.linspace(-1, 1, feats.shape[-1])).sum().backward()
fixed_results["wave_grad"] = waves.grad.clone()
averaged = AveragedModel(fixed)
with torch.no_grad():
    for p in fixed.parameters():
        p.mul_(0.5)
averaged.update_parameters(fixed)
fixed_results["averaged"] = {n: p.detach().clone() for n, p in averaged.module.named_parameters()}
fixed_results["n_averaged"] = averaged.n_averaged.item()
