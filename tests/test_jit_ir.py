"""The IR: golden print-outs, ``Graph.verify``, the passes one by one, the interpreter."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import interpreter
from jitgrad.jit import jit
from jitgrad._ir import Eqn, Graph, IRError, Var, type_str
from jitgrad.jit.passes import cse, dce
from jitgrad.ops.registry import OPS

F32 = jitgrad.float32


def _line(fn, offset):
    return f"test_jit_ir.py:{inspect.getsourcelines(fn)[1] + offset}"


def tanh_mse(x, w, y):
    h = (x @ w).tanh()
    return ((h - y) ** 2).mean()


def test_golden_forward_and_backward_ir():
    x = jitgrad.randn(4, 3)
    w = jitgrad.randn(3, 2, requires_grad=True)
    y = jitgrad.randn(4, 2)
    low = jit(tanh_mse, backend="interpreter").lower(x, w, y)
    l1, l2 = _line(tanh_mse, 1), _line(tanh_mse, 2)
    expected_fwd = f"""\
def forward(primals_1: f32[4,3], primals_2: f32[3,2], primals_3: f32[4,2]):
  t1: f32[4,2] = mm primals_1, primals_2                      # {l1}
  saved_1: f32[4,2] = tanh t1                                 # {l1}
  saved_2: f32[4,2] = sub saved_1, primals_3                  # {l2}
  t2: f32[4,2] = pow_scalar saved_2 exponent=2                # {l2}
  t3: f32[] = mean t2 dims=(0, 1) keepdim=False dtype=None    # {l2}
  return (t3,)  saved: (primals_1, saved_1, saved_2)"""
    assert low.forward_ir == expected_fwd


def tanh_sum(x, w):
    return (x @ w).tanh().sum()


def test_golden_backward_ir():
    x = jitgrad.randn(4, 3)
    w = jitgrad.randn(3, 2, requires_grad=True)
    low = jit(tanh_sum, backend="interpreter").lower(x, w)
    line = _line(tanh_sum, 1)
    assert low.forward_ir == f"""\
def forward(primals_1: f32[4,3], primals_2: f32[3,2]):
  t1: f32[4,2] = mm primals_1, primals_2                      # {line}
  saved_1: f32[4,2] = tanh t1                                 # {line}
  t2: f32[] = sum saved_1 dims=(0, 1) keepdim=False dtype=None  # {line}
  return (t2,)  saved: (primals_1, saved_1)"""
    # a residual has one name in the forward IR, the backward IR and the kernel listing
    assert low.backward_ir == f"""\
def backward(primals_1: f32[4,3], saved_1: f32[4,2], tangents_1: f32[]):
  t3: f32[1,1] = view tangents_1 shape=(1, 1)                 # {line}
  t4: f32[4,2] = expand t3 shape=(4, 2)                       # {line}
  t5: f32[4,2] = tanh_backward t4, saved_1                    # {line}
  t6: f32[3,4] = transpose primals_1 dim0=0 dim1=1            # {line}
  t7: f32[3,2] = mm t6, t5                                    # {line}
  return (None, t7)"""
    assert low.kernels["backward"].startswith(
        "def backward(primals_1: f32[4,3], saved_1: f32[4,2], tangents_1: f32[]):")


def test_golden_ir_without_grad_and_with_constants():
    def f(x):
        return x.relu() + jitgrad.tensor([1.0, 2.0, 3.0])

    text = jit(f, backend="interpreter").lower(jitgrad.randn(3)).forward_ir
    line = _line(f, 1)
    assert text == f"""\
def forward(primals_1: f32[3]):
  c1: f32[3] = const
  t1: f32[3] = relu primals_1                                 # {line}
  t2: f32[3] = add t1, c1                                     # {line}
  return (t2,)"""
    # a fusing backend's IR: the pipeline's fuse stage made one kernel, its body below it
    fused = jit(f, backend="numba").lower(jitgrad.randn(3)).forward_ir
    assert fused == f"""\
