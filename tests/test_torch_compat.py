"""PyTorch programs that run under minitorch with only their import lines changed.

Each file of ``tests/torch_programs/`` is a program written in PyTorch's idiom (``import
torch``, ``import torch.nn as nn``, model classes, a training loop, decoding) that defines
``build_model()`` and ``main(model, report)``. For each program the harness

1. executes its source as it is, with PyTorch, and again with the import statements rewritten
   to minitorch's (``import torch`` -> ``import minitorch as torch``, ``import torch.X as Y`` ->
   ``import minitorch.X as Y``, ``from torch.X import Y`` -> ``from minitorch.X import Y``) and
   not one other character changed;
2. calls ``build_model()`` in both and copies the PyTorch model's ``state_dict`` into the
   minitorch model through numpy (the keys must be the same, in the same order), so both start
   from the same weights;
3. calls ``main(model, report)`` in both and compares what the two runs hand to ``report``,
   entry by entry: the same names in the same order; tensors by shape, dtype and value (floats
   to 1e-10: the programs run in float64), Python numbers by type and value, strings exactly,
   containers element by element.

The programs change global state (the default dtype, the generators' seeds): the harness puts
both libraries' back afterwards. Skipped as a whole when PyTorch is not installed.
"""
import ast
import contextlib
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import minitorch

torch = pytest.importorskip("torch", reason="PyTorch not installed: the programs are run with "
                                            "PyTorch and minitorch and compared")

PROGRAMS_DIR = Path(__file__).parent / "torch_programs"
RTOL = ATOL = 1e-10
# nn.Transformer's evaluation through nested tensors says they are a prototype: not our concern.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

def _program_params():
    return [pytest.param(path, id=path.stem) for path in sorted(PROGRAMS_DIR.glob("*.py"))]


# ---------------------------------------------------------------------- the import rewrite
_REWRITES = [
    (re.compile(r"^(\s*)import torch(\s*(?:#.*)?)$"), r"\1import minitorch as torch\2"),
    (re.compile(r"^(\s*)import torch as (\w+)"), r"\1import minitorch as \2"),
    (re.compile(r"^(\s*)import torch\.([\w.]+) as (\w+)"), r"\1import minitorch.\2 as \3"),
    (re.compile(r"^(\s*)from torch((?:\.\w+)*) import "), r"\1from minitorch\2 import "),
]


def _imported_modules(source):
    """(line number, module name) of every import statement in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.append((node.lineno, node.module))
    return found


def to_minitorch(source):
    """``source`` with its import statements of torch rewritten to import minitorch instead.

    A line at a time, so that line numbers (and tracebacks) stay those of the program. An
    import of torch this cannot rewrite keeping the names it binds (``import torch.nn`` binds
    ``torch``; ``import torch, os``) raises ValueError naming the line.
    """
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        for pattern, replacement in _REWRITES:
            if pattern.match(line):
                lines[i] = pattern.sub(replacement, line, count=1)
                break
    rewritten = "".join(lines)
    for lineno, module in _imported_modules(rewritten):
        if module == "torch" or module.startswith("torch."):
            raise ValueError(f"line {lineno}: cannot rewrite this import of {module} to "
                             f"minitorch: {lines[lineno - 1].strip()!r}")
    return rewritten


# ---------------------------------------------------------------------- running a program
@contextlib.contextmanager
def _global_state_kept():
    """Put back what a program changes globally: default dtypes, generators, grad mode."""
    torch_dtype, torch_rng = torch.get_default_dtype(), torch.get_rng_state()
    torch_grad = torch.is_grad_enabled()
    get_default_dtype = getattr(minitorch, "get_default_dtype", None)
    mt_dtype = get_default_dtype() if get_default_dtype is not None else None
    mt_rng, mt_grad = minitorch.get_rng_state(), minitorch.is_grad_enabled()
    try:
        yield
    finally:
        torch.set_default_dtype(torch_dtype)
        torch.set_rng_state(torch_rng)
        torch.set_grad_enabled(torch_grad)
        if mt_dtype is not None:
            minitorch.set_default_dtype(mt_dtype)
        minitorch.set_rng_state(mt_rng)
        minitorch.set_grad_enabled(mt_grad)


@contextlib.contextmanager
def loaded(path, library):
    """The program at ``path`` executed as a module importing ``library``'s names."""
    source = path.read_text()
    if library == "minitorch":
        source = to_minitorch(source)
    name = f"torch_program_{path.stem}_{library}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickling look classes up there
    try:
        with _global_state_kept():
            exec(compile(source, str(path), "exec"), module.__dict__)
            yield module
    finally:
        del sys.modules[name]


def _plain(value):
    """A reported value as numpy arrays (for tensors, copied: the programs go on changing
    their tensors) and Python objects, to compare across the two libraries."""
    if isinstance(value, (torch.Tensor, minitorch.Tensor)):
        return np.array(value.detach().cpu().numpy(), copy=True)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):  # Size and named tuples included
        return tuple(_plain(item) for item in value)
    return value


class Report:
    """What a program hands to ``report(name, value)``, in order."""

    def __init__(self):
        self.entries = []

    def __call__(self, name, value):
        self.entries.append((name, _plain(value)))


def state_as_numpy(model):
    return {key: value.detach().cpu().numpy().copy() for key, value in model.state_dict().items()}


