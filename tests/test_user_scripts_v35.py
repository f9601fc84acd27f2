"""A script written for these tests in the way text-classification code writes torch code (set
V35: Kim's sentence CNN in its Conv2d and Conv1d forms and its multichannel variant, a
character-aware CNN with highway layers, fastText-style ``EmbeddingBag`` models with offsets,
per-sample weights and sparse gradients, and the ``torch.utils.data`` plumbing around them:
a hand-built vocabulary, map-style and iterable data sets, bucketing, sorting, subset and
weighted samplers, padding collate functions, seeded loaders), run on jitgrad.

The script in tests/scripts/ runs as ``__main__``; these tests read what it computed from its
globals and assert that the vocabulary keeps its specials and drops rare words, that splits,
concatenations and stream shards cover their data exactly once, that the samplers batch by
length, balance the classes and repeat under a seed, that ``default_collate`` turns NumPy
values into tensors of the right dtypes, that the two forms of Kim's CNN agree, padding rows
get no gradient and frozen tables stay put, that ``EmbeddingBag``'s modes equal their by-hand
and 2-D forms, that the models learn the sentiment corpus; and, where torch is installed, that
every sampler order, the fixed-weight outputs and gradients and the first training losses
equal the same script's with ``import torch``.
"""

import math

import numpy as np

from test_user_scripts import _close
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run
from test_user_scripts_e28 import _close_nested

NAME = "text_cnn_data"


# ------------------------------------------------------------------ vocabulary, data sets


def test_vocab_splits_and_datasets():
    g = _run(NAME)
    vocab, vocab_all = g["vocab"], g["vocab_all"]
    assert vocab.itos[:2] == ["<pad>", "<unk>"] and g["PAD_IDX"] == 0
    # min_freq=2 drops the one-off typos; what it keeps was seen at least twice
    assert len(vocab_all) > len(vocab)
    assert all(g["word_counts"][w] >= 2 for w in vocab.itos[2:])
    assert vocab["zzzz"] == vocab.unk_index == 1
    counts = [g["word_counts"][w] for w in vocab.itos[2:]]
    assert counts == sorted(counts, reverse=True)
    # random_split by fractions: 128 + 32, disjoint, covering the corpus
    train, valid = g["recorded_orders"]["split_train"], g["recorded_orders"]["split_valid"]
    assert (len(train), len(valid)) == (128, 32)
    assert sorted(train + valid) == list(range(160))
    # ConcatDataset, Dataset.__add__, negative indices, a Subset across the boundary
    assert g["combined_sizes"] == [128, 132] and g["combined_len_add"] == 132
    ids, label = g["combined_last"]
    assert label == 1 and ids.tolist() == [vocab["love"]] * 3 + [vocab["it"]]
    assert g["subset_items"] == [g["train_labels"][0], 0]
    # the stream: no worker info in the main process; four shards cover it in order
    assert g["worker_info_main"] is None
    assert g["shard_lengths"] == [8, 8, 8, 8]
    assert g["sharded_labels"] == g["stream_labels"]
    assert sum(g["stream_batches"], []) == g["stream_labels"]
    assert [len(b) for b in g["stream_batches"]] == [8, 8, 8, 8]
    # two workers: each collates its own half; the loader alternates between them
    shapes, labels = zip(*g["worker_batches"])
    assert [s[0] for s in shapes] == [4] * 8
    assert sum(labels[0::2], []) == g["stream_labels"][:16]
    assert sum(labels[1::2], []) == g["stream_labels"][16:]


