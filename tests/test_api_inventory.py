"""The PyTorch API minitorch claims: every name listed here exists, with PyTorch's parameters.

``INVENTORY`` lists, namespace by namespace, the PyTorch names minitorch provides. Without
PyTorch the test checks that each exists in minitorch. With PyTorch installed it also checks that
each exists in PyTorch under the same name, that minitorch takes every parameter PyTorch's
signature names (by keyword) and its positional parameters in PyTorch's order, and that no public
minitorch name PyTorch also has is missing from the list (so a new op is checked as it lands).
PyTorch's signature comes from ``inspect.signature``, or for its C functions from the overloads
its argument parser lists, or from its docstring's signature lines (keeping only the names the
parser accepts).
"""
import importlib
import inspect
import re

import pytest

import minitorch


# torch parameters minitorch has no use for: CPU dense tensors only, no out= buffers.
IGNORED_PARAMETERS = {"out", "layout", "pin_memory", "memory_format", "sparse_grad", "names"}


INVENTORY = {  # namespace -> the names minitorch provides there, as PyTorch does
    "torch": """
        BFloat16Tensor BoolTensor ByteTensor CharTensor DoubleTensor FloatTensor Generator
        HalfTensor IntTensor LongTensor ShortTensor Size Tensor abs absolute add all
        allclose amax amin any arange argmax argmin argsort as_tensor bfloat16 bmm bool
        broadcast_to can_cast cat ceil chunk clamp clip clone cos cumprod cumsum device
        diag div divide double dtype einsum empty empty_like enable_grad eq erf exp eye
        finfo flatten flip float float16 float32 float64 floor fmod from_dlpack from_numpy
        full full_like gather ge get_default_dtype get_num_threads get_rng_state gt half
        iinfo index_add index_fill index_put index_select inference_mode int int16 int32
        int64 int8 is_grad_enabled is_inference_mode_enabled isclose isfinite isinf isnan
        le linspace load log log_softmax logical_and logical_not logical_or logical_xor
        logsumexp long lt manual_seed masked_fill masked_select matmul max maximum mean
        min minimum mm mul multinomial multiply narrow ne neg negative no_grad nonzero
        numel ones ones_like outer permute pow promote_types rand rand_like randint
        randint_like randn randn_like randperm relu remainder repeat_interleave reshape
        rms_norm roll round rsqrt save scatter scatter_add seed set_default_dtype
        set_grad_enabled set_num_threads set_rng_state short sigmoid sign sin softmax sort
        split sqrt square squeeze stack std sub subtract sum swapaxes swapdims t tanh
        tensor tile topk transpose tril triu trunc uint8 unbind unflatten unique unsqueeze
        var where zeros zeros_like
        conv1d conv2d
        acos addcdiv addcmul arccos arcsin arctan arctan2 asin atan atan2 cosh count_nonzero
        exp2 expm1 frac hypot lerp log10 log1p log2 logaddexp logit nan_to_num norm prod
        reciprocal sinh tan""",
    "torch.Tensor": """
        T __abs__ __add__ __and__ __eq__ __floordiv__ __format__ __ge__ __getitem__ __gt__
        __iadd__ __imul__ __invert__ __isub__ __itruediv__ __le__ __lt__ __matmul__
        __mod__ __mul__ __ne__ __neg__ __or__ __pow__ __radd__ __rmatmul__ __rmod__
        __rmul__ __rpow__ __rsub__ __rtruediv__ __setitem__ __sub__ __truediv__ __xor__
        abs absolute add add_ all allclose amax amin any argmax argmin argsort backward
        bfloat16 bmm bool broadcast_to byte ceil ceil_ char chunk clamp clamp_ clip clip_
        clone contiguous copy_ cos cpu cuda cumprod cumprod_ cumsum cumsum_ data data_ptr
        detach detach_ device diag dim div div_ divide double dtype element_size eq erf
        exp expand expand_as fill_ flatten flip float floor floor_ fmod fmod_ gather ge
        get_device grad grad_fn gt half index_add index_add_ index_fill index_fill_
        index_put index_put_ index_select int is_contiguous is_cpu is_cuda
        is_floating_point is_leaf isclose isfinite isinf isnan item itemsize le log
        log_softmax logical_and logical_not logical_or logical_xor logsumexp long lt mT
        masked_fill masked_fill_ masked_select matmul max maximum mean min minimum mm mul
        mul_ multiply narrow nbytes ndim ne neg negative nelement new_empty new_full
        new_ones new_tensor new_zeros nonzero normal_ numel numpy outer permute pow pow_
        register_hook register_post_accumulate_grad_hook relu remainder remainder_ repeat
        repeat_interleave requires_grad
        requires_grad_ reshape reshape_as retain_grad retains_grad roll round round_ rsqrt
        scatter scatter_ scatter_add scatter_add_ shape short sigmoid sign sin size
        softmax sort split sqrt square squeeze std stride sub sub_ subtract sum swapaxes
        swapdims t tanh tile to tolist topk transpose tril triu trunc trunc_ type type_as
        unbind unflatten uniform_ unique unsqueeze var view view_as where zero_
        acos acos_ addcdiv addcdiv_ addcmul addcmul_ arccos arccos_ arcsin arcsin_ arctan
        arctan2 arctan2_ arctan_ asin asin_ atan atan2 atan2_ atan_ cosh cosh_ count_nonzero
        exp2 exp2_ expm1 expm1_ frac frac_ hypot hypot_ lerp lerp_ log10 log10_ log1p
        log1p_ log2 log2_ logaddexp logit logit_ nan_to_num nan_to_num_ norm prod
        reciprocal reciprocal_ sinh sinh_ tan tan_""",
    "torch.nn": """
        BCELoss BCEWithLogitsLoss CrossEntropyLoss Dropout Embedding Flatten GELU
        HuberLoss Identity KLDivLoss L1Loss LayerNorm Linear LogSoftmax MSELoss Mish
        Module ModuleDict ModuleList MultiheadAttention NLLLoss Parameter ParameterDict
        ParameterList RMSNorm ReLU Sequential SiLU Sigmoid SmoothL1Loss Softmax Softplus
        Tanh Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder
        TransformerEncoderLayer Unflatten
        GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase
        AdaptiveAvgPool2d AvgPool2d BatchNorm1d BatchNorm2d Conv1d Conv2d MaxPool2d
        CELU CosineSimilarity ELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU
        LogSigmoid PairwiseDistance ReLU6 SELU Softmin Softshrink Softsign Tanhshrink
        Threshold""",
    "torch.nn.Module": """
        add_module apply bfloat16 buffers children cpu cuda double eval extra_repr float
        forward get_parameter get_submodule half load_state_dict modules named_buffers
        named_children named_modules named_parameters parameters register_buffer
        register_forward_hook register_forward_pre_hook register_full_backward_hook
        register_full_backward_pre_hook register_module register_parameter requires_grad_
        state_dict to train zero_grad""",
    "torch.optim.Optimizer": """
        add_param_group load_state_dict state_dict step zero_grad""",
    "torch.nn.functional": """
        Tensor binary_cross_entropy binary_cross_entropy_with_logits cross_entropy dropout
        embedding gelu huber_loss kl_div l1_loss layer_norm linear log_softmax mish
        mse_loss nll_loss normalize one_hot pad relu rms_norm scaled_dot_product_attention
        sigmoid silu smooth_l1_loss softmax softplus tanh
        adaptive_avg_pool2d avg_pool2d batch_norm conv1d conv2d max_pool2d
        celu cosine_similarity elu glu hardshrink hardsigmoid hardswish hardtanh leaky_relu
        logsigmoid pairwise_distance relu6 selu softmin softshrink softsign tanhshrink
        threshold""",
    "torch.nn.init": """
        calculate_gain constant_ dirac_ eye_ kaiming_normal_ kaiming_uniform_ normal_
        ones_ orthogonal_ sparse_ trunc_normal_ uniform_ xavier_normal_ xavier_uniform_
        zeros_""",
    "torch.nn.utils": """
        clip_grad_norm_ clip_grad_value_""",
    "torch.nn.utils.rnn": """
        Tensor pad_sequence
        PackedSequence invert_permutation pack_padded_sequence pack_sequence
        pad_packed_sequence unpack_sequence unpad_sequence""",
    "torch.optim": """
        Adagrad Adam AdamW Optimizer RMSprop SGD""",
    "torch.optim.lr_scheduler": """
        ChainedScheduler ConstantLR CosineAnnealingLR ExponentialLR LRScheduler LambdaLR
        LinearLR MultiStepLR OneCycleLR ReduceLROnPlateau SequentialLR StepLR""",
    "torch.autograd": """
        Function backward detect_anomaly enable_grad grad gradcheck gradgradcheck no_grad
        set_detect_anomaly set_grad_enabled""",
    "torch.autograd.functional": """
        hessian hvp jacobian jvp vhp vjp""",
    "torch.utils.data": """
        BatchSampler ChainDataset ConcatDataset DataLoader Dataset IterableDataset
        RandomSampler Sampler SequentialSampler StackDataset Subset SubsetRandomSampler
        TensorDataset WeightedRandomSampler default_collate default_convert
        get_worker_info random_split DistributedSampler""",
    "torch.cuda": """
        current_device device device_count empty_cache get_device_name is_available
        is_bf16_supported is_initialized manual_seed manual_seed_all memory_allocated seed
        seed_all set_device synchronize""",
    "torch.backends.cudnn": """
        allow_tf32 benchmark deterministic enabled is_available version""",
    "torch.distributed": """
        ReduceOp all_gather all_reduce barrier broadcast destroy_process_group get_backend
        get_rank get_world_size init_process_group is_available is_initialized
        is_mpi_available""",
    "torch.nn.parallel": """
        DistributedDataParallel""",
    "torch.nn.parallel.DistributedDataParallel": """
        forward no_sync""",
}


