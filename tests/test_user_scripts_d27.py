"""User-style scripts, set D (tensor and autograd basics, first networks, autograd notes,
recipes, examples), written for these tests in the way the PyTorch tutorials, recipes and
pytorch/examples write torch code, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals (with the helpers of tests/test_user_scripts.py) and assert that the scripts'
own checks held, that training lowered the loss, and, where torch is installed, that the
deterministic parts equal the same script's with ``import torch``.
"""

import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _run_torch_compiling(name: str) -> dict:
    """``_run_torch`` for a script that calls torch.compile, whose first use turns torch's
    distribution argument validation off for the whole process: restored after (with a reset
    of torch's compile caches), for the tests that compare with it."""
    torch = pytest.importorskip("torch")
    validate = torch.distributions.Distribution._validate_args
    try:
        return _run_torch(name)
    finally:
        torch._dynamo.reset()
        torch.distributions.Distribution.set_default_validate_args(validate)


def _torch_names(value):
    """A value's printed form with torch's module name (``jitgrad.float32`` -> ``torch.``)."""
    return repr(value).replace("jitgrad.", "torch.")


# ------------------------------------------------- leaf tensors, saved tensors


def test_leaf_vs_nonleaf_tutorial():
    g = _run("leaf_vs_nonleaf")
    assert g["leaf_flags"] == [True, True, True, True, False, False, False]
    assert g["requires_flags"] == [False, True, True]
    assert g["no_grad_error"] == ("element 0 of tensors does not require grad and does not have"
                                  " a grad_fn")
    assert [t.tolist() for t in g["first_grads"]] == [[[3.0, 3.0]] * 3, [[3.0, 3.0]]]
    assert g["leaf_grads_none"] == (True, True) and g["nonleaf_grad_none"]
    assert len(g["nonleaf_warnings"]) == 2  # (the f-string reads z.grad, then the check)
    assert g["nonleaf_warnings"][0].startswith("The .grad attribute of a Tensor that is not a leaf")
    second = {k: v.tolist() for k, v in g["second_grads"].items()}
    assert second == {"W": [[3.0, 3.0]] * 3, "b": [[3.0, 3.0]], "z": [[3.0, 3.0]],
                      "y_pred": [[3.0, 3.0]], "loss": 1.0}
    assert g["retains"] == [False, False, False, True, True, True]
    assert g["leaf_retains_after"] is False  # retain_grad on a leaf: a no-op
    assert g["retain_error"] == "can't retain_grad on Tensor that has requires_grad=False"
    assert g["x_requires_after"] == (True, True)


def test_leaf_vs_nonleaf_errors_match_torch():
    g, t = _run("leaf_vs_nonleaf"), _run_torch("leaf_vs_nonleaf")
    for key in ("no_grad_error", "retain_error", "nonleaf_requires_error", "retains"):
        assert g[key] == t[key], key
    assert len(g["nonleaf_warnings"]) == len(t["nonleaf_warnings"])


def test_saved_tensors_hooks_tutorial():
    rec = _run("saved_tensors_hooks")["rec"]
    assert rec["saved_is_input"] == (True, True)
    assert rec["saved_result"] == (True, False)  # an output comes back unpacked, not itself
    # (torch packs mul's ``other`` before ``self``: the order of saving is not part of the API)
    assert sorted(rec["packed"]) == [[1.0] * 5, [2.0] * 5]
    assert sorted(rec["unpacked"]) == [[1.0] * 5, [2.0] * 5]
    assert rec["hooked_grad"] == [2.0] * 5
    assert rec["storage_len"] == 2
    assert rec["cpu_hooks_close"] and rec["model_grad_is_x"] and rec["save_to_cpu_same_grads"]
    assert rec["double_access"] == "failed"  # the unpack hook deleted the file
    assert rec["files_while_saved"] == 1 and rec["files_after_backward"] == 0
    assert rec["disk_grad"] == [2.0] * 5
    assert rec["data_parallel_grad_is_x"]


