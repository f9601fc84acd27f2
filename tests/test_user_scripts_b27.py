"""Scripts (set B) written for these tests in the way the PyTorch tutorials on torch.func,
forward-mode AD, custom Functions, parametrizations, pruning, channels_last and autograd
mechanics write torch code, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals (with the helpers of tests/test_user_scripts.py) and assert that the scripts'
own checks held, that training lowered the loss, and, where torch is installed, that the
deterministic parts equal the same script's with ``import torch``.
"""

import contextlib
import sys
import types

import pytest

from test_user_scripts import SCRIPTS, _close, _run, torch_source
from test_user_scripts import _run_torch as _run_torch_threads

# the modules of tests/scripts that scripts import: the d2l.ai ports' d2l package, the
# yunjey ports' torchvision
LIBRARIES = ("d2l_lib", "vision_standin")


@contextlib.contextmanager
def scripts_library(on_torch: bool = False):
    """Lets a script import a library that sits next to it, as ``python script.py`` does
    (``runpy`` does not put the script's folder on sys.path).

    On torch, each library is first run with the script's import swap (the change a user moving
    to torch makes in both files) as a module of its own, which stands in sys.modules only while
    the script runs: the jitgrad library, imported once, keeps the name for the jitgrad runs.
    """
    folder = str(SCRIPTS)
    sys.path.insert(0, folder)
    prior = {name: sys.modules.pop(name, None) for name in LIBRARIES} if on_torch else {}
    try:
        for name in prior:
            path = SCRIPTS / f"{name}.py"
            module = types.ModuleType(name)
            module.__file__ = str(path)
            sys.modules[name] = module  # (before it runs: d2l_lib finds itself there)
            src = torch_source(path.read_text())
            exec(compile(src, str(path), "exec"), module.__dict__)  # noqa: S102
        yield
    finally:
        sys.path.remove(folder)
        for name, module in prior.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


def _run_torch(name: str, skip: dict | None = None) -> dict:
    """The script on torch, with one intra-op thread: tiny ops on a loaded machine run up to
    30x slower with several (each waits for the others' cores). ``skip``: see
    ``test_user_scripts._run_torch``."""
    torch = pytest.importorskip("torch")
    prior = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with scripts_library(on_torch=True):
            return _run_torch_threads(name, skip)
    finally:
        torch.set_num_threads(prior)


def _close_dicts(ours: dict, theirs: dict, **tol) -> None:
    assert ours.keys() == theirs.keys()
    for key in ours:
        _close(ours[key], theirs[key], **tol)


# ------------------------------------------------------------------ torch.func


def test_func_jacobians_hessians_hvp():
    g = _run("func_jacobians_hessians")
    torch = g["torch"]
    assert torch.allclose(g["ft_jacobian"], g["jacobian"])
    assert torch.allclose(g["ft_jacobian_chunked"], g["jacobian"])
    assert tuple(g["ft_jac_weight"].shape) == (16, 16, 16)
    assert tuple(g["ft_jac_bias"].shape) == (16, 16)
    assert g["tall_shape"] == (2048, 32)
    assert g["hess_shape"] == (32, 64, 64)
    assert g["batch_jacobian_shape"] == (64, 33, 31)
    assert g["batch_hess_shape"] == (64, 33, 31, 31)
    assert torch.allclose(g["result"], g["result_hvp_revrev"][0])
    assert g["no_vmap_timer"].times[0] > 0 and "jac_by_rows(xq)" in repr(g["no_vmap_timer"])


def test_func_jacobians_hessians_match_torch():
    g, t = _run("func_jacobians_hessians"), _run_torch("func_jacobians_hessians")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-12)


