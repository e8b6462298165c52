"""Type information: the committed stubs are what scripts/make_stubs.py writes from the op
registry, a type checker accepts a user program that uses Tensor's methods (and rejects one that
misuses them), and the return types the stub declares are what the methods return."""
import ast
import builtins
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitorch as mt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB = os.path.join(os.path.dirname(mt.__file__), "tensor.pyi")


def test_shipped_stubs_are_what_make_stubs_writes():
    # In a fresh interpreter: tests that poke the registry must not change what it sees.
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_stubs.py"),
                          "--check"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_stub_declares_every_tensor_method():
    tree = ast.parse(open(STUB, encoding="utf-8").read())
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    declared = {n.name for n in tensor.body if isinstance(n, ast.FunctionDef)}
    public = {n for n in vars(mt.Tensor) if not n.startswith("_") or n.endswith("__")}
    attributes = {"__module__", "__doc__", "__slots__", "__array_priority__", "__weakref__",
                  "grad", "requires_grad"}
    missing = public - declared - attributes
    assert not missing, f"not in tensor.pyi: {sorted(missing)}"


def _runtime_type(annotation):
    """The classes an annotation of the stub names, or None where isinstance cannot check it."""
    names = {"Tensor": mt.Tensor, "Size": mt.Size, "None": type(None), "NDArray[Any]": np.ndarray}
    kinds = []
    for part in annotation.split(" | "):
        if part in names:
            kinds.append(names[part])
        elif part.startswith("builtins."):
            kinds.append(getattr(builtins, part.split(".")[1]))
        elif part.startswith("tuple["):
            kinds.append(tuple)
        else:
            return None
    return tuple(kinds)


def test_declared_return_types_hold_for_the_methods_without_arguments():
    tree = ast.parse(open(STUB, encoding="utf-8").read())
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    checked, failed = [], {}
    for node in tensor.body:
        if not isinstance(node, ast.FunctionDef) or node.decorator_list or node.name == "__init__":
            continue  # properties, overloads, classmethods
        args = node.args
        if len(args.args) - len(args.defaults) != 1 or args.kwonlyargs or args.vararg:
            continue  # needs arguments
        kinds = _runtime_type(ast.unparse(node.returns))
        if kinds is None:
            continue
        x = mt.tensor([[0.5]], dtype=mt.float64)
        try:
            result = getattr(x, node.name)()
        except Exception as exc:  # noqa: BLE001 (recorded, checked below)
            failed[node.name] = exc
            continue
        assert isinstance(result, kinds), f"Tensor.{node.name}() returned {type(result)}, " \
            f"the stub says {ast.unparse(node.returns)}"
        checked.append(node.name)
    assert len(checked) > 60, checked
    # backward needs a tensor that requires grad, __index__ an integer one, clamp a bound.
    assert set(failed) <= {"backward", "__index__", "clamp", "clamp_", "clip", "clip_"}, failed


USER_PROGRAM = """
import minitorch
import minitorch.nn.functional as F
from minitorch import Size, Tensor

x = minitorch.randn(3, 4, requires_grad=True)
y = minitorch.randn(4, 2)

def forward(a: Tensor, b: Tensor) -> Tensor:
    return (a @ b).relu().mean() + F.relu(a).sum() + F.gelu(a).exp().mean(dim=0).sum()

loss: Tensor = forward(x, y)
loss.backward()
best: Tensor = x.max(dim=1).values
first: int = x.size(0)
shape: Size = x.shape
parts: tuple = x.split(2)
value: float = float(forward(x, y).item())
total = minitorch.sum(minitorch.relu(x)) * 2
with minitorch.no_grad():
    x.sub_(0.1 * x.grad)
"""

WRONG_PROGRAM = """
import minitorch
from minitorch import Tensor

x: Tensor = minitorch.randn(3)
x.summ()
name: str = x.sum()
x.max(dim=0).valuez
minitorch.reluu(x)
"""


def _mypy(tmp_path, source):
    pytest.importorskip("mypy", reason="mypy not installed (pip install mypy)")
    path = tmp_path / "user.py"
    path.write_text(textwrap.dedent(source))
    # An editable install is an import hook mypy cannot follow: point it at the package's
    # folder then (an installed one in site-packages it finds by itself, through py.typed).
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(mt.__file__)))
    if "site-packages" not in package_root:
        env["MYPYPATH"] = package_root
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary",
                          "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
                          str(path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    return run.returncode, run.stdout + run.stderr


def test_mypy_accepts_a_user_program_using_tensor_methods(tmp_path):
    code, output = _mypy(tmp_path, USER_PROGRAM)
    assert code == 0, output


def test_mypy_rejects_a_user_program_that_misuses_them(tmp_path):
    code, output = _mypy(tmp_path, WRONG_PROGRAM)
    assert code == 1, output
    for line, message in ((6, '"Tensor" has no attribute "summ"'),
                          (7, 'expression has type "Tensor", variable has type "str"'),
                          (8, 'has no attribute "valuez"'),
                          (9, 'Module has no attribute "reluu"')):
        assert any(f.startswith(f"user.py:{line}: error:") and message in f
                   for f in output.splitlines()), output