def test_saved_tensors_hooks_match_torch():
    g, t = _run("saved_tensors_hooks")["rec"], _run_torch("saved_tensors_hooks")["rec"]
    for key in ("saved_is_input", "saved_result", "storage_len", "double_access",
                "files_while_saved", "files_after_backward", "disk_grad"):
        assert g[key] == t[key], key


# ------------------------------------------- tensors, autograd, a first LeNet


def test_blitz_tensor_autograd_neural_networks():
    g = _run("blitz_tensor_autograd_nn")
    torch = g["torch"]
    assert g["zeros_long"] == (torch.int64, [[0, 0, 0]] * 5)
    assert g["new_ones"] == (torch.float64, (5, 3))
    assert g["size_is_tuple"] and g["out_add_equal"] and g["inplace_add_equal"]
    assert g["view_sizes"] == ((4, 4), (16,), (2, 8)) and g["item_type"] is float
    assert g["numpy_shares"] == [2.0] * 5  # a.add_(1) shows in a.numpy()
    assert g["from_numpy_shares"] == ([2.0] * 5, torch.float64)
    assert g["y_grad_fn"] == "AddBackward0" and g["b_grad_fn"] == "SumBackward0"
    assert g["z_out"] == ("MulBackward0", "MeanBackward0", 27.0)
    assert g["x_grad"] == [[4.5, 4.5], [4.5, 4.5]]  # 6 (x + 2) / 4 at x = 1
    assert g["vector_grad_ok"] and g["no_grad_requires"] is False
    assert g["param_shapes"] == [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,),
                                 (84, 120), (84,), (10, 84), (10,)]
    assert g["random_backward_grads"]
    assert g["chain"] == ["MseLossBackward0", "AddmmBackward0", "AccumulateGrad"]
    assert g["bias_grad_before"] is None and g["bias_grad_after"].abs().sum() > 0
    assert g["sgd_equals_manual"]  # optim.SGD's step == p.data - lr * p.grad.data
    losses = g["sgd_losses"]
    assert losses[-1] < losses[0]


def test_blitz_fixed_lenet_matches_torch():
    g, t = _run("blitz_tensor_autograd_nn"), _run_torch("blitz_tensor_autograd_nn")
    assert g["net_repr"] == t["net_repr"]
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value.detach() if hasattr(value, "detach") else value,
               rtol=1e-4, atol=1e-4)


# ----------------------------------- basics: tensors, build, train, save/load


def test_basics_tensors_and_autograd():
    g = _run("basics_tensors_autograd")
    torch = g["torch"]
    assert g["like_dtypes"] == (torch.int64, torch.int64, torch.int64, torch.float32)
    assert g["attributes"] == ("jitgrad.Size([3, 4])", "jitgrad.float32", "cpu")
    assert g["assigned"] == [[1.0, 0.0, 1.0, 1.0]] * 4
    assert g["cat_shape"] == (4, 12)
    assert g["matmuls_equal"] and g["muls_equal"]
    assert g["agg_item"] == 12.0 and g["added"] == [[6.0, 5.0, 6.0, 6.0]] * 4
    assert g["bridge_to_numpy"] == [2.0] * 5
    assert g["grad_fn_names"] == ("AddBackward0", "BinaryCrossEntropyWithLogitsBackward0")
    assert (g["tracked"], g["untracked"], g["detached"]) == (True, False, False)
    assert g["first_call"].tolist() == [[4.0, 2, 2, 2, 2], [2, 4, 2, 2, 2], [2, 2, 4, 2, 2],
                                        [2, 2, 2, 4, 2]]
    assert torch.equal(g["second_call"], 2 * g["first_call"])  # accumulated
    assert torch.equal(g["after_zeroing"], g["first_call"])


def test_basics_tensors_and_autograd_match_torch():
    g, t = _run("basics_tensors_autograd"), _run_torch("basics_tensors_autograd")
    for key in ("ones_text", "bridge_from_numpy", "attributes", "like_dtypes", "grad_fn_names",
                "second_backward_error", "assigned", "added"):
        assert _torch_names(g[key]) == _torch_names(t[key]), key
    for key, value in t["bce_result"].items():
        _close(g["bce_result"][key], value, rtol=1e-6)


