# ruff: noqa: N812 (the usual F alias)
"""A DDSP harmonic-plus-noise synthesiser, written for these tests the way the DDSP papers'
PyTorch ports (acids-ircam's ``ddsp_pytorch`` ``core.py``, and the Magenta DDSP library's
synths as people port them) write torch code (not a copy of either):

- controls at frame rate upsampled to audio rate with ``F.interpolate`` (``mode="linear"``,
  with and without ``align_corners``) and by ``repeat_interleave``-style nearest upsampling;
- an additive harmonic oscillator: instantaneous phase as ``torch.cumsum`` of ``2 pi f0 / sr``
  (wrapped with ``torch.remainder``), harmonics ``k * phase``, amplitudes through DDSP's
  ``scale_function`` (``sigmoid ** log 10``), a Nyquist mask ``(k f0 < sr / 2).float()`` and
  normalisation of the harmonic distribution;
- filtered noise by frequency sampling: magnitudes as ``torch.view_as_complex`` of
  ``(amp, 0)`` pairs, ``torch.fft.irfft``, a ``torch.roll`` to zero phase, a
  ``torch.hann_window``, zero padding, and convolution of framed noise through
  ``torch.fft.rfft`` products (vs a direct ``F.conv1d`` FIR);
- a learnable reverb: an exponentially decaying noise impulse (``F.softplus``, ``sigmoid``
  wet gain, ``impulse[:, 0] = 1`` in place) convolved by FFT;
- a multi-scale spectral loss: ``torch.stft`` at four ``n_fft`` (its positional arguments,
  ``normalized=True``, ``return_complex=True``), linear and log magnitudes;
- fitting the amplitudes, harmonic distribution and f0 of a target by Adam (the loss falls),
  gradients on fixed controls vs the same script on torch, and gradcheck in float64.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
fixed_results = {}

SAMPLE_RATE = 8000
BLOCK_SIZE = 64  # audio samples per control frame
N_FRAMES = 24
N_SAMPLES = BLOCK_SIZE * N_FRAMES
N_HARMONICS = 12
N_BANDS = 17  # noise filter magnitudes: irfft gives a 32-tap filter


# ------------------------------------------------------------------------------ core


def scale_function(x):
    return 2 * torch.sigmoid(x) ** (math.log(10)) + 1e-7


def upsample(signal, factor, mode="linear"):
    """(B, frames, C) -> (B, frames * factor, C), as ddsp_pytorch does (channels moved)."""
    signal = signal.permute(0, 2, 1)
    if mode == "linear":
        signal = F.interpolate(signal, size=signal.shape[-1] * factor, mode="linear",
                               align_corners=False)
    else:
        signal = F.interpolate(signal, scale_factor=factor, mode="nearest")
    return signal.permute(0, 2, 1)


def remove_above_nyquist(amplitudes, pitch, sampling_rate):
    n_harm = amplitudes.shape[-1]
    pitches = pitch * torch.arange(1, n_harm + 1).to(pitch)
    aa = (pitches < sampling_rate / 2).float() + 1e-4
    return amplitudes * aa


def harmonic_synth(pitch, amplitudes, sampling_rate):
    """pitch (B, T, 1) in Hz, amplitudes (B, T, K) at audio rate -> (B, T, 1)."""
    n_harmonic = amplitudes.shape[-1]
    omega = torch.cumsum(2 * math.pi * pitch / sampling_rate, 1)
    omegas = omega * torch.arange(1, n_harmonic + 1).to(omega)
    signal = (torch.sin(omegas) * amplitudes).sum(-1, keepdim=True)
    return signal


def amp_to_impulse_response(amp, target_size):
    """Zero-phase, windowed FIR of ``target_size`` taps from (..., bands) magnitudes."""
    amp = torch.stack([amp, torch.zeros_like(amp)], -1)
    amp = torch.view_as_complex(amp)
    amp = torch.fft.irfft(amp)
    filter_size = amp.shape[-1]
    amp = torch.roll(amp, filter_size // 2, -1)
    win = torch.hann_window(filter_size, dtype=amp.dtype, device=amp.device)
    amp = amp * win
    amp = F.pad(amp, (0, int(target_size) - int(filter_size)))
    amp = torch.roll(amp, -filter_size // 2, -1)
    return amp


def fft_convolve(signal, kernel):
    """Linear convolution through the FFT (both zero-padded to twice the length)."""
    signal = F.pad(signal, (0, signal.shape[-1]))
    kernel = F.pad(kernel, (kernel.shape[-1], 0))
    output = torch.fft.irfft(torch.fft.rfft(signal) * torch.fft.rfft(kernel))
    output = output[..., output.shape[-1] // 2:]
    return output


def direct_convolve(signal, kernel):
    """The same causal convolution as ``fft_convolve`` with ``F.conv1d`` (one filter per
    frame: the frames go to the channel axis as groups)."""
    B, frames, n = signal.shape
    x = F.pad(signal.reshape(1, B * frames, n), (n - 1, 0))
    w = kernel.reshape(B * frames, 1, n).flip(-1)
    return F.conv1d(x, w, groups=B * frames).reshape(B, frames, n)


def filtered_noise(noise_param, block_size, noise=None):
    """noise_param (B, frames, bands) -> (B, frames * block_size, 1)."""
    impulse = amp_to_impulse_response(noise_param, block_size)
    if noise is None:
        noise = torch.rand(impulse.shape[0], impulse.shape[1], block_size).to(impulse) * 2 - 1
    noise = fft_convolve(noise, impulse).contiguous()
    return noise.reshape(noise.shape[0], -1, 1)


class Reverb(nn.Module):
    def __init__(self, length, sampling_rate, initial_wet=0.0, initial_decay=5.0):
        super().__init__()
        self.length = length
        self.sampling_rate = sampling_rate
        self.noise = nn.Parameter((torch.rand(length) * 2 - 1).unsqueeze(-1))
        self.decay = nn.Parameter(torch.tensor(float(initial_decay)))
        self.wet = nn.Parameter(torch.tensor(float(initial_wet)))
        t = torch.arange(self.length) / self.sampling_rate
        t = t.reshape(1, -1, 1)
        self.register_buffer("t", t)

    def build_impulse(self):
        t = torch.exp(-F.softplus(-self.decay) * self.t * 500)
        noise = self.noise * t
        impulse = noise * torch.sigmoid(self.wet)
        impulse[:, 0] = 1
        return impulse

    def forward(self, x):
        lenx = x.shape[1]
        impulse = self.build_impulse()
        impulse = F.pad(impulse, (0, 0, 0, lenx - self.length))
        return fft_convolve(x.squeeze(-1), impulse.squeeze(-1)).unsqueeze(-1)


class HarmonicPlusNoise(nn.Module):
    """The synthesis half of DDSP's decoder: raw controls in, audio out."""

    def __init__(self, sampling_rate, block_size, reverb_length=256):
        super().__init__()
        self.sampling_rate = sampling_rate
        self.block_size = block_size
        self.reverb = Reverb(reverb_length, sampling_rate, initial_wet=-2.0)

    def forward(self, pitch, raw_amplitudes, raw_noise, noise=None, reverb=True):
        param = scale_function(raw_amplitudes)
        total_amp = param[..., :1]
        amplitudes = param[..., 1:]
        amplitudes = remove_above_nyquist(amplitudes, pitch, self.sampling_rate)
        amplitudes = amplitudes / amplitudes.sum(-1, keepdim=True)
        amplitudes = amplitudes * total_amp
        amplitudes = upsample(amplitudes, self.block_size)
        pitch = upsample(pitch, self.block_size)
        harmonic = harmonic_synth(pitch, amplitudes, self.sampling_rate)
        noise = filtered_noise(scale_function(raw_noise - 5), self.block_size, noise)
        signal = harmonic + noise
        if reverb:
            signal = self.reverb(signal)
        return signal