def test_func_model_ensembling_and_ntk():
    g = _run("func_ensembling_ntk")
    assert g["ensemble_shapes"] == ((10, 16, 10), (10, 16, 10))
    assert g["ensemble_max_diff"].item() < 1e-5
    assert g["ntk_full_shape"] == (6, 4, 3, 3)
    assert tuple(g["ntk_trace"].shape) == (6, 4)
    assert g["ntk_max_diff"] < 1e-5  # jacobian contraction == vmap(vjp then jvp)
    # the trace of the full kernel == the 'trace' contraction
    _close(g["ntk_vps_trace"], g["diag_j"].sum(-1), rtol=1e-4,
           atol=1e-5)


def test_func_ntk_and_ensemble_match_torch():
    g, t = _run("func_ensembling_ntk"), _run_torch("func_ensembling_ntk")
    _close(g["fixed_ntk"], t["fixed_ntk"], rtol=1e-4, atol=1e-5)
    _close(g["fixed_ntk_vps"], t["fixed_ntk_vps"], rtol=1e-4, atol=1e-5)
    _close(g["fixed_ensemble_out"], t["fixed_ensemble_out"], rtol=1e-5, atol=1e-6)


def test_extending_torch_func_with_autograd_function():
    g = _run("func_autograd_function")
    for key in ("sort_grad_ok", "sort_gradcheck", "sort_gradgradcheck", "vmap_sorted",
                "per_row_grad_ok", "sin_jvp_ok", "sin_jacfwd_ok"):
        assert g[key] is True, key
    ggx, x = g["cube_ggx"]
    assert ggx == pytest.approx(6 * x, rel=1e-6)
    assert g["no_rule_error"].startswith("You tried to vmap over Cubed, but it does not have "
                                         "vmap support.")
    assert g["vmap_ggx"].tolist() == pytest.approx((6 * g["vmap_ggx_x"]).tolist())


def test_extending_torch_func_matches_torch():
    g, t = _run("func_autograd_function"), _run_torch("func_autograd_function")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-12, atol=1e-12)
    assert g["no_rule_error"] == t["no_rule_error"]


# ------------------------------------------------------------------ forward-mode AD


def test_forward_mode_ad():
    g = _run("forward_mode_ad")
    for key in ("basic_jvp_ok", "custom_jvp_ok", "custom_gradcheck", "functional_jvp_ok",
                "partial_jvp_ok", "module_functional_ok", "fwd_over_rev_ok"):
        assert g[key] is True, key
    assert g["unpacked_fields"] == ("primal", "tangent")
    _close(g["module_jvp"], g["module_jvp_expected"], rtol=1e-5, atol=1e-6)
    _close(g["jvp2"], g["module_jvp_expected"], rtol=1e-5, atol=1e-6)


def test_forward_mode_ad_matches_torch():
    g, t = _run("forward_mode_ad"), _run_torch("forward_mode_ad")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ custom Functions


def test_double_backward_with_custom_functions():
    g = _run("double_backward_custom")
    for key in ("square_checks", "exp_checks", "sinh_checks", "cube_checks"):
        assert g[key] == [True, True], key
    assert g["square_second"] == 2.0 and g["square_grad_fn"] == "MulBackward0"
    assert g["sinh_second_ok"]
    assert g["sinh_bad_connected"] is False and g["sinh_bad_gradgradcheck"] == "GradcheckError"
    assert g["cube_derivatives"] == [12.0, 12.0, 6.0]
    assert g["cube_grad_fns"] == ["CubeBackwardBackward", "MulBackward0"]


def test_double_backward_matches_torch():
    g, t = _run("double_backward_custom"), _run_torch("double_backward_custom")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-12, atol=1e-12)
    for key in ("square_grad_fn", "cube_grad_fns", "sinh_bad_gradgradcheck"):
        assert g[key] == t[key], key