def test_basics_build_optimize_save():
    g = _run("basics_build_optimize_save")
    assert g["layer_sizes"] == [(3, 28, 28), (3, 784), (3, 20)]
    assert g["relu_nonnegative"]
    _close(g["prob_sums"], [1.0] * 3)
    assert [p[0] for p in g["previews"]][:2] == ["stack.0.weight", "stack.0.bias"]
    losses, history = g["train_losses"], g["history"]
    assert len(losses) == 3 * 8 and losses[-1] < 0.9 * losses[0]
    assert history[-1][0] < history[0][0] and history[-1][1] > 0.8
    assert g["state_dict_roundtrip"]
    assert g["default_load_error"] == "UnpicklingError"  # weights_only=True refuses a module
    assert g["whole_model_roundtrip"] == ("SmallVGG", False, True)


def test_basics_build_optimize_save_match_torch():
    g, t = _run("basics_build_optimize_save"), _run_torch("basics_build_optimize_save")
    for key in ("model_repr", "layer_sizes", "default_load_error", "whole_model_roundtrip",
                "predicted_class_text"):
        assert g[key] == t[key], key
    assert _torch_names([p[:2] for p in g["previews"]]) == _torch_names(
        [p[:2] for p in t["previews"]])


# ------------------------------------------ a two-layer net trained five ways


@pytest.mark.slow
def test_examples_two_layer_nets_and_polynomial_module_learn():
    g = _run("examples_two_layer_nets")
    for key, losses in g["results"].items():
        assert losses[-1] < 0.01 * losses[0], key
    assert g["results"]["polynomial"][-1] < 20  # sin(x) by a cubic: 2000 steps end near 9
    assert g["variable_flags"] == ("Tensor", False, False)  # Variable(t) is t
    assert g["size_average_reduction"] == "sum"
    assert g["size_average_warnings"] == [
        "size_average and reduce args will be deprecated, please use reduction='sum' instead."]
    assert g["data_index_error"].startswith("invalid index of a 0-dim tensor. Use `tensor.item()`")
    assert g["polynomial_named"] == ["a", "b", "c", "d"]


@pytest.mark.slow
def test_examples_two_layer_nets_fixed_weights_match_torch():
    g, t = _run("examples_two_layer_nets"), _run_torch("examples_two_layer_nets")
    for key, losses in t["fixed"].items():
        _close(g["fixed"][key], losses, rtol=1e-3 if key == "tensor" else 1e-5, atol=1e-4)
    assert g["data_index_error"] == t["data_index_error"]
    assert g["fixed_poly_string"][:12] == t["fixed_poly_string"][:12]


# ---------------------------------------- benchmarking, devices, saving, compiling


def test_benchmark_recipe():
    g = _run("benchmark_recipe")
    assert "batched_dot_mul_sum(x, x)" in g["single_thread_repr"]
    assert "1 measurement, 100 runs , 1 thread" in g["single_thread_repr"]
    assert "Multithreaded batch dot: Implemented using bmm" in g["labelled_repr"]
    mean, median, n_times, number = g["stats"]
    assert mean > 0 and median > 0 and n_times >= 1 and number >= 1
    table = g["compare_table"]
    assert table.startswith("[") and "Batched dot" in table and "1 threads: " in table
    assert "2 threads: " in table and "[1024, 1024]" in table and "mul/sum" in table
    assert "(environment A: mul/sum)  batched_dot(x, x)" in g["ab_table"]
    assert [c[0] for c in g["binary_cases"]] == [  # the script's printed sub-labels
        "64     x 473  (discontiguous)", "16384  x 12642115 (discontiguous)", "8192   x 892  "]


def test_benchmark_recipe_fuzzer_matches_torch():
    g, t = _run("benchmark_recipe"), _run_torch("benchmark_recipe")
    # the same sizes and layouts; the values come from each library's generator
    assert [c[:3] for c in g["fuzzed_cases"]] == [c[:3] for c in t["fuzzed_cases"]]
    assert t["binary_fuzzer_error"] == "Distribution is not normalized"  # (torch 2.13's bug)
    assert "binary_fuzzer_error" not in g
    assert g["single_thread_repr"].split("\n")[1:3] == t["single_thread_repr"].split("\n")[1:3]


