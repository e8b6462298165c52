"""Recurrent layers, as ``torch.nn``: the cells ``RNNCell``, ``LSTMCell``, ``GRUCell`` (one time
step) and the layers ``RNN``, ``LSTM``, ``GRU`` (whole sequences: stacked layers, both
directions, dropout between layers, padded or packed input).

Parameter names, shapes and gate order are PyTorch's (``weight_ih_l0`` (gates·H, I),
``weight_hh_l0_reverse``, ``bias_ih_l1``, ``weight_hr_l0`` with ``proj_size``; gates i,f,g,o
for the LSTM and r,z,n for the GRU), so a PyTorch ``state_dict`` loads one-to-one, and every
parameter starts as PyTorch's: U(−1/√H, 1/√H).

Each layer and direction is one autograd node over the whole sequence
(``ops/recurrent.py``, on the fused cell kernels); a cell's step is one node too. Errors
follow PyTorch: ValueError for an input of the wrong rank or dtype, RuntimeError for a wrong
feature size or hidden-state shape, each naming the expected and the actual value.
May import: ``.module``, ``.parameter``, ``.init``, ``.functional``, ``.utils.rnn``,
``minitorch.ops``, ``minitorch.creation``.
"""
import math
import numbers
import warnings

from .. import ops
from ..creation import empty, zeros
from ..ops.recurrent import GATES, recurrent_layer
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _check_size(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be greater than zero")


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters of every layer and direction, the checks of
    input and hidden state, and the loop over layers. ``mode`` is "RNN_TANH", "RNN_RELU",
    "LSTM" or "GRU"."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        if mode not in GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, flag in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(flag).__name__}")
        _check_size("input_size", input_size)
        _check_size("hidden_size", hidden_size)
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be greater than zero, got {num_layers!r}")
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
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
        gate_size = GATES[mode] * hidden_size
        out_size = proj_size or hidden_size  # the size of h: what the next layer reads
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(2 if bidirectional else 1):
                layer_input_size = input_size if layer == 0 else out_size * self.num_directions
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input_size)),
                          ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(*shape)))
                    names.append(name + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    @property
    def num_directions(self):
        return 2 if self.bidirectional else 1

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op, as PyTorch's on the CPU (it packs the weights for cuDNN)."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters of each layer and direction: [[weight_ih_l0, weight_hh_l0, ...], ...]."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _layer_weights(self, index):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer-and-direction ``index`` (None where absent)."""
        named = dict(zip([n.split("_l")[0] for n in self._all_weights[index]],
                         (getattr(self, n) for n in self._all_weights[index])))
        return tuple(named.get(k) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                            "weight_hr"))

    # ------------------------------------------------------------------ checks
    def _check_input(self, input, expected_dim):
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _state_shapes(self, batch):
        """The shapes of h_0 (and c_0): (layers·directions, batch, H_out), (.., .., H)."""
        layers = self.num_layers * self.num_directions
        return (layers, batch, self.proj_size or self.hidden_size), \
            (layers, batch, self.hidden_size)

    def _check_state(self, name, state, shape, dtype):
        if tuple(state.shape) != shape:
            raise RuntimeError(f"Expected {name} size {shape}, got {list(state.shape)}")
        if state.dtype != dtype:
            raise RuntimeError(f"Input and hidden tensors are not the same dtype: input is "
                               f"{dtype}, {name} is {state.dtype}")

    # ------------------------------------------------------------------ forward
    def _unpack_state(self, hx):
        """hx as a tuple of states: (h,) or, for the LSTM, (h, c)."""
        if self.mode != "LSTM":
            states = (hx,)
        elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        else:
            states = tuple(hx)
        for state in states:
            if not isinstance(state, Tensor):
                raise TypeError(f"hx must hold Tensors, got {type(state).__name__}")
        return states

    def forward(self, input, hx=None):
        name = "LSTM" if self.mode == "LSTM" else ("GRU" if self.mode == "GRU" else "RNN")
        packed = isinstance(input, PackedSequence)
        states = None if hx is None else self._unpack_state(hx)
        is_batched = True
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in batch_sizes.tolist()]
            self._check_input(data, 2)
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: input must be a Tensor or a PackedSequence, got "
                                f"{type(input).__name__}")
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "tensor instead")
            is_batched = input.dim() == 3
            if states is not None:
                want = 3 if is_batched else 2
                if any(s.dim() != want for s in states):
                    dims = ", ".join(f"{s.dim()}-D" for s in states)
                    raise RuntimeError(f"For {'batched 3-D' if is_batched else 'unbatched 2-D'} "
                                       f"input, hx should also be {want}-D but got ({dims}) "
                                       "tensors")
                if not is_batched:
                    states = tuple(s.unsqueeze(1) for s in states)
            if not is_batched:
                input = input.unsqueeze(0 if self.batch_first else 1)
            self._check_input(input, 3)
            if self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = input.shape[0], input.shape[1]
            if steps == 0 or batch == 0:
                raise RuntimeError(f"{name}: input must have at least one step and one "
                                   f"sequence, got shape {tuple(input.shape)}")
            data = input.reshape(steps * batch, self.input_size)
            batch_sizes = [batch] * steps
            sorted_indices = unsorted_indices = None
        shapes = self._state_shapes(batch_sizes[0])
        if states is None:
            n_states = 2 if self.mode == "LSTM" else 1
            states = tuple(zeros(*shape, dtype=data.dtype, device=data.device)
                           for shape in shapes[:n_states])
        else:
            names = ("hx",) if len(states) == 1 else ("hx[0]", "hx[1]")
            for state_name, state, shape in zip(names, states, shapes):
                self._check_state(state_name, state, shape, data.dtype)
            if packed and sorted_indices is not None:  # into the packed (sorted) batch order
                states = tuple(s.index_select(1, sorted_indices) for s in states)
        output, final = self._run_layers(data, batch_sizes, states)
        if packed:
            output = PackedSequence(output, input.batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                final = tuple(s.index_select(1, unsorted_indices) for s in final)
        else:
            output = output.reshape(len(batch_sizes), batch_sizes[0], output.shape[-1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not is_batched:
                output = output.squeeze(0 if self.batch_first else 1)
                final = tuple(s.squeeze(1) for s in final)
        return output, (final if self.mode == "LSTM" else final[0])

    def _run_layers(self, data, batch_sizes, states):
        """The stacked layers over packed rows ``data``: (last layer's output rows, final
        states (h_n,) or (h_n, c_n))."""
        finals = [[] for _ in states]
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                index = layer * self.num_directions + direction
                initial = [s[index] for s in states]
                if self.mode != "LSTM":
                    initial.append(None)
                result = recurrent_layer(self.mode, layer_input, batch_sizes, *initial,
                                         *self._layer_weights(index), reverse=direction == 1)
                outputs.append(result[0])
                for final, state in zip(finals, result[1:]):
                    final.append(state)
            layer_input = outputs[0] if len(outputs) == 1 else ops.cat(outputs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        return layer_input, tuple(ops.stack(final, 0) for final in finals)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh) (``nonlinearity="relu"``:
    relu), over (L, B, I) input ((B, L, I) with ``batch_first``, (L, I) unbatched, or a
    PackedSequence). Returns (output (L, B, D·H), h_n (num_layers·D, B, H)), D = 2 if
    bidirectional else 1."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return super().forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o = σ, σ, tanh, σ of (x W_ihᵀ + b_ih + h W_hhᵀ +
    b_hh), c_t = f c_{t−1} + i g, h_t = o tanh(c_t) (times W_hrᵀ with ``proj_size`` > 0).
    Returns (output, (h_n, c_n)); hx is the tuple (h_0, c_0)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return super().forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's form: r, z = σ(x W_i{r,z}ᵀ + b_i{r,z} + h W_h{r,z}ᵀ +
    b_h{r,z}), n = tanh(x W_inᵀ + b_in + r (h W_hnᵀ + b_hn)), h_t = (1 − z) n + z h_{t−1}.
    Returns (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return super().forward(input, hx)


# ----------------------------------------------------------------------------- cells

class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` (chunks·H, I), ``weight_hh`` (chunks·H, H),
    ``bias_ih`` and ``bias_hh`` (chunks·H,) (None with ``bias=False``), and the checks."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        _check_size("input_size", input_size)
        _check_size("hidden_size", hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, mode, input, states):
        """One step of the cell: checks, the unbatched case, the zero initial state."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        labels = ("hidden",) if len(states) == 1 else ("hx[0]", "hx[1]")
        for label, state in zip(labels, states):
            if state is not None and not isinstance(state, Tensor):
                raise TypeError(f"{name}: {label} must be a Tensor, got {type(state).__name__}")
            if state is not None and state.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {state.dim()}D "
                                 "instead")
        if input.dtype != self.weight_ih.dtype:
            raise ValueError(f"{name}: input dtype ({input.dtype}) does not match weight dtype "
                             f"({self.weight_ih.dtype})")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
            states = tuple(None if s is None else s.unsqueeze(0) for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                               f"{input.shape[1]} expected {self.input_size}")
        batch = input.shape[0]
        states = tuple(zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
                       if s is None else s
                       for s in states)
        for label, state in zip(labels, states):
            if state.dtype != input.dtype:
                raise RuntimeError(f"{name}: {label} dtype ({state.dtype}) does not match the "
                                   f"input's ({input.dtype})")
            if tuple(state.shape) != (batch, self.hidden_size):
                raise RuntimeError(f"{name}: {label} must have shape {(batch, self.hidden_size)}"
                                   f" (input batch {batch}, hidden_size {self.hidden_size}), "
                                   f"got {tuple(state.shape)}")
        if batch == 0:
            raise RuntimeError(f"{name}: input must hold at least one row, got shape "
                               f"{tuple(input.shape)}")
        c0 = states[1] if len(states) == 2 else None
        result = recurrent_layer(mode, input, (batch,), states[0], c0, self.weight_ih,
                                 self.weight_hh, self.bias_ih, self.bias_hh)
        final = result[1:]
        if not is_batched:
            final = tuple(s.squeeze(0) for s in final)
        return final


class RNNCell(RNNCellBase):
    """One step of the Elman RNN: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._step(mode, input, (hx,))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and hx = (h, c) (zeros if None)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is None:
            hx = (None, None)
        elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
        return tuple(self._step("LSTM", input, tuple(hx)))


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 − z) n + z h with PyTorch's reset gate (see ``GRU``)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step("GRU", input, (hx,))[0]