def safe_log(x, eps=1e-7):
    return torch.log(x + eps)


def multiscale_fft(signal, scales, overlap):
    stfts = []
    for s in scales:
        # jitgrad-diff: ddsp_pytorch writes torch.hann_window(s).to(signal); ~3% of the float32
        # window's entries are an ulp off torch's (its SLEEF cosf), which the log magnitudes
        # of the sidelobe bins amplify to 1e-3 in the float64 fixed-weight gradients below
        window = torch.hann_window(s, dtype=signal.dtype)
        S = torch.stft(signal, s, int(s * (1 - overlap)), s, window,
                       True, normalized=True, return_complex=True).abs()
        stfts.append(S)
    return stfts


SCALES = [256, 128, 64, 32]


def spectral_loss(x, y, scales=SCALES, overlap=0.75, log_eps=1e-7):
    ori_stft = multiscale_fft(y, scales, overlap)
    rec_stft = multiscale_fft(x, scales, overlap)
    loss = 0
    for s_x, s_y in zip(ori_stft, rec_stft):
        lin_loss = (s_x - s_y).abs().mean()
        log_loss = (safe_log(s_x, log_eps) - safe_log(s_y, log_eps)).abs().mean()
        loss = loss + lin_loss + log_loss
    return loss


# ----------------------------------------------------------------------- controls