def test_timer_quick_start_python_half():
    g = _run("timer_quick_start")
    for m in (g["case_a"], g["case_b"]):
        assert m.median > 0 and len(m.times) >= 1 and m.stmt == "x * y"
    assert "y = torch.ones((1,))" in repr(g["case_b"])
    assert g["cpp_error"].startswith("jitgrad's Timer measures Python statements only")


def test_module_load_state_dict_tips():
    g = _run("load_state_dict_tips")
    assert g["meta_devices"] == {"meta"} and g["still_meta"] == {"meta"}
    assert g["assigned"] == {"devices": {"cpu"}, "same_values": True, "is_parameter": True,
                             "requires_grad": True}
    assert g["explicit_cpu"] == "cpu"  # an explicit device wins over the context manager
    assert g["meta_sizes"] == [(1, 1), (1,)]
    assert g["same_as_m"]
    assert len(g["no_op_warnings"]) == 20 and "which is a no-op" in g["no_op_warnings"][0]
    assert g["forward_error"] == (
        "NotImplementedError", 'Module [ModuleList] is missing the required "forward" function')


def test_module_load_state_dict_tips_match_torch():
    g, t = _run("load_state_dict_tips"), _run_torch("load_state_dict_tips")
    for key in ("meta_devices", "assigned", "explicit_cpu", "meta_sizes", "still_meta",
                "no_op_warnings", "forward_error"):
        assert g[key] == t[key], key


def test_reasoning_about_shapes_on_meta():
    g = _run("reasoning_about_shapes")
    assert g["small"][1:] == ((2, 5, 9, 9), "meta")
    assert g["large"][1] == (1024, 5, 65535, 65535)
    assert g["large_time"] < 1.0  # nothing allocated
    assert len(g["hook_lines"]) == 8 and g["net_out"][1] == "meta"
    assert g["hook_lines"][-1].startswith("Shape of output to TinyConvNet(")
    assert g["hook_lines"][-1].endswith("is jitgrad.Size([1024, 10]).")


def test_reasoning_about_shapes_matches_torch():
    g, t = _run("reasoning_about_shapes"), _run_torch("reasoning_about_shapes")
    for key in ("small", "large", "net_out"):
        assert g[key] == t[key], key
    assert [line.replace("jitgrad.", "torch.") for line in g["hook_lines"]] == t["hook_lines"]


def test_changing_default_device_and_defining_a_network():
    g = _run("default_device_define_nn")
    assert g["devices"] == ["cpu", "meta", "meta", "cpu", "meta", "meta", "meta", "cpu"]
    assert len(g["dropout_warnings"]) == 1
    assert g["dropout_warnings"][0].startswith("dropout2d: Received a 2-D input to dropout2d")
    shape, name, prob_sum = g["result_info"]
    assert shape == (1, 10) and name == "LogSoftmaxBackward0" and abs(prob_sum - 1) < 1e-5
    assert g["dropped_values"] == [0.0, 2.0] and g["eval_same"]


def test_changing_default_device_and_defining_a_network_match_torch():
    g, t = _run("default_device_define_nn"), _run_torch("default_device_define_nn")
    for key in ("devices", "dropout_warnings", "first_repr", "dropped_values"):
        assert g[key] == t[key], key


def test_saving_multiple_models_and_across_devices():
    g = _run("save_multiple_models_devices")
    assert g["checkpoint_keys"] == ["modelA_state_dict", "modelB_state_dict",
                                    "optimizerA_state_dict", "optimizerB_state_dict"]
    assert g["momentum_buffers"] == 10
    assert all(a == b for a, b in g["resumed"]) and g["resumed_equal"]
    assert g["shared_buffer"]  # load_state_dict keeps the checkpoint's tensors, as torch's
    assert g["cpu_loaded"]
    assert g["mapped_devices"] == ["meta"] and g["model_devices"] == ["meta"]
    assert g["data_parallel_keys"] == ["conv1.weight", "conv1.bias"]
    assert g["data_parallel_same"]


