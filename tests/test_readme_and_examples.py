"""README's Python snippets run as written, and the small MLP example trains."""
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_tour_runs():
    blocks = _python_blocks()
    assert blocks, "README has no python blocks"
    namespace = {}
    exec(compile(blocks[0], "README.md:tour", "exec"), namespace)
    assert namespace["x"].grad is not None
    assert namespace["hvp"].shape == (3,)


def test_readme_gradcheck_example_fails_as_documented():
    import minitorch.autograd as autograd
    blocks = _python_blocks()
    namespace = {}
    exec(compile(blocks[0], "README.md:tour", "exec"), namespace)
    with pytest.raises(autograd.GradcheckError, match="Jacobian mismatch for output 0"):
        exec(compile(blocks[1], "README.md:gradcheck", "exec"), namespace)


def test_mlp_example_loss_falls(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import mlp_moons
    finally:
        sys.path.pop(0)
    losses = mlp_moons.main(["--epochs", "40", "--out", str(tmp_path)])
    assert losses[-1] < 0.5 * losses[0]
