"""linalg.inv/det/slogdet/solve/cholesky/matrix_power beyond the opdb sweep: torch's errors
(LinAlgError texts), aliases (inverse, det, logdet), left=False, complex inputs vs torch."""

import numpy as np
import pytest

import jitgrad
from jitgrad.linalg import LinAlgError


@pytest.mark.parametrize("call,error,text", [
    (lambda: jitgrad.linalg.inv(jitgrad.zeros(2, 2)), LinAlgError,
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because "
     "the input matrix is singular."),
    (lambda: jitgrad.linalg.inv(jitgrad.tensor([[1.0, 2.0], [2.0, 4.0]])), LinAlgError,
     "The diagonal element 2 is zero"),
    (lambda: jitgrad.linalg.inv(jitgrad.ones(2, 3)), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: jitgrad.linalg.inv(jitgrad.ones(2, 2, dtype=jitgrad.int64)), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: jitgrad.linalg.det(jitgrad.ones(3)), RuntimeError,
     "linalg.det: The input tensor A must have at least 2 dimensions."),
    (lambda: jitgrad.linalg.cholesky(-jitgrad.eye(2)), LinAlgError,
     "linalg.cholesky: The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 1 is not positive-definite)."),
    (lambda: jitgrad.linalg.solve(jitgrad.zeros(2, 2), jitgrad.ones(2)), LinAlgError,
     "torch.linalg.solve: The solver failed because the input matrix is singular."),
    (lambda: jitgrad.linalg.solve(jitgrad.eye(2), jitgrad.ones(3)), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
    (lambda: jitgrad.linalg.solve(jitgrad.eye(2, dtype=jitgrad.float64), jitgrad.ones(2)),
     RuntimeError, "linalg.solve: Expected A and B to have the same dtype, but found A of type "
                   "Double and B of type Float instead"),
])
def test_torchs_errors(call, error, text):
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)
    assert issubclass(LinAlgError, RuntimeError)


def test_aliases_left_false_and_logdet():
    a = jitgrad.tensor([[2.0, 1.0], [0.5, 3.0]], dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.inverse is not None and a.inverse().grad_fn.name() == "LinalgInvExBackward0"
    np.testing.assert_allclose(jitgrad.det(a).item(), 5.5)
    np.testing.assert_allclose(a.logdet().item(), np.log(5.5))
    assert np.isnan(jitgrad.logdet(jitgrad.tensor([[0.0, 1.0], [1.0, 0.0]])).item())
    sign, logabs = jitgrad.linalg.slogdet(jitgrad.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert sign.item() == -1.0 and logabs.item() == 0.0
    b = jitgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=jitgrad.float64)
    x = jitgrad.linalg.solve(a, b, left=False)
    np.testing.assert_allclose((x @ a).detach().numpy(), b.numpy(), atol=1e-12)
    zero_power = jitgrad.linalg.matrix_power(a, 0)
    np.testing.assert_array_equal(zero_power.detach().numpy(), np.eye(2))
    zero_power.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 2)))


def test_second_derivatives_by_finite_differences():
    a = (jitgrad.rand(3, 3, dtype=jitgrad.float64) + 3 * jitgrad.eye(3, dtype=jitgrad.float64))
    a.requires_grad_()
    b = jitgrad.randn(3, 2, dtype=jitgrad.float64, requires_grad=True)
    for fn, inputs in [(jitgrad.linalg.inv, (a,)), (jitgrad.linalg.det, (a,)),
                       (lambda a: jitgrad.linalg.slogdet(a)[1], (a,)),
                       (jitgrad.linalg.solve, (a, b)),
                       (lambda m: jitgrad.linalg.cholesky(m @ m.mT + jitgrad.eye(
                           3, dtype=jitgrad.float64)), (a,))]:
        assert jitgrad.autograd.gradgradcheck(fn, inputs)


def test_complex_inputs_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 3 * np.eye(3)
    rhs = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    for name, arrays in [("inv", (m,)), ("det", (m,)), ("solve", (m, rhs)),
                         ("cholesky", (m @ m.conj().T,))]:
        ours = [jitgrad.tensor(x, requires_grad=True) for x in arrays]
        theirs = [torch.tensor(x, requires_grad=True) for x in arrays]
        jy, ty = getattr(jitgrad.linalg, name)(*ours), getattr(torch.linalg, name)(*theirs)
        np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
        jy.abs().sum().backward()
        ty.abs().sum().backward()
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10,
                                       err_msg=name)


def test_linalg_error_is_torchs_c_class_by_name():
    """torch.linalg.LinAlgError is torch._C._LinAlgError: its name in tracebacks, repr and
    type(e).__name__ (jitgrad's read LinAlgError of jitgrad.ops.linalg2), and it pickles."""
    import pickle

    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        assert lib._C._LinAlgError is lib.linalg.LinAlgError
        with pytest.raises(lib.linalg.LinAlgError) as err:
            lib.linalg.cholesky(-lib.eye(2))
        assert type(err.value).__name__ == "_LinAlgError"
        assert repr(pickle.loads(pickle.dumps(err.value))) == repr(err.value)
    assert jitgrad.linalg.LinAlgError.__module__ == "jitgrad._C"
