"""``einsum`` and ``movedim``, composed of existing ops (permute, reshape, expand, mul, sum, bmm),
so their gradients (and forward-mode tangents, and jit tracing) come from those ops.

einsum contracts operands pairwise, left to right, as torch does: labels repeated within one
operand become a diagonal (multiplied by an identity and summed), labels needed by no later
operand nor the output are summed out as early as possible, and each pair is one ``bmm`` over
(batch labels, left-only labels, contracted labels, right-only labels).
"""

from __future__ import annotations

from ._shape import wrap_dim
from .surface import public


def _subscript(n) -> str:
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                     "[0, 52)")


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """torch's sublist form: operands each followed by its list of dims (ints in [0, 52),
    Ellipsis), then optionally the output's list; as (equation, operands)."""
    operands, subs = args[0::2], args[1::2]
    out = None
    if len(operands) > len(subs):  # (a trailing list: the output's)
        operands, out = operands[:-1], operands[-1]
    equation = ",".join("".join(_subscript(n) for n in sub) for sub in subs)
    if out is not None:
        equation += "->" + "".join(_subscript(n) for n in out)
    return equation, tuple(operands)


def _parse(equation: str, operands: tuple) -> tuple[list[list[str]], list[str]]:
    """Per-operand label lists and the output labels; ``...`` becomes labels ``'0'``, ``'1'``,
    ... (the broadcast dims, right-aligned across operands)."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:  # (the second arrow's '-' is the first bad subscript, as torch says)
        at = eq.index("-", eq.index("->") + 2)
        raise RuntimeError(f"einsum(): invalid subscript given at index {at} in the equation "
                           "string, subscripts must be in [a-zA-Z]")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    for k, term in enumerate(terms):
        if "." in term.replace("...", "", 1):
            raise RuntimeError(f"einsum(): found '.' for operand {k} that is not part of any "
                               "ellipsis")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                         "equation" if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    n_ell = 0
    for term, op in zip(terms, operands):
        if "..." in term:
            n_ell = max(n_ell, op.ndim - (len(term) - 3))
    ell = [str(i) for i in range(n_ell)]
    labels = []
    for k, (term, op) in enumerate(zip(terms, operands)):
        if "..." in term:
            head, tail = term.split("...")
            k_ell = op.ndim - len(head) - len(tail)
            if k_ell < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(head) + len(tail)}) is more than the number of "
                                   f"dimensions ({op.ndim}) for operand {k}")
            ls = list(head) + ell[n_ell - k_ell:] + list(tail)
        else:
            ls = list(term)
            if len(ls) != op.ndim:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(ls)}) does not "
                    f"match the number of dimensions ({op.ndim}) for operand {k} and no "
                    "ellipsis was given")
        for c in ls:
            if not (c.isdigit() or c.isalpha()):
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{eq.index(c)} in the equation string, subscripts must be "
                                   "in [a-zA-Z]")
        labels.append(ls)
    if rhs is None:
        counts: dict[str, int] = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and not c.isdigit())
    else:
        out = []
        if "..." in rhs:
            head, tail = rhs.split("...")
            out = list(head) + ell + list(tail)
        else:
            out = list(rhs)
        present = {c for ls in labels for c in ls}
        for c in out:
            if c not in present:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
    return labels, out


def _diagonalize(x, ls: list[str], k: int):
    """Takes the diagonal of repeated labels within one operand."""
    from .creation import eye

    while len(set(ls)) != len(ls):
        c = next(c for c in ls if ls.count(c) > 1)
        i = ls.index(c)
        j = ls.index(c, i + 1)
        n = x.shape[i]
        if x.shape[j] != n:
            raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the "
                               f"sizes don't match, {x.shape[j]} != {n}")
        shape = [1] * x.ndim
        shape[i], shape[j] = n, n
        x = (x * eye(n, dtype=x.dtype, device=x.device).reshape(shape)).sum(dim=j)
        ls = ls[:j] + ls[j + 1:]
    return x, ls


def _sum_labels(x, ls: list[str], drop: set):
    dims = [i for i, c in enumerate(ls) if c in drop]
    if not dims:
        return x, ls
    return x.sum(dim=tuple(dims)), [c for c in ls if c not in drop]


def _aligned(x, ls: list[str], order: list[str]):
    """``x`` permuted to ``order``, with size-1 dims for the labels it lacks."""
    x = x.permute(*[ls.index(c) for c in order if c in ls]) if ls else x
    own = iter(x.shape)
    shape = [next(own) if c in ls else 1 for c in order]
    return x.reshape(shape) if x.ndim != len(shape) else x


def _arrange(x, ls: list[str], order: list[str], sizes: dict):
    """``x`` permuted to ``order`` (labels it lacks become size-1 dims) and expanded."""
    x = _aligned(x, ls, order)
    full = tuple(sizes[c] for c in order)
    return x.expand(full) if tuple(x.shape) != full else x


def _drop_unit_contractions(a, la, b, lb, contracted: list[str]):
    """As torch: a contracted label of size 1 in one operand is squeezed there and summed in
    the other, so only labels of size > 1 in both operands are contracted by ``bmm``."""
    for c in contracted:
        na, nb = a.shape[la.index(c)], b.shape[lb.index(c)]
        if na == 1 or nb == 1:
            a = a.squeeze(la.index(c)) if na == 1 else a.sum(dim=la.index(c))
            b = b.squeeze(lb.index(c)) if nb == 1 else b.sum(dim=lb.index(c))
            la, lb = [d for d in la if d != c], [d for d in lb if d != c]
    return a, la, b, lb


def _prod(ns) -> int:
    out = 1
    for n in ns:
        out *= n
    return out


def _contract(a, la, b, lb, keep: set, sizes: dict):
    batch = [c for c in la if c in lb and c in keep]
    a, la, b, lb = _drop_unit_contractions(a, la, b, lb,
                                           [c for c in la if c in lb and c not in keep])
    contracted = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    if not contracted:  # (torch multiplies: dtypes promote and autocast leaves it alone)
        order = batch + a_only + b_only
        return _aligned(a, la, order) * _aligned(b, lb, order), order
    a3 = _arrange(a, la, batch + a_only + contracted, sizes)
    b3 = _arrange(b, lb, batch + contracted + b_only, sizes)
    nb = _prod(sizes[c] for c in batch)
    m = _prod(sizes[c] for c in a_only)
    k = _prod(sizes[c] for c in contracted)
    n = _prod(sizes[c] for c in b_only)
    out = a3.reshape(nb, m, k).bmm(b3.reshape(nb, k, n))
    labels = batch + a_only + b_only
    return out.reshape(tuple(sizes[c] for c in labels)), labels


@public("einsum")
def einsum(equation: str, *operands):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b`` (torch.einsum); also
    torch's sublist form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    if not isinstance(equation, str):
        equation, operands = _from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    labels, out = _parse(equation, operands)
    sizes: dict[str, int] = {}
    for k, (op, ls) in enumerate(zip(operands, labels)):
        own: dict[str, int] = {}
        for c, n in zip(ls, op.shape):
            if c in own and own[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but "
                                   f"the sizes don't match, {n} != {own[c]}")
            own[c] = n
        for c, n in zip(ls, op.shape):
            if c in sizes and sizes[c] != n and 1 not in (sizes[c], n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which "
                                   f"does not broadcast with previously seen size {sizes[c]}")
            sizes[c] = n if c not in sizes or sizes[c] == 1 else sizes[c]
    xs, ls_all = [], []
    for k, (op, ls) in enumerate(zip(operands, labels)):
        x, ls = _diagonalize(op, list(ls), k)
        xs.append(x)
        ls_all.append(ls)
    acc, la = xs[0], ls_all[0]
    for i in range(len(xs) + 1):
        later = set(out).union(*[set(ls) for ls in ls_all[i + 1:]])
        if i == 0:
            acc, la = _sum_labels(acc, la, {c for c in la if c not in later})
            continue
        if i == len(xs):
            break
        b, lb = xs[i], ls_all[i]
        later_b = set(out).union(la, *[set(ls) for ls in ls_all[i + 1:]])
        b, lb = _sum_labels(b, lb, {c for c in lb if c not in later_b})
        acc, la = _contract(acc, la, b, lb, later, sizes)
    if la != out:
        acc = acc.permute(*[la.index(c) for c in out])
    return acc


def movedim(input, source, destination):  # noqa: A002
    """Moves the dims ``source`` to the positions ``destination`` (others keep their order)."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    n = input.ndim
    src = [wrap_dim(d, n) for d in src]
    dst = [wrap_dim(d, n) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if n == 0:  # (a 0-d tensor: dims -1 and 0 name its one place; torch's AliasBackward0)
        from .indexing import ALIAS
        from .registry import apply

        return apply(ALIAS, input)
    order: list[int | None] = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return input.permute(*order)


moveaxis = movedim
public(("movedim", "moveaxis"), method=True)(moveaxis)
