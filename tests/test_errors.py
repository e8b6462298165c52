"""Bad arguments raise ValueError/TypeError/IndexError whose message names the argument and the
expected and actual values (both shapes for a shape mismatch), never a bare numpy error."""
import numpy as np
import pytest

import minitorch as mt


def _raises(exc, fn, *fragments):
    with pytest.raises(exc) as info:
        fn()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


# ----------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq",
                                "lt"])
def test_binary_shape_mismatch_names_both_shapes(op):
    a, b = mt.ones(2, 3), mt.ones(4, 3)
    _raises(ValueError, lambda: getattr(mt, op)(a, b), op, "input (2, 3)", "other (4, 3)")


def test_operator_shape_mismatch():
    _raises(ValueError, lambda: mt.ones(2, 3) + mt.ones(2), "add", "(2, 3)", "(2,)")
    _raises(ValueError, lambda: mt.ones(3) * mt.ones(2, 2), "mul", "(3,)", "(2, 2)")


def test_matmul_mismatch_names_both_shapes():
    _raises(ValueError, lambda: mt.ones(2, 3) @ mt.ones(4, 5), "matmul", "(2, 3)", "(4, 5)",
            "3 != 4")
    _raises(ValueError, lambda: mt.ones(2, 2, 3) @ mt.ones(3, 3, 2), "batch dims", "(2, 2, 3)",
            "(3, 3, 2)")
    _raises(ValueError, lambda: mt.ones(()) @ mt.ones(3), "matmul", "()", "(3,)")


def test_where_and_masked_fill_shapes():
    _raises(ValueError, lambda: mt.where(mt.ones(2, 3).bool(), mt.ones(2, 3), mt.ones(4)),
            "where", "(2, 3)", "(4,)")
    _raises(ValueError, lambda: mt.ones(2, 3).masked_fill(mt.ones(4).bool(), 0.0),
            "mask", "(4,)", "(2, 3)")


def test_reshape_view_expand_mismatch():
    _raises(ValueError, lambda: mt.ones(2, 3).reshape(4, 2), "reshape", "(4, 2)", "size 6")
    _raises(ValueError, lambda: mt.ones(2, 3).view(-1, 4), "view", "(-1, 4)", "size 6")
    _raises(ValueError, lambda: mt.ones(2, 3).expand(2, 4), "expand", "(2, 3)", "(2, 4)")
    _raises(ValueError, lambda: mt.ones(2, 3).expand(3), "expand", "(2, 3)")


def test_cat_stack_split_mismatch():
    _raises(ValueError, lambda: mt.cat([mt.ones(2, 3), mt.ones(2, 4)], dim=0), "cat",
            "tensors[1]", "(2, 4)", "(2, 3)")
    _raises(ValueError, lambda: mt.stack([mt.ones(2), mt.ones(3)]), "stack", "tensors[1]",
            "(3,)", "(2,)")
    _raises(ValueError, lambda: mt.ones(5).split([2, 2]), "split", "[2, 2]", "5")
    _raises(ValueError, lambda: mt.cat([]), "cat", "non-empty")
    _raises(ValueError, lambda: mt.stack([]), "stack", "non-empty")
    _raises(ValueError, lambda: mt.cat([mt.ones(2, 3), mt.ones(3)], dim=0), "cat",
            "tensors[1]", "(3,)", "(2, 3)")


def test_permute_wrong_dims():
    _raises(ValueError, lambda: mt.ones(2, 3).permute(0), "permute", "(2, 3)", "(0,)")
    _raises(ValueError, lambda: mt.ones(2, 3).permute(0, 0), "permute", "(0, 0)")


def test_backward_gradient_shape_mismatch():
    y = mt.ones(2, 3, requires_grad=True) * 2
    _raises(ValueError, lambda: y.backward(mt.ones(3, 2)), "gradient", "(3, 2)", "(2, 3)")
    _raises(RuntimeError, lambda: y.backward(), "scalar", "(2, 3)")


def test_setitem_value_shape_mismatch():
    x = mt.zeros(2, 3)

    def assign():
        x[0] = mt.ones(4)
    _raises(ValueError, assign, "value", "(4,)", "(3,)")


# ----------------------------------------------------------------------------- dims

@pytest.mark.parametrize("call", [
    lambda x: x.sum(dim=3), lambda x: x.mean(dim=-4), lambda x: x.amax(dim=(0, 5)),
    lambda x: x.max(dim=3), lambda x: x.argmax(dim=3), lambda x: x.var(dim=3),
    lambda x: x.logsumexp(dim=3), lambda x: x.softmax(dim=3), lambda x: x.log_softmax(-4),
    lambda x: x.unsqueeze(4), lambda x: x.squeeze(3), lambda x: x.flatten(0, 3),
    lambda x: mt.cat([x, x], dim=3), lambda x: x.split(1, dim=3), lambda x: x.size(3),
], ids=["sum", "mean", "amax", "max", "argmax", "var", "logsumexp", "softmax", "log_softmax",
        "unsqueeze", "squeeze", "flatten", "cat", "split", "size"])
def test_dim_out_of_range_is_index_error_naming_range_and_value(call):
    x = mt.ones(2, 3, 4)
    message = _raises(IndexError, lambda: call(x), "dim", "out of range")
    assert "[-3, 2]" in message or "[-4, 3]" in message


