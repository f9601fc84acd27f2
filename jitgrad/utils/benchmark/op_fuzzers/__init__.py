"""Built-in fuzzers of ``torch.utils.benchmark.op_fuzzers``: ``binary.BinaryOpFuzzer`` and
``unary.UnaryOpFuzzer`` (dense tensors; the sparse and spectral ones are not here)."""
