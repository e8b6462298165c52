"""Bad input to the C kernels, the crash-proofing half of the fuzzing campaign: a table of calls
to c_backend functions (and to the matching ops through minitorch) with wrong dtypes, shapes,
negative or huge sizes, NaN parameters, misaligned or read-only or overlapping arrays, None and
lists. Each runs in a forked child, so that a segfault or an abort fails its row (naming the
signal) instead of killing the test run, and a hang is killed after CHILD_TIMEOUT_S; the child
must end normally, with the expected Python exception naming the argument (or with a result,
for input that is only unusual: a misaligned view is copied, never an error).

scripts/sanitize.sh runs this file under ASan + UBSan too: a sanitizer report halts the child,
which then exits non-zero, and its row fails.
"""
import os
import select
import signal
import time

import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

pytestmark = [pytest.mark.skipif(C is None, reason="C extension not built"),
              pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork not available")]

CHILD_TIMEOUT_S = 60


def run_in_child(call):
    """call() in a forked child: ("returned", "") or ("raised", "TypeName: message"); fails the
    test if the child was killed by a signal, hung, or exited other than by reporting."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports through the pipe, then leaves without the parent's cleanup
        code = 0
        try:
            os.close(read_end)
            # One thread: libgomp's thread pool does not survive fork, and bad input must fail
            # the same way whatever the thread count.
            C.set_num_threads(1)
            try:
                call()
                report = "returned\n"
            except BaseException as error:  # noqa: B036 - the child reports everything
                report = f"raised\n{type(error).__name__}: {error}"
            os.write(write_end, report.encode()[:60000])  # below a pipe's buffer: never blocks
        except BaseException:  # noqa: B036
            code = 70
        finally:
            os._exit(code)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + CHILD_TIMEOUT_S
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the child hung (killed after {CHILD_TIMEOUT_S} s)")
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pytest.fail(f"the child was killed by {signal.Signals(os.WTERMSIG(status)).name}")
    if os.WEXITSTATUS(status) != 0:
        pytest.fail(f"the child exited with status {os.WEXITSTATUS(status)} (a sanitizer report?)")
    outcome, _, detail = b"".join(chunks).decode().partition("\n")
    return outcome, detail


def misaligned(a):
    """a's values in a view one byte past an aligned start."""
    view = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, count=a.size, offset=1).reshape(a.shape)
    view[...] = a
    return view


def read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def c_status(kernel, *args):
    """A C entry point called directly (past c_backend's checks), its status as c_backend
    reports it: the entry points check sizes again."""
    C._check_status(kernel(*args), kernel.__name__)


f32, f64 = np.ones((3, 4), np.float32), np.ones((3, 4))
sq = np.ones((3, 3))
target = np.array([0, 1, 2], np.int64)
lse = np.zeros((3, 2))
NULL = None if C is None else C.ffi.NULL
NAN = float("nan")
HUGE = (1 << 40, 2)  # a broadcast view of 2^41 elements: its 8 TiB copy cannot be allocated
x_t = minitorch.tensor(f64)
ADAM = dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
IMG, KER, GEO = np.ones((2, 2, 5, 4)), np.ones((4, 2, 2, 2)), ((1, 1), (0, 0), (1, 1), 1)
Q4, K4, V4 = np.ones((2, 3, 1, 4)), np.ones((2, 3, 5, 4)), np.ones((2, 3, 5, 6))  # attention_step

