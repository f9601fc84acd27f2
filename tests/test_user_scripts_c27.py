"""User scripts, set C (NLP, introductory, recipes, examples), written for these tests in the way
the PyTorch tutorials, recipes and pytorch/examples write torch code (``import jitgrad as torch``).

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals (with the helpers of tests/test_user_scripts.py) and assert that the scripts'
own checks held, that training lowered the loss, and, where torch is installed, that the
deterministic parts equal the same script's with ``import torch``.
"""

import math

import jitgrad
from test_user_scripts import _close
from test_user_scripts import _run as _run_threads
from test_user_scripts_b27 import _run_torch, scripts_library


def _run(name: str) -> dict:
    """The script on jitgrad with one BLAS thread, as ``_run_torch`` runs torch with one: on a
    loaded machine OpenBLAS's threads wait for each other's cores, and the small matrix products
    of these scripts (an LSTM step) run 10-25x slower with several."""
    prior = jitgrad.get_num_threads()
    jitgrad.set_num_threads(1)
    try:
        with scripts_library():
            return _run_threads(name)
    finally:
        jitgrad.set_num_threads(prior)


def _falls(losses, factor):
    assert losses[-1] < factor * losses[0], (losses[0], losses[-1])


# ------------------------------------------------------- NLP: taggers, embeddings, classifiers


def test_lstm_pos_tagger_learns_the_tags():
    g = _run("lstm_pos_tagger")
    assert g["last_slice_is_hidden"]
    assert g["predicted_tags"] == [0, 1, 2, 0, 1]  # DET NN V DET NN, the gold tags
    _falls(g["losses"], 0.1)
    _falls(g["char_losses"], 0.5)
    assert g["char_predicted"] == [[0, 1, 2, 0, 1], [1, 2, 0, 1]]


def test_lstm_pos_tagger_fixed_weights_match_torch():
    g, t = _run("lstm_pos_tagger"), _run_torch("lstm_pos_tagger")
    _close(g["fixed_losses"], t["fixed_losses"], rtol=1e-4, atol=1e-5)
    for name, grad in t["fixed_grads"].items():
        _close(g["fixed_grads"][name], grad, rtol=1e-3, atol=1e-5)


def test_bilstm_crf_learns_the_entities():
    g = _run("bilstm_crf")
    assert g["decoded_after"] == g["gold"]
    _falls(g["nll_per_epoch"], 0.1)
    _falls(g["perceptron_losses"], 0.5)
    assert min(g["perceptron_losses"]) >= -1e-4  # the Viterbi path scores at least the gold one


def test_bilstm_crf_fixed_weights_match_torch():
    g, t = _run("bilstm_crf"), _run_torch("bilstm_crf")
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-5)
    assert g["fixed_path"] == t["fixed_path"]
    _close(g["fixed_score"], t["fixed_score"], rtol=1e-5)


def test_word_embeddings_ngram_and_cbow_learn():
    g = _run("word_embeddings_ngram_cbow")
    assert g["hello_is_row_0"]
    losses = g["ngram_losses"]
    assert all(b < a for a, b in zip(losses, losses[1:]))  # "decreased every iteration"
    assert g["beauty_embedding_shape"] == (10,)
    _falls(g["cbow_losses"], 0.1)
    assert g["cbow_accuracy"] > 0.9


def test_word_embeddings_cbow_fixed_weights_match_torch():
    g, t = _run("word_embeddings_ngram_cbow"), _run_torch("word_embeddings_ngram_cbow")
    _close(g["fixed_losses"], t["fixed_losses"], rtol=1e-4, atol=1e-5)


def test_bow_classifier_tells_french_from_english():
    g = _run("bow_classifier")
    assert g["affine_ok"] and g["relu_ok"]
    assert abs(g["softmax_sum"] - 1) < 1e-6
    assert g["test_predictions"] == [0, 1]  # FRENCH, ENGLISH
    # training raises the French score of a French word and lowers its English one
    assert g["word_after"][0] > g["word_before"][0] and g["word_after"][1] < g["word_before"][1]