def test_transpose_names_which_dim():
    _raises(IndexError, lambda: mt.ones(2, 3).transpose(0, 2), "dim1", "[-2, 1]", "2")
    _raises(IndexError, lambda: mt.ones(2, 3).transpose(-3, 0), "dim0", "-3")


def test_repeated_dim_in_tuple():
    _raises(ValueError, lambda: mt.ones(2, 3).sum(dim=(0, -2)), "dim", "more than once")


def test_dim_of_wrong_type():
    _raises(TypeError, lambda: mt.ones(2, 3).sum(dim=1.0), "dim", "int", "float")


# ----------------------------------------------------------------------------- indices

def test_index_out_of_range_names_index_and_shape():
    x = mt.ones(2, 3)
    _raises(IndexError, lambda: x[2], "2", "(2, 3)")
    _raises(IndexError, lambda: x[0, -4], "(2, 3)")
    _raises(IndexError, lambda: x[mt.tensor([0, 5])], "(2, 3)")
    _raises(IndexError, lambda: x[0, 0, 0], "(2, 3)")
    _raises(IndexError, lambda: x[mt.tensor([True, False, True])], "(2, 3)")


def test_index_of_wrong_dtype():
    _raises(IndexError, lambda: mt.ones(3)[mt.tensor([0.0, 1.0])], "int64 or bool", "float32")


def test_gather_and_index_select_errors():
    x = mt.ones(3, 4)
    _raises(TypeError, lambda: x.gather(1, mt.tensor([[0.0]])), "gather", "index", "int64")
    _raises(IndexError, lambda: x.gather(1, mt.tensor([[4]])), "gather", "size 4", "max 4")
    _raises(ValueError, lambda: x.gather(1, mt.tensor([0])), "gather", "(1,)", "(3, 4)")
    _raises(IndexError, lambda: x.index_select(0, mt.tensor([3])), "index_select", "size 3",
            "max 3")
    _raises(TypeError, lambda: x.index_select(0, mt.tensor([[0]])), "index_select", "index")
    _raises(IndexError, lambda: mt.tensor(2.0).gather(0, mt.tensor(1)), "gather", "size 1")


def test_gather_of_a_scalar_is_the_scalar():  # as torch.gather(torch.tensor(2.), 0, tensor(0))
    x = mt.tensor(2.0, requires_grad=True)
    out = x.gather(0, mt.tensor(0))
    out.backward()
    assert out.shape == () and out.item() == 2.0 and x.grad.item() == 1.0


def test_item_of_many_elements():
    _raises(ValueError, lambda: mt.ones(2).item(), "item", "(2,)")


# ----------------------------------------------------------------------------- dtypes

def test_mask_and_condition_must_be_bool():
    _raises(TypeError, lambda: mt.ones(3).masked_fill(mt.ones(3), 0.0), "mask", "bool",
            "float32")
    _raises(TypeError, lambda: mt.where(mt.tensor([1, 0]), mt.ones(2), mt.zeros(2)),
            "condition", "bool", "int64")


def test_mean_of_integers():
    _raises(TypeError, lambda: mt.tensor([1, 2]).mean(), "mean", "floating point", "int64")


def test_unsupported_dtypes():
    _raises(TypeError, lambda: mt.tensor([1.0], dtype="complex64"), "dtype", "complex64")
    _raises(TypeError, lambda: mt.tensor(np.array([1 + 2j])), "dtype", "complex")
    _raises(TypeError, lambda: mt.tensor([object()]), "tensor", "object")
    _raises(TypeError, lambda: mt.randn(2, dtype=mt.int64), "randn", "floating point", "int64")


def test_only_floating_tensors_require_grad():
    _raises(RuntimeError, lambda: mt.tensor([1, 2]).requires_grad_(), "floating point", "int64")


def test_sizes_must_be_non_negative_ints():
    _raises(ValueError, lambda: mt.zeros(2, -1), "negative", "-1")
    _raises(TypeError, lambda: mt.zeros(2.5), "size", "ints")
    _raises(TypeError, lambda: mt.ones(2, 3).reshape(2.0, 3), "shape", "ints")


def test_manual_seed_needs_an_int():
    _raises(TypeError, lambda: mt.manual_seed(1.5), "seed", "float")


def test_reductions_over_empty_dims():
    _raises(IndexError, lambda: mt.zeros(0, 3).amax(dim=0), "amax", "(0, 3)")
    _raises(IndexError, lambda: mt.zeros(0).argmax(), "argmax", "(0,)")
    _raises(IndexError, lambda: mt.zeros(0, 2).max(dim=0), "max", "(0, 2)")


def test_option_values():
    _raises(ValueError, lambda: mt.gelu(mt.ones(2), approximate="fast"), "approximate", "fast")
    _raises(ValueError, lambda: mt.div(mt.ones(2), 2, rounding_mode="up"), "rounding_mode", "up")
    _raises(ValueError, lambda: mt.clamp(mt.ones(2)), "clamp", "min", "max")
    _raises(ValueError, lambda: mt.arange(0, 3, 0), "arange", "step")
    _raises(ValueError, lambda: mt.ones(4).chunk(0), "chunk", "0")
