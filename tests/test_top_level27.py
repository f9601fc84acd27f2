"""Top-level names torch scripts use: frombuffer, the runtime flags, legacy bfloat16 and
storage classes, pdist and GradScaler, against torch's."""

import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _frombuffer(m):
    buf = bytearray(b"\x00\x00\x80?\x00\x00\x00@")
    t = m.frombuffer(buf, dtype=m.float32)
    t[0] = 5  # shares the buffer's memory
    out = [t.tolist(), bytes(buf), m.frombuffer(buf, dtype=m.int16, count=2, offset=2).tolist()]
    for bad in (lambda: m.frombuffer(bytearray(3), dtype=m.float32),
                lambda: m.frombuffer(bytearray(0), dtype=m.float32),
                lambda: m.frombuffer(bytearray(8), dtype=m.float32, count=3),
                lambda: m.frombuffer(bytearray(8), dtype=m.float32, offset=8)):
        with pytest.raises(ValueError) as e:
            bad()
        out.append(str(e.value))
    return out


def _flags(m):
    out = []
    m.set_warn_always(True)
    out.append(m.is_warn_always_enabled())
    m.set_warn_always(False)
    m.set_anomaly_enabled(True, check_nan=False)
    out += [m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()]
    m.set_anomaly_enabled(False)
    out += [m.is_anomaly_enabled(), m.is_anomaly_check_nan_enabled()]
    return out


def _legacy(m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = m.FloatStorage(3)
        return [str(s.dtype).split(".")[1], s.size(), isinstance(s, m.TypedStorage),
                m.BFloat16Storage([1.5]).tolist(), m.LongStorage([1, 2]).tolist(),
                m.BFloat16Tensor([1.5, 2.3]).tolist(),
                str(m.BFloat16Tensor([1.0]).dtype).split(".")[1]]


def _pdist(m):
    x = m.linspace(-1, 1, 12, dtype=m.float64).reshape(4, 3).requires_grad_()
    d = m.pdist(x, p=1.5)
    d.sum().backward()
    return [d.tolist(), x.grad.tolist(), m.GradScaler is m.amp.GradScaler]


@pytest.mark.parametrize("case", [_frombuffer, _flags, _legacy])
def test_as_torch(case):
    assert case(jg) == case(torch)


def test_pdist_values_and_gradient_as_torch():
    ours, theirs = _pdist(jg), _pdist(torch)
    for a, b in zip(ours[:2], theirs[:2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    assert ours[2] and theirs[2]


def test_warn_always_repeats_the_legacy_deprecations():
    x = jg.eye(2, dtype=jg.float64) * 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        jg.set_warn_always(True)
        try:
            jg.cholesky(x)
            jg.cholesky(x)
        finally:
            jg.set_warn_always(False)
    assert sum("torch.cholesky is deprecated" in str(w.message) for w in seen) == 2


def test_cudnn_flags_set_and_restore_as_torch():
    def run(m):
        c = m.backends.cudnn
        before = (c.enabled, c.allow_tf32, c.deterministic)
        with c.flags(enabled=False, allow_tf32=False, deterministic=True):
            inside = (c.enabled, c.allow_tf32, c.deterministic)
        return before, inside, (c.enabled, c.allow_tf32, c.deterministic)

    assert run(jg) == run(torch)


def test_backends_cuda_switches_as_torch():
    def run(m):
        c = m.backends.cuda
        # (allow_tf32's default is not compared: a script run earlier in this process, as
        # nanoGPT's, may have set it in both libraries)
        names = ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")
        defaults = [getattr(c.matmul, n) for n in names]
        before = c.matmul.allow_tf32
        c.matmul.allow_tf32 = not before  # nanoGPT's first line sets it
        changed = c.matmul.allow_tf32 is not before
        c.matmul.allow_tf32 = before
        with pytest.raises(AttributeError) as err:
            c.matmul.not_a_switch = 1
        sdp = [c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(), c.math_sdp_enabled()]
        c.enable_flash_sdp(False)
        off = c.flash_sdp_enabled()
        c.enable_flash_sdp(True)
        return defaults, changed, str(err.value), sdp, off, c.is_built()

    assert run(jg) == run(torch)
