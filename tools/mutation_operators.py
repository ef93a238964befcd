"""The mutation operators of `tools/mutation_test.py`: one small bug per mutant, from the AST.

Operators: arithmetic (+ -, * /, // -> /, ** -> *), comparisons (< <=, > >=, == !=, is / is not,
in / not in), and / or, dropping `not` and unary minus, integer constants (0 -> 1, 1 -> 0,
n -> n+1), booleans, and the structural floats 0, 1/2, 1, 2. Docstrings, annotations, raise
statements and f-strings (messages) are never mutated. A mutant is numbered by its module and
its site's place in :func:`sites`' fixed walk order, so the numbers of a run can be re-run.
"""

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_BINARY_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult,
}
_COMPARE_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BOOL_SWAPS = {ast.And: ast.Or, ast.Or: ast.And}
#: Floats that carry structure (a zero, a half, a unit, a factor 2). Other float literals are
#: tuning values (tolerances, default gains) where doubling is a different choice, not a bug.
_STRUCTURAL_FLOATS = (0.0, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Mutant:
    """One planted bug: where, and what became what."""

    ident: int
    path: str
    index: int  # site within the module, in `sites` order
    line: int
    description: str


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of docstring expressions (never mutated)."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                skip.add(id(body[0].value))
    return skip


def _skipped_subtrees(tree: ast.AST) -> set[int]:
    """The ids of nodes in annotations, raise statements and f-strings (messages, not logic)."""
    skip = set()
    for node in ast.walk(tree):
        roots = []
        if isinstance(node, ast.Raise | ast.JoinedStr):
            roots.append(node)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            roots.append(node.returns)
        for root in roots:
            skip.update(id(child) for child in ast.walk(root))
    return skip


def sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, what, description) for every mutation this tree offers, in a fixed order."""
    skip = _docstring_nodes(tree) | _skipped_subtrees(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINARY_SWAPS:
            new = _BINARY_SWAPS[type(node.op)]
            yield node, 'op', f'{type(node.op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    new = _COMPARE_SWAPS[type(op)]
                    yield node, f'cmp{index}', f'{type(op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.BoolOp):
            new = _BOOL_SWAPS[type(node.op)]
            yield node, 'op', f'{type(node.op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            yield node, 'drop', f'drop {type(node.op).__name__}'
        elif isinstance(node, ast.Constant) and not isinstance(node.value, str | bytes):
            value = node.value
            if isinstance(value, bool):
                yield node, 'const', f'{value} -> {not value}'
            elif isinstance(value, int) or value in _STRUCTURAL_FLOATS:
                yield node, 'const', f'{value!r} -> {_changed_number(value)!r}'


def _changed_number(value: int | float) -> int | float:
    if isinstance(value, int):
        return 1 if value == 0 else (0 if value == 1 else value + 1)
    return 1.0 if value == 0.0 else 2.0 * value


def _mutate_node(tree: ast.AST, node: ast.AST, what: str) -> None:
    if what == 'op':
        swaps = _BOOL_SWAPS if isinstance(node, ast.BoolOp) else _BINARY_SWAPS
        node.op = swaps[type(node.op)]()
    elif what.startswith('cmp'):
        index = int(what[3:])
        node.ops[index] = _COMPARE_SWAPS[type(node.ops[index])]()
    elif what == 'drop':  # `not x` -> `x`, `-x` -> `x`
        _replace(tree, node, node.operand)
    elif what == 'const':
        node.value = (
            (not node.value) if isinstance(node.value, bool) else _changed_number(node.value)
        )


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is old:
                        value[index] = new
                        return
    raise ValueError('node not found')


def mutants(root: Path, modules: Sequence[str]) -> list[Mutant]:
    """Every mutant of every module (`modules`, under `root`), numbered in a fixed order."""
    found = []
    for path in modules:
        tree = ast.parse((root / path).read_text())
        for index, (node, _, description) in enumerate(sites(tree)):
            line = getattr(node, 'lineno', 0)
            found.append(Mutant(len(found), path, index, line, description))
    return found


def interleaved(found: list[Mutant]) -> list[Mutant]:
    """Run order that takes every module in turn, so a partial run is a fair sample."""
    sizes = {path: sum(m.path == path for m in found) for path in {m.path for m in found}}
    return sorted(found, key=lambda m: (m.index / sizes[m.path], m.ident))


def mutated_source(mutant: Mutant, source: str) -> str:
    """The module source with `mutant` applied (its `index`-th site)."""
    tree = ast.parse(source)
    node, what, _ = list(sites(tree))[mutant.index]
    _mutate_node(tree, node, what)
    return ast.unparse(ast.fix_missing_locations(tree))