def test_bow_classifier_training_matches_torch():
    g, t = _run("bow_classifier"), _run_torch("bow_classifier")
    _close(g["fixed_weights"][0], t["fixed_weights"][0], rtol=1e-5, atol=1e-6)
    _close(g["fixed_weights"][1], t["fixed_weights"][1], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------- character-level generation


def test_char_rnn_generation_learns_and_samples_names():
    g = _run("char_rnn_generation")
    assert g["ascii_example"] == "O'Neal"
    _falls(g["all_losses"], 0.6)
    for category, names in g["sampled"].items():
        for start, name in zip("RUS" if category == "Russian" else "CHI", names):
            assert name[0] == start and 1 <= len(name) <= 21
    # the Chinese names learnt are short
    assert all(len(name) <= 6 for name in g["sampled"]["Chinese"])


def test_char_rnn_generation_hand_written_sgd_matches_torch():
    g, t = _run("char_rnn_generation"), _run_torch("char_rnn_generation")
    _close(g["fixed_losses"], t["fixed_losses"], rtol=1e-5, atol=1e-6)
    for name, w in t["fixed_weights"].items():
        _close(g["fixed_weights"][name], w, rtol=1e-5, atol=1e-6)


# -------------------------------------------- distillation, fused optimizer steps, attention


def test_knowledge_distillation_trains_teacher_and_students():
    g = _run("knowledge_distillation")
    assert g["same_init"] and g["loaded_teacher_same"]
    assert g["total_params_light"] == "{:,}".format(12 * 3 * 9 + 12 + 16 * 12 * 9 + 16
                                                    + 1024 * 128 + 128 + 1290)
    for phase, losses in g["epoch_losses"].items():
        assert losses[-1] < losses[0], phase
    acc = g["accuracies"]
    assert acc["student"] > 50 and acc["kd"] > 50 and acc["mse"] > 30, acc


def test_knowledge_distillation_losses_and_gradients_match_torch():
    g, t = _run("knowledge_distillation"), _run_torch("knowledge_distillation")
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-6)


def test_optimizer_step_in_backward_equals_the_usual_loop():
    g = _run("optimizer_step_in_backward")
    assert g["n_params"] == 32
    assert g["hook_calls"][:96] == [True] * 96  # each hook saw its accumulated gradient
    assert g["grads_left"] == []  # the hooks zeroed every gradient
    assert g["max_param_diff"] < 1e-6


def test_optimizer_step_in_backward_matches_torch():
    g, t = _run("optimizer_step_in_backward"), _run_torch("optimizer_step_in_backward")
    _close(g["fixed_out_before"], t["fixed_out_before"], rtol=1e-4, atol=1e-5)
    _close(g["fixed_out"], t["fixed_out"], rtol=1e-4, atol=1e-5)


def test_sdpa_tutorial_backends_causal_attention_compile_and_biases():
    g = _run("sdpa_tutorial")
    torch = g["torch"]
    assert torch.allclose(g["example"], g["example_by_hand"], atol=1e-6)
    # as torch's CPU build: math and flash run, memory-efficient attention does not
    assert g["supported"] == {"math": True, "flash": True, "efficient": False}
    assert "(qkv): Linear(in_features=64, out_features=192, bias=False)" in g["model_repr"]
    assert g["compiled_same"] and g["compiled_bias_same"]
    assert "eager attention block" in g["profiled_names"]
    assert "compiled attention block" in g["compiled_profiled_names"]
    assert "True, False" in g["bias_reprs"][0] and g["bias_reprs"][0] != g["bias_reprs"][1]


def test_sdpa_tutorial_fixed_parts_match_torch():
    g, t = _run("sdpa_tutorial"), _run_torch("sdpa_tutorial")
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-5)
    assert g["bias_reprs"] == tuple(r.replace("torch", "jitgrad") for r in t["bias_reprs"])


# ------------------------------------------------------- tensors, autograd, modules, training loops


def _same_text(ours, theirs, rtol=0.0):
    """``theirs`` (torch's printouts and values, nested in tuples and lists) with torch's names
    as jitgrad's, floats within ``rtol`` (float32 math differs from torch's in the last ulp)."""
    if isinstance(theirs, str):
        assert ours == theirs.replace("torch::autograd::", "").replace("torch", "jitgrad")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same_text(a, b, rtol)
    elif isinstance(theirs, float) and rtol:
        assert abs(ours - theirs) <= rtol * max(1.0, abs(theirs)), (ours, theirs)
    else:
        assert ours == theirs


def test_tensors_deeper_runs_its_own_asserts():
    g = _run("tensors_deeper")
    det = g["det"]
    assert det["seeding_repeats"] == (True, True, False)
    assert det["broadcast"] == (True, True, True) and det["doubled"]
    assert len(det["broadcast_errors"]) == 3 and det["reshape_is_view"]
    assert g["svd_ok"]
    assert det["numpy_bridge"][1] == 17.0 and "23." in det["numpy_bridge"][0]


