"""minitorch.viz: the DOT text of a graph (nodes, labels, edges, leaves, named parameters), its
iterative walk on deep graphs, and ``render``'s clear error when Graphviz is absent."""
import re
import shutil

import pytest

import minitorch as mt
from minitorch import viz


def _nodes(dot):
    """node id -> label, from lines like ``op_1 [label="MulBackward\\n(2, 3)", ...];``."""
    return dict(re.findall(r"^\s+(\w+) \[label=\"((?:[^\"\\]|\\.)*)\"", dot, re.M))


def _edges(dot):
    return re.findall(r"^\s+(\w+) -> (\w+);", dot, re.M)


def _small_graph():
    w = mt.randn(3, 2, requires_grad=True)
    b = mt.zeros(2, requires_grad=True)
    x = mt.randn(4, 3)
    loss = ((x @ w + b).tanh() * 2).sum()
    return loss, w, b


def test_dot_text_structure():
    loss, w, b = _small_graph()
    dot = viz.to_dot(loss, params={"weight": w, "bias": b})
    assert dot.startswith("digraph {") and dot.rstrip().endswith("}")
    nodes, edges = _nodes(dot), _edges(dot)
    labels = sorted(nodes.values())
    ops = sorted(label.split("\\n")[0] for label in labels if "Backward" in label)
    assert ops == ["AddBackward", "MatMulBackward", "MulBackward", "SumBackward", "TanhBackward"]
    # shapes of the tensors each node produced
    assert "MatMulBackward\\n(4, 2)" in labels and "SumBackward\\n()" in labels
    # leaves: named parameters with their shapes, marked by their own style
    assert "weight\\n(3, 2)" in labels and "bias\\n(2,)" in labels
    leaf_ids = [k for k, v in nodes.items() if v in ("weight\\n(3, 2)", "bias\\n(2,)")]
    for key in leaf_ids:
        assert re.search(rf"{key} \[.*fillcolor=\"lightblue\"", dot)
    # x needs no gradient: it is not drawn
    assert len(nodes) == 5 + 2 + 1
    # edges point from inputs to the op that used them, and end at the output node
    by_label = {v.split("\\n")[0]: k for k, v in nodes.items()}
    assert (by_label["weight"], by_label["MatMulBackward"]) in edges
    assert (by_label["MatMulBackward"], by_label["AddBackward"]) in edges
    assert (by_label["bias"], by_label["AddBackward"]) in edges
    output = next(k for k, v in nodes.items() if v.startswith("output"))
    assert (by_label["SumBackward"], output) in edges
    assert len(edges) == 7
    every_id = {k for e in edges for k in e}
    assert every_id == set(nodes)


def test_unnamed_leaves_show_their_shape_and_shared_inputs_are_drawn_once():
    a = mt.ones(2, 3, requires_grad=True)
    b = a + a
    dot = viz.to_dot(b * b)
    nodes, edges = _nodes(dot), _edges(dot)
    assert sorted(nodes.values()) == ["(2, 3)", "AddBackward\\n(2, 3)", "MulBackward\\n(2, 3)",
                                      "output (2, 3)"]
    leaf = next(k for k, v in nodes.items() if v == "(2, 3)")
    add = next(k for k, v in nodes.items() if v.startswith("Add"))
    mul = next(k for k, v in nodes.items() if v.startswith("Mul"))
    assert edges.count((leaf, add)) == 2 and edges.count((add, mul)) == 2


def test_multiple_outputs_and_leaf_output():
    a = mt.ones(2, requires_grad=True)
    dot = viz.to_dot([a.exp(), a])
    labels = list(_nodes(dot).values())
    assert labels.count("output (2,)") == 2 and "ExpBackward\\n(2,)" in labels
    assert labels.count("(2,)") == 1  # the leaf a, once, although it is reached twice
    plain = viz.to_dot(mt.ones(3))
    assert list(_nodes(plain).values()) == ["output (3,)"] and _edges(plain) == []


def test_graph_after_inplace_shows_history_at_use():
    x = mt.ones(2, requires_grad=True)
    y = x * 1
    z = y + 1
    y.mul_(3)
    labels = sorted(v.split("\\n")[0] for v in _nodes(viz.to_dot(z)).values())
    assert labels == ["(2,)", "AddBackward", "MulBackward", "output (2,)"]


def test_deep_graph_is_drawn_without_recursion():
    x = mt.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1.0
    dot = viz.to_dot(y)
    assert len(_edges(dot)) == 5001 and dot.count("AddBackward") == 5000


def test_label_quoting():
    a = mt.ones(1, requires_grad=True)
    dot = viz.to_dot(a * 2, params={'we"ird\\name': a})
    assert 'label="we\\"ird\\\\name\\n(1,)"' in dot


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"tensors\[0\].*list"):
        viz.to_dot([[1.0]])
    with pytest.raises(TypeError, match=r"params\['w'\].*float"):
        viz.to_dot(mt.ones(1), params={"w": 1.0})


def test_exported_from_the_package():
    assert mt.viz is viz


def test_render_without_graphviz_raises_clearly(monkeypatch, tmp_path):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"Graphviz 'dot' program was not found.*to_dot"):
        viz.render(_small_graph()[0], tmp_path / "graph.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")
def test_render_with_graphviz(tmp_path):
    path = viz.render(_small_graph()[0], str(tmp_path / "graph.svg"))
    assert "<svg" in open(path).read()