def test_fused_conv_bn_custom_function():
    g = _run("fuse_conv_bn_custom")
    assert g["conv_check"] and g["bn_check"] and g["fused_check"]
    for fused in (True, False):
        losses, (test_loss, accuracy) = g["histories"][fused]
        assert losses[-1] < losses[0] * 0.85, fused
        assert accuracy > 0.3, fused
    # the fused Function and nn.Conv2d + nn.BatchNorm2d train alike (unbiased vs biased var)
    assert abs(g["histories"][True][0][0] - g["histories"][False][0][0]) < 1e-2


def test_fused_conv_bn_matches_torch():
    g, t = _run("fuse_conv_bn_custom"), _run_torch("fuse_conv_bn_custom")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ nn.utils


def test_parametrizations_script():
    g = _run("parametrizations")
    assert g["cnn_skew"] and g["spd_ok"] and g["pruning_param_ok"]
    assert g["param_names"] == ["bias", "parametrizations.weight.original"]
    assert g["dist_to_original"] == 0.0 and g["skew_assign_dist"] < 1e-6
    assert (g["uncached_computations"], g["cached_computations"]) == (4, 1)
    assert g["cayley_orthogonality"] < 1e-5 and g["exp_orthogonality"] < 1e-5
    assert g["removed_kept_values"] and g["removed_is_parameter"]
    assert g["removed_repr"] == "Linear(in_features=3, out_features=3, bias=True)"
    assert g["unparametrized_is_original"]
    assert g["rank_one"] == 1
    assert g["rank_one_names"] == ["bias", "parametrizations.weight.original0",
                                   "parametrizations.weight.original1"]
    assert g["is_parametrized"] == (True, False)
    assert g["fit_losses"][-1] < g["fit_losses"][0] / 10 and g["fit_orthogonality"] < 1e-5


def test_parametrizations_match_torch():
    g, t = _run("parametrizations"), _run_torch("parametrizations")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-10, atol=1e-12)
    for key in ("fixed_results_keys", "parametrized_repr", "param_names", "rank_one_names",
                "uncached_computations", "cached_computations"):
        assert g[key] == t[key], key


def test_pruning_script():
    g = _run("pruning")
    assert g["random_names"] == (["bias", "weight_orig"], ["weight_mask"])
    assert g["random_zeros"] == round(0.3 * 150) and g["bias_zeros"] == 3
    assert g["bias_kept_largest"] and g["zero_channels"] == 3
    assert g["history"] == ["RandomUnstructured", "LnStructured"]
    assert g["removed_names"] == (["bias_orig", "weight"], ["bias_mask"]) and g["removed_same"]
    assert g["fc1_sparsity"] == pytest.approx(0.4)
    assert g["global_sparsity"] == pytest.approx(0.2, abs=1e-4)
    assert g["kept_min"] >= g["pruned_max"]
    assert g["train_losses"][-1] < g["train_losses"][0]
    assert g["still_sparse"] >= 0.2 and g["masked_grad_zero"]
    assert g["foobar_mask"] == [0.0, 1.0] * 5 and g["foobar_is_pruned"]


def test_pruning_matches_torch():
    g, t = _run("pruning"), _run_torch("pruning")
    _close_dicts(g["fixed_results"], t["fixed_results"])
    for key in ("state_keys", "mask_names", "history", "removed_names"):
        assert g[key] == t[key], key


# ------------------------------------------------------------------ channels_last


def test_channels_last_memory_format():
    g = _run("channels_last")
    assert g["strides"] == {"contiguous": (3072, 1024, 32, 1), "to_channels_last": (3072, 1, 96, 3),
                            "back": (3072, 1024, 32, 1), "contiguous_cl": (3072, 1, 96, 3),
                            "empty_cl": (3072, 1, 96, 3), "permuted": (3072, 1, 96, 3)}
    assert g["shape_kept"] == (10, 3, 32, 32)
    assert g["is_cl"] == (True, False) and g["special"] == (True, True) and g["permuted_is_cl"]
    for key in ("pointwise_keeps", "clone_keeps", "values_same", "conv_keeps", "weight_cl",
                "conv_same_values", "model_weights_cl", "grads_cl"):
        assert g[key] is True, key
    assert g["input_grad_shape"] == (2, 8, 4, 4)
    assert g["cl_losses"][-1] < g["cl_losses"][0] / 4


