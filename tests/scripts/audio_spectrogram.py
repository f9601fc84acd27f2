# ruff: noqa: N812 (the usual F alias of nn.functional)
"""Audio features and a keyword-spotting-style classifier, written for these tests the way
torchaudio's transforms/functional code and its speech tutorials write torch code, in plain
torch (no torchaudio; not a copy of any one file):

- a synthetic "keyword" dataset of tones and chirps: ``torch.linspace`` time axes, ``torch.sin``
  of a (quadratic) phase, ``torch.randn`` noise, variable lengths kept in a ``TensorDataset``
  (padded waveforms + lengths + labels) and re-padded per batch by a ``collate_fn`` with
  ``nn.utils.rnn.pad_sequence``;
- ``Spectrogram``: ``torch.stft(..., window=torch.hann_window(n_fft), return_complex=True)``
  then ``.abs().pow(2)``; centring by hand with ``F.pad(mode="reflect")`` and ``center=False``;
- ``melscale_fbanks`` on the HTK scale (``torch.log10``, ``torch.linspace``, triangular filters
  by broadcasting ``torch.min``/``torch.max``, slaney area normalisation), ``MelSpectrogram``;
- ``AmplitudeToDB``: ``10 * log10(clamp(min=1e-10))`` with ``top_db`` clipping by ``amax``;
- ``MFCC`` through ``create_dct`` (orthonormal DCT-II matrix, ``torch.cos``, ``torch.arange``);
- SpecAugment ``mask_along_axis_iid``: ``torch.rand`` widths/starts, ``arange`` comparisons,
  ``masked_fill_``;
- ``torch.istft`` round trip (``length=``), Griffin-Lim in torchaudio's momentum form
  (``torch.rand`` of a complex dtype, ``tprev.mul_``) and in a ``torch.polar``/``torch.angle``
  form, with the spectral convergence recorded per iteration;
- resampling by ``F.interpolate(mode="linear")``;
- a ``Conv2d``/``BatchNorm2d``/``nn.AdaptiveAvgPool2d`` classifier on log-mel patches and a
  ``Conv1d``/``BatchNorm1d`` one on MFCCs, ``CrossEntropyLoss(label_smoothing=0.1)``, ``Adam``;
- gradients through ``torch.stft``/``torch.istft``: ``torch.autograd.gradcheck`` on small
  float64 cases and a waveform optimised to match a target magnitude spectrogram.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

SAMPLE_RATE, N_FFT, HOP, N_MELS, N_MFCC = 8000, 256, 128, 32, 13
LABELS = ["low", "high", "up", "down"]
fixed_results = {}


# ------------------------------------------------------------------------- the dataset


def make_clip(label, n):
    """One "keyword": a tone or a chirp, random amplitude and phase, in white noise."""
    t = torch.linspace(0, (n - 1) / SAMPLE_RATE, n)
    jitter = 1.0 + 0.1 * (torch.rand(()) - 0.5)
    phase0 = 2 * math.pi * torch.rand(())
    if label == 0:
        phase = 2 * math.pi * 500.0 * jitter * t
    elif label == 1:
        phase = 2 * math.pi * 1600.0 * jitter * t
    else:
        f0, f1 = (300.0, 2400.0) if label == 2 else (2400.0, 300.0)
        duration = n / SAMPLE_RATE
        phase = 2 * math.pi * (f0 * t + (f1 - f0) * t.pow(2) / (2 * duration))
    amplitude = 0.3 + 0.7 * torch.rand(())
    return amplitude * torch.sin(phase + phase0) + 0.05 * torch.randn(n)


def make_dataset(n_per_class):
    waves, lengths, labels = [], [], []
    for i in range(n_per_class * len(LABELS)):
        label = i % len(LABELS)
        n = int(torch.randint(2400, 4001, ()).item())
        waves.append(make_clip(label, n))
        lengths.append(n)
        labels.append(label)
    padded = pad_sequence(waves, batch_first=True)
    return TensorDataset(padded, torch.tensor(lengths), torch.tensor(labels))


def label_to_index(word):
    return torch.tensor(LABELS.index(word))


def index_to_label(index):
    return LABELS[index]


def collate_fn(batch):
    # a batch is a list of (waveform, length, label): trim each, pad to the longest in the batch
    tensors, lengths, targets = [], [], []
    for waveform, length, label in batch:
        tensors += [waveform[:length]]
        lengths += [length]
        targets += [label]
    return pad_sequence(tensors, batch_first=True), torch.stack(lengths), torch.stack(targets)


# ------------------------------------------------------------------- functional transforms


def spectrogram(waveform, n_fft=N_FFT, hop_length=HOP, window=None, power=2.0, center=True):
    if window is None:
        window = torch.hann_window(n_fft, dtype=waveform.dtype)
    shape = waveform.size()
    waveform = waveform.reshape(-1, shape[-1])
    spec_f = torch.stft(waveform, n_fft=n_fft, hop_length=hop_length, win_length=n_fft,
                        window=window, center=center, pad_mode="reflect", normalized=False,
                        onesided=True, return_complex=True)
    spec_f = spec_f.reshape(shape[:-1] + spec_f.shape[-2:])
    return spec_f.abs().pow(power)


def hz_to_mel(freq):
    return 2595.0 * torch.log10(1.0 + freq / 700.0)


def mel_to_hz(mels):
    return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)


def create_triangular_filterbank(all_freqs, f_pts):
    f_diff = f_pts[1:] - f_pts[:-1]  # (n_filter + 1)
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)  # (n_freqs, n_filter + 2)
    zero = torch.zeros(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]  # (n_freqs, n_filter)
    up_slopes = slopes[:, 2:] / f_diff[1:]  # (n_freqs, n_filter)
    return torch.max(zero, torch.min(down_slopes, up_slopes))


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None):
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min = hz_to_mel(torch.tensor(f_min))
    m_max = hz_to_mel(torch.tensor(f_max))
    m_pts = torch.linspace(m_min.item(), m_max.item(), n_mels + 2)
    f_pts = mel_to_hz(m_pts)
    fb = create_triangular_filterbank(all_freqs, f_pts)
    if norm == "slaney":
        enorm = 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
        fb *= enorm.unsqueeze(0)
    return fb


def amplitude_to_db(x, multiplier=10.0, amin=1e-10, db_multiplier=0.0, top_db=None):
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


def create_dct(n_mfcc, n_mels, norm="ortho"):
    n = torch.arange(float(n_mels))
    k = torch.arange(float(n_mfcc)).unsqueeze(1)
    dct = torch.cos(math.pi / float(n_mels) * (n + 0.5) * k)  # (n_mfcc, n_mels)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return dct.t()


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis):
    """SpecAugment: one band per example and channel along ``axis`` (2: freq, 3: time)."""
    value = torch.rand(specgrams.shape[:2]) * mask_param
    min_value = torch.rand(specgrams.shape[:2]) * (specgrams.size(axis) - value)
    mask_start = min_value.long()[..., None, None]
    mask_end = (min_value.long() + value.long())[..., None, None]
    mask = torch.arange(0, specgrams.size(axis))
    specgrams = specgrams.transpose(axis, -1)
    specgrams.masked_fill_((mask >= mask_start) & (mask < mask_end), mask_value)
    return specgrams.transpose(axis, -1)


def griffinlim(specgram, window, n_fft, hop_length, power, n_iter, momentum, length,
               rand_init=True, target=None):
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))
    specgram = specgram.pow(1 / power)
    complex_dtype = torch.complex128 if specgram.dtype == torch.float64 else torch.complex64
    if rand_init:
        angles = torch.rand(specgram.size(), dtype=complex_dtype)
    else:
        angles = torch.full(specgram.size(), 1, dtype=complex_dtype)
    tprev = torch.tensor(0.0, dtype=specgram.dtype)
    convergence = []
    for _ in range(n_iter):
        inverse = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length,
                              win_length=n_fft, window=window, length=length)
        rebuilt = torch.stft(input=inverse, n_fft=n_fft, hop_length=hop_length,
                             win_length=n_fft, window=window, center=True, pad_mode="reflect",
                             normalized=False, onesided=True, return_complex=True)
        convergence.append((torch.linalg.norm(rebuilt.abs() - specgram)
                            / torch.linalg.norm(specgram)).item())
        angles = rebuilt
        if momentum:
            angles = angles - tprev.mul_(momentum / (1 + momentum))
        angles = angles.div(angles.abs().add(1e-16))
        tprev = rebuilt
    waveform = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length,
                           win_length=n_fft, window=window, length=length)
    return waveform.reshape(shape[:-2] + waveform.shape[-1:]), convergence


def griffinlim_polar(magnitude, window, n_fft, hop_length, n_iter, momentum, length):
    """The librosa-style loop: phases as real angles, complex spectra built by torch.polar."""
    phase = 2 * math.pi * torch.rand(magnitude.shape, dtype=magnitude.dtype)
    previous = torch.zeros_like(magnitude, dtype=torch.complex64)
    if magnitude.dtype == torch.float64:
        previous = previous.to(torch.complex128)
    for _ in range(n_iter):
        inverse = torch.istft(torch.polar(magnitude, phase), n_fft, hop_length, window=window,
                              length=length)
        rebuilt = torch.stft(inverse, n_fft, hop_length, window=window, return_complex=True)
        accelerated = rebuilt - (momentum / (1 + momentum)) * previous
        phase = torch.angle(accelerated)
        previous = rebuilt
    return torch.istft(torch.polar(magnitude, phase), n_fft, hop_length, window=window,
                       length=length)


def resample(waveform, orig_freq, new_freq):
    size = round(waveform.shape[-1] * new_freq / orig_freq)
    return F.interpolate(waveform.unsqueeze(1), size=size, mode="linear",
                         align_corners=False).squeeze(1)


# ----------------------------------------------------------------------- module transforms


class MelSpectrogram(nn.Module):
    def __init__(self, n_mfcc=N_MFCC, top_db=80.0):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        fb = melscale_fbanks(N_FFT // 2 + 1, 0.0, SAMPLE_RATE / 2, N_MELS, SAMPLE_RATE,
                             norm="slaney")
        self.register_buffer("fb", fb)
        self.register_buffer("dct_mat", create_dct(n_mfcc, N_MELS, norm="ortho"))
        self.top_db = top_db

    def forward(self, waveform):
        spec = spectrogram(waveform, window=self.window)
        # (..., freq, time) x (freq, n_mels) -> (..., n_mels, time)
        return torch.matmul(spec.transpose(-1, -2), self.fb).transpose(-1, -2)

    def log_mel(self, waveform):
        return amplitude_to_db(self(waveform), top_db=self.top_db)

    def mfcc(self, waveform):
        mel_specgram = self.log_mel(waveform)
        return torch.matmul(mel_specgram.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class KeywordCNN(nn.Module):
    def __init__(self, n_classes=len(LABELS), channels=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
            nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * channels), nn.ReLU(), nn.AdaptiveAvgPool2d((4, 1)))
        self.fc = nn.Linear(2 * channels * 4, n_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class MFCCConv1d(nn.Module):
    def __init__(self, n_input=N_MFCC, n_classes=len(LABELS), n_channel=16):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.fc1 = nn.Linear(n_channel, n_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.avg_pool1d(x, x.shape[-1]).squeeze(-1)
        return self.fc1(x)


def normalize(features):
    mean = features.mean(dim=(-2, -1), keepdim=True)
    std = features.std(dim=(-2, -1), keepdim=True)
    return (features - mean) / (std + 1e-5)


# --------------------------------------------------- fixed-weight transforms (recorded)

transform = MelSpectrogram()
clip = make_clip(3, 1000)
clip_spec = spectrogram(clip)
fixed_results["spectrogram"] = clip_spec
fixed_results["mel_fb"] = transform.fb
fixed_results["mel_fb_htk_plain"] = melscale_fbanks(65, 20.0, 4000.0, 12, SAMPLE_RATE)
fixed_results["log_mel"] = transform.log_mel(clip)
fixed_results["log_mel_top_db_20"] = amplitude_to_db(transform(clip), top_db=20.0)
fixed_results["mfcc"] = transform.mfcc(clip)
fixed_results["dct_none"] = create_dct(5, 8, norm=None)
# centring by hand: reflect padding then center=False is what center=True does
manual = F.pad(clip.view(1, 1, -1), (N_FFT // 2, N_FFT // 2), mode="reflect").view(-1)
fixed_results["manual_center"] = spectrogram(manual, center=False)
fixed_results["reflect_pad"] = F.pad(clip[:10].view(1, 1, -1), (3, 4), mode="reflect")

specs = normalize(transform.log_mel(torch.stack([make_clip(k, 1200) for k in range(4)])))
specs = specs.unsqueeze(1)  # (batch, channel, n_mels, time)
masked = mask_along_axis_iid(specs.clone(), mask_param=8, mask_value=0.0, axis=2)
masked = mask_along_axis_iid(masked, mask_param=3, mask_value=0.0, axis=3)
fixed_results["spec_augment"] = masked
fixed_results["masked_fraction"] = (masked == 0).float().mean()

# istft(stft(x)) recovers x: a batch, an odd length, another hop
window = torch.hann_window(N_FFT)
batch_wave = torch.randn(3, 1501)
stft_batch = torch.stft(batch_wave, N_FFT, hop_length=64, window=window, return_complex=True)
roundtrip = torch.istft(stft_batch, N_FFT, hop_length=64, window=window, length=1501)
roundtrip_error = (roundtrip - batch_wave).abs().max().item()
fixed_results["stft_batch"] = torch.view_as_real(stft_batch)
fixed_results["istft"] = roundtrip
fixed_results["istft_hop128"] = torch.istft(
    torch.stft(clip, N_FFT, HOP, window=window, return_complex=True), N_FFT, HOP,
    window=window, length=clip.shape[-1])

# Griffin-Lim from the magnitude alone, torchaudio's momentum form and the polar form
gl_target = make_clip(2, 2048)
gl_spec = spectrogram(gl_target, hop_length=64)
gl_wave, gl_convergence = griffinlim(gl_spec, window, N_FFT, 64, power=2.0, n_iter=24,
                                     momentum=0.99, length=2048)
gl_no_momentum = griffinlim(gl_spec, window, N_FFT, 64, power=2.0, n_iter=24, momentum=0.0,
                            length=2048, rand_init=False)[1]
gl_polar = griffinlim_polar(gl_spec.sqrt(), window, N_FFT, 64, n_iter=24, momentum=0.99,
                            length=2048)


def spectral_convergence(wave, magnitude):
    rebuilt = torch.stft(wave, N_FFT, 64, window=window, return_complex=True).abs()
    return (torch.linalg.norm(rebuilt - magnitude) / torch.linalg.norm(magnitude)).item()


gl_final_convergence = spectral_convergence(gl_wave, gl_spec.sqrt())
gl_polar_convergence = spectral_convergence(gl_polar, gl_spec.sqrt())
fixed_results["griffinlim_convergence"] = gl_convergence
fixed_results["griffinlim_no_momentum"] = gl_no_momentum
# (in float32 the 24 momentum iterations amplify rounding a thousandfold: the waveforms are
# compared with torch's in float64, from a chirp computed in float64)
window64 = torch.hann_window(N_FFT, dtype=torch.float64)
t64 = torch.arange(2048, dtype=torch.float64) / SAMPLE_RATE
chirp64 = torch.sin(2 * math.pi * (300.0 * t64 + 4000.0 * t64.pow(2)))
gl_spec64 = spectrogram(chirp64, hop_length=64, window=window64)
fixed_results["griffinlim_wave64"] = griffinlim(gl_spec64, window64, N_FFT, 64, 2.0, 24, 0.99,
                                                2048)[0]
fixed_results["griffinlim_polar_wave64"] = griffinlim_polar(
    gl_spec64.sqrt(), window64, N_FFT, 64, n_iter=24, momentum=0.99, length=2048)

# resampling a 200 Hz tone 8 kHz -> 4 kHz -> 8 kHz by linear interpolation
tone = torch.sin(2 * math.pi * 200.0 * torch.arange(800) / SAMPLE_RATE).unsqueeze(0)
down = resample(tone, SAMPLE_RATE, 4000)
up = resample(down, 4000, SAMPLE_RATE)
fixed_results["resample_down"] = down
fixed_results["resample_up"] = up
resample_error = (up - tone)[:, 2:-2].abs().max().item()

# gradients through the STFT: gradcheck in float64, power spectrum and istft
x64 = torch.randn(24, dtype=torch.float64, requires_grad=True)
w64 = torch.hann_window(8, dtype=torch.float64)


def stft_power(x):
    return torch.stft(x, 8, hop_length=2, window=w64, return_complex=True).abs().pow(2)


def stft_istft(x):
    spec = torch.stft(x, 8, hop_length=2, window=w64, return_complex=True)
    return torch.istft(spec * spec.abs(), 8, hop_length=2, window=w64, length=24)


def log_mel_of(x):
    fb64 = melscale_fbanks(5, 0.0, 4000.0, 3, SAMPLE_RATE).double()
    mel = torch.matmul(stft_power(x).transpose(-1, -2), fb64)
    return 10.0 * torch.log10(torch.clamp(mel, min=1e-10))


gradcheck_results = {
    "stft_power": torch.autograd.gradcheck(stft_power, (x64,), eps=1e-6, atol=1e-5),
    "stft_istft": torch.autograd.gradcheck(stft_istft, (x64,), eps=1e-6, atol=1e-5),
    "log_mel": torch.autograd.gradcheck(log_mel_of, (x64,), eps=1e-6, atol=1e-4),
}
stft_power(x64).sum().backward()
fixed_results["stft_power_grad"] = x64.grad

# a waveform fitted to a target magnitude spectrogram by gradient descent through torch.stft
target_mag = spectrogram(clip[:512], hop_length=64, power=1.0)
estimate = (0.1 * torch.randn(512)).requires_grad_()
wave_optimizer = torch.optim.Adam([estimate], lr=0.02)
spectral_losses = []
for _ in range(40):
    loss = F.mse_loss(spectrogram(estimate, hop_length=64, power=1.0), target_mag)
    wave_optimizer.zero_grad()
    loss.backward()
    wave_optimizer.step()
    spectral_losses.append(loss.item())
fixed_results["spectral_losses"] = spectral_losses[:5]

# the classifier on fixed weights: logits, loss, gradients
model = KeywordCNN()
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
targets = torch.arange(4)
logits = model(specs)
fixed_loss = criterion(logits, targets)
fixed_loss.backward()
fixed_results["logits"] = logits.detach()
fixed_results["loss"] = fixed_loss.item()
fixed_results["grad_conv1"] = model.features[0].weight.grad
fixed_results["grad_fc"] = model.fc.weight.grad
fixed_results["bn_running_mean"] = model.features[1].running_mean.clone()
model.zero_grad()

# ------------------------------------------------------------------------------ training

train_set = make_dataset(24)
test_set = make_dataset(8)
train_loader = DataLoader(train_set, batch_size=16, shuffle=True, collate_fn=collate_fn)
test_loader = DataLoader(test_set, batch_size=32, shuffle=False, collate_fn=collate_fn)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
mfcc_model = MFCCConv1d()
mfcc_optimizer = torch.optim.Adam(mfcc_model.parameters(), lr=0.01)
losses, mfcc_losses, batch_shapes = [], [], []


def number_of_correct(pred, target):
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    return tensor.argmax(dim=-1)


epochs = 4
for epoch in range(epochs):
    model.train()
    mfcc_model.train()
    for data, lengths, target in train_loader:
        batch_shapes.append((tuple(data.shape), lengths.max().item()))
        with torch.no_grad():
            log_mel = normalize(transform.log_mel(data)).unsqueeze(1)
            log_mel = mask_along_axis_iid(log_mel, mask_param=6, mask_value=0.0, axis=2)
            log_mel = mask_along_axis_iid(log_mel, mask_param=4, mask_value=0.0, axis=3)
            mfcc = normalize(transform.mfcc(data))
        output = model(log_mel)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

        mfcc_loss = criterion(mfcc_model(mfcc), target)
        mfcc_optimizer.zero_grad()
        mfcc_loss.backward()
        mfcc_optimizer.step()
        mfcc_losses.append(mfcc_loss.item())
    print(f"epoch {epoch}: loss {sum(losses[-6:]) / 6:.3f}, mfcc {sum(mfcc_losses[-6:]) / 6:.3f}")


def test(model, features):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, _, target in test_loader:
            pred = get_likely_index(model(features(data)))
            correct += number_of_correct(pred, target)
    return correct / len(test_loader.dataset)


accuracy = test(model, lambda d: normalize(transform.log_mel(d)).unsqueeze(1))
mfcc_accuracy = test(mfcc_model, lambda d: normalize(transform.mfcc(d)))
predicted = index_to_label(get_likely_index(
    model(normalize(transform.log_mel(make_clip(label_to_index("up").item(), 3000)))[None, None]))
    .item())
print(f"accuracy {accuracy:.3f}, mfcc accuracy {mfcc_accuracy:.3f}, 'up' -> {predicted!r}")
print(f"istft error {roundtrip_error:.2e}, griffin-lim {gl_convergence[0]:.3f} -> "
      f"{gl_final_convergence:.3f} (polar {gl_polar_convergence:.3f}), gradcheck "
      f"{gradcheck_results}")
