"""Training code (set E) written for these tests in the way makemore, nanoGPT, the "Let's build
GPT" lecture, d2l.ai and the PyTorch tutorials write torch code, run on jitgrad.

The scripts in tests/scripts/ run as ``__main__``; these tests read what they computed from
their globals and assert that training lowered the loss (or reached an accuracy), and, where
torch is installed, that the deterministic parts (fixed-weight forwards and gradients) equal
the same script's with ``import torch``.
"""

import importlib.util
import math

import pytest

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def _have_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def _close_nested(ours, theirs, **tol) -> None:
    """Two results of the same structure (dicts of lists/numbers) are close, key by key."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _close_nested(ours[key], theirs[key], **tol)
    else:
        _close(ours, theirs, **tol)


# ------------------------------------------- six character-level name models (makemore style)


def test_makemore_models_learn_names():
    g = _run("makemore")
    vocab = g["train_dataset"].get_vocab_size()
    for kind, record in g["results"].items():
        losses = record["losses"]
        assert losses[0] > 0.9 * math.log(vocab), kind  # starts near uniform
        assert losses[-1] < 0.85 * losses[0], kind
        assert record["best_loss"] < 0.9 * math.log(vocab), kind
    assert g["sample_only"] == {"samples_only": True}
    sampled = g["sampled"]
    assert tuple(sampled.shape) == (4, g["train_dataset"].get_output_length())
    assert sampled[:, 0].tolist() == [0] * 4 and 0 <= int(sampled.min()) < vocab > sampled.max()


def test_makemore_fixed_weights_match_torch():
    g, t = _run("makemore"), _run_torch("makemore")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-4, atol=1e-5)


# ----------------------- a character GPT trained, checkpointed and sampled (nanoGPT style)


def test_nanogpt_trains_checkpoints_and_samples():
    g = _run("nanogpt")
    losses = g["train_losses"]
    assert len(losses) == 31 and losses[-1] < 0.7 * losses[0]
    evals = g["eval_history"]
    assert [e[0] for e in evals] == [0, 10, 20, 30]
    assert evals[-1][2] < 0.7 * evals[0][2]  # val loss
    assert evals[0][2] == pytest.approx(math.log(g["meta_vocab_size"]), rel=0.05)
    checkpoint = g["torch"].load(g["os"].path.join(g["out_dir"], "ckpt.pt"))
    assert checkpoint["iter_num"] == 30 and checkpoint["model_args"]["n_embd"] == 32
    assert len(checkpoint["optimizer"]["param_groups"]) == 2
    assert [pg["weight_decay"] for pg in checkpoint["optimizer"]["param_groups"]] == [0.1, 0.0]
    assert g["model"].core.tok.weight is g["model"].head.weight  # tied after loading
    assert len(g["samples"]) == 3
    for text in g["samples"]:
        assert len(text) == 41 and set(text) <= set(g["stoi"])


def test_nanogpt_fixed_weights_and_steps_match_torch():
    g, t = _run("nanogpt"), _run_torch("nanogpt")
    for bias in (True, False):
        ours, theirs = dict(g["fixed_results"][bias]), dict(t["fixed_results"][bias])
        assert ours.pop("groups") == theirs.pop("groups") == [(10, 0.1), (18 if bias else 5, 0.0)]
        assert ours.pop("tied") and theirs.pop("tied")
        assert ours.pop("num_params") == theirs.pop("num_params")
        # (query and key biases get gradients that are 0 up to rounding, which Adam scales
        # up to steps of lr: after the steps they differ in the 4th digit)
        _close_nested(ours.pop("after_steps"), theirs.pop("after_steps"), rtol=1e-4, atol=1e-3)
        _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)


# ------------------------------ character bigram model and a small character GPT (lecture style)


def test_ng_lecture_bigram_reaches_the_bigram_loss():
    g = _run("ng_lecture_bigram")
    history = g["history"]
    assert [h[0] for h in history] == [0, 100, 200]
    assert history[0][1] > math.log(g["vocab_size"])  # (N(0, 1) logits: worse than uniform)
    assert history[-1][2] < 0.4 * history[0][2]  # val loss
    assert len(g["sample"]) == 101 and set(g["sample"]) <= set(g["chars"])


def test_ng_lecture_gpt_learns():
    g = _run("ng_lecture_gpt")
    history = g["history"]
    assert [h[0] for h in history] == [0, 20, 40, 59]
    assert history[-1][2] < 0.5 * history[0][2]
    assert len(g["sample"]) == 101 and set(g["sample"]) <= set(g["chars"])
    assert g["model"].training  # (mean_losses calls net.train() after its net.eval())


def test_ng_lecture_gpt_fixed_weights_match_torch():
    g, t = _run("ng_lecture_gpt"), _run_torch("ng_lecture_gpt")
    _close_nested(g["fixed_result"], t["fixed_result"], rtol=1e-4, atol=1e-5)


# ------------------------- d2l-style linear regression, softmax, MLPs, weight decay, dropout


@pytest.mark.slow
def test_d2l_linear_softmax_mlp_dropout_learn():
    r = _run("d2l_linear_mlp")["results"]
    assert r["batch_shapes"] == ((32, 2), (32, 1)) and r["num_batches"] == 32
    assert max(r["scratch_errors"]) < 0.4 and r["scratch_val_loss"] < 0.2  # 3 epochs, lr 0.03
    assert max(r["concise_errors"]) < 0.05
    # weight decay: lambda 3 shrinks w (to under a third of its norm) and overfits less
    (norm_0, m_0), (norm_3, m_3) = r["weight_decay_scratch_0"], r["weight_decay_scratch_3"]
    assert norm_3 < 0.3 * norm_0 and m_0["train_loss"] < m_0["val_loss"]
    assert m_3["val_loss"] < m_0["val_loss"]
    # (LazyLinear's weight.data.normal_ before materializing is a no-op in torch too: it starts
    # from kaiming's init, norm ~0.17, and weight decay shrinks it; torch ends near 0.015)
    assert r["weight_decay_concise"] < 0.05
    assert r["keepdims_sums"] == ([[5.0, 7.0, 9.0]], [[6.0], [15.0]])
    _close(r["softmax_row_sums"], [1.0, 1.0])
    _close(r["picked"], [0.1, 0.5])
    assert r["cross_entropy"] == pytest.approx(-(math.log(0.1) + math.log(0.5)) / 2, rel=1e-6)
    for key in ("softmax_scratch", "softmax_concise", "mlp_concise"):
        assert r[key]["val_acc"] > 0.75, key  # 10 digits: chance is 0.1
    for key in ("mlp_scratch", "dropout_scratch", "dropout_concise"):
        assert r[key]["val_acc"] > 0.5, key  # (an init of sigma 0.01 starts slowly)
    assert r["wrong_labels"][0] > 0 and r["wrong_labels"][1] == (1, 8, 8)
    half = r["dropout_half"]
    kept = half != 0
    assert 0 < int(kept.sum()) < 16  # (element 0 is 0 either way)
    assert (half[kept] == 2 * _run("d2l_linear_mlp")["drop_in"][kept]).all()  # kept: x2
    assert r["dropout_ends"][1] == [[0.0] * 8] * 2
    assert r["lazy_shapes"] == [(256, 64), (256,), (256, 256), (256,), (10, 256), (10,)]


@pytest.mark.slow
def test_d2l_linear_mlp_fixed_weights_match_torch():
    g, t = _run("d2l_linear_mlp"), _run_torch("d2l_linear_mlp")
    _close_nested(g["fixed_result"], t["fixed_result"], rtol=1e-4, atol=1e-5)
    for key in ("keepdims_sums", "batch_shapes", "num_batches", "lazy_shapes"):
        assert g["results"][key] == t["results"][key], key


# ------------------ d2l-style custom modules, init, file I/O, CNNs, batch norm, small ResNet


@pytest.mark.slow
def test_d2l_builders_guide_and_cnns():
    r = _run("d2l_builders_cnn")["results"]
    assert r["sequential_shape"] == r["mlp_shape"] == (2, 10)
    assert r["my_sequential"] == ((2, 10), ["0", "1", "2"])
    assert 0 < r["fixed_hidden"][0] <= 1 and r["fixed_hidden"][1] == 2  # (rand_weight: no param)
    assert r["chimera"][0] == () and len(r["chimera"][1]) == 10
    assert r["state_dict_keys"] == ["weight", "bias"] and r["bias_type"] == "Parameter"
    assert r["grad_is_none"] is True
    assert r["named_shapes"] == [("0.weight", (8, 4)), ("0.bias", (8,)), ("2.weight", (1, 8)),
                                 ("2.bias", (1,))]
    assert r["shared"] == (True, 100.0, 6)  # one shared layer: its parameters counted once
    assert r["init_normal"][0] < 0.06 and r["init_normal"][1] == 0.0
    assert r["init_constant"] == ([1.0] * 4, 0.0)
    assert r["init_xavier_42"] == (True, [[42.0] * 8])
    assert r["my_init"] and r["edited"] == (42.0, True)
    assert r["uninitialized"] == "UninitializedParameter"
    assert r["lazy_shape"] == ((256, 20), "Linear")  # LazyLinear becomes a Linear
    assert r["centered"] == [-2.0, -1.0, 0.0, 1.0, 2.0] and abs(r["centered_mean"]) < 1e-6
    assert r["my_linear"] == ((5, 3), (2, 3)) and r["my_linear_net"] == (2, 1)
    assert r["file_io"] == ([0, 1, 2, 3], [0.0] * 4, ["x", "y"]) and r["clone_equal"]
    assert r["corr2d"] == [[19.0, 25.0], [37.0, 43.0]]
    assert r["edges"] == ([[0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0]] * 6, 0.0)
    _close(r["learned_kernel"], [[1.0, -1.0]], atol=0.1)
    losses = r["conv_losses"]
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.05 * losses[0]
    assert r["lenet_summary"] == [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,),
                                  (84, 120), (84,), (10, 84), (10,)]
    # batch norm lets the sigmoid LeNet train in 3 epochs (without it, it stays near chance)
    for key in ("bn_scratch", "bn_concise", "resnet"):
        assert r[key]["val_acc"] > 0.5 and r[key]["train_loss"] < 1.5, key
    shape, moving_var = r["bn_gamma_beta"]
    assert shape == (6,) and all(0 < v < 1 for v in moving_var)  # the running estimate moved
    assert r["residual_shapes"] == [(4, 3, 6, 6), (4, 6, 3, 3)]
    assert r["resnet_children"] == ["0", "b2", "b3", "last"]
    assert r["resnext_shape"] == (4, 32, 12, 12)


@pytest.mark.slow
def test_d2l_batch_norm_and_resnet_fixed_weights_match_torch():
    g, t = _run("d2l_builders_cnn"), _run_torch("d2l_builders_cnn")
    _close_nested(g["fixed_results"], t["fixed_results"], rtol=1e-4, atol=1e-5)
    for key in ("chimera", "named_shapes", "shared", "file_io", "corr2d", "edges",
                "lenet_summary", "residual_shapes", "resnet_children", "uninitialized"):
        assert g["results"][key] == t["results"][key], key


# ------------------------------ d2l-style character language models: RNN, GRU, LSTM cells


@pytest.mark.slow
def test_d2l_rnn_gru_lstm_language_models_learn():
    r = _run("d2l_rnn")["results"]
    indices, tokens = r["words"]
    assert len(indices) == 10 and all(len(t) == 1 for t in tokens)
    num_tokens, vocab_size, top_words, num_bigrams = r["vocab"]
    assert vocab_size == 25 and num_tokens > 10000 and num_bigrams > 100  # 23 letters, ' ', <unk>
    assert top_words[0][1] >= top_words[1][1] >= top_words[2][1]  # sorted by frequency
    assert r["batch"] == ((256, 16), True)  # Y is X shifted by one
    assert r["one_hot"] == [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0]]
    for key in ("rnn_scratch", "rnn_concise", "gru_scratch", "gru_concise", "lstm_scratch",
                "lstm_concise"):
        metrics = r[key][0] if isinstance(r[key], tuple) else r[key]
        assert metrics["val_ppl"] < 0.75 * vocab_size, key  # (uniform guessing: 25)
    assert r["rnn_concise"][0]["val_ppl"] < 15 and r["gru_concise"][0]["val_ppl"] < 15
    for key in ("rnn_scratch", "rnn_concise", "gru_concise", "lstm_concise"):
        prediction = r[key][1]
        assert prediction.startswith("it has") and len(prediction) == 26, key


@pytest.mark.slow
def test_d2l_rnn_fixed_weights_match_torch():
    g, t = _run("d2l_rnn"), _run_torch("d2l_rnn")
    for key in ("words", "vocab", "batch", "one_hot"):
        assert g["results"][key] == t["results"][key], key
    for name, theirs in t["fixed_results"].items():
        ours, theirs = dict(g["fixed_results"][name]), dict(theirs)
        assert ours.pop("prediction") == theirs.pop("prediction"), name
        _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)


# ----------------------- d2l-style attention, GRU decoder with attention, Transformer (toy MT)


def test_d2l_attention_bahdanau_translates_and_transformer_encoder_shapes():
    g = _run("d2l_attention")
    r, torch = g["results"], g["torch"]
    assert r["mt_batch"] == (torch.int64, (3, 9), torch.int64, (3, 9))
    assert r["built"][0][1:3] == [".", "<eos>"] and r["built"][1][0] == "<bos>"
    assert r["masked_1d"] == [[[True, True, False, False]] * 2, [[True, True, True, False]] * 2]
    assert r["masked_2d"] == [[[True, False, False, False], [True, True, True, False]],
                              [[True, True, False, False], [True, True, True, True]]]
    assert r["dot_weights_nonzero"] == [2, 6]  # the valid lengths
    assert r["bahdanau"]["val_loss"] < 0.25 * r["bahdanau_first_train_loss"]
    assert [t for t, _ in r["translations"]] == ["va !", "j'ai perdu .", "il est calme .",
                                                 "je suis chez moi ."]
    assert all(score == 1.0 for _, score in r["translations"])
    heat = r["attention_heatmap"]
    assert tuple(heat.shape) == (1, 1, 9, 4)
    # (the attention over the 4 source positions of "i'm home . <eos>" sums to 1: no padding)
    _close(heat.detach().sum(-1).reshape(-1).tolist(), [1.0] * 9, rtol=1e-5)
    pos = r["positional"]
    _close(pos[0].tolist(), [math.sin(i / 10000 ** (6 / 32)) for i in range(60)], atol=1e-5)
    _close(pos[1].tolist(), [math.cos(i / 10000 ** (6 / 32)) for i in range(60)], atol=1e-5)
    assert r["ffn_rows_equal"]
    assert r["ln_bn"] == ([[-0.9999799728393555, 0.9999799728393555]] * 2,
                          [[-0.9999799728393555] * 2, [0.9999799728393555] * 2])
    assert r["encoder_weights"] == [(16, 100, 100), (16, 100, 100)]
    # the whole Transformer (encoder and decoder) trained on the same pairs
    assert r["transformer"]["val_loss"] < 0.25 * r["transformer_first_train_loss"]
    assert r["transformer_translations"] == [t for t, _ in r["translations"]]
    assert r["dec_attention_steps"] == [[(4, 1, 9), (4, 1, 9)]] * 2  # 4 heads x 1 query x 9 keys


def test_d2l_attention_fixed_weights_match_torch():
    g, t = _run("d2l_attention"), _run_torch("d2l_attention")
    for key in ("built", "masked_1d", "masked_2d", "dot_weights_nonzero", "encoder_weights"):
        assert g["results"][key] == t["results"][key], key
    ours, theirs = dict(g["fixed_results"]["seq2seq"]), dict(t["fixed_results"]["seq2seq"])
    assert ours.pop("preds") == theirs.pop("preds")
    _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)
    _close_nested(g["fixed_results"]["transformer_encoder"],
                  t["fixed_results"]["transformer_encoder"], rtol=1e-4, atol=1e-5)
    ours, theirs = dict(g["fixed_results"]["transformer"]), dict(t["fixed_results"]["transformer"])
    assert ours.pop("preds") == theirs.pop("preds")
    _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)


# ----------------------------------------- deep Q-learning on a cart-pole (DQN tutorial style)


@pytest.mark.slow
def test_dqn_cartpole_learns_to_balance_and_fixed_updates_match_torch():
    # (one test: two would run the training twice when xdist gives them to two workers)
    g = _run("dqn_cartpole")
    durations = g["episode_durations"]
    assert len(durations) == 80
    first, last = sum(durations[:20]) / 20, sum(durations[-10:]) / 10
    assert last > 3 * first and last > 80, (first, last)  # (torch's run: 21 -> 170)
    if not _have_torch():
        return
    # (torch's run skips the 80 training episodes: only the fixed-weight updates after them,
    # which start from their own weights, optimizer, buffer and seed, are compared)
    t = _run_torch("dqn_cartpole", skip={"EPISODES = 80": "EPISODES = 0"})
    assert len(g["fixed_result"]["losses"]) == 3
    _close_nested(g["fixed_result"], t["fixed_result"], rtol=1e-4, atol=1e-6)


# ---------------------------------------- a gpt-nano learning 2-digit addition (minGPT style)


@pytest.mark.slow
def test_mingpt_adder_learns_to_add_and_fixed_weights_match_torch():
    g = _run("mingpt_adder")
    losses, scores = g["losses"], g["scores"]
    assert len(losses) == 451 and sum(losses[-20:]) / 20 < 0.5 * losses[0]
    assert [s[0] for s in scores] == [0, 225, 450]
    # (of 500 training problems, the first five batches as minGPT's adder scores them, and 500
    # test problems)
    assert scores[-1][1] > 20 * max(scores[0][1], 1) and scores[-1][2] > 50
    assert g["top_score"] == scores[-1][1] + scores[-1][2]
    assert sorted(g["os"].listdir(g["config"].system.work_dir)) == ["args.txt", "config.json",
                                                                   "model.pt"]
    assert g["fixed_groups"] == [(13, 0.1), (28, 0.0)]  # Linear weights decay; biases, LN, emb not
    # fixed weights against torch's, in the same test: two tests would run the training twice
    # when xdist gives them to two workers
    if not _have_torch():
        return
    # (torch's run skips the training: the probe after it starts from its own sine weights,
    # problems and optimizer)
    t = _run_torch("mingpt_adder", skip={'"--trainer.max_iters=451"': '"--trainer.max_iters=0"'})
    assert g["fixed_groups"] == t["fixed_groups"]
    ours, theirs = dict(g["fixed_result"]), dict(t["fixed_result"])
    for key in ("x", "y", "greedy"):
        assert ours.pop(key) == theirs.pop(key), key
    # (Adam's first step is lr * sign(grad) where a gradient is ~0: rounding shows at 1e-5)
    _close_nested(ours.pop("stepped"), theirs.pop("stepped"), rtol=1e-4, atol=1e-4)
    _close_nested(ours, theirs, rtol=1e-4, atol=1e-5)
