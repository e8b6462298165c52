"""The time loop of a recurrent layer (RNN, LSTM, GRU): one layer, one direction, over a whole
sequence, as ONE autograd Function on the backend's fused cell kernels.

The sequence arrives as packed rows, time-major (``nn.utils.rnn.PackedSequence``'s layout): step
t holds ``batch_sizes[t]`` rows, the first rows of the batch (sequences sorted longest first), so
a padded (T, B, I) batch is the case ``batch_sizes = (B,) * T``. With gates in PyTorch's order::

    RNN:  h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)          (or relu)
    LSTM: i, f, g, o = σ, σ, tanh, σ of (x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)
          c' = f c + i g,   h' = o tanh(c')                    (then h' W_hrᵀ with proj_size)
    GRU:  r, z = σ(x W_i{r,z}ᵀ + b_i{r,z} + h W_h{r,z}ᵀ + b_h{r,z})
          n = tanh(x W_inᵀ + b_in + r (h W_hnᵀ + b_hn)),   h' = (1 - z) n + z h

Forward: x W_ihᵀ for every step is one GEMM over all rows; each step is then one GEMM
h W_hhᵀ and one cell kernel, which also returns what backward needs (the gate activations).
Backward runs through time inside the same Function: per step one cell-backward kernel and one
GEMM for the gradient reaching h; the weight gradients are then GEMMs over the whole sequence.
A sequence costs one graph node, not one per gate and step.

The kernels' backward is no Tensor formula, so it cannot be differentiated again: under
``create_graph=True`` the backward differentiates ``composite_layer`` instead, the same loop in
Tensor ops (its result equals the kernels'), so gradients of gradients work. ``unfused()``
runs layers on that composite for a whole block (the benchmark times the fusion's gain with it).
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``, ``.fused``.
"""
import contextlib

import numpy as np

from .. import backends
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..backends import tape as tapes
from ..tensor import Tensor
from .fused import _differentiate_composite
from .shape import cat

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}  # gate rows per hidden unit
_NONLINEARITY = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}

_fused = True


@contextlib.contextmanager
def unfused():
    """Run recurrent layers on ``composite_layer`` (one graph node per op and step) in a
    ``with`` block: the reference for tests and for the fusion's measured gain."""
    global _fused
    previous, _fused = _fused, False
    try:
        yield
    finally:
        _fused = previous


def recurrent_layer(mode, x, batch_sizes, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None,
                    reverse=False):
    """One layer in one direction over packed rows ``x`` (N, I), N = sum(batch_sizes), from
    the initial state ``h0`` (batch_sizes[0], H_out) (and ``c0`` (batch_sizes[0], H) for an
    LSTM). ``reverse`` runs from the last step to the first. Returns (out (N, H_out), h_n) or,
    for an LSTM, (out, h_n, c_n); h_n holds each sequence's state after its own last step."""
    if mode not in MODES:
        raise ValueError(f"recurrent_layer: mode must be one of {MODES}, got {mode!r}")
    batch_sizes = tuple(int(b) for b in batch_sizes)
    args = (x, h0, c0 if mode == "LSTM" else None, w_ih, w_hh, b_ih, b_hh, w_hr)
    if not _fused:
        return composite_layer(mode, batch_sizes, reverse, *args)
    return RecurrentLayer.apply(*args, mode, batch_sizes, reverse)


def _step_order(batch_sizes, reverse):
    """(t, first row, rows) of every step in the order the loop runs them."""
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)]).tolist()
    steps = [(t, offsets[t], bs) for t, bs in enumerate(batch_sizes)]
    return steps[::-1] if reverse else steps


def _with_tail(head, state):
    """The state after a step that updated only its first ``len(head)`` rows (the sequences
    still running); the other rows keep their state."""
    return head if head.shape[0] == state.shape[0] else _concatenate([head, state[len(head):]])


def _concatenate(arrays):
    """The arrays joined along their rows (the backend's concatenate: a captured step redoes
    it), one array as itself."""
    return arrays[0] if len(arrays) == 1 else backends.current().concatenate(arrays, 0)


def _add_into(out, addend):
    """out += addend, redone by a captured step."""
    tapes.record(np.add, out, addend, out)


