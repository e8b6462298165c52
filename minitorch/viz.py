"""Drawing the autograd graph: ``to_dot(tensor)`` gives Graphviz DOT text, ``render`` an image.

Like torchviz's ``make_dot``: one box per backward node (``MulBackward``, with the shape of the
tensor it produced), one box per leaf that requires grad (named from ``params`` when given),
the output(s) in green, and edges pointing the way the forward pass went (input → op). The walk
is an explicit stack, so a graph of any depth is drawn without recursion; producing the text
needs no Graphviz, only ``render`` calls the ``dot`` program.

May import: ``minitorch.tensor`` (and the standard library).
"""
import os
import shutil
import subprocess

from .tensor import Tensor

_LEAF_STYLE = 'shape=box, style=filled, fillcolor="lightblue"'
_OUTPUT_STYLE = 'shape=box, style=filled, fillcolor="darkolivegreen1"'
_OP_STYLE = 'shape=box, style=filled, fillcolor="lightgrey"'


def _shape_text(shape):
    return str(tuple(int(n) for n in shape))  # "(2, 3)", "(2,)", "()"


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(tensors, params=None):
    """The graph that produced ``tensors`` (a tensor or a sequence of them) as DOT text.

    ``params`` maps names to tensors (``dict(model.named_parameters())``): those leaves are
    labelled with their name and shape, other leaves with their shape only.
    """
    outputs = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"to_dot: tensors[{i}] must be a Tensor, got {type(t).__name__}")
    names = {}
    for name, p in (params or {}).items():
        if not isinstance(p, Tensor):
            raise TypeError(f"to_dot: params[{name!r}] must be a Tensor, got {type(p).__name__}")
        names[id(p)] = name

    lines = ["digraph {", '    graph [rankdir=BT, size="12,12"];',
             '    node [fontname="monospace", fontsize=10, height=0.2];']
    drawn = set()

    def leaf_node(t):
        key = f"leaf_{id(t)}"
        if key not in drawn:
            drawn.add(key)
            label = _shape_text(t.shape)
            if id(t) in names:
                label = names[id(t)] + "\n" + label
            lines.append(f"    {key} [label={_quote(label)}, {_LEAF_STYLE}];")
        return key

    def op_node(ctx):
        return f"op_{id(ctx)}"

    stack = []
    for i, t in enumerate(outputs):
        out_key = f"out_{i}_{id(t)}"
        lines.append(f"    {out_key} [label={_quote('output ' + _shape_text(t.shape))}, "
                     f"{_OUTPUT_STYLE}];")
        if t._ctx is not None:
            lines.append(f"    {op_node(t._ctx)} -> {out_key};")
            stack.append(t._ctx)
        elif t.requires_grad:
            lines.append(f"    {leaf_node(t)} -> {out_key};")

    while stack:
        ctx = stack.pop()
        key = op_node(ctx)
        if key in drawn:
            continue
        drawn.add(key)
        shapes = ", ".join(_shape_text(shape) for shape, _ in ctx.output_meta)
        lines.append(f"    {key} [label={_quote(ctx.name() + chr(10) + shapes)}, {_OP_STYLE}];")
        for t, edge in zip(ctx.inputs, ctx.input_edges):
            if t is None:
                continue  # an input that needs no gradient has no edge in the graph
            if edge is not None:  # the node that made the input when it was used
                lines.append(f"    {op_node(edge[0])} -> {key};")
                stack.append(edge[0])
            elif t.requires_grad:
                lines.append(f"    {leaf_node(t)} -> {key};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(tensors, path, params=None, format=None):
    """Write the graph of ``tensors`` to ``path`` as an image with Graphviz's ``dot`` program.

    The format comes from ``path``'s suffix (``.svg``, ``.png``, ``.pdf``) unless ``format`` is
    given. RuntimeError when ``dot`` is not installed; the DOT text from ``to_dot`` needs nothing.
    """
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("render: the Graphviz 'dot' program was not found on PATH; install "
                           "Graphviz (e.g. apt-get install graphviz), or write to_dot(tensor) "
                           "to a .dot file and render it elsewhere")
    format = format or os.path.splitext(path)[1].lstrip(".") or "svg"
    result = subprocess.run([dot, f"-T{format}", "-o", os.fspath(path)],
                            input=to_dot(tensors, params).encode(), capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"render: dot failed (exit {result.returncode}): "
                           f"{result.stderr.decode(errors='replace').strip()}")
    return path