def test_tensors_deeper_printouts_match_torch():
    g, t = _run("tensors_deeper"), _run_torch("tensors_deeper")
    assert g["det"].keys() == t["det"].keys()
    for key, value in t["det"].items():
        _same_text(g["det"][key], value)


def test_autograd_fundamentals_runs_and_its_claims_hold():
    g = _run("autograd_fundamentals")
    torch = g["torch"]
    a = torch.linspace(0., 2. * 3.141592653589793, steps=25)
    _close(g["det"]["a_grad"], (-3 * a.sin()).tolist(), atol=1e-6)  # d(3 cos a - 1)/da
    assert g["det"]["c_grad"] is None and g["grad_before"] is None
    assert g["step_ok"] and g["grad_after_zero"] is None  # zero_grad sets None, as torch
    # 1 + 5 backwards without zero_grad: the accumulated gradient is much larger
    assert g["accumulated"].abs().sum() > 3 * g["one_grad"].abs().sum()
    assert g["profiled"] == {"aten::div": 1000, "aten::mul": 1000}
    assert g["vector_backward_ok"] and g["jac1_ok"] and g["jac3_ok"] and g["vjp_ok"]
    assert len(g["plt"].plotted) == 2


def test_autograd_fundamentals_matches_torch():
    g, t = _run("autograd_fundamentals"), _run_torch("autograd_fundamentals")
    assert g["det"].keys() == t["det"].keys()
    for key, value in t["det"].items():
        _same_text(g["det"][key], value, rtol=2e-6)


def test_building_models_layers_behave_as_documented():
    g = _run("building_models")
    assert g["linear_ok"] and g["maxpool_ok"] and g["dropout_ok"]
    assert 10 < g["input_mean"] < 20 and abs(g["normed_mean"]) < 1e-6
    assert g["det"]["lenet_params"] == 8 * 25 + 8 + 16 * 8 * 9 + 16 + 576 * 100 + 100 \
        + 100 * 50 + 50 + 510
    assert "has no attribute 'max_pool2d'" in g["det"]["lenet_error"]


def test_building_models_matches_torch():
    g, t = _run("building_models"), _run_torch("building_models")
    assert g["det"].keys() == t["det"].keys()
    for key, value in t["det"].items():
        _same_text(g["det"][key], value, rtol=2e-6)


def test_training_loop_learns_digits_and_saves_the_best_model():
    g = _run("training_loop")
    assert g["first_batch"] == ((4, 1, 28, 28), (4,), (28, 112))
    assert g["dummy_loss_ok"]
    assert g["train_losses"][0] > 2 * min(g["train_losses"])
    assert len(g["saved"]) >= 1 and g["validation_accuracy"] > 0.7


def test_training_loop_fixed_steps_match_torch():
    g, t = _run("training_loop"), _run_torch("training_loop")
    _close(g["fixed_losses"], t["fixed_losses"], rtol=1e-4, atol=1e-5)


# ------------------------------------------------------- state_dicts, saving and loading


def test_state_dict_recipes():
    g = _run("state_dict_recipes")
    assert g["epoch_losses"][-1] < 0.7 * g["epoch_losses"][0]
    assert g["grads_after_model_zero_grad"] == [None] * 10
    assert [k for k, _ in g["model_state_sizes"]] == [
        f"{m}.{p}" for m in ("conv1", "conv2", "fc1", "fc2", "fc3") for p in ("weight", "bias")]
    assert len(g["optimizer_state"]["state"]) == 10 and g["fresh_optimizer_state"]["state"] == {}
    assert repr(g["warm_result"]) == "<All keys matched successfully>" and g["warm_same"]
    assert g["partial_keys"] == (["head.bias", "head.weight"], sorted(
        f"fc{i}.{p}" for i in (1, 2, 3) for p in ("weight", "bias")))
    assert g["state_dict_inference_same"] and g["entire_inference_same"]
    assert g["entire_default_error"] == "UnpicklingError"