def _split_top_level(text):
    """Split ``a, b: Tuple[int, int] = (1, 2), c`` at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def _parse_parameters(text, keyword_only=False):
    """``Tensor input, *, Number alpha = 1`` or ``input, *, alpha=1`` -> [(name, kind, default)]."""
    params, kind = [], "KEYWORD_ONLY" if keyword_only else "POSITIONAL_OR_KEYWORD"
    for part in _split_top_level(text.replace("\\*", "*")):
        part = part.strip()
        if not part or part == "/":
            continue
        if part == "*":
            kind = "KEYWORD_ONLY"
            continue
        has_default = "=" in part
        declaration = part.split("=")[0].split(":")[0].strip()
        stars = len(declaration) - len(declaration.lstrip("*"))
        words = declaration.lstrip("*").split()
        if not words or not words[-1].isidentifier():
            return None  # not a signature (an example's output, say)
        if stars == 2:
            params.append((words[-1], "VAR_KEYWORD", False))
        elif stars == 1:
            params.append((words[-1], "VAR_POSITIONAL", False))
            kind = "KEYWORD_ONLY"
        else:
            params.append((words[-1], kind, has_default))
    return params


_PARSER_OVERLOAD = re.compile(r"^\s*(?:\* )?\((.*)\)\s*$")
_DOC_SIGNATURE = re.compile(r"^\s*(?:\.\. function:: )?(?:[\w.]+\.)?(\w+)\((.*?)\)\s*(?:->.*)?$")


def _parser_overloads(call):
    """The overloads PyTorch's argument parser lists when ``call()`` gives it nonsense."""
    try:
        call()
    except TypeError as error:
        message = str(error)
    else:
        return []
    if "expected" not in message:
        return []
    listing = message.split("expected", 1)[1]
    overloads = []
    first_line, *rest = listing.splitlines()
    for line in ([first_line.replace("one of:", "")] if "one of" not in first_line else []) + rest:
        match = _PARSER_OVERLOAD.match(line.strip())
        if match:
            params = _parse_parameters(match.group(1))
            if params is not None:
                overloads.append(params)
    return overloads