# (id, call, expected exception or None for "returns a result", text the message must hold)
CASES = [
    # matmul / gemm
    ("matmul int32", lambda: C.matmul(f32.astype(np.int32), f32.T.astype(np.int32)), TypeError, "a must be float32"),
    ("matmul mixed dtypes", lambda: C.matmul(f32, f64.T), TypeError, "b must have the same dtype"),
    ("matmul inner dims", lambda: C.matmul(f64, f64), ValueError, "must equal b.shape"),
    ("matmul 1-d", lambda: C.matmul(np.ones(3), sq), ValueError, "ndim >= 2"),
    ("matmul None", lambda: C.matmul(None, sq), TypeError, "a must be a numpy.ndarray"),
    ("matmul list", lambda: C.matmul([[1.0]], [[1.0]]), TypeError, "a must be a numpy.ndarray"),
    ("matmul huge broadcast batch", lambda: C.matmul(np.broadcast_to(sq, (1 << 40, 3, 3)), sq),
     MemoryError, ""),
    ("matmul misaligned", lambda: C.matmul(misaligned(f64), misaligned(f64.T)), None, ""),
    ("gemm out read-only", lambda: C.gemm(f64, f64, trans_b=True, out=read_only(sq)), ValueError, "writeable"),
    ("gemm out overlaps", lambda: C.gemm(sq, sq, out=sq), ValueError, "must not overlap"),
    ("gemm out misaligned", lambda: C.gemm(f64, f64, trans_b=True, out=misaligned(sq)), ValueError, "aligned"),
    ("gemm out dtype", lambda: C.gemm(f64, f64, trans_b=True, out=sq.astype(np.float32)), TypeError, "out must"),
    ("gemm negative m", lambda: c_status(C.lib.mt_gemm_f64, 0, 0, -1, 3, 3, 1.0, NULL, 3, 0, NULL, 3, 0,
                                         0.0, NULL, 3, 0, 1), ValueError, "rejected"),
    # softmax / log-softmax
    ("softmax int", lambda: C.softmax_forward(np.ones((2, 3), np.int64)), TypeError, "x must be float32"),
    ("softmax list", lambda: C.softmax_forward([[1.0, 2.0]]), TypeError, "x must be a numpy.ndarray"),
    ("softmax 0-d", lambda: C.softmax_forward(np.float64(1.0)[()]), TypeError, "x must be"),
    ("softmax mask shape", lambda: C.softmax_forward(f64, mask=np.ones((4, 4), bool)), ValueError, "mask of shape"),
    ("softmax mask more dims", lambda: C.softmax_forward(f64, mask=np.ones((1, 3, 4), bool)), ValueError, "mask of shape"),
    ("softmax mask int", lambda: C.softmax_forward(f64, mask=np.ones((3, 4), np.int8)), TypeError, "mask must be bool"),
    ("softmax mask list", lambda: C.softmax_forward(f64, mask=[[True] * 4] * 3), TypeError, "mask must be"),
    ("softmax causal 1-d", lambda: C.softmax_forward(np.ones(4), causal=True), ValueError, "causal"),
    ("softmax scale None", lambda: C.softmax_forward(f64, scale=None), TypeError, ""),
    ("softmax scale NaN", lambda: C.softmax_forward(f64, scale=NAN), None, ""),
    ("softmax huge", lambda: C.softmax_forward(np.broadcast_to(np.float32(1), HUGE)), MemoryError, ""),
    ("softmax misaligned", lambda: C.softmax_forward(misaligned(f64), mask=misaligned(f64)), None, ""),
    ("softmax negative rows", lambda: c_status(C.lib.mt_softmax_forward_f64, NULL, NULL, -1, 4, 1.0,
                                               NULL, NULL, 0, NULL, NULL, 0, 0), ValueError, "rejected"),
    ("softmax backward shapes", lambda: C.softmax_backward(f64, f64.T), ValueError, "dy must have shape"),
    ("softmax backward dtypes", lambda: C.softmax_backward(f64, f32), TypeError, "dy must have the same dtype"),
    ("log_softmax None", lambda: C.log_softmax_forward(None), TypeError, "x must be a numpy.ndarray"),
    ("log_softmax negative cols", lambda: c_status(C.lib.mt_log_softmax_forward_f32, NULL, NULL, 2, -3),
     ValueError, "rejected"),
    ("log_softmax backward misaligned", lambda: C.log_softmax_backward(misaligned(f32), misaligned(f32)),
     None, ""),
    # cross-entropy
    ("cross_entropy float target", lambda: C.cross_entropy_forward(f64, target.astype(float)), TypeError,
     "target must be int64"),
    ("cross_entropy target range", lambda: C.cross_entropy_forward(f64, np.array([0, 4, 1])), IndexError,
     "target value 4"),
    ("cross_entropy huge target", lambda: C.cross_entropy_forward(f64, np.array([0, 1 << 62, 1])),
     IndexError, "target value"),
    ("cross_entropy ignore_index huge", lambda: C.cross_entropy_forward(f64, target, ignore_index=1 << 70),
     ValueError, "ignore_index"),
    ("cross_entropy ignore_index str", lambda: C.cross_entropy_forward(f64, target, ignore_index="x"),
     TypeError, "ignore_index"),
    ("cross_entropy 3-d", lambda: C.cross_entropy_forward(np.ones((3, 4, 1)), target), ValueError, "2-D"),
    ("cross_entropy smoothing NaN", lambda: C.cross_entropy_forward(f64, target, label_smoothing=NAN),
     ValueError, "label_smoothing"),
    ("cross_entropy reduction", lambda: C.cross_entropy_forward(f64, target, reduction="avg"), ValueError,
     "reduction"),
    ("cross_entropy target misaligned", lambda: C.cross_entropy_forward(misaligned(f64), misaligned(target)),
     None, ""),
    ("cross_entropy target out of range in C", lambda: c_status(
        C.lib.mt_cross_entropy_forward_f64, C.ffi.from_buffer("double[]", f64),
        C.ffi.from_buffer("int64_t[]", np.array([0, 9, 1])), 3, 4, -100, 0.0,
        C.ffi.new("double[3]"), C.ffi.new("double[6]")), ValueError, "rejected"),
    ("cross_entropy backward lse shape", lambda: C.cross_entropy_backward(f64, target, np.zeros(3), 1.0),
     ValueError, "lse must have shape"),
    ("cross_entropy backward grad shape", lambda: C.cross_entropy_backward(
        f64, target, lse, np.ones(2), reduction="none"), ValueError, "grad must have shape"),
    ("cross_entropy backward lse int", lambda: C.cross_entropy_backward(f64, target, lse.astype(int), 1.0),
     TypeError, "lse must be"),
    # erf
    ("erf int", lambda: C.erf_forward(np.ones(4, np.int64)), TypeError, "x must be"),
    ("erf negative n", lambda: c_status(C.lib.mt_erf_forward_f64, NULL, NULL, -1), ValueError, "rejected"),
    ("erf misaligned", lambda: C.erf_forward(misaligned(f32)), None, ""),
    ("exp int", lambda: C.exp_forward(np.ones(4, np.int64)), TypeError, "x must be"),
    ("exp negative n", lambda: c_status(C.lib.mt_exp_forward_f64, NULL, NULL, -1), ValueError, "rejected"),
    ("exp misaligned", lambda: C.exp_forward(misaligned(f32)), None, ""),
    ("log int", lambda: C.log_forward(np.ones(4, np.int64)), TypeError, "x must be"),
    ("log negative n", lambda: c_status(C.lib.mt_log_forward_f64, NULL, NULL, -1), ValueError, "rejected"),
    ("softplus int", lambda: C.softplus_forward(np.ones(4, np.int64)), TypeError, "x must be"),
    ("softplus negative n",
     lambda: c_status(C.lib.mt_softplus_forward_f64, NULL, NULL, -1, 1.0, 20.0), ValueError,
     "rejected"),
    # cumsum
    ("cumsum_rows int", lambda: C.cumsum_rows(np.ones((2, 3), np.int64)), TypeError, "x must be"),
    ("cumsum_rows negative rows", lambda: c_status(C.lib.mt_cumsum_rows_f32, NULL, NULL, -1, 3),
     ValueError, "rejected"),
    ("cumsum_rows misaligned", lambda: C.cumsum_rows(misaligned(f32)), None, ""),
    # layer norm / RMS norm
    ("layer_norm eps NaN", lambda: C.layer_norm_forward(f64, None, None, eps=NAN), ValueError, "eps"),
    ("layer_norm eps negative", lambda: C.layer_norm_forward(f64, None, None, eps=-1.0), ValueError, "eps"),
    ("layer_norm weight shape", lambda: C.layer_norm_forward(f64, np.ones(3), None), ValueError,
     "weight must have shape"),
    ("layer_norm bias dtype", lambda: C.layer_norm_forward(f64, None, np.ones(4, np.float32)), TypeError,
     "bias must have the same dtype"),
    ("layer_norm 0-d", lambda: C.layer_norm_forward(np.float64(1.0)[()], None, None), TypeError, "x must be"),
    ("layer_norm backward rstd shape", lambda: C.layer_norm_backward(f64, f64, None, np.ones(3), np.ones(4)),
     ValueError, "rstd must have shape"),
    ("layer_norm misaligned", lambda: C.layer_norm_forward(misaligned(f32), misaligned(np.ones(4, np.float32)),
                                                           None), None, ""),
    ("layer_norm negative rows", lambda: c_status(C.lib.mt_layer_norm_forward_f64, NULL, NULL, NULL, NULL,
                                                  NULL, NULL, -2, 4, 1e-5), ValueError, "rejected"),
    ("rms_norm eps NaN", lambda: C.rms_norm_forward(f64, None, NAN), ValueError, "eps"),
    ("rms_norm weight dtype", lambda: C.rms_norm_forward(f64, np.ones(4, np.float32), 1e-6), TypeError,
     "weight must have the same dtype"),
    ("rms_norm backward rstd shape", lambda: C.rms_norm_backward(f64, f64, None, np.ones(4)), ValueError,
     "rstd must have shape"),
    # recurrent cells
    ("lstm_cell hw shape", lambda: C.lstm_cell_forward(np.ones((2, 8)), np.ones((3, 8)), np.ones((2, 2))),
     ValueError, "hw must have shape (2, 8)"),
    ("lstm_cell gates not 4H", lambda: C.lstm_cell_forward(np.ones((2, 6)), np.ones((2, 6)),
                                                           np.ones((2, 1))), ValueError, "xw must be 2-D"),
    ("lstm_cell huge", lambda: C.lstm_cell_forward(*(np.broadcast_to(np.float32(1), (1 << 38, 8)),) * 2,
                                                   np.broadcast_to(np.float32(1), (1 << 38, 2))),
     MemoryError, ""),
    ("lstm_cell misaligned", lambda: C.lstm_cell_forward(misaligned(f64), misaligned(f64),
                                                         misaligned(np.ones((3, 1)))), None, ""),
    ("gru_cell backward dtype", lambda: C.gru_cell_backward(np.ones((2, 2), np.float32), np.ones((2, 2)),
                                                            np.ones((2, 8))), TypeError, "same dtype"),
    ("rnn_cell nonlinearity", lambda: C.rnn_cell_forward(f64, f64, "gelu"), ValueError, "nonlinearity"),
    ("rnn_cell negative rows", lambda: c_status(C.lib.mt_rnn_cell_forward_f64, NULL, NULL, NULL, -1, 4, 0),
     ValueError, "rejected"),
    ("lstm_cell negative hidden", lambda: c_status(C.lib.mt_lstm_cell_backward_f32, NULL, NULL, NULL, NULL,
                                                   NULL, NULL, NULL, 2, -4), ValueError, "rejected"),
    # conv2d (x (N, C, H, W), weight (O, C/groups, kh, kw); stride, padding, dilation as pairs)
    ("conv2d int", lambda: C.conv2d_forward(IMG.astype(np.int64), KER, None, *GEO), TypeError,
     "x must be float32"),
    ("conv2d weight dtype", lambda: C.conv2d_forward(IMG, KER.astype(np.float32), None, *GEO), TypeError,
     "weight must have the same dtype"),
    ("conv2d x 3-d", lambda: C.conv2d_forward(IMG[0], KER, None, *GEO), ValueError, "x must be 4-d"),
    ("conv2d channels", lambda: C.conv2d_forward(IMG[:, :1], KER, None, *GEO), ValueError, "channels"),
    ("conv2d groups", lambda: C.conv2d_forward(IMG, KER, None, (1, 1), (0, 0), (1, 1), 3), ValueError,
     "divisible by groups"),
    ("conv2d kernel past padded input", lambda: C.conv2d_forward(IMG, np.ones((4, 2, 6, 2)), None, *GEO),
     ValueError, "must fit in the padded input"),
    ("conv2d dilated kernel", lambda: C.conv2d_forward(IMG, KER, None, (1, 1), (0, 0), (5, 1), 1),
     ValueError, "must fit in the padded input"),
    ("conv2d stride 0", lambda: C.conv2d_forward(IMG, KER, None, (0, 1), (0, 0), (1, 1), 1), ValueError,
     "stride must be a pair"),
    ("conv2d stride huge", lambda: C.conv2d_forward(IMG, KER, None, (1 << 40, 1), (0, 0), (1, 1), 1),
     ValueError, "stride must be a pair"),
    ("conv2d padding negative", lambda: C.conv2d_forward(IMG, KER, None, (1, 1), (-1, 0), (1, 1), 1),
     ValueError, "padding must be a pair"),
    ("conv2d padding float", lambda: C.conv2d_forward(IMG, KER, None, (1, 1), (0.5, 0), (1, 1), 1),
     TypeError, "padding must be a pair of ints"),
    ("conv2d groups None", lambda: C.conv2d_forward(IMG, KER, None, (1, 1), (0, 0), (1, 1), None),
     TypeError, "groups must be an int"),
    ("conv2d bias shape", lambda: C.conv2d_forward(IMG, KER, np.ones(3), *GEO), ValueError,
     "bias must have shape"),
    ("conv2d misaligned", lambda: C.conv2d_forward(misaligned(IMG), misaligned(KER), None, *GEO), None, ""),
    ("conv2d strided x", lambda: C.conv2d_forward(IMG[..., ::-1], KER, None, *GEO), None, ""),
    ("conv2d backward_input dy shape", lambda: C.conv2d_backward_input(IMG, KER, (5, 4), *GEO), ValueError,
     "dy must have shape"),
    ("conv2d backward_input size 0", lambda: C.conv2d_backward_input(IMG, KER, (0, 4), *GEO), ValueError,
     "input_size"),
    ("conv2d backward_weight kernel", lambda: C.conv2d_backward_weight(np.ones((2, 4, 3, 3)), IMG, (2, 2),
                                                                       *GEO), ValueError, "dy must have shape"),
    ("conv2d backward_weight groups", lambda: C.conv2d_backward_weight(np.ones((2, 4, 4, 3)), IMG, (2, 2),
                                                                       (1, 1), (0, 0), (1, 1), 3),
     ValueError, "divisible by groups"),
    ("conv2d C negative batch", lambda: c_status(C.lib.mt_conv2d_forward_f64, NULL, NULL, NULL, NULL, -1, 2,
                                                 5, 4, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1), ValueError, "rejected"),
    ("conv2d C groups", lambda: c_status(C.lib.mt_conv2d_backward_input_f64, NULL, NULL, NULL, 2, 3, 5, 4,
                                         4, 2, 2, 1, 1, 0, 0, 1, 1, 2), ValueError, "rejected"),
    ("conv2d C kernel past input", lambda: c_status(C.lib.mt_conv2d_backward_weight_f64, NULL, NULL, NULL, 2,
                                                    2, 5, 4, 4, 9, 2, 1, 1, 0, 0, 1, 1, 1), ValueError,
     "rejected"),
    ("max_pool2d int", lambda: C.max_pool2d_forward(IMG.astype(np.int64), (2, 2), (2, 2), (0, 0), (1, 1)),
     TypeError, "x must be float32"),
    ("max_pool2d x 3-d", lambda: C.max_pool2d_forward(IMG[0], (2, 2), (2, 2), (0, 0), (1, 1)), ValueError,
     "x must be 4-d"),
    ("max_pool2d window past input", lambda: C.max_pool2d_forward(IMG, (6, 2), (1, 1), (0, 0), (1, 1)),
     ValueError, "the window must fit"),
    ("max_pool2d padding", lambda: C.max_pool2d_forward(IMG, (2, 2), (1, 1), (2, 0), (1, 1)), ValueError,
     "at most half"),
    ("max_pool2d stride 0", lambda: C.max_pool2d_forward(IMG, (2, 2), (0, 1), (0, 0), (1, 1)), ValueError,
     "stride must be a pair"),
    ("max_pool2d backward index range", lambda: C.max_pool2d_backward(np.ones((2, 2, 2, 2)),
                                                                      np.full((2, 2, 2, 2), 20), (5, 4)),
     IndexError, "indices must be in [0, 20)"),
    ("max_pool2d backward index dtype", lambda: C.max_pool2d_backward(np.ones((2, 2, 2, 2)),
                                                                      np.zeros((2, 2, 2, 2), np.int32),
                                                                      (5, 4)), TypeError, "int64"),
    ("max_pool2d backward index shape", lambda: C.max_pool2d_backward(np.ones((2, 2, 2, 2)),
                                                                      np.zeros((2, 2, 2), np.int64), (5, 4)),
     ValueError, "indices must have shape"),
    ("max_pool2d C index range", lambda: c_status(C.lib.mt_max_pool2d_backward_f64, C.ffi.NULL,
                                                  C.ffi.from_buffer("int64_t[]", np.array([-1])),
                                                  C.ffi.from_buffer("double[]", np.zeros(4)), 1, 4, 1),
     ValueError, "rejected"),
    ("max_pool2d C window start", lambda: c_status(C.lib.mt_max_pool2d_forward_f64, NULL, NULL, NULL, 1, 4,
                                                   4, 3, 1, 2, 2, 2, 2, 0, 0, 1, 1), ValueError, "rejected"),
    ("op conv2d channels", lambda: F.conv2d(minitorch.tensor(IMG), minitorch.ones(4, 3, 2, 2, dtype=minitorch.float64)),
     RuntimeError, "to have 3 channels"),
    ("op conv2d kernel past input", lambda: F.conv2d(minitorch.tensor(IMG), minitorch.tensor(np.ones((4, 2, 7, 7)))),
     RuntimeError, "Kernel size can't be greater"),
    ("op max_pool2d output size", lambda: F.max_pool2d(minitorch.tensor(IMG), 6), RuntimeError,
     "Output size is too small"),
    # runtime settings
    ("set_num_threads 0", lambda: C.set_num_threads(0), ValueError, "n must be >= 1"),
    ("set_num_threads float", lambda: C.set_num_threads(2.5), TypeError, "n must be an int"),
    ("set_isa unknown", lambda: C.set_isa("sse9"), ValueError, "set_isa: name must be one of"),
    # the same through minitorch's ops
    ("op softmax mask str", lambda: minitorch.softmax(x_t, -1, mask="abc"), TypeError, "mask must be"),
    ("op softmax mask ndarray", lambda: minitorch.softmax(x_t, -1, mask=np.zeros((3, 4), bool)), None, ""),
    ("op softmax mask list", lambda: minitorch.softmax(x_t, -1, mask=[[0.0, -np.inf, 0.0, 0.0]]), None, ""),
    ("op softmax mask int list", lambda: minitorch.softmax(x_t, -1, mask=[[0, 1, 0, 0]]), TypeError, "mask"),
    ("op matmul shapes", lambda: minitorch.matmul(x_t, x_t), ValueError, "matmul"),
    ("op cross_entropy target range", lambda: F.cross_entropy(x_t, minitorch.tensor([0, 7, 1])), IndexError,
     "target value 7"),
    ("op cross_entropy smoothing NaN", lambda: F.cross_entropy(x_t, minitorch.tensor([0, 1, 1]),
                                                               label_smoothing=NAN), ValueError,
     "label_smoothing"),
    ("op layer_norm eps NaN", lambda: F.layer_norm(x_t, (4,), eps=NAN), ValueError, "eps"),
    ("op rms_norm eps negative", lambda: F.rms_norm(x_t, (4,), eps=-1.0), ValueError, "eps"),
    ("op LSTM input size", lambda: minitorch.nn.LSTM(3, 2)(minitorch.zeros(2, 1, 4)), RuntimeError,
     "input_size. Expected 3, got 4"),
    ("op GRU hidden shape", lambda: minitorch.nn.GRU(4, 2)(minitorch.zeros(2, 3, 4), minitorch.zeros(1, 2, 2)),
     RuntimeError, "Expected hx size (1, 3, 2)"),
    ("op pack lengths above seq len", lambda: minitorch.nn.utils.rnn.pack_padded_sequence(
        minitorch.zeros(2, 2, 1), [3, 1]), RuntimeError, "exceeds"),
    ("op log_softmax misaligned", lambda: minitorch.log_softmax(minitorch.tensor(misaligned(f64)), -1),
     None, ""),
    # one Adam step over a list of parameters, in place
    ("adam_step params not a list", lambda: C.adam_step(f32, [f32], [f32], [f32], None, [1.0], [1.0],
                                                        **ADAM), TypeError, "params must be a list"),
    ("adam_step lengths", lambda: C.adam_step([f32], [], [f32], [f32], None, [1.0], [1.0], **ADAM),
     ValueError, "grads must have one entry per parameter"),
    ("adam_step grad shape", lambda: C.adam_step([f32], [f32.T], [f32], [f32], None, [1.0], [1.0], **ADAM),
     ValueError, "grads[0] must have the shape"),
    ("adam_step max_exp_avg_sqs length", lambda: C.adam_step([f32], [f32], [f32], [f32], [], [1.0], [1.0],
                                                             **ADAM), ValueError, "max_exp_avg_sqs"),
    ("adam_step read-only param", lambda: C.adam_step([read_only(f32)], [f32], [f32.copy()], [f32.copy()],
                                                      None, [1.0], [1.0], **ADAM), ValueError, "read-only"),
    ("adam_step misaligned", lambda: C.adam_step([misaligned(f64)], [misaligned(f64)], [misaligned(f64)],
                                                 [misaligned(f64)], None, [1.0], [1.0], **ADAM), None, ""),
    ("adam_step mixed dtypes", lambda: C.adam_step([f32.copy()], [f64], [f32.copy()], [f32.copy()], None,
                                                   [1.0], [1.0], **ADAM), None, ""),
    ("adam_step C negative count", lambda: c_status(C.lib.mt_adam_step_f64, -1, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, NULL, NULL, 0.1, 0.9, 0.999, 1e-8, 0.0, 0, 0),
     ValueError, "rejected"),
    ("adam_step C NULL parameter", lambda: c_status(C.lib.mt_adam_step_f64, 1, *[C.ffi.new("double *[]", [NULL])] * 4,
                                                    NULL, C.ffi.new("int64_t[]", [4]), C.ffi.new("double[]", [1.0]),
                                                    C.ffi.new("double[]", [1.0]), 0.1, 0.9, 0.999, 1e-8, 0.0,
                                                    0, 0), ValueError, "rejected"),
    ("adam_step C negative size", lambda: c_status(C.lib.mt_adam_step_f64, 1, *[C.ffi.new("double *[]", [NULL])] * 4,
                                                   NULL, C.ffi.new("int64_t[]", [-4]), C.ffi.new("double[]", [1.0]),
                                                   C.ffi.new("double[]", [1.0]), 0.1, 0.9, 0.999, 1e-8, 0.0,
                                                   0, 0), ValueError, "rejected"),
    # sums down the columns (a bias gradient)
    ("sum_cols 1-d", lambda: C.sum_cols(np.ones(4)), ValueError, "x must be 2-d"),
    ("sum_cols int", lambda: C.sum_cols(np.ones((2, 3), np.int64)), TypeError, "x must be float32"),
    ("sum_cols list", lambda: C.sum_cols([[1.0]]), TypeError, "x must be a numpy.ndarray"),
    ("sum_cols C negative rows", lambda: c_status(C.lib.mt_sum_cols_f64, NULL, NULL, -1, 4), ValueError,
     "rejected"),
    # one attention step of incremental decoding
    ("attention_step k shape", lambda: C.attention_step(Q4, np.ones((2, 3, 5, 3)), V4), ValueError,
     "k must have shape"),
    ("attention_step mask int", lambda: C.attention_step(Q4, K4, V4, mask=np.ones((2, 1, 1, 5), np.int8)),
     TypeError, "mask must be a bool"),
    ("attention_step causal negative", lambda: C.attention_step(Q4, K4, V4, causal_offset=-2), ValueError,
     "causal_offset"),
    ("attention_step huge", lambda: C.attention_step(*(np.broadcast_to(np.float32(1), (1 << 30, 4, 1, 4)),) * 3),
     MemoryError, ""),
    ("attention_step misaligned", lambda: C.attention_step(misaligned(Q4), misaligned(K4), misaligned(V4),
                                                           mask=misaligned(np.ones((2, 1, 1, 5), bool))),
     None, ""),
    ("attention_step negative strides", lambda: C.attention_step(Q4[::-1], K4[::-1], V4[:, ::-1]), None, ""),
    ("attention_step negative sizes in C", lambda: c_status(
        C.lib.mt_attention_step_forward_f64, NULL, NULL, NULL, NULL, NULL, NULL, 2, -3, 1, 5, 4, 6,
        C.ffi.new("int64_t[3]"), C.ffi.new("int64_t[3]"), C.ffi.new("int64_t[3]"), NULL, 1.0, -1),
     ValueError, "rejected"),
    ("attention_step negative stride in C", lambda: c_status(
        C.lib.mt_attention_step_forward_f64, NULL, NULL, NULL, NULL, NULL, NULL, 2, 3, 1, 5, 4, 6,
        C.ffi.new("int64_t[3]", [-1, 0, 0]), C.ffi.new("int64_t[3]"), C.ffi.new("int64_t[3]"), NULL, 1.0,
        -1), ValueError, "rejected"),
    ("attention_step NULL strides in C", lambda: c_status(
        C.lib.mt_attention_step_forward_f64, NULL, NULL, NULL, NULL, NULL, NULL, 2, 3, 1, 5, 4, 6,
        NULL, NULL, NULL, NULL, 1.0, -1), ValueError, "rejected"),
    # gather along a dim, scatter-add, triangles
    ("gather float index", lambda: C.gather_forward(f64, 1, f64), TypeError, "index must be an int64"),
    ("gather index shape", lambda: C.gather_forward(f64, 1, np.zeros((2, 4), np.int64)), ValueError,
     "index must have the shape of x"),
    ("gather huge index", lambda: C.gather_forward(f64, 1, np.full((3, 2), 1 << 62)), IndexError,
     "out of bounds for dimension 1 with size 4"),
    ("gather most negative index", lambda: C.gather_forward(f64, 0, np.full((3, 4), -(1 << 63))), IndexError,
     "out of bounds for dimension 0"),
    ("gather dim", lambda: C.gather_forward(f64, 2, np.zeros((3, 4), np.int64)), IndexError, "dim must be in"),
    ("gather dim float", lambda: C.gather_forward(f64, 1.0, np.zeros((3, 4), np.int64)), TypeError,
     "dim must be an int"),
    ("gather 0-d", lambda: C.gather_forward(np.array(1.0), 0, np.array(0)), ValueError,
     "at least 1 dim"),
    ("gather object", lambda: C.gather_forward(np.array([None, 1]), 0, np.zeros(2, np.int64)), TypeError,
     "must hold numbers"),
    ("gather list", lambda: C.gather_forward([1.0], 0, np.zeros(1, np.int64)), TypeError, "x must be a numpy"),
    ("gather 16-byte elements", lambda: C.gather_forward(np.ones(3, np.complex128), 0, np.array([2, -1])), None,
     ""),
    ("gather misaligned", lambda: C.gather_forward(misaligned(f64), 1, misaligned(np.zeros((3, 2), np.int64))),
     None, ""),
    ("gather op huge index", lambda: x_t.gather(1, minitorch.tensor([[1 << 62]])), IndexError, "out of bounds"),
    ("gather C bad index", lambda: c_status(C.lib.mt_gather_forward, C.ffi.from_buffer("double[]", f64),
                                            C.ffi.from_buffer("int64_t[]", np.array([0, 9])), C.ffi.new("double[2]"),
                                            8, 1, 4, 2, 1), ValueError, "rejected"),
    ("gather C itemsize", lambda: c_status(C.lib.mt_gather_forward, NULL, NULL, NULL, 3, 1, 4, 2, 1), ValueError,
     "rejected"),
    ("gather C negative size", lambda: c_status(C.lib.mt_gather_forward, NULL, NULL, NULL, 8, 1, -4, 2, 1),
     ValueError, "rejected"),
    ("gather_backward int dy", lambda: C.gather_backward(np.ones((3, 2), np.int64), 1, np.zeros((3, 2), np.int64),
                                                         4), TypeError, "dy must be float32"),
    ("gather_backward size", lambda: C.gather_backward(f64, 1, np.zeros((3, 4), np.int64), -1), ValueError,
     "size must be a non-negative int"),
    ("gather_backward index shape", lambda: C.gather_backward(f64, 1, np.zeros((3, 2), np.int64), 4), ValueError,
     "index must have dy's shape"),
    ("gather_backward huge index", lambda: C.gather_backward(f64, 0, np.full((3, 4), 1 << 62), 3), IndexError,
     "out of bounds"),
    ("scatter_add src shape", lambda: C.scatter_add(f64, 1, np.zeros((3, 2), np.int64), f64), ValueError,
     "src must have index's shape"),
    ("scatter_add dtypes", lambda: C.scatter_add(f64, 1, np.zeros((3, 4), np.int64), f32), TypeError,
     "src must have the same dtype"),
    ("scatter_add C bad index", lambda: c_status(C.lib.mt_scatter_add_f64, NULL, C.ffi.from_buffer("double[]", f64),
                                                 C.ffi.from_buffer("int64_t[]", np.full(12, -5)),
                                                 C.ffi.new("double[12]"), 3, 4, 4, 1), ValueError, "rejected"),
    ("scatter_add C negative size", lambda: c_status(C.lib.mt_scatter_add_f32, NULL, NULL, NULL, NULL, 1, 4, -2, 1),
     ValueError, "rejected"),
    ("keep_triangle 1-d", lambda: C.keep_triangle(np.ones(3), 0), ValueError, "at least 2 dims"),
    ("keep_triangle diagonal float", lambda: C.keep_triangle(f64, 0.5), TypeError, "diagonal must be an int"),
    ("keep_triangle huge diagonal", lambda: C.keep_triangle(f64, -(1 << 80), upper=True), None, ""),
    ("keep_triangle misaligned", lambda: C.keep_triangle(misaligned(f32), 1), None, ""),
    ("keep_triangle C negative rows", lambda: c_status(C.lib.mt_keep_triangle, NULL, NULL, 8, 2, -3, 4, 0, 0),
     ValueError, "rejected"),
    ("tril op diagonal str", lambda: x_t.tril("1"), TypeError, "diagonal must be an int"),
    # matmul_into: a product written into a (strided) out
    ("matmul_into out shape", lambda: C.matmul_into(sq, sq, out=np.empty((3, 4))), ValueError, "out must have shape"),
    ("matmul_into out dtype", lambda: C.matmul_into(sq, sq, out=np.empty((3, 3), np.float32)), TypeError,
     "out must have the same dtype"),
    ("matmul_into out None", lambda: C.matmul_into(sq, sq, out=None), TypeError, "out must be a numpy.ndarray"),
    ("matmul_into out read-only", lambda: C.matmul_into(sq, sq, out=read_only(np.empty((3, 3)))), ValueError,
     "writable"),
    ("matmul_into out column stride", lambda: C.matmul_into(sq, sq, out=np.empty((3, 6))[:, ::2]), ValueError,
     "unit-stride rows"),
    ("matmul_into out transposed", lambda: C.matmul_into(sq, sq, out=np.empty((3, 3)).T), ValueError,
     "unit-stride rows"),
    ("matmul_into out overlaps itself", lambda: C.matmul_into(sq, sq, out=np.lib.stride_tricks.as_strided(
        np.empty(8), (3, 3), (8, 8))), ValueError, "overlap"),
    ("matmul_into out broadcast batch", lambda: C.matmul_into(np.ones((2, 3, 3)), sq, out=np.broadcast_to(
        np.empty((3, 3)), (2, 3, 3))), ValueError, "writable"),
    ("matmul_into out is a", lambda: (lambda a: C.matmul_into(a, sq, out=a))(np.ones((3, 3))), ValueError,
     "share memory"),
    ("matmul_into broadcast out batch", lambda: C.matmul_into(np.ones((2, 3, 3)), sq, out=np.empty((3, 3))),
     ValueError, "out must have shape"),
    ("bias_relu 1-d", lambda: C.bias_relu_forward(np.ones(4), np.ones(4)), ValueError, "x must be 2-d"),
    ("bias_relu bias shape", lambda: C.bias_relu_forward(f64, np.ones(3)), ValueError, "bias must have shape"),
    ("bias_relu bias dtype", lambda: C.bias_relu_forward(f64, np.ones(4, np.float32)), TypeError,
     "bias must have the same dtype"),
    ("bias_relu int", lambda: C.bias_relu_forward(np.ones((2, 3), np.int64), np.ones(3)), TypeError,
     "x must be float32"),
    ("bias_relu out strided", lambda: C.bias_relu_forward(f64, np.ones(4), out=np.ones((3, 8))[:, ::2]),
     ValueError, "C-contiguous"),
    ("bias_relu out read-only", lambda: C.bias_relu_forward(f64, np.ones(4), out=read_only(np.ones((3, 4)))),
     ValueError, "writable"),
    ("bias_relu out overlaps x", lambda: (lambda a: C.bias_relu_forward(a[:, :4], np.ones(4), out=a[:, 1:]))(
        np.ones((3, 5))), ValueError, "out must be"),
    ("bias_relu misaligned", lambda: C.bias_relu_forward(misaligned(f64), misaligned(np.ones(4))), None, ""),
    ("bias_relu_backward shapes", lambda: C.bias_relu_backward(f64, np.ones((4, 3))), ValueError,
     "y must have shape"),
    ("bias_relu_backward list", lambda: C.bias_relu_backward([[1.0]], [[1.0]]), TypeError,
     "dy must be a numpy.ndarray"),
    ("bias_relu_backward misaligned", lambda: C.bias_relu_backward(misaligned(f64), misaligned(f64)), None, ""),
    ("bias_relu_backward out is y", lambda: (lambda a: C.bias_relu_backward(np.ones((3, 4)), a, out=a))(
        np.ones((3, 4))), ValueError, "out must be dy itself"),
    ("bias_relu_backward out shape", lambda: C.bias_relu_backward(f64, f64, out=np.ones((4, 3))), ValueError,
     "out must have shape"),
    ("bias_relu C negative rows", lambda: c_status(C.lib.mt_bias_relu_forward_f64, NULL, NULL, NULL, -1, 4),
     ValueError, "rejected"),
    ("bias_relu_backward C negative cols", lambda: c_status(C.lib.mt_bias_relu_backward_f32, NULL, NULL, NULL,
                                                           NULL, 2, -4), ValueError, "rejected"),
    ("matmul_bias bias shape", lambda: C.matmul_bias(f64, f64.T, np.ones(4)), ValueError, "bias must have shape"),
    ("matmul_bias bias dtype", lambda: C.matmul_bias(f64, f64.T, np.ones(3, np.float32)), TypeError,
     "bias must have the same dtype"),
    ("matmul_bias misaligned", lambda: C.matmul_bias(misaligned(f64), misaligned(f64.T), misaligned(np.ones(3))),
     None, ""),
    ("gemm_bias C negative m", lambda: c_status(C.lib.mt_gemm_bias_f64, 0, 1, -1, 3, 4, NULL, 4, NULL, 4, NULL, 0,
                                                NULL, 3), ValueError, "rejected"),
    ("gemm_bias C ldc < n", lambda: c_status(C.lib.mt_gemm_bias_f32, 0, 1, 3, 3, 4, NULL, 4, NULL, 4, NULL, 1,
                                             NULL, 2), ValueError, "rejected"),
    ("matmul_into misaligned", lambda: C.matmul_into(misaligned(f64), misaligned(f64.T), out=np.empty((3, 3))),
     None, ""),
    ("linear_param_grads C negative rows", lambda: c_status(C.lib.mt_linear_param_grads_f64, NULL, 3, NULL, 3, -1,
                                                           3, 3, NULL, 3, NULL), ValueError, "rejected"),
    ("linear_param_grads C ldw < in", lambda: c_status(C.lib.mt_linear_param_grads_f32, NULL, 3, NULL, 4, 2, 3,
                                                       4, NULL, 3, NULL), ValueError, "rejected"),
    ("linear_param_grads misaligned", lambda: C.linear_param_grads(misaligned(f64), misaligned(f64)), None, ""),
]


@pytest.mark.parametrize("call,expected,text", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_raises_in_the_child(call, expected, text):
    with minitorch.backends.using("c"):
        outcome, detail = run_in_child(call)
    if expected is None:
        assert outcome == "returned", f"expected a result, got {detail}"
    else:
        assert outcome == "raised", f"expected {expected.__name__}, the call returned"
        name, _, message = detail.partition(": ")
        assert name == expected.__name__ or (expected is MemoryError and "MemoryError" in name), detail
        assert text in message, f"{text!r} not in {message!r}"


def test_a_crash_in_the_child_fails_its_row_with_the_signal_named():
    """The harness itself: a child that aborts fails the test, it does not end the run."""
    with pytest.raises(pytest.fail.Exception, match="killed by SIGABRT"):
        run_in_child(os.abort)
