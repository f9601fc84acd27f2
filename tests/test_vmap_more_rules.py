"""vmap batching rules (no per-sample loop, no performance warning) for ``linalg.solve``
(vectors or matrices), the triangular and Cholesky solves, with batches of matrices per sample,
``diagonal``/``diag_embed`` (and the diagonal's backward), and ``searchsorted``; each checked
against a loop over the samples."""

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.func import grad, vmap

RNG = np.random.default_rng(0)


def _t(*shape):
    return jitgrad.tensor(RNG.standard_normal(shape))


def _lower(*shape):
    n = shape[-1]
    return jitgrad.tensor(np.tril(RNG.standard_normal(shape)) + 3 * np.eye(n))


def _solve(a, b):
    return jitgrad.linalg.solve_triangular(a, b, upper=False)


def _looped(fn, in_dims, *args):
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    rows = [fn(*(a if d is None else a.select(d, i) for a, d in zip(args, in_dims)))
            for i in range(size)]
    return jitgrad.stack(rows)


CASES = {
    "solve_triangular": (_solve, (0, 0), lambda: (_lower(4, 3, 3), _t(4, 3, 2))),
    "solve_triangular, shared matrix": (_solve, (None, 0), lambda: (_lower(3, 3), _t(4, 3, 2))),
    "solve_triangular, batches per sample": (_solve, (0, 0),
                                             lambda: (_lower(4, 5, 3, 3), _t(4, 5, 3, 2))),
    "solve_triangular, shared right side": (_solve, (0, None),
                                            lambda: (_lower(4, 5, 3, 3), _t(5, 3, 2))),
    "solve_triangular, right": (
        lambda a, b: jitgrad.linalg.solve_triangular(a, b, upper=False, left=False), (0, 0),
        lambda: (_lower(4, 5, 3, 3), _t(4, 5, 2, 3))),
    "cholesky_solve": (jitgrad.cholesky_solve, (0, 0),
                       lambda: (_t(4, 5, 3, 2), _lower(4, 5, 3, 3))),
    "cholesky_solve, shared factor": (jitgrad.cholesky_solve, (0, None),
                                      lambda: (_t(4, 5, 3, 2), _lower(5, 3, 3))),
    "solve, vector": (jitgrad.linalg.solve, (0, 0), lambda: (_lower(4, 3, 3), _t(4, 3))),
    "solve, matrix": (jitgrad.linalg.solve, (0, 0), lambda: (_lower(4, 3, 3), _t(4, 3, 2))),
    "solve, vector over batches": (jitgrad.linalg.solve, (0, 0),
                                   lambda: (_lower(4, 5, 3, 3), _t(4, 3))),
    "solve, vectors of batches": (jitgrad.linalg.solve, (0, 0),
                                  lambda: (_lower(4, 5, 3, 3), _t(4, 5, 3))),
    "solve, shared matrices": (jitgrad.linalg.solve, (None, 0),
                               lambda: (_lower(5, 3, 3), _t(4, 3))),
    "solve, shared vectors": (jitgrad.linalg.solve, (0, None),
                              lambda: (_lower(4, 5, 3, 3), _t(5, 3))),
    "solve, shared square matrix": (jitgrad.linalg.solve, (0, None),
                                    lambda: (_lower(4, 3, 3), _t(3, 3))),
    "solve, right": (lambda a, b: jitgrad.linalg.solve(a, b, left=False), (0, 0),
                     lambda: (_lower(4, 5, 3, 3), _t(4, 5, 2, 3))),
    "diagonal": (jitgrad.diagonal, (0,), lambda: (_t(4, 3, 5, 5),)),
    "diagonal, dims": (lambda x: jitgrad.diagonal(x, 1, 0, 2), (0,), lambda: (_t(4, 3, 5, 5),)),
    "diagonal, negative dims": (lambda x: jitgrad.diagonal(x, -1, -1, -2), (0,),
                                lambda: (_t(4, 3, 5, 5),)),
    "diag_embed": (lambda x: jitgrad.diag_embed(x, 1), (0,), lambda: (_t(4, 3, 5),)),
    "diag": (jitgrad.diag, (0,), lambda: (_t(4, 5, 5),)),
    "searchsorted": (jitgrad.searchsorted, (0, 0),
                     lambda: (jitgrad.sort(_t(4, 6)).values, _t(4, 7))),
    "searchsorted, shared boundaries": (jitgrad.searchsorted, (None, 0),
                                        lambda: (jitgrad.sort(_t(6)).values, _t(4, 7))),
    "searchsorted, shared values": (jitgrad.searchsorted, (0, None),
                                    lambda: (jitgrad.sort(_t(4, 6)).values, _t(7))),
    "searchsorted, 1-d boundaries of rows": (
        lambda s, v: jitgrad.searchsorted(s, v, right=True), (0, 0),
        lambda: (jitgrad.sort(_t(4, 6)).values, _t(4, 2, 7))),
    "searchsorted, n-d": (jitgrad.searchsorted, (0, 0),
                          lambda: (jitgrad.sort(_t(4, 2, 6)).values, _t(4, 2, 7))),
    "searchsorted, a value per sample": (jitgrad.searchsorted, (0, 0),
                                         lambda: (jitgrad.sort(_t(4, 6)).values, _t(4))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_batched_as_a_loop_and_without_the_fallback(name):
    fn, in_dims, make = CASES[name]
    args = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the loop fallback warns of a performance drop)
        out = vmap(fn, in_dims=in_dims)(*args)
    np.testing.assert_allclose(out.numpy(), _looped(fn, in_dims, *args).numpy(), rtol=1e-12)


def test_per_sample_gradients_through_the_new_rules():
    a, b = _lower(4, 3, 3), _t(4, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ga = vmap(grad(lambda m, r: _solve(m, r).sum()))(a, b)
        gd = vmap(grad(lambda m: jitgrad.diagonal(m @ m).sum()))(a)
    rows = [grad(lambda m, r: _solve(m, r).sum())(a[i], b[i]) for i in range(4)]
    np.testing.assert_allclose(ga.numpy(), jitgrad.stack(rows).numpy(), rtol=1e-12)
    assert (np.triu(ga.numpy(), 1) == 0).all()  # (the solve reads the lower triangle only)
    np.testing.assert_allclose(gd.numpy(), 2 * a.mT.numpy(), rtol=1e-12)  # (d tr(m m) = 2 m^T)


def test_control_flow_on_a_primal_that_vmap_does_not_batch():
    # grad inside vmap lifts an unbatched primal to the batch; torch keeps it unbatched, so
    # bool() and item() of what is made from it alone work, per sample the same
    p, y = jitgrad.ones(3, dtype=jitgrad.float64), _t(4, 3)

    def branchy(p, y):
        if bool((p > 0).all()):
            return (p * y).sum() * p.sum().item()
        return 2 * (p * y).sum()

    np.testing.assert_allclose(vmap(grad(branchy), in_dims=(None, 0))(p, y).numpy(),
                               3 * y.numpy(), rtol=1e-12)

    def on_batched(p, y):
        return (p * y).sum() if bool((y > 0).all()) else p.sum()

    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(grad(on_batched), in_dims=(None, 0))(p, y)
    with pytest.raises(RuntimeError, match="calling .item"):
        vmap(lambda v: v.sum().item())(y)


def test_is_all_true_reduces_over_every_sample():
    y = _t(4, 3)
    assert vmap(lambda v: jitgrad._is_all_true(v > -100))(y).tolist() == [True] * 4
    assert not bool(jitgrad._is_all_true(jitgrad.tensor([True, False])))
    assert bool(jitgrad._is_any_true(jitgrad.tensor([[True, False]])))
    flags = vmap(vmap(lambda v: jitgrad._is_all_true(v > 0)))(_t(4, 3, 2))
    assert flags.shape == (4, 3) and not flags.any()  # (one value: all of everything)
    with pytest.raises(RuntimeError, match="kBool"):
        jitgrad._is_all_true(jitgrad.tensor([1, 2]))


def test_a_validated_distribution_inside_vmap_of_grad():
    scale = jitgrad.tensor([[2.0, 0.0], [1.0, 3.0]], dtype=jitgrad.float64)
    xs = _t(4, 2)
    dist = jitgrad.distributions

    def log_prob(scale_tril, x):
        return dist.MultivariateNormal(jitgrad.zeros(2, dtype=jitgrad.float64),
                                       scale_tril=scale_tril).log_prob(x)

    per_sample = vmap(grad(log_prob), in_dims=(None, 0))(scale, xs)
    rows = [grad(log_prob)(scale, xs[i]) for i in range(4)]
    np.testing.assert_allclose(per_sample.numpy(), jitgrad.stack(rows).numpy(), rtol=1e-12)