def torch_signatures(obj, name, instance=None):
    """PyTorch's parameter lists for ``obj``: [(name, kind, has_default), ...] per overload.

    From ``inspect.signature`` where PyTorch's object has one (Python code); else from what its
    argument parser answers to a call it cannot match (the C functions: exact names and every
    overload); else from the signature lines of its docstring."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        pass
    else:
        return [[(p.name, p.kind.name, p.default is not p.empty)
                 for p in signature.parameters.values()]]
    nonsense = [object()] * 8
    bound = getattr(instance, name, None) if instance is not None else obj
    if bound is not None:
        overloads = _parser_overloads(lambda: bound(*nonsense))
        if overloads:
            return overloads
    overloads = []
    for line in (obj.__doc__ or "").splitlines():
        match = _DOC_SIGNATURE.match(line)
        if match and match.group(1) == name:
            params = _parse_parameters(match.group(2))
            if params is not None:  # docstrings name some parameters their parser does not take
                documented = {p[0] for p in params}
                overloads.append([p for p in params if bound is None or p[1].startswith("VAR")
                                  or _takes_keyword(bound, p[0], documented)])
    return overloads


_KEYWORD_REFUSED = ("unexpected keyword", "unrecognized keyword", "keywords were incorrect",
                    "takes no keyword")


def _takes_keyword(call, name, documented):
    """Whether PyTorch's ``call`` accepts the keyword ``name``: call it with nonsense under that
    name (and under any ``documented`` name it then says is missing) and see whether it objects
    to the name or only to the values. Missing a name the docstring does not document means the
    parser knows the argument by another name."""
    given = {name: object()}
    for _ in range(4):
        try:
            call(**given)
        except TypeError as error:
            message = str(error)
        except Exception:  # noqa: BLE001  (any other complaint is about a value, not a name)
            return True
        else:
            return True
        if any(reason in message for reason in _KEYWORD_REFUSED):
            return False
        missing = re.findall(r"['\"](\w+)['\"]", message.split("missing", 1)[1]) \
            if "missing" in message else []
        if not missing or all(m in given for m in missing):
            return True
        if any(m not in documented for m in missing):
            return False
        given.update({m: object() for m in missing})
    return True


def signature_problems(torch_obj, mini_obj, name, is_method, instance=None):
    """What a PyTorch call of ``name`` would pass that minitorch's signature refuses: a
    parameter it lacks, or positional parameters in another order."""
    overloads = torch_signatures(torch_obj, name, instance)
    try:
        mini = list(inspect.signature(mini_obj).parameters.values())
    except (TypeError, ValueError):
        return ["minitorch's signature cannot be read"]
    if is_method and mini and mini[0].kind is not mini[0].VAR_POSITIONAL:
        mini = mini[1:]  # self (or the op's first argument, bound as self)
    overloads = [[p for p in params if p[0] != "self"] for params in overloads]
    keyword_names = {p.name for p in mini if p.kind is not p.POSITIONAL_ONLY}
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in mini)
    takes_varargs = any(p.kind is p.VAR_POSITIONAL for p in mini)
    positional = [p.name for p in mini if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    problems, order_ok = [], not overloads or takes_varargs
    for params in overloads:
        for pname, kind, _ in params:
            if kind.startswith("VAR") or kind == "POSITIONAL_ONLY" or pname in IGNORED_PARAMETERS:
                continue
            if pname not in keyword_names and not takes_kwargs:
                problems.append(f"no parameter {pname!r}")
        torch_positional = [None if kind == "POSITIONAL_ONLY" else p for p, kind, _ in params
                            if kind in ("POSITIONAL_OR_KEYWORD", "POSITIONAL_ONLY")]
        if all(theirs is None or theirs == ours  # a positional-only name is no one's business
               for theirs, ours in zip(torch_positional, positional)):
            order_ok = True
    if not order_ok:
        problems.append(f"positional parameters {positional} are in none of PyTorch's orders")
    return sorted(set(problems))


def _resolve(namespace, library):
    """``("torch.nn", minitorch)`` -> minitorch.nn; a class (``torch.nn.Module``) -> that class."""
    if namespace == "torch":
        return library
    module_name, _, last = (library.__name__ + namespace[len("torch"):]).rpartition(".")
    if last[:1].isupper():
        return getattr(importlib.import_module(module_name), last)
    return importlib.import_module(f"{module_name}.{last}")


def _claims():
    return [(namespace, name) for namespace, names in INVENTORY.items()
            for name in names.split()]


def _id(claim):
    return f"{claim[0]}.{claim[1]}"


@pytest.mark.parametrize("claim", _claims(), ids=_id)
def test_minitorch_has_the_name(claim):
    namespace, name = claim
    assert hasattr(_resolve(namespace, minitorch), name), f"minitorch lacks {namespace}.{name}"


def _callables_to_compare(torch_obj, mini_obj):
    """(label, torch callable, minitorch callable, is_method) pairs for one name."""
    if inspect.isclass(torch_obj):
        pairs = [("__init__", torch_obj.__init__, mini_obj.__init__, True)]
        forward = getattr(torch_obj, "forward", None)
        if forward is not None and "forward" in vars(mini_obj) and callable(forward):
            pairs.append(("forward", forward, mini_obj.forward, True))
        return pairs
    return [("", torch_obj, mini_obj, False)]


@pytest.mark.parametrize("claim", _claims(), ids=_id)
def test_parameters_match_pytorch(claim):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: signature check skipped")
    namespace, name = claim
    torch_obj = getattr(_resolve(namespace, torch), name, None)
    assert torch_obj is not None, f"{namespace}.{name} is not a PyTorch name"
    mini_obj = getattr(_resolve(namespace, minitorch), name)
    is_method = inspect.isclass(_resolve(namespace, torch))
    instance = torch.ones(2, 2) if namespace == "torch.Tensor" else None
    problems = []
    for label, torch_fn, mini_fn, bound in _callables_to_compare(torch_obj, mini_obj):
        if not callable(torch_fn) or isinstance(torch_obj, type(minitorch)):
            continue
        for problem in signature_problems(torch_fn, mini_fn, label or name, is_method or bound,
                                          instance):
            problems.append(f"{label}: {problem}" if label else problem)
    assert not problems, f"{namespace}.{name}: " + "; ".join(problems)


def _public_names(obj):
    names = set(vars(obj) if inspect.isclass(obj) else dir(obj)) - {"TYPE_CHECKING"}
    return {n for n in names if not n.startswith("_") or (n.startswith("__") and n.endswith("__")
                                                             and n[2:-2] in _OPERATORS)}


_OPERATORS = {"add", "sub", "mul", "truediv", "matmul", "pow", "neg", "radd", "rsub", "rmul",
              "rtruediv", "rmatmul", "rpow", "iadd", "isub", "imul", "itruediv", "eq", "ne",
              "lt", "le", "gt", "ge", "and", "or", "xor", "invert", "getitem", "setitem",
              "mod", "rmod", "floordiv", "rfloordiv", "abs", "format"}


@pytest.mark.parametrize("namespace", sorted(INVENTORY))
def test_every_shared_name_is_listed(namespace):
    """A public minitorch name that PyTorch has in the same namespace must be in the list."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed: inventory check skipped")
    listed = set(INVENTORY[namespace].split())
    torch_side = _resolve(namespace, torch)
    mini_side = _resolve(namespace, minitorch)
    unlisted = sorted(n for n in _public_names(mini_side)
                      if n not in listed and hasattr(torch_side, n)
                      and not inspect.ismodule(getattr(torch_side, n)))
    assert not unlisted, f"add to INVENTORY[{namespace!r}]: {' '.join(unlisted)}"
