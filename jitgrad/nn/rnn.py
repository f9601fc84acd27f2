"""Recurrent layers with torch.nn's names, parameters and semantics: RNN, LSTM, GRU and their
cells.

A layer runs each direction as one matmul of the whole input with ``weight_ih`` (every time
step at once), then a loop over time that adds ``h @ weight_hh.T`` and applies the gates, so
autograd (and ``jit``, which unrolls the loop) sees ordinary ops.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import dtypes
from ..ops.creation import empty, zeros
from ..ops.registry import state
from ..ops.movement import cat, stack
from ..tensor import Tensor
from . import functional as F
from .functional import sigmoid, tanh
from . import init
from ._lstm_layer import lstm_layer, lstm_step as _lstm_step, takes_fused_path
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(mode: str, gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    gh = F.linear(h, w_hh, b_hh)
    if mode == "GRU":  # torch's cell, its graph included (gates split by unsafe_chunk)
        ir, iz, i_n = gi.unsafe_chunk(3, -1)
        hr, hz, hn = gh.unsafe_chunk(3, -1)
        r = sigmoid(hr + ir)
        z = sigmoid(hz + iz)
        n = tanh(i_n + hn * r)
        return (h - n) * z + n
    pre = gi + gh
    return tanh(pre) if mode == "RNN_TANH" else F.relu(pre)


def _cell(mode: str, gi: Tensor, h: Tensor, c: Tensor | None, weights: tuple
          ) -> tuple[Tensor, Tensor | None]:
    """One time step of any layer: the new ``(h, c)`` (``c`` None unless an LSTM)."""
    _, w_hh, _, b_hh, w_hr = weights
    if mode == "LSTM":
        return _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
    return _rnn_step(mode, gi, h, w_hh, b_hh), None


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters named ``weight_ih_l{k}[_reverse]``,
    ``weight_hh_l{k}[_reverse]``, ``bias_ih_l{k}[_reverse]``, ``bias_hh_l{k}[_reverse]`` (and
    ``weight_hr_l{k}[_reverse]`` for an LSTM with ``proj_size``), all drawn from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) as torch does."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix,
                            Parameter(empty(shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in torch's order."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                   else 1))
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[k:k + per]] for k in range(0, len(names), per)]

    def _weights(self, layer: int, direction: int) -> tuple:
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda name: getattr(self, name + suffix, None)  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def _check_input(self, input: Tensor) -> bool:  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D tensor instead")
        weight = self.weight_ih_l0
        if input.dtype is not weight.dtype and not state.autocast:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight.dtype}). Convert input: input.to({weight.dtype}), or "
                             f"convert model: model.to({input.dtype})")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        return input.ndim == 3

    def _initial(self, hx: Tensor | None, batch: int, size: int, like: Tensor,
                 batched: bool, label: str = "") -> Tensor:
        count = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            return zeros((count, batch, size), dtype=like.dtype, device=like.device)
        if not batched:
            if hx.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.ndim}-D tensor")
            hx = hx.unsqueeze(1)
        elif hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.ndim}-D tensor")
        expected = (count, batch, size)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected hidden{label} size {expected}, got "
                               f"{list(hx.shape)}")
        return hx

    def _run(self, input: Tensor, hx: Tensor | None, cx: Tensor | None  # noqa: A002
             ) -> tuple[Tensor, Tensor, Tensor | None]:
        if isinstance(input, PackedSequence):
            size = input.data.shape[-1]
            if self.mode != "LSTM" and size != self.input_size:  # (torch's LSTM: its matmul's)
                raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                                   f"{self.input_size}, got {size}")
            return self._run_packed(input, hx, cx)
        batched = self._check_input(input)
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.shape[0], x.shape[1]
        real_hidden = self.proj_size or self.hidden_size
        label = "[0]" if self.mode == "LSTM" else ""
        h0 = self._initial(hx, batch, real_hidden, x, batched, label)
        c0 = self._initial(cx, batch, self.hidden_size, x, batched, "[1]") \
            if self.mode == "LSTM" else None
        def run(gi, h, c, weights, reverse):
            hs = [None] * steps
            gis = gi.unbind(0)  # (one UnbindBackward0 for every step, as torch)
            for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
                h, c = _cell(self.mode, gis[t], h, c, weights)
                hs[t] = h
            return (stack(hs) if steps else
                    zeros((0, batch, real_hidden), dtype=x.dtype)), h, c

        directions = 2 if self.bidirectional else 1
        weights = [w for layer in range(self.num_layers) for d in range(directions)
                   for w in self._weights(layer, d) if w is not None]
        fused = takes_fused_path(self.mode, self.proj_size, x, weights + [h0, c0])
        layer_input, h_n, c_n = self._layers(x, h0, c0, run, fused)
        out = layer_input
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return out, h_n, c_n

    def _layers(self, x: Tensor, h0: Tensor, c0: Tensor | None, run: Any, fused: bool = False
                ) -> tuple[Tensor, Tensor, Tensor | None]:
        # every layer and direction: the input projection of all steps in one matmul, then
        # ``run(gi, h, c, weights, reverse) -> (outputs, last h, last c)`` over the steps; or,
        # ``fused``, one LSTM_LAYER op (see _lstm_layer)
        directions = 2 if self.bidirectional else 1
        last_h, last_c = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                weights = self._weights(layer, direction)
                k = layer * directions + direction
                if fused:
                    out, h, c = lstm_layer(layer_input, weights, h0[k], c0[k], direction == 1)
                else:
                    gi = F.linear(layer_input, weights[0], weights[2])
                    out, h, c = run(gi, h0[k], c0[k] if c0 is not None else None, weights,
                                    direction == 1)
                outputs.append(out)
                last_h.append(h)
                if c is not None:
                    last_c.append(c)
            layer_input = outputs[0] if directions == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, stack(last_h), (stack(last_c) if last_c else None)

    def _run_packed(self, packed: PackedSequence, hx: Tensor | None, cx: Tensor | None
                    ) -> tuple[PackedSequence, Tensor, Tensor | None]:
        # step t runs the first batch_sizes[t] sequences (longest first); a shorter one keeps
        # its state from its last step (forward) or starts from h0 at its last step (reverse)
        sizes = [int(b) for b in packed.batch_sizes.tolist()]
        starts = [sum(sizes[:t]) for t in range(len(sizes))]
        batch = sizes[0] if sizes else 0
        data = packed.data
        h0 = self._initial(hx, batch, self.proj_size or self.hidden_size, data, True)
        c0 = self._initial(cx, batch, self.hidden_size, data, True) \
            if self.mode == "LSTM" else None
        if packed.sorted_indices is not None:  # hx is in the caller's batch order
            h0 = h0.index_select(1, packed.sorted_indices)
            c0 = c0.index_select(1, packed.sorted_indices) if c0 is not None else None

        def run(gi, h_init, c_init, weights, reverse):
            hs = [None] * len(sizes)
            if not reverse:
                h, c = h_init, c_init
                for t, b in enumerate(sizes):
                    h_t, c_t = _cell(self.mode, gi[starts[t]:starts[t] + b], h[:b],
                                     None if c is None else c[:b], weights)
                    hs[t] = h_t
                    h = h_t if b == h.shape[0] else cat([h_t, h[b:]])
                    if c is not None:
                        c = c_t if b == c.shape[0] else cat([c_t, c[b:]])
            else:
                h, c = h_init[:0], (c_init[:0] if c_init is not None else None)
                for t in range(len(sizes) - 1, -1, -1):
                    b, have = sizes[t], h.shape[0]
                    if b > have:  # sequences whose last step is t start here
                        h = cat([h, h_init[have:b]])
                        c = cat([c, c_init[have:b]]) if c is not None else None
                    h, c = _cell(self.mode, gi[starts[t]:starts[t] + b], h, c, weights)
                    hs[t] = h
            return (cat(hs) if hs else gi[:, :0]), h, c

        layer_input, h_n, c_n = self._layers(data, h0, c0, run)
        if packed.unsorted_indices is not None:
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = c_n.index_select(1, packed.unsorted_indices) if c_n is not None else None
        out = PackedSequence(layer_input, packed.batch_sizes, packed.sorted_indices,
                             packed.unsorted_indices)
        return out, h_n, c_n

    def flatten_parameters(self) -> None:
        """A no-op (torch packs cuDNN weights here; jitgrad keeps them as they are)."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU).

    Args:
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked layers. Default: 1.
        nonlinearity: ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.
        bias: use ``b_ih`` and ``b_hh``. Default: True.
        batch_first: input and output are (batch, seq, feature). Default: False.
        dropout: dropout on the outputs of each layer but the last. Default: 0.
        bidirectional: run a second direction backwards in time. Default: False.

    Returns ``(output, h_n)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ["input_size", "hidden_size", "num_layers", "nonlinearity", "bias",
                 "batch_first", "dropout", "bidirectional"]
        if len(args) > len(names):
            raise TypeError(f"RNN takes at most {len(names)} positional arguments")
        kwargs.update(zip(names, args))
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        out, h_n, _ = self._run(input, hx, None)
        return out, h_n


