"""``Tensor``: an n-dimensional array, its gradient, and the graph node that produced it.

The data is a numpy array (``._data``), or a GPU library's array for a CUDA tensor
(``device_arrays.py``). This file holds what a tensor *is*: its identity in the
graph (``requires_grad``, ``grad``, ``grad_fn``, ``is_leaf``), views and version counting, the
generic in-place write (``_inplace``), hooks, and printing. What it can *do* (``x + y``,
``x.sum()``, ``x.add_(y)``, ``x.to(dtype)``, ``x.backward()``) is declared with each op in
``minitorch/ops`` and bound to the class when that package is imported.
May import: ``minitorch.dtype``, ``minitorch.device``, ``minitorch.device_arrays`` and numpy
(nothing above them).
"""
import numpy as np

from .device_arrays import device_of, is_gpu_array, is_writeable, resolve, to_device
from .dtype import _BY_NUMPY, as_dtype, bfloat16, bool_, get_default_dtype, int64


class Tensor:
    """A multi-dimensional array with optional gradient tracking, as ``torch.Tensor``."""

    __slots__ = ("_data", "requires_grad", "grad", "_ctx", "_output_nr", "_version", "_base",
                 "_hooks", "_retains_grad", "_post_accumulate_grad_hooks", "__weakref__")
    __array_priority__ = 1000  # numpy_scalar * tensor goes to Tensor.__rmul__

    def __init__(self, data, dtype=None, requires_grad=False):
        array = _to_array(data, dtype)
        self._init(array, requires_grad)

    def _init(self, array, requires_grad=False, base=None):
        self._data = array
        self.requires_grad = requires_grad
        self.grad = None
        self._ctx = None          # the Context (graph node) that produced this tensor
        self._output_nr = 0       # which output of that node this tensor is
        self._base = base
        # Views share one counter with their base: an in-place change through any of them
        # must invalidate what autograd saved from the others.
        self._version = base._version if base is not None else [0]
        self._hooks = ()  # a list once a hook is registered (most tensors never get one)
        self._retains_grad = False
        self._post_accumulate_grad_hooks = None  # a list once one is registered (leaves only)

    @classmethod
    def _make(cls, array, requires_grad=False):
        """A tensor around an existing numpy array (no copy, no checks): the ops' fast path."""
        t = cls.__new__(cls)
        if (type(array) is not np.ndarray or array.dtype not in _NUMPY_OK) and not (
                is_gpu_array(array) and array.dtype in _NUMPY_OK):
            array = np.asarray(array)  # numpy scalars and odd dtypes; ops mostly skip this
            if array.dtype not in _NUMPY_OK:
                array = array.astype(as_dtype(array.dtype).numpy)
        # _init's fields written here, not by a call to it: this runs for every op's output
        t._data = array
        t.requires_grad = requires_grad
        t.grad = t._ctx = t._base = t._post_accumulate_grad_hooks = None
        t._output_nr = 0
        t._version = [0]
        t._hooks = ()
        t._retains_grad = False
        return t

    @classmethod
    def _make_view(cls, array, base_tensor):
        """A tensor over ``array``, a numpy view of ``base_tensor``'s data."""
        t = cls.__new__(cls)
        root = base_tensor._base if base_tensor._base is not None else base_tensor
        t._init(array, False, root)
        return t

    # ------------------------------------------------------------------ properties
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self._data.shape[normalize_dim(dim, self.ndim)]

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def nelement(self):
        return int(self._data.size)

    @property
    def dtype(self):
        return _BY_NUMPY[self._data.dtype]

    @property
    def device(self):
        """The tensor's device: ``minitorch.device("cpu")`` (equal to ``"cpu"`` too), or
        ``cuda:i`` for a tensor on a GPU."""
        return device_of(self._data)

    @property
    def is_cuda(self):
        return is_gpu_array(self._data)

    @property
    def is_cpu(self):
        return not is_gpu_array(self._data)

    def get_device(self):
        """-1 for a CPU tensor, the GPU's index for a CUDA one, as in PyTorch."""
        index = device_of(self._data).index
        return -1 if index is None else index

    def element_size(self):
        """Bytes per element (``x.element_size()``; also ``x.itemsize``)."""
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def is_leaf(self):
        return self._ctx is None

    @property
    def grad_fn(self):
        return self._ctx

    @property
    def data(self):
        """The same storage without the graph (as ``torch.Tensor.data``)."""
        return Tensor._make_view(self._data, self)

    @data.setter
    def data(self, value):
        self._data = _to_array(value._data if isinstance(value, Tensor) else value, None)

    def is_contiguous(self):
        return bool(self._data.flags["C_CONTIGUOUS"])

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def data_ptr(self):
        if is_gpu_array(self._data):
            return self._data.data.ptr
        return self._data.__array_interface__["data"][0]

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force=False):
        """The numpy array itself (shared memory); ``force=True`` gives a detached copy, as
        PyTorch's, for a tensor that requires grad too."""
        _check_on_host(self, "numpy")
        if force:
            return self._data.copy()
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on a Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data

    def item(self):
        if self._data.size != 1:
            raise ValueError(f"item: only a tensor with one element can be converted to a "
                             f"Python scalar, got shape {tuple(self.shape)}")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of a tensor with {self._data.size} elements is "
                               "ambiguous")
        return bool(self._data.reshape(()))

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __format__(self, format_spec):
        """``f"{loss:.4f}"``: a 0-d tensor formats its value, as in PyTorch; any other tensor
        takes no format spec (TypeError) and formats as ``str(t)``."""
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: the data itself where no conversion is asked for (numpy's
        protocol, with numpy 2's ``copy``: True copies, False forbids a copy)."""
        if self.requires_grad:  # the array would silently leave the graph: PyTorch refuses too
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        _check_on_host(self, "__array__")
        if dtype is None or np.dtype(dtype) == self._data.dtype:
            return self._data.copy() if copy else self._data
        if copy is False:
            raise ValueError(f"__array__: converting {self.dtype} to {np.dtype(dtype)} needs a "
                             "copy, and copy=False was given")
        return self._data.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (``torch.from_dlpack(t)``, ``np.from_dlpack(t)``): numpy's capsule of
        the same memory; the consumer shares it."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        _check_on_host(self, "__dlpack__")
        if stream is not None:
            raise BufferError(f"__dlpack__: stream must be None for a CPU tensor, got {stream!r}")
        # Only the arguments given: numpy before 2.1 takes none of them.
        given = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                   ("copy", copy)) if v is not None}
        return self._data.__dlpack__(**given)

    def __dlpack_device__(self):
        _check_on_host(self, "__dlpack_device__")
        return self._data.__dlpack_device__()

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def cpu(self, memory_format=None):
        """This tensor on the CPU: itself if it is there, else a copy (a node of the graph)."""
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """This tensor on a GPU (the current one, or ``device``): RuntimeError where CUDA is
        not available (``minitorch.cuda.is_available()``)."""
        target = resolve("cuda" if device is None else device, "cuda")
        if target.type != "cuda":
            raise RuntimeError(f"cuda: Invalid device, must be cuda device, got {target}")
        return self.to(target)

    # ------------------------------------------------------------------ new tensors like this one
    def _new(self, array, dtype, device, requires_grad, caller):
        """A tensor of ``array`` (made on the host), on ``device`` or else this tensor's."""
        target = self.device if device is None else resolve(device, caller)
        dtype = self.dtype if dtype is None else as_dtype(dtype)
        array = array if array.dtype == dtype.numpy else array.astype(dtype.numpy)
        t = Tensor._make(to_device(array, target))
        return t.requires_grad_(True) if requires_grad else t

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor holding a copy of ``data``, of this tensor's dtype unless ``dtype``."""
        if isinstance(data, Tensor):
            data = data.detach().cpu()
        array = Tensor(data, dtype=self.dtype if dtype is None else dtype)._data  # a copy
        return self._new(array, None, device, requires_grad, "new_tensor")

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        dtype = self.dtype if dtype is None else as_dtype(dtype)
        return self._new(np.zeros(parse_size(size), dtype.numpy), dtype, device,
                         requires_grad, "new_zeros")

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        dtype = self.dtype if dtype is None else as_dtype(dtype)
        return self._new(np.ones(parse_size(size), dtype.numpy), dtype, device, requires_grad,
                         "new_ones")

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros, in fact: minitorch never hands out uninitialised memory."""
        return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        dtype = self.dtype if dtype is None else as_dtype(dtype)
        check_fits(fill_value, dtype, "new_full")
        return self._new(np.full(parse_size((size,)), fill_value, dtype.numpy), dtype, device,
                         requires_grad, "new_full")

    # ------------------------------------------------------------------ autograd
    def detach(self):
        return Tensor._make_view(self._data, self)

    def detach_(self):
        self._ctx, self.requires_grad = None, False
        return self

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("requires_grad_: you can only change requires_grad of leaf "
                               "tensors; use .detach() for a non-leaf")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(f"only tensors of floating point dtype can require gradients, "
                               f"got {self.dtype}")
        self.requires_grad = requires_grad
        return self

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require grad")
        if self._ctx is None:
            if type(self._hooks) is tuple:  # the shared empty () of a tensor without hooks
                self._hooks = []
            hooks = self._hooks
        else:
            node = self._ctx
            if node.output_hooks is None:  # made on the first hook: most nodes never get one
                node.output_hooks = {}
            hooks = node.output_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` once backward has added this leaf's gradient to ``.grad`` (the
        engine does so as soon as the last node using the leaf has run, while the rest of the
        graph is still ahead); its return value is ignored."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require grad")
        if self._ctx is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return _RemovableHandle(self._post_accumulate_grad_hooks, hook)

    def retain_grad(self):
        """Keep ``.grad`` of this non-leaf tensor after backward (leaves always keep it)."""
        if self._ctx is None or self._retains_grad:
            return
        import weakref
        ref = weakref.ref(self)

        def store(grad):
            t = ref()
            if t is not None:
                t.grad = grad.detach().clone() if t.grad is None else t.grad + grad.detach()
        self._retains_grad = True
        self.register_hook(store)

    @property
    def retains_grad(self):
        return self._retains_grad

    # ------------------------------------------------------------------ in-place updates
    def _inplace(self, result):
        """Write ``result`` (a new tensor computed from self) into self's memory, and re-point
        self's history at the op that made it, so gradients flow through the update. The ops
        call it through ``ops.registry.apply_inplace``, which first checks that grad mode allows
        the change (a check that needs autograd, above this file)."""
        if not is_writeable(self._data):
            raise RuntimeError("in-place operation on a tensor whose memory is read-only "
                               "(an expanded view); call .clone() first")
        if tuple(result.shape) != tuple(self.shape):
            raise ValueError(f"in-place operation: result shape {tuple(result.shape)} does not "
                             f"match the tensor's shape {tuple(self.shape)}")
        if result.requires_grad and self._base is not None and self._base.requires_grad:
            raise RuntimeError("in-place operation on a view of a tensor that requires grad is "
                               "not supported by minitorch; use an out-of-place op or .clone()")
        np.copyto(self._data, result._data, casting="unsafe")
        self._version[0] += 1
        if result.requires_grad:
            self._ctx, self._output_nr, self.requires_grad = result._ctx, result._output_nr, True
        return self

    def _history_alias(self):
        """A separate Python object standing for self's current value in the graph."""
        alias = Tensor._make_view(self._data, self)
        alias._ctx, alias._output_nr, alias.requires_grad = self._ctx, self._output_nr, \
            self.requires_grad
        return alias

    # ------------------------------------------------------------------ printing
    def __repr__(self):
        options = dict(separator=", ", prefix="tensor(", threshold=1000, edgeitems=3,
                       max_line_width=80)
        shown = self._data if not is_gpu_array(self._data) else self._data.get()
        if self.dtype is bfloat16:  # numpy prints it as no float: show its (exact) float32 values
            shown = shown.astype(np.float32)
        if self.dtype.is_floating_point and self._data.size:
            options["formatter"] = {"float_kind": _float_formatter(shown)}
        body = np.array2string(shown, **options)
        extras = []
        default = get_default_dtype()  # PyTorch leaves out the default dtype, and int64 and bool
        if self.dtype not in (default, int64, bool_) or self._data.size == 0 and self.dtype is not default:
            extras.append(f"dtype={self.dtype}")
        if self._data.size == 0 and self.ndim != 1:
            extras.append(f"size={tuple(self.shape)}")
        if is_gpu_array(self._data):
            extras.append(f"device='{self.device}'")
        if self._ctx is not None:
            extras.append(f"grad_fn={self._ctx!r}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __copy__(self):
        """``copy.copy(t)``: as PyTorch's, a new leaf over the same memory, of the same class and
        ``requires_grad``, without ``grad`` or history."""
        t = type(self).__new__(type(self))
        t._init(self._data, self.requires_grad, self._base if self._base is not None else self)
        return t

    def __deepcopy__(self, memo):
        """A new leaf with copied data (and grad), of the same class (so Parameters stay so)."""
        if not self.is_leaf:
            raise RuntimeError("only leaf tensors (created by the user) support deepcopy")
        t = type(self).__new__(type(self))
        t._init(self._data.copy(), self.requires_grad)
        t.grad = None if self.grad is None else self.grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def __reduce__(self):
        raise TypeError("minitorch tensors are not pickled: use minitorch.save (no pickle)")


def _check_on_host(tensor, caller):
    if is_gpu_array(tensor._data):
        raise TypeError(f"{caller}: can't convert {tensor.device} device type tensor to numpy. "
                        "Use Tensor.cpu() to copy the tensor to host memory first.")


def _float_formatter(array):
    """PyTorch's float printing: ``1.`` when all values are whole, else 4 decimals fixed
    (``0.4194``), or scientific (``1.0000e-05``) when magnitudes span more than 1000x or leave
    [1e-4, 1e8]; every element padded to the width of the widest finite one."""
    finite = np.abs(array[np.isfinite(array)].astype(np.float64))
    nonzero = finite[finite != 0]
    whole = bool(np.all(finite == np.round(finite)))
    big, small = (nonzero.max(), nonzero.min()) if nonzero.size else (0.0, 0.0)
    if whole:
        fmt = "{:.4e}" if big > 1e8 else "{:.0f}."
    elif nonzero.size and (big / small > 1000.0 or big > 1e8 or small < 1e-4):
        fmt = "{:.4e}"
    else:
        fmt = "{:.4f}"
    # Only the finite values set the width: nan/inf print as they are, like PyTorch.
    width = max((len(fmt.format(v)) for v in array[np.isfinite(array)].ravel()), default=0)

    def format_one(value):
        text = fmt.format(value) if np.isfinite(value) else str(value)
        return text.rjust(width)
    return format_one


class Size(tuple):
    """A tensor's shape: a tuple that prints like ``minitorch.Size([2, 3])``."""

    def __repr__(self):
        return f"minitorch.Size({list(self)})"

    def numel(self):
        return int(np.prod(self))


class _RemovableHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


_NUMPY_OK = frozenset(_BY_NUMPY)  # the numpy dtypes a tensor's array may have


def parse_size(size, name="size"):
    """A shape tuple from ``(2, 3)``, ``((2, 3),)`` or ``([2, 3],)`` (varargs or one sequence);
    TypeError for non-ints, ValueError for negative sizes."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = []
    for n in size:
        if isinstance(n, Tensor) and n.ndim == 0 and n._data.dtype.kind in "iu":
            n = int(n._data)
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{name}: expected a sequence of ints, got {tuple(size)!r}")
        if n < 0:
            raise ValueError(f"{name}: negative dimension {n} in {tuple(size)}")
        shape.append(int(n))
    return tuple(shape)


def normalize_dim(dim, ndim, name="dim"):
    """A dim in [-ndim, ndim) as a non-negative int; IndexError naming the range otherwise."""
    if isinstance(dim, Tensor) or not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}: expected an int, got {type(dim).__name__}")
    rank = max(ndim, 1)  # a 0-d tensor accepts dim 0 and -1, as in PyTorch
    if not -rank <= dim < rank:
        raise IndexError(f"{name}: dimension out of range (expected to be in range of "
                         f"[{-rank}, {rank - 1}], but got {dim})")
    return int(dim) % rank if ndim else 0


def _to_array(data, dtype):
    """A numpy array of a minitorch dtype from nested lists, scalars, arrays or tensors.

    Without a dtype: Python floats give the default dtype (float32 unless
    ``set_default_dtype``), ints int64, bools bool, as in PyTorch; numpy data keeps its dtype
    (uint16/uint32/uint64, which minitorch lacks, become int32/int64/int64). An integer that
    int64 cannot hold raises ValueError (as PyTorch's "Overflow when unpacking long long")
    instead of wrapping around or turning into a float; Python numbers outside a narrower
    integer ``dtype`` raise RuntimeError, as PyTorch's "value cannot be converted to type uint8
    without overflow" (a negative int into uint8 wraps around, as there).
    """
    if isinstance(data, Tensor):
        data = data._data
    if is_gpu_array(data):  # stays on its GPU; the same dtype rules
        return data.astype(as_dtype(dtype).numpy if dtype is not None else
                           _BY_NUMPY[data.dtype].numpy)
    if dtype is not None:
        dtype = as_dtype(dtype)
        numpy_data = isinstance(data, (np.ndarray, np.generic))
        if dtype is int64 and numpy_data:
            _check_fits_int64(data, np.asarray(data), True)  # numpy would wrap uint64 around
        if numpy_data or dtype.is_floating_point or dtype is bool_:
            with np.errstate(over="ignore"):  # a float beyond float16's range is inf, as in torch
                try:
                    return np.array(data, dtype=dtype.numpy)
                except OverflowError:  # a Python int beyond int64 (or uint64) into a float
                    return np.array(data, dtype=object).astype(dtype.numpy)
        # Python numbers into an integer dtype: numpy reads them first, the range check then
        # sees every value at once.
        array = np.array(data)
        if dtype is int64:
            _check_fits_int64(data, array, True)
            if array.dtype.kind == "f":
                check_fits(array, dtype, "tensor")
        else:
            check_fits(array, dtype, "tensor")
        return array.astype(dtype.numpy)
    array = np.array(data)
    # numpy stores ints beyond int64 as uint64, float64 (mixed with ints) or objects
    if array.dtype.kind in "uOf" and not isinstance(data, (np.ndarray, np.generic)):
        _check_fits_int64(data, array, False)
    elif array.dtype.kind == "u" and array.dtype.itemsize == 8:
        _check_fits_int64(data, array, False)
    # Python floats (and lists of them) take the default dtype; numpy float64 data stays float64.
    python_float = isinstance(data, (list, tuple, float)) and not isinstance(data, np.floating)
    if python_float and array.dtype == np.float64:
        default = get_default_dtype()
        return array if default.numpy == array.dtype else array.astype(default.numpy)
    if array.dtype in _NUMPY_OK:
        return array
    if array.dtype == object:
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} data: expected "
                        f"numbers (or nested lists of them), got elements of dtype object")
    return array.astype(as_dtype(array.dtype).numpy)


def check_fits(values, dtype, caller):
    """RuntimeError if a value of ``values`` (a number or a numpy array read from Python data)
    cannot be converted to the integer ``dtype`` without overflow, as PyTorch checks Python
    values: ints must lie in the dtype's range (for uint8, down to -255: those wrap around, as
    in PyTorch), floats must be finite and within range once truncated. Float dtypes take any
    value (beyond their range it is inf) and bool any value."""
    if dtype.is_floating_point or dtype is bool_:
        return
    array = np.asarray(values)
    if array.size == 0 or array.dtype.kind == "b":
        return
    info = np.iinfo(dtype.numpy)
    if array.dtype.kind == "f":
        bad = not np.isfinite(array).all() or np.trunc(array.min()) < info.min or \
            np.trunc(array.max()) > info.max
    elif array.dtype.kind in "iu":
        low, high = array.min(), array.max()
        bad = high > info.max or low < (info.min if info.min < 0 else -int(info.max))
    else:  # object: Python ints beyond 64 bits (or other objects, which numpy rejects later)
        bad = any(isinstance(v, int) and not -2 ** 63 <= v < 2 ** 64 for v in array.ravel())
    if bad:
        raise RuntimeError(f"{caller}: value cannot be converted to type {dtype.name} without "
                           f"overflow (its range is [{info.min}, {info.max}])")


_INT64 = np.iinfo(np.int64)


def _check_fits_int64(data, array, to_int64, caller="tensor"):
    """ValueError if ``data`` (``array``: numpy's reading of it, if made) holds an integer out of
    int64's range that would become an int64: always when ``to_int64``, else unless a float
    among the data makes the whole a float tensor (as PyTorch infers the dtype)."""
    if array is not None and array.dtype.kind == "u":
        if array.size and array.max() > _INT64.max:
            _overflow(array.max(), caller)
        return
    if isinstance(data, (np.ndarray, np.generic)):
        return  # numpy data of any other kind cannot hold a Python int
    if array is not None and array.dtype.kind == "f" and not (
            array.size and np.abs(array).max() >= 2.0 ** 63):
        return  # no value this large (or a NaN, so a float): no int out of range among the data
    stack, too_large = [data], None
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (float, np.floating)) and not to_int64:
            return  # a float tensor: its ints become floats, as in PyTorch
        elif (isinstance(item, (int, np.integer)) and not isinstance(item, bool)
              and not _INT64.min <= item <= _INT64.max):
            too_large = item
    if too_large is not None:
        _overflow(too_large, caller)


def _overflow(value, caller):
    raise ValueError(f"{caller}: the integer {int(value)} does not fit in int64 (range "
                     f"[{_INT64.min}, {_INT64.max}]): minitorch has no wider integer dtype (nor "
                     f"uint64); pass dtype=minitorch.float64 to keep it as a float")
