"""torch's top-level recurrent functions (``torch.rnn_tanh_cell``, ``torch.lstm_cell``,
``torch.gru_cell``, ``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu``),
with ATen's signatures: weights passed explicitly (the cells) or as the flat parameter list
of an ``nn.RNN``/``LSTM``/``GRU`` (``module._flat_weights``: per layer and direction
``w_ih, w_hh[, b_ih, b_hh][, w_hr]``).

The steps are ``nn.rnn``'s own (``_rnn_step``, ``_lstm_step``) and the layers run through
``RNNBase``'s loop over layers and directions, so the functions and the modules compute the
same ops. ``jitgrad.__getattr__`` serves these names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "lstm", "gru",
           "rnn_tanh", "rnn_relu"]


def _rnn() -> Any:
    from .nn import rnn

    return rnn


def _check_cell(input: Any, hx: Any, w_ih: Any, label: int = 0) -> None:  # noqa: A002
    """ATen's checks of an rnn cell's input and hidden state (``input`` 2-D)."""
    size = input.size(1)  # (torch's IndexError for 1-d input)
    if size != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {size} expected "
                           f"{w_ih.shape[1]}")
    if input.shape[0] != hx.size(0):
        raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} "
                           f"batch size {hx.shape[0]}")


def _linear(x: Any, w: Any, b: Any) -> Any:
    from .nn import functional as F

    return F.linear(x, w, b)


def _simple_cell(mode: str, input: Any, hx: Any, w_ih: Any, w_hh: Any,  # noqa: A002
                 b_ih: Any, b_hh: Any) -> Any:
    _check_cell(input, hx, w_ih)
    return _rnn()._rnn_step(mode, _linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None,  # noqa: A002
                  b_hh: Any = None) -> Any:
    """One Elman RNN step: ``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``."""
    return _simple_cell("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None,  # noqa: A002
                  b_hh: Any = None) -> Any:
    """One Elman RNN step with ReLU: ``relu(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``."""
    return _simple_cell("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None,  # noqa: A002
             b_hh: Any = None) -> Any:
    """One GRU step (gates r, z, n in the rows of the weights, as ``nn.GRUCell``)."""
    return _simple_cell("GRU", input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None,  # noqa: A002
              b_hh: Any = None) -> tuple:
    """One LSTM step: ``hx`` is ``(h, c)``; returns ``(h', c')`` (gates i, f, g, o)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    h, c = hx
    _check_cell(input, h, w_ih, 0)
    _check_cell(input, c, w_ih, 1)
    return _rnn()._lstm_step(_linear(input, w_ih, b_ih), h, c, w_hh, b_hh, None)


class _FlatRNN:
    """The parts of an ``nn.RNNBase`` its loop over layers reads, made from a flat weight list
    (``RNNBase._run`` and the methods it calls are borrowed, not copied)."""

    def __init__(self, mode: str, params: Any, has_biases: bool, num_layers: int,
                 dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> None:
        rnn = _rnn()
        directions = 2 if bidirectional else 1
        params = list(params)
        per = len(params) // (num_layers * directions) if num_layers * directions else 0
        base = 4 if has_biases else 2
        if per not in (base, base + 1) or per * num_layers * directions != len(params):
            raise RuntimeError(f"{mode.lower()}: expected {base * num_layers * directions} "
                               f"parameters (or {(base + 1) * num_layers * directions} with "
                               f"projections), got {len(params)}")
        self._flat = params
        self._per = per
        self._has_biases = has_biases
        self.mode = mode
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.training = bool(train)
        w_ih, w_hh = params[0], params[1]
        self.hidden_size = w_hh.shape[0] // rnn._GATES[mode]
        self.proj_size = w_hh.shape[1] if per == base + 1 else 0
        self.input_size = w_ih.shape[1]
        self.weight_ih_l0 = w_ih

    def _weights(self, layer: int, direction: int) -> tuple:
        k = (layer * (2 if self.bidirectional else 1) + direction) * self._per
        w = self._flat[k:k + self._per]
        if self._has_biases:
            return w[0], w[1], w[2], w[3], (w[4] if len(w) == 5 else None)
        return w[0], w[1], None, None, (w[2] if len(w) == 3 else None)


def _install() -> None:
    rnn = _rnn()
    for name in ("_check_input", "_initial", "_run", "_layers", "_run_packed"):
        setattr(_FlatRNN, name, getattr(rnn.RNNBase, name))


def _run(mode: str, input: Any, second: Any, rest: tuple) -> tuple:  # noqa: A002
    """Both ATen forms: ``(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` and the packed ``(data, batch_sizes, hx, params, ...)``."""
    from .nn.utils.rnn import PackedSequence

    if not hasattr(_FlatRNN, "_run"):
        _install()
    if len(rest) > 1 and isinstance(rest[1], (list, tuple)):  # (params comes 4th: packed)
        # the packed form: (data, batch_sizes, hx, params, has_biases, layers, dropout, train,
        # bidirectional)
        hx, params, has_biases, layers, dropout, train, bidirectional = rest
        net = _FlatRNN(mode, params, has_biases, layers, dropout, train, bidirectional, False)
        h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
        out, h_n, c_n = net._run(PackedSequence(input, second, None, None), h0, c0)
        return (out.data, h_n, c_n) if mode == "LSTM" else (out.data, h_n)
    params, has_biases, layers, dropout, train, bidirectional, batch_first = rest
    net = _FlatRNN(mode, params, has_biases, layers, dropout, train, bidirectional, batch_first)
    h0, c0 = (second[0], second[1]) if mode == "LSTM" else (second, None)
    out, h_n, c_n = net._run(input, h0, c0)
    return (out, h_n, c_n) if mode == "LSTM" else (out, h_n)


def lstm(input: Any, hx: Any, params: Any, *args: Any) -> tuple:  # noqa: A002
    """``torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (``hx`` is ``(h0, c0)``), or the packed form ``torch.lstm(data,
    batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``:
    ``(output, h_n, c_n)``, as ``nn.LSTM`` computes them from these weights."""
    return _run("LSTM", input, hx, (params,) + args)


def gru(input: Any, hx: Any, params: Any, *args: Any) -> tuple:  # noqa: A002
    """``torch.gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` or the packed form ``(data, batch_sizes, hx, params, ...)``: ``(output,
    h_n)``, as ``nn.GRU``."""
    return _run("GRU", input, hx, (params,) + args)


def rnn_tanh(input: Any, hx: Any, params: Any, *args: Any) -> tuple:  # noqa: A002
    """``torch.rnn_tanh``: ``(output, h_n)`` of an Elman RNN with tanh (``nn.RNN``'s
    arguments as ``torch.gru``'s)."""
    return _run("RNN_TANH", input, hx, (params,) + args)


def rnn_relu(input: Any, hx: Any, params: Any, *args: Any) -> tuple:  # noqa: A002
    """``torch.rnn_relu``: ``(output, h_n)`` of an Elman RNN with ReLU."""
    return _run("RNN_RELU", input, hx, (params,) + args)