class LSTM(RNNBase):
    """Long short-term memory: gates ``i, f, g, o`` from ``x_t W_ih^T + b_ih + h W_hh^T +
    b_hh``; ``c_t = f * c + i * g``, ``h_t = o * tanh(c_t)`` (projected by ``W_hr`` when
    ``proj_size > 0``). Arguments as ``RNN`` (no ``nonlinearity``) plus ``proj_size``.

    Returns ``(output, (h_n, c_n))``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Tensor, hx: tuple | None = None  # noqa: A002
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        h0, c0 = (None, None) if hx is None else (hx[0], hx[1])  # (torch indexes: a bare
        # tensor of one state gets its IndexError)
        if hx is not None and not isinstance(input, PackedSequence) and input.ndim in (2, 3) \
                and (h0.ndim != input.ndim or c0.ndim != input.ndim):
            what = "batched 3-D" if input.ndim == 3 else "unbatched 2-D"
            raise RuntimeError(f"For {what} input, hx and cx should also be {input.ndim}-D but "
                               f"got ({h0.ndim}-D, {c0.ndim}-D) tensors")
        out, h_n, c_n = self._run(input, h0, c0)
        return out, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit: ``r, z`` gates, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``,
    ``h_t = (1 - z) * n + z * h``. Arguments as ``RNN`` (no ``nonlinearity``).

    Returns ``(output, h_n)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        out, h_n, _ = self._run(input, hx, None)
        return out, h_n


class RNNCellBase(Module):
    """One time step: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype,
                                         device=device))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype,
                                         device=device))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), dtype=dtype,
                                           device=device))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), dtype=dtype,
                                           device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input: Tensor, hx: Tensor | None, label: int = 0,  # noqa: A002
                 name: str = "hidden") -> tuple:
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected {name} to be 1D or 2D, got "
                             f"{hx.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:  # (torch's checks of its rnn cell kernels)
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        if hx is None:
            hx = zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        if hx.shape[0] != x.shape[0]:
            raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{label} "
                               f"batch size {hx.shape[0]}")
        if hx.shape[1] != self.hidden_size:
            raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got "
                               f"{hx.shape[1]}, expected {self.hidden_size}")
        return x, hx, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":  # (RNNCell's, as torch's)
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, h, batched = self._prepare(input, hx)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = _rnn_step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``hx`` is ``(h, c)``; returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        if isinstance(hx, Tensor):
            raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, "
                            "not Tensor")
        h0, c0 = (None, None) if hx is None else hx
        x, h, batched = self._prepare(input, h0, 0, "hx[0]")
        _, c, _ = self._prepare(input, c0, 1, "hx[1]")
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: dtypes.dtype | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, h, batched = self._prepare(input, hx)
        h = _rnn_step("GRU", F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else h.squeeze(0)