def forward(primals_1: f32[3]):
  c1: f32[3] = const
  t2: f32[3] = kernel[k0] primals_1, c1  # 2 ops, 1 outputs
      t1: f32[3] = relu primals_1                             # {line}
      t2: f32[3] = add t1, c1                                 # {line}
  return (t2,)"""


def test_no_grad_equations_are_marked():
    def f(x):
        with jitgrad.no_grad():
            s = x.sum()
        return x * s

    text = jit(f).lower(jitgrad.randn(2, requires_grad=True)).forward_ir
    assert "sum primals_1 dims=(0,) keepdim=False dtype=None  [no_grad]" in text


def test_type_str():
    assert type_str((128, 784), F32) == "f32[128,784]"
    assert type_str((), jitgrad.int64) == "i64[]"
    assert type_str((2,), jitgrad.bool) == "b8[2]"


# ---------------------------------------------------------------- verify


def _v(*shape, dt=F32):
    return Var(shape, dt)


def test_verify_catches_use_before_definition():
    a, b, c = _v(3), _v(3), _v(3)
    g = Graph([a], [c], [Eqn(OPS["add"], [a, b], {}, [c])])
    with pytest.raises(IRError, match="uses .* before it is defined"):
        g.verify()


def test_verify_catches_wrong_types():
    a, c = _v(3), _v(4)
    with pytest.raises(IRError, match="declares f32\\[4\\], its op gives f32\\[3\\]"):
        Graph([a], [c], [Eqn(OPS["exp"], [a], {}, [c])]).verify()
    d = _v(3, dt=jitgrad.float64)
    with pytest.raises(IRError, match="declares f64\\[3\\]"):
        Graph([a], [d], [Eqn(OPS["exp"], [a], {}, [d])]).verify()


def test_verify_catches_double_definition_and_undefined_outputs():
    a, c = _v(3), _v(3)
    with pytest.raises(IRError, match="defined twice"):
        Graph([a], [a], [Eqn(OPS["exp"], [a], {}, [a])]).verify()
    with pytest.raises(IRError, match="never defined"):
        Graph([a], [c], []).verify()
    Graph([a], [c], [Eqn(OPS["exp"], [a], {}, [c])]).verify()


# ---------------------------------------------------------------- passes


def test_dce_drops_dead_equations_and_constants():
    a, b, c, k = _v(3), _v(3), _v(3), _v(3)
    g = Graph([a], [c], [Eqn(OPS["exp"], [a], {}, [b]), Eqn(OPS["neg"], [a], {}, [c]),
                         Eqn(OPS["add"], [b, k], {}, [_v(3)])], consts={k: jitgrad.ones(3)})
    out = dce(g).verify()
    assert [e.op.name for e in out.eqns] == ["neg"] and not out.consts
    assert len(g.eqns) == 3  # passes are pure


def test_cse_merges_identical_equations():
    a, b, c, d = _v(3), _v(3), _v(3), _v(3)
    g = Graph([a], [d], [Eqn(OPS["exp"], [a], {}, [b]), Eqn(OPS["exp"], [a], {}, [c]),
                         Eqn(OPS["add"], [b, c], {}, [d])])
    out = cse(g).verify()
    assert [e.op.name for e in out.eqns] == ["exp", "add"]
    assert out.eqns[1].inputs == [b, b]
    # different literals (1 vs 1.0 vs True) and no_grad flags are not merged
    x, y, z = _v(3), _v(3), _v(3)
    g2 = Graph([a], [x, y, z], [Eqn(OPS["mul"], [a, 2], {}, [x]),
                                Eqn(OPS["mul"], [a, 2.0], {}, [y]),
                                Eqn(OPS["mul"], [a, 2], {}, [z], nograd=True)])
    assert len(cse(g2).eqns) == 3


def test_simplify_removes_identities():
    def f(x):
        return (-(-(x * 1 + 0) / 1)) ** 1

    text = jit(f).lower(jitgrad.randn(3)).forward_ir
    assert text.splitlines()[1:] == ["  return (primals_1,)"]


def test_simplify_keeps_broadcasting_and_promoting_identities():
    x = jitgrad.randn(3)
    text = jit(lambda x: x * jitgrad.ones(2, 3)).lower(x).forward_ir
    assert "mul" in text  # broadcasts to [2,3]: not an identity
    text = jit(lambda x: x + 0).lower(jitgrad.tensor([1, 2])).forward_ir
    assert "add" not in text
    text = jit(lambda x: x * 1.0).lower(jitgrad.tensor([1, 2])).forward_ir
    assert "mul" in text  # int * 1.0 promotes to float


def test_cse_and_dce_in_the_pipeline():
    def f(x):
        unused = x.exp() * 3  # noqa: F841
        return x.sin() + x.sin()

    text = jit(f).lower(jitgrad.randn(3)).forward_ir
    assert text.count("sin") == 1 and "exp" not in text


def test_debug_dumps_every_pass(monkeypatch, capsys):
    monkeypatch.setenv("JITGRAD_DEBUG", "1")
    jit(lambda x: (x * 2).sum())(jitgrad.randn(3, requires_grad=True))
    err = capsys.readouterr().err
    for name in ("trace", "dce", "cse", "simplify", "vjp", "partition"):
        assert f"after {name} ---" in err
    assert "def joint(" in err and "def backward(" in err


# ---------------------------------------------------------------- interpreter


def test_interpreter_runs_a_graph_with_eager_promotion():
    a = _v(3, dt=jitgrad.int64)
    b, c = _v(3), _v(3)
    g = Graph([a, b], [c], [Eqn(OPS["add"], [a, b], {}, [c])]).verify()
    run = interpreter.compile(g)
    out, = run([np.array([1, 2, 3]), np.array([0.5, 0.5, 0.5], dtype=np.float32)])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1.5, 2.5, 3.5])
    d = _v(3)
    g2 = Graph([b], [d], [Eqn(OPS["mul"], [b, 2], {}, [d])]).verify()
    assert interpreter.compile(g2)([np.ones(3, np.float32)])[0].dtype == np.float32
    assert interpreter.render(g2) == g2.format()


def test_run_eager_records_autograd():
    b, d = _v(3), _v(3)
    g = Graph([b], [d], [Eqn(OPS["exp"], [b], {}, [d])])
    x = jitgrad.randn(3, requires_grad=True)
    out, = interpreter.run_eager(g, [x])
    assert out.grad_fn.name() == "ExpBackward0"


@pytest.mark.parametrize("fn", [
    lambda x, y: x ** 2.5, lambda x, y: x / 2, lambda x, y: x + True, lambda x, y: x * y,
    lambda x, y: (x > 1.5) & (y < 1), lambda x, y: x.to(jitgrad.float64) - y,
    lambda x, y: jitgrad.where(x > 1, x, 0.5), lambda x, y: x.exp() + y.sqrt(),
    lambda x, y: jitgrad.maximum(x, y), lambda x, y: x.sum() * y,
], ids=["int_pow_float", "int_div", "int_add_bool", "int_mul_f32", "bool_and",
        "f64_sub_f32", "where_scalar", "int_exp", "maximum_mixed", "int_sum_mul"])
def test_interpreter_promotion_matches_eager(fn):
    x = jitgrad.tensor([1, 2, 3])
    y = jitgrad.tensor([0.5, 1.5, 2.5])
    e, j = fn(x, y), jit(fn, backend="interpreter")(x, y)
    assert j.dtype is e.dtype and tuple(j.shape) == tuple(e.shape)
    np.testing.assert_array_equal(j.numpy(), e.numpy())


def square_twice(x):
    y = x * x
    return (y + y.sin()).sum()


def test_cotangent_sums_carry_the_users_line():
    x = jitgrad.randn(4, requires_grad=True)
    low = jit(square_twice, backend="interpreter").lower(x)
    l1, l2 = _line(square_twice, 1), _line(square_twice, 2)
    sums = [ln for ln in low.backward_ir.splitlines() if "= add " in ln]
    # y is used twice (y + ..., y.sin()): its cotangents are summed at the line that uses
    # them; x * x: the two operand cotangents are summed at that line
    assert len(sums) == 2 and sums[0].endswith(f"# {l2}") and sums[1].endswith(f"# {l1}")
    assert "<string>" not in low.backward_ir and "<string>" not in low.forward_ir