def make_controls(f0_start, f0_end, n_frames=N_FRAMES, batch=1, decay=3.0, noise_db=3.0,
                  dtype=torch.float32):
    """A glide from f0_start to f0_end Hz, a decaying loudness and a falling spectrum."""
    frames = torch.linspace(0, 1, n_frames, dtype=dtype)
    f0 = (f0_start + (f0_end - f0_start) * frames).reshape(1, -1, 1).repeat(batch, 1, 1)
    total = 2.0 - decay * frames
    k = torch.arange(1, N_HARMONICS + 1, dtype=dtype)
    spectrum = 1.5 - 0.5 * k + 0.2 * torch.cos(frames[:, None] * k)
    raw_amplitudes = torch.cat([total[:, None], spectrum], -1)[None].repeat(batch, 1, 1)
    raw_noise = (noise_db - 0.2 * torch.arange(N_BANDS, dtype=dtype) / N_BANDS).expand(
        batch, n_frames, N_BANDS).clone()
    return f0, raw_amplitudes, raw_noise


# ----------------------------------------------------- fixed-weight checks (recorded)

# upsampling: linear interpolation keeps the frame values at the block centres' neighbours
controls = torch.randn(2, 5, 3)
up_linear = upsample(controls, 4)
up_nearest = upsample(controls, 4, mode="nearest")
fixed_results["upsample_linear"] = up_linear
fixed_results["upsample_align"] = F.interpolate(controls.transpose(1, 2), size=17,
                                                mode="linear", align_corners=True)
nearest_is_repeat = torch.equal(up_nearest, controls.repeat_interleave(4, dim=1))

# the harmonic oscillator: one harmonic of a constant f0 is a sine of the right frequency
t = torch.arange(N_SAMPLES, dtype=torch.float64)
f0_const = torch.full((1, N_SAMPLES, 1), 250.0, dtype=torch.float64)
one = torch.zeros(1, N_SAMPLES, 3, dtype=torch.float64)
one[..., 1] = 1.0  # only the second harmonic: 500 Hz
tone = harmonic_synth(f0_const, one, SAMPLE_RATE).squeeze()
sine_error = (tone - torch.sin(2 * math.pi * 500 * (t + 1) / SAMPLE_RATE)).abs().max().item()
spectrum = torch.fft.rfft(tone).abs()
tone_peak_hz = spectrum.argmax().item() * SAMPLE_RATE / N_SAMPLES
wrapped = torch.remainder(torch.cumsum(2 * math.pi * f0_const / SAMPLE_RATE, 1), 2 * math.pi)
wrap_error = (torch.sin(wrapped).squeeze() - torch.sin(
    torch.cumsum(2 * math.pi * f0_const / SAMPLE_RATE, 1)).squeeze()).abs().max().item()

# the Nyquist mask: harmonics at or above sr / 2 keep only 1e-4 of their amplitude
pitch_frames = torch.tensor([[[300.0], [700.0], [1500.0]]])
masked = remove_above_nyquist(torch.ones(1, 3, N_HARMONICS), pitch_frames, SAMPLE_RATE)
fixed_results["nyquist_mask"] = masked
audible = (masked > 0.5).sum(-1).squeeze()