def test_state_dict_recipes_match_torch():
    g, t = _run("state_dict_recipes"), _run_torch("state_dict_recipes")
    assert g["model_state_sizes"] == t["model_state_sizes"]
    assert g["fresh_optimizer_state"] == t["fresh_optimizer_state"]
    assert g["fixed_param_groups"] == t["fixed_param_groups"]
    assert repr(g["partial_result"]) == repr(t["partial_result"])
    assert g["strict_error"] == t["strict_error"]
    _close(g["fixed_losses"], t["fixed_losses"], rtol=1e-4, atol=1e-5)
    for k, v in t["fixed_momentum"].items():
        _close(g["fixed_momentum"][k], v, rtol=1e-3, atol=1e-5)


# -------------------------------------------- example programs: RNN, GAT, VAE, tuning, LM


def test_mnist_rnn_learns_digits():
    g = _run("mnist_rnn")
    losses, results = g["train_losses"], g["test_results"]
    assert sum(losses[-10:]) < 0.6 * sum(losses[:10])
    assert results[-1][1] > 0.5 and results[-1][0] < results[0][0]
    _close(g["lrs"], [0.7, 0.49, 0.343, 0.2401], rtol=1e-6)  # StepLR(gamma=0.7) from lr=1.0


def test_mnist_rnn_fixed_weights_match_torch():
    g, t = _run("mnist_rnn"), _run_torch("mnist_rnn")
    _close(g["fixed_result"]["out"], t["fixed_result"]["out"], rtol=1e-4, atol=1e-5)
    _close(g["fixed_result"]["x_grad"], t["fixed_result"]["x_grad"], rtol=1e-3, atol=1e-6)


def test_gat_learns_the_synthetic_citation_graph():
    g = _run("gat")
    assert g["acc_test"] > 0.7 and g["acc_train_end"] > 0.8
    assert g["loss_train_end"] < 0.8 * 1.9459  # below log(7), where it starts


def test_gat_loads_cora_and_computes_as_torch():
    g, t = _run("gat"), _run_torch("gat")
    _same_text(g["data_summary"], t["data_summary"])
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-5)


def test_vae_example_trains_and_saves_reconstructions_and_samples():
    g = _run("vae_example")
    assert g["train_losses"][-1] < 0.7 * g["train_losses"][0]
    assert g["test_losses"][-1] < g["test_losses"][0]
    assert g["saved"] == [f"{kind}_{e}.png.npy" for kind in ("reconstruction", "sample")
                          for e in (1, 2, 3)]
    assert g["sample_grid"].shape == (8 * 28, 8 * 28)


def test_vae_example_loss_and_gradients_match_torch():
    g, t = _run("vae_example"), _run_torch("vae_example")
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-4)


def test_tuning_guide_snippets_run_and_keep_results():
    g = _run("tuning_guide")
    torch = g["torch"]
    assert g["losses"][-1] < g["losses"][0]
    assert g["grads_are_none"] and not g["val_requires_grad"]
    assert g["gelu_close"] and g["channels_last_same"] and g["channels_last_weight"]
    assert g["traced_same"] and g["compiled_same"]
    assert g["bf16_dtype"] == torch.bfloat16
    assert g["matmul_precision"] == "high" and g["cudnn_benchmark"] is True
    assert g["onednn_flag"] and not torch.jit.onednn_fusion_enabled()


def test_tuning_guide_matches_torch():
    g, t = _run("tuning_guide"), _run_torch("tuning_guide")
    assert g["compile_positional_error"] == t["compile_positional_error"]
    assert g["bf16_dtype"] is g["torch"].bfloat16 and t["bf16_dtype"] is t["torch"].bfloat16
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-5)


def test_transformer_language_model_learns_and_reloads_the_best_epoch():
    g = _run("transformer_lm")
    assert g["val_losses"][-1] < 0.7 * g["val_losses"][0] or min(g["val_losses"]) < 0.7 * math.log(
        g["ntokens"])
    assert g["test_loss"] < 0.6 * math.log(g["ntokens"])  # far below chance
    assert abs(g["test_loss"] - min(g["val_losses"])) < 0.3  # the best epoch's weights
    _close(g["lrs"], [5.0 * 0.95, 5.0 * 0.95 ** 2, 5.0 * 0.95 ** 3], rtol=1e-9)


def test_transformer_language_model_matches_torch():
    g, t = _run("transformer_lm"), _run_torch("transformer_lm")
    assert g["fixed_result"]["data"] == t["fixed_result"]["data"]
    for key, value in t["fixed_result"].items():
        _close(g["fixed_result"][key], value, rtol=1e-4, atol=1e-5)