def test_default_collate_of_numpy_dicts_and_tuples():
    g = _run(NAME)
    torch = g["torch"]
    batch, by_hand = g["features_batch"], g["collated_by_hand"]
    assert g["feature_types"] == {"features": "Tensor", "label": "Tensor", "meta": "list",
                                  "text": "list"}
    assert g["collated_dtypes"] == (torch.float32, torch.int64, torch.float64)
    assert tuple(batch["features"].shape) == (6, 4)
    assert torch.equal(batch["features"], by_hand["features"])
    assert batch["text"] == by_hand["text"] == [t for t, _ in g["train_set"].pairs[:6]]
    assert batch["meta"][0].tolist() == list(range(6))
    # the third feature is the number of tokens, the second entry of meta the characters
    assert batch["features"][:, 2].tolist() == g["train_set"].lengths[:6]
    assert batch["meta"][1].tolist() == [len(t) for t in batch["text"]]
    nested = g["nested"]
    assert nested[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert nested[1]["w"].dtype == torch.float64 and nested[1]["w"].tolist() == [1.5, 2.5]


# ------------------------------------------------------------------------------ samplers


def test_samplers_bucket_balance_and_repeat():
    g = _run(NAME)
    orders = g["recorded_orders"]
    # the bucketing batch sampler: every review once per epoch, batches of similar length
    for key in ("bucket_epoch0", "bucket_epoch1"):
        assert sorted(sum(orders[key], [])) == list(range(128))
    assert orders["bucket_epoch0"] != orders["bucket_epoch1"]
    assert g["bucket_spread"] <= 6 and g["bucket_len"] == len(orders["bucket_epoch0"]) == 8
    assert (g["bucket_drop_len"], g["bucket_keep_len"]) == (6, 7)
    assert g["bucket_drop_count"] == 6 and g["bucket_keep_count"] == 7
    assert g["bucket_padding"] < 0.7 * g["random_padding"]
    # BatchSampler over a sorting sampler: sorted, the short last batch dropped
    valid_lengths = g["valid_set"].lengths
    flat = sum(g["sorted_batches"], [])
    assert len(g["sorted_batches"]) == 6 and len(flat) == 30
    assert [valid_lengths[i] for i in flat] == sorted(valid_lengths)[:30]
    assert len(g["sorted_batches_keep"]) == 7 and len(g["sorted_batches_keep"][-1]) == 2
    # SubsetRandomSampler: a new order of the same indices each epoch
    assert sorted(orders["subset_epoch0"]) == sorted(orders["subset_epoch1"]) == g["half"]
    assert orders["subset_epoch0"] != orders["subset_epoch1"]
    # WeightedRandomSampler with inverse class frequencies draws the classes about evenly
    assert g["natural_fraction"] > 0.7 and abs(g["balanced_fraction"] - 0.5) < 0.1
    assert len(set(orders["weighted_no_replacement"])) == 20
    # a seeded loader repeats itself; another seed or the next epoch does not
    assert g["same_seed_same_order"] and g["other_seed_other_order"] and g["epochs_differ"]
    assert (g["loader_len"], g["loader_len_keep"]) == (5, 6)
    for epoch in orders["loader_seed7"]:
        assert len(epoch) == 5 and all(len(b) == 24 + 1 for b in epoch)  # drop_last
    shared0, shared1 = orders["shared_pass0"], orders["shared_pass1"]
    assert sorted(sum(shared0, [])) == sorted(sum(shared1, [])) == list(range(10))
    assert shared0 != shared1


# ------------------------------------------------------------------ models, invariants


def test_text_cnn_forms_padding_and_frozen_tables():
    g = _run(NAME)
    r = g["fixed_results"]
    # the vectors file: every word but the typos; those start at U(-0.25, 0.25)
    vocab, pretrained = g["vocab"], r["pretrained"].numpy()
    assert g["n_found"] == g["n_vectors"] == len(vocab) - 4 and g["dim"] == 12
    typos = [vocab[w] for w in vocab.itos if w.startswith("zz")]
    assert len(typos) == 2 and np.abs(pretrained[typos + [1]]).max() <= 0.25
    _close(pretrained[vocab["good"]], g["found"]["good"], rtol=0, atol=0)
    assert not pretrained[0].any()
    left = r["left_padded"].numpy()
    assert (left[:, -1] != 0).all() and left.shape == tuple(r["fixed_x"].shape)
    assert tuple(r["kim2d_logits"].shape) == (6, 2)
    # Kim's Conv2d(1, C, (k, D)) is a Conv1d over the embedding dimension
    assert g["conv_forms_difference"] < 1e-5 and g["conv1d_weight_grad_difference"] < 1e-6
    # padding_idx rows get no gradient, and stay zero through training
    assert g["pad_row_grad"] == 0.0 and g["pad_row_after"] == 0.0
    assert float(r["kim2d_grads"]["embedding.weight"][0].abs().sum()) == 0.0
    # multichannel: the static table is frozen, the other one is trained
    assert not g["static_requires_grad"] and not g["static_has_grad"]
    assert g["nonstatic_requires_grad"]
    assert "static.weight" not in g["multi_param_names"]
    assert "static.weight" not in r["multi_grads"] and "embedding.weight" in r["multi_grads"]
    assert g["static_unchanged"]
    assert g["pretrained_shared"] and g["pretrained_moved"]
    # a review shorter than a filter raises instead of pooling nothing
    assert "Kernel size can't be greater than actual input size" in g["short_conv_error"]
    assert g["short_pool_error"] == "max_pool1d() Invalid computed output size: 0"
    # dropout changes the training-mode logits; Adadelta lowers the loss on its batch
    assert not np.allclose(r["kim1d_train_logits"].numpy(), r["kim2d_logits"].numpy())
    losses = r["adadelta_losses"].tolist()
    assert losses[2] < losses[1] < losses[0]
    # the highway gate starts mostly closed (bias -2); fully closed, it carries x through
    assert abs(g["gate_open"] - 1 / (1 + math.exp(2))) < 1e-6
    _close(r["highway_identity"], np.ones((2, 4)), rtol=0, atol=1e-6)
    assert tuple(r["char_logits"].shape) == (5, 2)
    assert set(r["char_grads"]) == {n for n, _ in g["char_model"].named_parameters()}


def test_embedding_bag_modes_and_forms():
    g = _run(NAME)
    r = g["fixed_results"]
    outputs, grads = r["bag_outputs"], r["bag_grads"]
    assert {k: tuple(v.shape) for k, v in outputs.items()} == {m: (5, 6) for m in
                                                              ("sum", "mean", "max")}
    # per-sample weights by hand; include_last_offset with the end appended; 2-D input
    assert g["psw_by_hand_difference"] < 1e-5
    _close(r["include_last_offset"], outputs["sum"], rtol=1e-6, atol=1e-6)
    assert g["bag2d_difference"] < 1e-6 and g["bag2d_sum_difference"] < 1e-6
    # the padding row gets no gradient in any mode; max sends one per bag and column
    for mode in ("sum", "mean", "max"):
        assert float(grads[mode][0].abs().sum()) == 0.0
    n_bags = 5
    column_weights = np.linspace(-1, 1, 6)
    _close(grads["max"].numpy().sum(0), n_bags * column_weights, rtol=1e-6, atol=1e-6)
    _close(grads["mean"].numpy().sum(0), n_bags * column_weights, rtol=1e-5, atol=1e-6)
    # an empty bag is zeros in every mode
    for mode in ("sum", "mean", "max"):
        empty = r[f"empty_bag_{mode}"].numpy()
        assert empty.shape == (4, 6) and not empty[1].any() and empty[0].any()
    assert "only supported for mode='sum'" in g["psw_mean_error"]


def test_models_learn_the_sentiment_corpus():
    g = _run(NAME)
    kim, char, bag, sparse = (g["kim_losses"], g["char_losses"], g["bag_losses"],
                              g["sparse_losses"])
    assert len(kim) == 6 * 8 and len(char) == 6 * 16 and len(bag) == 5 * 8
    assert len(sparse) == 4 * 8
    for losses in (kim, char, sparse):
        assert np.mean(losses[-8:]) < 0.5 * np.mean(losses[:8])
    assert np.mean(bag[-8:]) < 0.2 * np.mean(bag[:8])
    assert g["kim_accuracy"] >= 0.7 and g["char_accuracy"] >= 0.75
    assert g["bag_accuracy"] >= 0.8 and g["sparse_accuracy"] >= 0.75
    assert g["happy"] > 0.7 and g["sad"] < 0.45 and g["happy"] - g["sad"] > 0.3
    # the max-norm constraint binds on the output rows
    _close(g["fc_row_norms"], [g["MAX_NORM"]] * 2, rtol=1e-5)
    assert max(g["char_norms"]) > 1.0  # clipping had something to clip
    assert g["bag_lrs"] == [0.2, 0.2, 0.1, 0.1, 0.05]
    assert g["sparse_grad_layouts"] == {g["torch"].sparse_coo}


# ----------------------------------------------------------------------- torch oracle


def test_sampler_orders_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    assert g["recorded_orders"] == t["recorded_orders"]
    assert g["vocab"].itos == t["vocab"].itos and g["char_vocab"].itos == t["char_vocab"].itos
    assert g["worker_batches"] == t["worker_batches"]
    assert g["short_conv_error"] == t["short_conv_error"]


def test_fixed_results_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    _close_nested(dict(g["fixed_results"]), dict(t["fixed_results"]), rtol=1e-5, atol=1e-6)


def test_first_losses_match_torch():
    g, t = _run(NAME), _run_torch(NAME)
    for key in ("kim_losses", "char_losses", "bag_losses", "sparse_losses"):
        _close(g[key][:8], t[key][:8], rtol=1e-5, atol=0)
    _close(g["char_norms"][:8], t["char_norms"][:8], rtol=1e-5, atol=0)