# the noise filter: impulse responses, their zero-phase symmetry, and FFT vs direct conv
bands = torch.rand(2, 3, N_BANDS, dtype=torch.float64)
impulse = amp_to_impulse_response(bands, BLOCK_SIZE)
fixed_results["impulse"] = impulse
taps = 2 * (N_BANDS - 1)
centred = torch.roll(impulse, taps // 2, -1)[..., :taps]
symmetric_error = (centred[..., 1:] - centred[..., 1:].flip(-1)).abs().max().item()
frame_noise = torch.rand(2, 3, BLOCK_SIZE, dtype=torch.float64) * 2 - 1
fft_out = fft_convolve(frame_noise, impulse)
fixed_results["fft_convolve"] = fft_out
conv_error = (fft_out - direct_convolve(frame_noise, impulse)).abs().max().item()
# a flat response of ones is a (windowed) unit impulse at tap zero
flat = amp_to_impulse_response(torch.ones(1, 1, N_BANDS, dtype=torch.float64), BLOCK_SIZE)
flat_peak = flat.abs().argmax().item(), flat[0, 0, 0].item()

# the reverb: an impulse with a unit first tap, a decaying tail; gradients reach every param
torch.manual_seed(1)
reverb = Reverb(128, SAMPLE_RATE, initial_wet=-1.0, initial_decay=-1.0)
impulse_r = reverb.build_impulse()
fixed_results["reverb_impulse"] = impulse_r.detach()
dry = torch.randn(2, 512, 1)
wet = reverb(dry)
wet.pow(2).mean().backward()
fixed_results["reverb"] = {"out": wet.detach(), "grad_decay": reverb.decay.grad.clone(),
                           "grad_wet": reverb.wet.grad.clone(),
                           "grad_noise": reverb.noise.grad.clone()}
reverb_first_tap = impulse_r[0, 0, 0].item()

# the full synthesiser on fixed controls with fixed noise: audio, loss and gradients
# (float64: the phase reaches 12 * 2 pi * 330 Hz * 0.19 s = 4800 rad, where float32's
# spacing is 5e-4, and the log magnitudes of near-silent bins amplify any rounding; the
# target's noise differs from the estimate's, or |log a - log b| of bins both leave to the
# same noise would sit at its kink, where any rounding flips the gradient's sign)
torch.manual_seed(2)
synth = HarmonicPlusNoise(SAMPLE_RATE, BLOCK_SIZE, reverb_length=128).double()
f0, raw_amp, raw_noise = make_controls(220.0, 330.0, batch=2, dtype=torch.float64)
raw_amp.requires_grad_()
raw_noise.requires_grad_()
f0.requires_grad_()
fixed_noise = torch.rand(2, N_FRAMES, BLOCK_SIZE, dtype=torch.float64) * 2 - 1
audio = synth(f0, raw_amp, raw_noise, noise=fixed_noise)
fixed_results["audio"] = audio.detach()
target_noise = torch.rand(2, N_FRAMES, BLOCK_SIZE, dtype=torch.float64) * 2 - 1
target_audio = synth(*make_controls(200.0, 300.0, batch=2, noise_db=2.0, dtype=torch.float64),
                     noise=target_noise).detach()
loss = spectral_loss(audio.squeeze(-1), target_audio.squeeze(-1))
loss.backward()
fixed_results["loss"] = loss.item()
fixed_results["grads"] = {"f0": f0.grad.clone(), "amplitudes": raw_amp.grad.clone(),
                          "noise": raw_noise.grad.clone(),
                          "reverb.decay": synth.reverb.decay.grad.clone(),
                          "reverb.wet": synth.reverb.wet.grad.clone()}
fixed_results["stfts"] = {str(n_fft): s for n_fft, s in zip(
    SCALES, multiscale_fft(audio.detach().squeeze(-1), SCALES, 0.75))}

# gradcheck in float64: the oscillator, the noise filter, the FFT convolution, the stft loss
g_pitch = (200 + 50 * torch.rand(1, 8, 1, dtype=torch.float64)).requires_grad_()
g_amps = torch.rand(1, 8, 3, dtype=torch.float64, requires_grad=True)
g_bands = torch.rand(1, 2, 5, dtype=torch.float64, requires_grad=True)
g_sig = torch.randn(1, 2, 8, dtype=torch.float64, requires_grad=True)
g_x = torch.randn(1, 64, dtype=torch.float64, requires_grad=True)
g_y = torch.randn(1, 64, dtype=torch.float64)
gradcheck_results = {
    "harmonic": torch.autograd.gradcheck(
        lambda p, a: harmonic_synth(p, a, SAMPLE_RATE), (g_pitch, g_amps)),
    "impulse": torch.autograd.gradcheck(lambda b: amp_to_impulse_response(b, 12), (g_bands,)),
    "fft_convolve": torch.autograd.gradcheck(
        fft_convolve, (g_sig, torch.randn(1, 2, 8, dtype=torch.float64, requires_grad=True))),
    "upsample": torch.autograd.gradcheck(lambda a: upsample(a, 4), (g_amps,)),
    "spectral_loss": torch.autograd.gradcheck(
        lambda x: spectral_loss(x, g_y, scales=[32, 16], overlap=0.75), (g_x,)),
}

# ------------------------------------------------------------------- fitting by Adam

# the amplitudes and noise filter of a 220 -> 260 Hz glide, f0 given (as DDSP's decoder gets
# it from a pitch tracker); the fit starts from a flat spectrum and flat noise
torch.manual_seed(3)
fit_synth = HarmonicPlusNoise(SAMPLE_RATE, BLOCK_SIZE, reverb_length=64)
target_f0, target_amp, target_noise = make_controls(220.0, 260.0)
with torch.no_grad():
    target = fit_synth(target_f0, target_amp, target_noise, reverb=False).squeeze(-1)
amp_param = nn.Parameter(torch.zeros(1, N_FRAMES, N_HARMONICS + 1))
noise_param = nn.Parameter(torch.full((1, N_FRAMES, N_BANDS), 2.0))
optimizer = torch.optim.Adam([amp_param, noise_param], lr=0.1)
fit_losses = []
for step in range(30):
    optimizer.zero_grad()
    estimate = fit_synth(target_f0, amp_param, noise_param, reverb=False).squeeze(-1)
    loss = spectral_loss(estimate, target)
    loss.backward()
    if step == 0:
        fit_first_grads = {"amplitudes": amp_param.grad.clone(), "noise": noise_param.grad.clone()}
    optimizer.step()
    fit_losses.append(loss.item())
with torch.no_grad():
    def harmonic_distribution(raw):
        amps = scale_function(raw)[..., 1:]
        return amps / amps.sum(-1, keepdim=True)
    spectrum_error_before = (harmonic_distribution(torch.zeros_like(target_amp))
                             - harmonic_distribution(target_amp)).abs().sum(-1).mean().item()
    spectrum_error_after = (harmonic_distribution(amp_param)
                            - harmonic_distribution(target_amp)).abs().sum(-1).mean().item()

# f0 of a steady three-harmonic tone, 236 Hz towards 240 Hz, by the waveform's MSE over
# 48 ms (the phase drifts less than a radian there: spectral losses give f0 no useful gradient,
# the known failure of sinusoidal frequency estimation by gradient descent)
n_tone = 384
tone_amps = torch.ones(1, n_tone, 3) * torch.tensor([1.0, 0.5, 0.25])
tone_target = harmonic_synth(torch.full((1, n_tone, 1), 240.0), tone_amps, SAMPLE_RATE)
log_f0 = nn.Parameter(torch.tensor(math.log(236.0)))
f0_optimizer = torch.optim.Adam([log_f0], lr=0.003)
f0_losses, f0_track = [], []
for _ in range(30):
    f0_optimizer.zero_grad()
    estimate = harmonic_synth(log_f0.exp().expand(1, n_tone, 1), tone_amps, SAMPLE_RATE)
    loss = F.mse_loss(estimate, tone_target)
    loss.backward()
    f0_optimizer.step()
    f0_losses.append(loss.item())
    f0_track.append(log_f0.exp().item())

print(f"sine error {sine_error:.2e}, peak {tone_peak_hz:.1f} Hz, conv error {conv_error:.2e}, "
      f"fit loss {fit_losses[0]:.3f} -> {fit_losses[-1]:.3f}, spectrum error "
      f"{spectrum_error_before:.3f} -> {spectrum_error_after:.3f}, f0 {f0_track[0]:.1f} -> "
      f"{f0_track[-1]:.1f} Hz")
