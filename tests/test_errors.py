"""Bad input gets torch's error type and text (with "torch" read as "jitgrad"), never a wrong
answer: the autograd entry points, tensors, broadcasting, and the graph's lifetime."""

import copy
import re

import pytest

import jitgrad

torch = pytest.importorskip("torch")


def run(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - compared with torch's below
        return type(e).__name__, str(e)
    return None


def leaf(lib):
    return lib.ones(2, requires_grad=True)


CASES = {
    "broadcast_mismatch": lambda lib: lib.ones(2) + lib.ones(3),
    "broadcast_mismatch_2d": lambda lib: lib.ones(2, 3) * lib.ones(4, 1, 2),
    "broadcast_trailing_dim_first": lambda lib: lib.ones(2, 3) + lib.ones(3, 2),
    "broadcast_leading_dim": lambda lib: lib.ones(2, 1, 3) + lib.ones(4, 5, 3),
    "ragged_nested_list": lambda lib: lib.tensor([[1, 2], [3]]),
    "ragged_deeper": lambda lib: lib.tensor([[[1], [2]], [[3]]]),
    "ragged_with_dtype": lambda lib: lib.tensor([[1.0, 2], [3, 4, 5]], dtype=lib.float32),
    "not_a_sequence": lambda lib: lib.tensor([[1, 2], 3]),
    "repeated_reduction_dim": lambda lib: lib.ones(2, 3).mean(dim=(0, -2)),
    # negative indices are errors in torch: NumPy would wrap them (a wrong answer)
    "gather_negative_index": lambda lib: lib.ones(2, 3).gather(1, lib.tensor([[-1], [0]])),
    "gather_index_too_big": lambda lib: lib.ones(2, 3).gather(1, lib.tensor([[3], [0]])),
    "index_select_negative": lambda lib: lib.ones(2, 3).index_select(1, lib.tensor([-1])),
    "index_select_dim0": lambda lib: lib.ones(2, 3).index_select(0, lib.tensor([5, 0])),
    "index_copy_negative": lambda lib: lib.ones(2, 3).index_copy(1, lib.tensor([-1]),
                                                                 lib.ones(2, 1)),
    "masked_fill_broadcast": lambda lib: lib.ones(2, 3).masked_fill(
        lib.zeros(3, 2, dtype=lib.bool), 1),
    "empty_max": lambda lib: lib.zeros(0).max(),
    "empty_amin": lambda lib: lib.zeros(0).amin(),
    "negative_dimension": lambda lib: lib.ones((2, -3)),
    "negative_dimension_randint": lambda lib: lib.randint(3, (-1,)),
    "bitwise_on_floats": lambda lib: lib.zeros(3) | 1,
    "cat_of_nothing": lambda lib: lib.cat([]),
    "inplace_broadcast": lambda lib: lib.ones(2).mul_(lib.ones(2, 2)),
    "view_bad_size": lambda lib: lib.ones(2, 3).view(4),
    "dim_out_of_range": lambda lib: lib.ones(2, 3).sum(3),
    "detach_view_in_place": lambda lib: (leaf(lib) * 1)[0].detach_(),
    "detach_slice_in_place": lambda lib: (leaf(lib) * 1)[1:].detach_(),
    "deepcopy_non_leaf": lambda lib: copy.deepcopy(leaf(lib) * 2),
    "backward_integer_output": lambda lib: lib.ones(2, dtype=lib.int64).sum().backward(),
    "backward_no_grad": lambda lib: lib.ones(2).sum().backward(),
    "backward_non_scalar": lambda lib: (leaf(lib) * 2).backward(),
    "backward_list_gradient": lambda lib: (leaf(lib) * 2).sum().backward([1.0]),
    "backward_number_gradient": lambda lib: lib.autograd.backward((leaf(lib) * 2).sum(), 1.0),
    "backward_non_tensor_output": lambda lib: lib.autograd.backward([1.0]),
    "backward_wrong_gradient_shape": lambda lib: (leaf(lib) * 2).backward(lib.ones(2, 2)),
    "grad_wrong_gradient_shape": lambda lib: (lambda x: lib.autograd.grad(
        x * 2, x, lib.ones(3)))(leaf(lib)),
    "grad_number_output": lambda lib: lib.autograd.grad(1.0, leaf(lib)),
    "grad_twice": lambda lib: (lambda x: (lambda y: (lib.autograd.grad(y, x),
                                                     lib.autograd.grad(y, x)))(
        (x * x).sum()))(leaf(lib)),
    "grad_unused": lambda lib: lib.autograd.grad((leaf(lib) * 2).sum(), leaf(lib)),
    "grad_input_without_grad": lambda lib: lib.autograd.grad((leaf(lib) * 2).sum(),
                                                              lib.ones(2)),
    "implicit_grad_complex": lambda lib: (lib.ones(2, dtype=lib.complex64, requires_grad=True)
                                          * 2).sum().backward(),
    "integer_cast_loses_graph": lambda lib: (leaf(lib) * 2).long().sum().backward(),
    "requires_grad_int": lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_(),
    "requires_grad_non_leaf": lambda lib: (leaf(lib) * 2).requires_grad_(False),
    "leaf_in_place": lambda lib: leaf(lib).mul_(2),
    "item_of_many": lambda lib: lib.ones(3).item(),
    "numpy_requires_grad": lambda lib: leaf(lib).numpy(),
    "bool_of_many": lambda lib: bool(lib.ones(2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_matches_torch(name):
    fn = CASES[name]
    terr = run(fn, torch)
    assert terr is not None, "torch did not raise"
    assert run(fn, jitgrad) == (terr[0], re.sub(r"\btorch\b", "jitgrad", terr[1]))


def test_failed_backward_leaves_grad_mode_and_grads_alone():
    x = jitgrad.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    assert jitgrad.is_grad_enabled()
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_checks_its_outputs_before_its_inputs():
    # (torch's order: an output without a graph is named before an input without grad)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn"):
        jitgrad.autograd.grad(jitgrad.ones(2).sum(), jitgrad.ones(2))
    x = jitgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require "
                                           "grad"):
        jitgrad.autograd.grad((x * 2).sum(), jitgrad.ones(2))