class RecurrentLayer(Function):
    """``recurrent_layer`` on the kernels: (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode,
    batch_sizes, reverse) -> (out, h_n[, c_n])."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, batch_sizes, reverse):
        kernels = backends.current()
        W_hh = w_hh._data
        W_hr = None if w_hr is None else w_hr._data
        # x W_ihᵀ + b_ih for every step at once, the bias added by the GEMM; b_hh joins it, but
        # for the GRU, whose reset gate scales h W_hnᵀ + b_hn as a whole
        biases = [b._data for b in (b_ih, None if mode == "GRU" else b_hh) if b is not None]
        if biases:
            bias = biases[0] if len(biases) == 1 else tapes.computed(np.add, *biases)
            xw = kernels.matmul_bias(x._data, w_ih._data.T, bias)
        else:
            xw = kernels.matmul(x._data, w_ih._data.T)
        steps = _step_order(batch_sizes, reverse)
        h = h0._data
        c = None if c0 is None else c0._data
        saved = [None] * len(batch_sizes)  # per step: what backward needs
        outs = [None] * len(batch_sizes)
        for t, first, rows in steps:
            h_prev = h[:rows]
            hw = kernels.matmul(h_prev, W_hh.T)
            xw_t = xw[first:first + rows]
            if mode == "LSTM":
                c_prev = c[:rows]
                h_new, c_new, act = kernels.lstm_cell_forward(xw_t, hw, c_prev)
                saved[t] = (h_prev, c_prev, c_new, act, h_new)
                c = _with_tail(c_new, c)
                if W_hr is not None:
                    h_new = kernels.matmul(h_new, W_hr.T)
            elif mode == "GRU":
                if b_hh is not None:
                    _add_into(hw, b_hh._data)
                h_new, gates = kernels.gru_cell_forward(xw_t, hw, h_prev)
                saved[t] = (h_prev, gates)
            else:
                h_new = kernels.rnn_cell_forward(xw_t, hw, _NONLINEARITY[mode])
                saved[t] = (h_prev, h_new)
            outs[t] = h_new
            h = _with_tail(h_new, h)
        ctx.mode, ctx.batch_sizes, ctx.reverse, ctx.steps = mode, batch_sizes, reverse, steps
        ctx.per_step = saved
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
        out = Tensor._make(_concatenate(outs))
        if mode == "LSTM":
            return out, Tensor._make(h), Tensor._make(c)
        return out, Tensor._make(h)

    @staticmethod
    def backward(ctx, d_out, d_hn, d_cn=None):
        inputs = ctx.saved_tensors
        needs = ctx.needs_input_grad[:8]
        if is_grad_enabled():  # create_graph: a backward that autograd can differentiate
            def composite(*tensors):
                return composite_layer(ctx.mode, ctx.batch_sizes, ctx.reverse, *tensors)
            grads = (d_out, d_hn) if d_cn is None else (d_out, d_hn, d_cn)
            return _differentiate_composite(composite, inputs, needs, grads) + (None,) * 3
        grads = _backward_through_time(ctx, inputs, needs, d_out._data, d_hn._data,
                                       None if d_cn is None else d_cn._data)
        grads = [None if g is None or not need else Tensor._make(g)
                 for g, need in zip(grads, needs)]
        return tuple(grads) + (None,) * 3


def _backward_through_time(ctx, inputs, needs, d_out, dh, dc):
    """The gradients of (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr), as arrays (None for those
    not in ``needs``)."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = inputs
    kernels = backends.current()
    mode, W_hh = ctx.mode, w_hh._data
    W_hr = None if w_hr is None else w_hr._data
    n_steps = len(ctx.batch_sizes)
    d_xw = [None] * n_steps   # per step: gradient of x W_ihᵀ + b_ih
    d_hw = [None] * n_steps   # per step: gradient of h W_hhᵀ (+ b_hh); the GRU's differs
    d_proj = [None] * n_steps  # per step: gradient of the projected h (proj_size)
    for t, first, rows in reversed(ctx.steps):
        g = tapes.computed(np.add, dh[:rows], d_out[first:first + rows])
        per_step = ctx.per_step[t]
        if mode == "LSTM":
            h_prev, c_prev, c_new, act, h_full = per_step
            if W_hr is not None:
                d_proj[t] = g
                g = kernels.matmul(g, W_hr)
            d_gates, dc_prev = kernels.lstm_cell_backward(g, dc[:rows], c_prev, c_new, act)
            dc = _with_tail(dc_prev, dc)
            d_xw[t] = d_hw[t] = d_gates
            dh_prev = kernels.matmul(d_gates, W_hh)
        elif mode == "GRU":
            h_prev, gates = per_step
            d_xw[t], d_hw[t], dh_prev = kernels.gru_cell_backward(g, h_prev, gates)
            kernels.gemm(d_hw[t], W_hh, beta=1.0, out=dh_prev)
        else:
            h_prev, h_new = per_step
            d_xw[t] = d_hw[t] = kernels.rnn_cell_backward(g, h_new, _NONLINEARITY[mode])
            dh_prev = kernels.matmul(d_xw[t], W_hh)
        dh = _with_tail(dh_prev, dh)
    # the input's and the weights' gradients: one GEMM each over all steps' rows
    need_x, _, _, need_w_ih, need_w_hh, need_b_ih, need_b_hh, need_w_hr = needs
    d_xw_all = _concatenate(d_xw)
    d_hw_all = d_xw_all if mode != "GRU" else _concatenate(d_hw)
    dx = kernels.matmul(d_xw_all, w_ih._data) if need_x else None
    dw_ih = db_ih = dw_hh = db_hh = None
    if need_w_ih:  # with d_xw_all's column sums, db_ih, taken while the GEMM packs it
        dw_ih, db_ih = kernels.linear_param_grads(d_xw_all, x._data)
    elif need_b_ih:
        db_ih = kernels.sum_cols(d_xw_all)
    if need_w_hh:
        h_prev_all = _concatenate([ctx.per_step[t][0] for t in range(n_steps)])
        dw_hh, db_hh = kernels.linear_param_grads(d_hw_all, h_prev_all)
    elif need_b_hh:
        db_hh = kernels.sum_cols(d_hw_all)
    dw_hr = None
    if need_w_hr:
        h_full = _concatenate([ctx.per_step[t][4] for t in range(n_steps)])
        dw_hr = kernels.matmul(_concatenate(d_proj).T, h_full)
    return dx, dh, dc, dw_ih, dw_hh, db_ih, db_hh, dw_hr