def test_saving_multiple_models_and_across_devices_match_torch():
    g, t = _run("save_multiple_models_devices"), _run_torch("save_multiple_models_devices")
    for key in ("checkpoint_keys", "momentum_buffers", "resumed_equal", "shared_buffer",
                "mapped_devices", "model_devices", "data_parallel_keys"):
        assert g[key] == t[key], key


def test_compiling_the_optimizer_with_an_lr_scheduler():
    g = _run("compiling_optimizer")
    assert g["compiled_equals_eager"]  # (the step compiles: docs/jit.md, compiled optimizer steps)
    assert g["eager_runtime"] > 0 and g["compiled_runtime"] > 0
    assert [name for name, _ in g["tensor_lrs"]] == ["Tensor"] * 5
    _close([lr for _, lr in g["tensor_lrs"]], [0.0046667, 0.006, 0.0073333, 0.0086667, 0.01],
           rtol=1e-4)
    _close(g["float_lrs"], [0.0046667, 0.006, 0.0073333, 0.0086667, 0.01], rtol=1e-4)
    # the last compiled function (float lr) ran compiled, retracing once per new lr, as torch
    assert g["fn"]._eager_reason is None and g["fn"]._jitted.cache_info().misses == 5


@pytest.mark.slow
def test_compiling_the_optimizer_matches_torch():
    g, t = _run("compiling_optimizer"), _run_torch_compiling("compiling_optimizer")
    assert g["tensor_lrs"] == t["tensor_lrs"]
    assert g["float_lrs"] == t["float_lrs"]
    assert g["compiled_equals_eager"] and t["compiled_equals_eager"]


# ------------------------------------------------ style transfer, torch.compile


def test_neural_style_transfer_with_lbfgs():
    g = _run("neural_style")
    assert g["model_layers"] == [
        "0", "conv_1", "style_loss_1", "relu_1", "conv_2", "style_loss_2", "relu_2", "pool_2",
        "conv_3", "style_loss_3", "relu_3", "conv_4", "content_loss_4", "style_loss_4",
        "relu_4", "pool_4", "conv_5", "style_loss_5"]
    history = g["history"]
    assert len(history) >= 21  # L-BFGS ran until 20 closure calls were done
    assert history[-1][0] < 0.01 * history[0][0]  # the style loss fell 100-fold
    low, high = g["output_range"]
    assert 0.0 <= low and high <= 1.0  # clamped
    assert g["plt"].shown == [(32, 32, 3)] * 4


def test_neural_style_first_lbfgs_steps_match_torch():
    g, t = _run("neural_style"), _run_torch("neural_style")
    assert g["model_layers"] == t["model_layers"]
    # (the first ten closure calls agree; L-BFGS's line search then amplifies rounding)
    _close([h[0] for h in g["history"][:10]], [h[0] for h in t["history"][:10]], rtol=2e-4)
    _close([h[1] for h in g["history"][:10]], [h[1] for h in t["history"][:10]], atol=5e-5)


@pytest.mark.slow
def test_torch_compile_tutorial_cpu_parts():
    g = _run("torch_compile_tutorial")
    assert g["basic"] == [True, True, True] and g["opt_mod_type"] == "OptimizedModule"
    assert g["eval_same"]
    assert g["losses"]["compiled"] == g["losses"]["eager"]  # (train falls back to eager)
    assert len(g["train_warnings"]) == 1 and "backward() cannot run inside" in \
        g["train_warnings"][0]
    # jitgrad runs what it cannot trace eagerly: the trace of f1 and f3 stays correct for
    # other inputs (torch's trace is silently specialized: (True, False) and False)
    assert g["traced"] == (True, True) and g["traced_f3_ok"]
    assert g["compiled"] == (True, True) and g["compiled_f2"] and g["compiled_f3"]
    assert g["script_error"] is None and g["script_f3_error"] is None  # (no TorchScript)
    assert g["fullgraph_error"] == "raised"
    assert g["fullgraph_model_shape"] == (16, 10)