def load_weights(model, arrays, library):
    """Load the state ``arrays`` (name -> numpy array) into ``model`` as ``library`` tensors."""
    own = list(model.state_dict())
    assert own == list(arrays), (
        f"the {library} model's state_dict keys differ from PyTorch's:\n  {library}: {own}\n"
        f"  torch: {list(arrays)}")
    lib = torch if library == "torch" else minitorch
    model.load_state_dict({key: lib.from_numpy(array.copy()) for key, array in arrays.items()})


def run(path, library, weights=None, seed=0):
    """Build the program's model, load ``weights`` into it if given, and run it; (the weights
    build_model gave, report)."""
    report = Report()
    with loaded(path, library) as program:
        (torch if library == "torch" else minitorch).manual_seed(seed)
        model = program.build_model()
        built = state_as_numpy(model)
        if weights is not None:
            load_weights(model, weights, library)
        program.main(model, report)
    return built, report


# ---------------------------------------------------------------------- comparing reports
def _compare(got, want, where):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), \
            f"{where}: PyTorch gives a tensor, minitorch a {type(got).__name__}: {got!r}"
        assert got.shape == want.shape, f"{where}: shape {got.shape}, PyTorch's {want.shape}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, PyTorch's {want.dtype}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: PyTorch gives a dict, minitorch {got!r}"
        assert list(got) == list(want), f"{where}: keys {list(got)}, PyTorch's {list(want)}"
        for key in want:
            _compare(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), \
            f"{where}: {got!r}, PyTorch's {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert type(got) is float, f"{where}: {got!r} ({type(got).__name__}), PyTorch's {want!r}"
        assert math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (
            math.isnan(got) and math.isnan(want)), f"{where}: {got!r}, PyTorch's {want!r}"
    else:
        assert type(got) is type(want) and got == want, \
            f"{where}: {got!r} ({type(got).__name__}), PyTorch's {want!r} ({type(want).__name__})"


def compare_reports(got, want, library):
    got_names = [name for name, _ in got.entries]
    want_names = [name for name, _ in want.entries]
    for (name, g), (want_name, w) in zip(got.entries, want.entries):
        assert name == want_name, f"{library} reports {name!r} where PyTorch reports {want_name!r}"
        _compare(g, w, f"report {name!r}")
    assert got_names == want_names, \
        f"{library} reports {got_names}, PyTorch {want_names}"


# ---------------------------------------------------------------------- the tests
@pytest.mark.parametrize("path", _program_params())
def test_program_agrees_under_minitorch(path):
    """The program under minitorch, from PyTorch's initial weights, reports what it reports
    under PyTorch: outputs, gradients, losses, parameters after training, decoded tokens."""
    weights, want = run(path, "torch")
    _, got = run(path, "minitorch", weights=weights)
    compare_reports(got, want, "minitorch")


@pytest.mark.parametrize("path", sorted(PROGRAMS_DIR.glob("*.py")), ids=lambda p: p.stem)
def test_program_depends_on_weights_only(path):
    """Under PyTorch, a second run from other seeds, given the first run's initial weights
    through numpy (the route the minitorch run takes), reports exactly the same: so the
    programs' results depend on nothing the two libraries draw differently (their generators)."""
    weights, want = run(path, "torch", seed=0)
    other_weights, got = run(path, "torch", weights=weights, seed=1)
    assert any(not np.array_equal(weights[k], other_weights[k]) for k in weights), \
        "the seed does not change the initial weights: the check below would prove nothing"
    compare_reports(got, want, "the second PyTorch run")


@pytest.mark.parametrize("path", sorted(PROGRAMS_DIR.glob("*.py")), ids=lambda p: p.stem)
def test_only_import_lines_change(path):
    """The minitorch version differs from the program in import statements of torch only, and
    imports no torch."""
    source = path.read_text()
    rewritten = to_minitorch(source)
    original_lines, new_lines = source.splitlines(), rewritten.splitlines()
    assert len(original_lines) == len(new_lines)
    import_lines = {lineno for lineno, module in _imported_modules(source)
                    if module == "torch" or module.startswith("torch.")}
    assert import_lines, "the program imports no torch"
    changed = {i + 1 for i, (a, b) in enumerate(zip(original_lines, new_lines)) if a != b}
    assert changed == import_lines
    assert all(not m.startswith("torch") for _, m in _imported_modules(rewritten))


def test_rewrite_of_each_import_form():
    source = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
              "from torch import nn\nfrom torch.utils.data import DataLoader, Dataset\n"
              "if True:\n    import torch as T  # indented\nx = torch.zeros(3)  # import torch\n")
    assert to_minitorch(source) == (
        "import minitorch as torch\nimport minitorch.nn as nn\n"
        "import minitorch.nn.functional as F\nfrom minitorch import nn\n"
        "from minitorch.utils.data import DataLoader, Dataset\n"
        "if True:\n    import minitorch as T  # indented\nx = torch.zeros(3)  # import torch\n")


@pytest.mark.parametrize("source", ["import torch.nn\n", "import os, torch\n",
                                    "from torch.nn import (\n    Linear)\nimport torch.optim\n"])
def test_rewrite_refuses_imports_it_cannot_keep(source):
    with pytest.raises(ValueError, match="cannot rewrite"):
        to_minitorch(source)