def composite_layer(mode, batch_sizes, reverse, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None,
                    w_hr=None):
    """``recurrent_layer`` in Tensor ops, one node per op and step: the readable formula, the
    oracle of the tests, and the differentiable path for gradients of gradients."""
    xw = x @ w_ih.mT
    if b_ih is not None:
        xw = xw + b_ih
    h, c = h0, c0
    outs = [None] * len(batch_sizes)
    for t, first, rows in _step_order(batch_sizes, reverse):
        h_prev = h[:rows]
        hw = h_prev @ w_hh.mT
        if b_hh is not None:
            hw = hw + b_hh
        xw_t = xw[first:first + rows]
        if mode == "LSTM":
            i, f, g, o = (xw_t + hw).chunk(4, 1)
            c_new = f.sigmoid() * c[:rows] + i.sigmoid() * g.tanh()
            h_new = o.sigmoid() * c_new.tanh()
            if w_hr is not None:
                h_new = h_new @ w_hr.mT
            c = _cat_tail(c_new, c)
        elif mode == "GRU":
            x_r, x_z, x_n = xw_t.chunk(3, 1)
            h_r, h_z, h_n = hw.chunk(3, 1)
            r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
            n = (x_n + r * h_n).tanh()
            h_new = (1 - z) * n + z * h_prev
        else:
            pre = xw_t + hw
            h_new = pre.tanh() if mode == "RNN_TANH" else pre.relu()
        outs[t] = h_new
        h = _cat_tail(h_new, h)
    out = _cat(outs)
    return (out, h, c) if mode == "LSTM" else (out, h)


def _cat(tensors):
    return tensors[0] if len(tensors) == 1 else cat(tensors, 0)


def _cat_tail(head, state):
    """``_with_tail`` for Tensors."""
    return head if head.shape[0] == state.shape[0] else _cat([head, state[head.shape[0]:]])