@pytest.mark.slow
def test_torch_compile_tutorial_matches_torch():
    g, t = _run("torch_compile_tutorial"), _run_torch_compiling("torch_compile_tutorial")  # (~40 s)
    for key in ("basic", "opt_mod_type", "eval_same", "compiled", "compiled_f2", "compiled_f3",
                "fullgraph_error", "fullgraph_model_shape"):
        assert g[key] == t[key], key
    assert t["traced"] == (True, False) and not t["traced_f3_ok"]  # the documented difference
    _close(g["losses"]["compiled"], t["losses"]["compiled"], rtol=0.2)  # (different data)


# ------------------------------------- a CLI digits classifier, and more recipes


def test_examples_mnist_main_on_digits():
    rec = _run("mnist_main")["record"]
    assert len(rec["train"]) == 6 and rec["train"][-1] < 0.75 * rec["train"][0]
    (loss1, correct1), (loss2, correct2) = rec["test"]
    assert loss2 < loss1 and correct2 >= 0.6 * 160  # (torch's run: 120/160 after 2 epochs)
    _close(rec["lr"], [0.7, 0.49])  # StepLR(step_size=1, gamma=0.7) from lr=1.0


def test_swap_tensors_recipe_first_sections():
    g = _run("swap_tensors_recipe")
    assert g["swapped"] == ([0, 1, 2], [0, 1])
    assert g["stale"]  # the optimizer kept the replaced Parameter
    assert g["fixed"] == (True, True)  # after swap_tensors, it updates the module's again


def test_swap_tensors_recipe_matches_torch():
    g, t = _run("swap_tensors_recipe"), _run_torch("swap_tensors_recipe")
    for key in ("swapped", "stale", "fixed"):
        assert g[key] == t[key], key


def test_compiler_set_stance_recipe():
    out = _run("compiler_set_stance")["out"]
    assert out["compiled"] == [1.0] * 3 and out["default_again"] == [1.0] * 3
    assert out["decorator"] == out["context"] == out["raw"] == [-1.0] * 3
    assert out["baz"] == ("AssertionError", "Attempt to trace forbidden callable <function "
                                            "set_stance")
    assert out["outer"] == ("AssertionError", "Attempt to trace forbidden callable <function "
                                              "helper")
    assert out["fail_on_recompile"] == (
        "RuntimeError", "Detected recompile when torch.compile stance is 'fail_on_recompile'.")
    assert out["huge"] == [[1.0] * 3, [1.0] * 3, [-1.0] * 4, [1.0] * 3]
    assert out["gigantic_same"] and out["humongous"] == "TypeError"
    assert out["stance_after"] is False


@pytest.mark.slow
def test_compiler_set_stance_recipe_matches_torch():
    g, t = _run("compiler_set_stance")["out"], _run_torch_compiling("compiler_set_stance")["out"]
    assert g == t


def test_inspecting_model_parameters_prints_torchs_lines():
    g, t = _run("inspecting_model_parameters"), _run_torch("inspecting_model_parameters")
    assert "Total model params: 669,706" in g["lines"]
    assert "Total model trainable params: 268,298" in g["lines"]  # (after freezing 401,408)
    assert [line.replace("jitgrad.", "torch.") for line in g["lines"]] == t["lines"]


def test_regional_compilation_recipe():
    g = _run("regional_compilation")
    assert g["same"] == (True, True)  # both compiled models compute the eager model's output
    assert g["compiled_keys"] == ["layers.0._orig_mod.linear1.weight",
                                  "layers.0._orig_mod.linear1.bias"]
    assert g["full_model_compilation_latency"] > 0 and g["regional_compilation_latency"] > 0


def test_calculating_layer_output_dimensions():
    g, t = _run("layer_output_dimensions"), _run_torch("layer_output_dimensions")
    assert g["lines"][0] == ("Error occured: mat1 and mat2 shapes cannot be multiplied "
                             "(1x9216 and 6400x128)")
    assert "Post MaxPool2d.0 shape: (64, 12, 12)" in g["lines"]
    assert "after pool shape: jitgrad.Size([1, 64, 12, 12])" in g["lines"]
    assert g["fixed_shape"] == (1, 128) and g["final_shape"] == (1, 10)
    assert [line.replace("jitgrad.", "torch.") for line in g["lines"]] == t["lines"]