def test_channels_last_matches_torch():
    g, t = _run("channels_last"), _run_torch("channels_last")
    assert g["strides"] == t["strides"]
    for key in ("is_cl", "special", "permuted_is_cl", "pointwise_keeps", "clone_keeps",
                "conv_keeps", "weight_cl", "model_weights_cl"):
        assert g[key] == t[key], key
    assert g["fixed_results"]["out_stride"] == t["fixed_results"]["out_stride"]
    assert g["fixed_results"]["weight_stride"] == t["fixed_results"]["weight_stride"]
    _close(g["fixed_results"]["out"], t["fixed_results"]["out"], rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ autograd mechanics


def test_autograd_mechanics_and_saved_tensor_hooks():
    g = _run("autograd_mechanics")
    assert g["gentle_ok"] and g["dag_flags"] == (False, True)
    assert g["frozen_grads"] == [True, True, False, False]
    y_grad, expected, retains, is_leaf = g["retained"]
    assert y_grad == expected and retains and not is_leaf
    assert g["hooked_grad"] == [2.0, 4.0, 6.0] and g["unhooked_grad"] == [1.0, 2.0, 3.0]
    assert g["seen"] == [[1.0, 1.0]] and g["acc"] == [[5.0, 5.0]]
    assert g["accumulated"] == [6.0, 6.0, 6.0] and g["zeroed"] == [0.0, 0.0, 0.0]
    assert g["no_grad_flag"] is False and g["inference_flags"] == (False, True)
    assert g["inference_error"].startswith("Inference tensors cannot be saved for backward.")
    assert (g["set_grad_flag"], g["set_grad_fn_flag"]) == (False, True)
    assert g["decorator_flags"] == (False, True)
    assert g["detach_flags"] == (True, False, True)
    assert g["inplace_error"].startswith("one of the variables needed for gradient computation "
                                         "has been modified by an inplace operation")
    assert g["saved_self"] == (True, True) and g["saved_result"] == (True, False)
    assert g["freed_error"].startswith("Trying to backward through the graph a second time")
    assert g["bad_hook_error"] == "TypeError" and g["counted"] == (1, True)
    assert g["files_while_alive"] == 1 and g["disk_grad_ok"] and g["files_after"] == 0
    assert g["threshold_same_grads"] and g["save_on_cpu_ok"]


def test_autograd_mechanics_match_torch():
    g, t = _run("autograd_mechanics"), _run_torch("autograd_mechanics")
    _close_dicts(g["fixed_results"], t["fixed_results"], rtol=1e-12, atol=1e-14)
    for key in ("dag_flags", "frozen_grads", "hooked_grad", "unhooked_grad", "seen", "acc",
                "accumulated", "inference_flags", "decorator_flags", "detach_flags",
                "saved_self", "saved_result", "freed_error", "bad_hook_error", "counted",
                "files_while_alive", "files_after"):
        assert g[key] == t[key], key
    assert g["inplace_error"].replace("jitgrad", "torch") == t["inplace_error"]
    assert g["inference_error"].replace("jitgrad", "torch") == t["inference_error"]


def test_every_set_b_script_only_imports_jitgrad_under_the_torch_names():
    from test_user_scripts import SCRIPTS

    for name in NAMES:
        src = (SCRIPTS / f"{name}.py").read_text()
        assert "import torch" not in src and "from torch" not in src
        assert "import jitgrad as torch" in src


NAMES = ["func_jacobians_hessians", "func_ensembling_ntk", "func_autograd_function",
         "forward_mode_ad",
         "double_backward_custom", "fuse_conv_bn_custom", "parametrizations", "pruning",
         "channels_last", "autograd_mechanics"]
