"""``OpDef``, the one definition of a primitive op (its fields are documented on the class),
and ``Meta``, the shape and dtype of a value a backward rule needs only the metadata of.
``ops.registry`` registers OpDefs (``defop``) and dispatches calls to them (``apply``)."""

from __future__ import annotations

from .. import dtypes
from .op_fields import OPAQUE, SAME, SAVE_ALL, Public


class OpDef:
    """The single definition of one primitive op.

    Fields (keyword arguments of ``defop``):

    * ``impl``: the NumPy implementation; ``meta``: the (shape, dtype) rule (pointwise ops get
      one from ``promote``); ``kind``: POINTWISE, REDUCE, MOVEMENT or OPAQUE.
    * ``vjp``: the backward rule (one function, or a tuple with one function per input);
      ``jvp``: the forward-mode rule or a shorthand (LINEAR, BILINEAR, ELEMENTWISE).
    * ``save``/``save_output``: what the backward keeps; ``save_if``: ``{i: (j, ...)}`` saves
      input i only when one of inputs j requires grad (tuple VJP rules only).
    * ``empty_forbidden``: a full reduction that rejects an empty input (torch's RuntimeError).
    * simplification facts for ``jit.passes.simplify``: ``identity`` maps an input position
      (or a param name) to the literal value that makes the op return its other input (the
      first input for a param); ``passthrough``: the op's output is its first input whenever
      shape and dtype agree; ``involution``: ``op(op(x)) == x``; ``nondeterministic``: two
      equal calls give different values (never merged by CSE, saved for a recomputation).
    * ``saved_names``: torch's names for what the node saved (``grad_fn._saved_<name>``), each
      mapped to where the value lives (see ``ops/saved_names.py``); by default saved input 0
      is ``self``, input 1 ``other``, a saved output ``result``. ``saved_indices``:
      ``(arg op name, param names)``, how ``_saved_indices`` of sort/topk/max(dim) is
      recomputed from the saved input.
    * ``outputs_requiring_grad``: ``f(args, params)`` giving, per output, whether it requires
      grad, for an opaque op whose outputs do not all depend on every input (a custom Function's
      backward run as one op).
    * ``graph_impl``: the implementation that graph backends call instead of ``impl``;
      ``contiguous_fallback``: the op that replays it eagerly on a contiguous copy of a
      non-contiguous input (``view`` -> ``unsafe_view``).
    * ``program``: how a whole Numba program (``backends/numba_program.py``) computes a
      movement op between its kernels instead of the NumPy impl: ``program(p, x, **params)``
      returns a nopython expression over the input named ``x``; ``p.size(n)`` renders a size
      or offset as a run-time value (the program's source never depends on shapes),
      ``p.shape(dims)`` a shape, ``p.ndim`` the input's dimensions, ``p.dtype`` the output's
      NumPy dtype, and ``p.bind(expr)``
      / ``p.line(statement)`` emit statements (``bind`` returns the new name).
    * ``autocast``: ``AUTOCAST_LOWER`` or ``AUTOCAST_FP32``: how autocast casts the op's
      floating inputs (``ops/autocast_policy.py``); None: it leaves them alone.
    * ``check_operands``: ``f(args)`` raising torch's error for operands the op refuses by
      dtype (bool ``sub``), before it computes or is traced; the lanes hand an operand dtype it
      refuses to the general path, which calls it.
    * ``public``: a ``Public`` (or a name: the ``jitgrad`` function and Tensor method): where
      the op is exposed; the public surface (``jitgrad.ops.surface``) is generated from these.
    * ``opmath_backward``: torch's backward is one kernel computing in float32 (gelu, silu,
      softmax, layer norm, ...): for float16/bfloat16 values the VJP rule runs in float32 and
      each gradient is rounded once, not after every op of the rule.
    * ``non_differentiable``: floating inputs that torch's derivative formulas leave out
      (nll_loss's class weights, batch norm's running stats): its node lists no edge for them
      in ``next_functions`` (as none for an input whose tuple VJP entry is None, nor for
      integer or bool inputs of non-pointwise ops).
    """

    __slots__ = ("name", "node_name", "kind", "impl", "meta", "vjp", "jvp", "save", "save_output",
                 "template", "promote", "n_outputs", "nonpromoted", "decompose", "differentiable",
                 "view", "broadcast", "by_category", "save_if", "empty_forbidden", "identity",
                 "passthrough", "involution", "nondeterministic", "graph_impl", "public",
                 "outputs_requiring_grad", "contiguous_fallback", "saved_names",
                 "saved_indices", "index_map", "batch", "program", "autocast",
                 "check_operands", "node_class", "uniform_node_class", "non_differentiable",
                 "opmath_backward")

    def __init__(self, name, impl, *, node_name=None, kind=OPAQUE, meta=None, vjp=None, jvp=None,
                 save=(), save_output=False, template=None, promote=SAME, n_outputs=1,
                 nonpromoted=(), decompose=None, differentiable=True, view=False,
                 broadcast=False, save_if=None, empty_forbidden=False, identity=None,
                 passthrough=False, involution=False, nondeterministic=False, graph_impl=None,
                 public=None, outputs_requiring_grad=None,
                 contiguous_fallback=None, saved_names=None, saved_indices=None,
                 index_map=False, batch=None, program=None, autocast=None,
                 check_operands=None, non_differentiable=(), opmath_backward=False):
        self.name = name
        self.node_name = node_name or _default_node_name(name)
        # the classes of its autograd nodes, named node_name as torch's (made by
        # ``autograd.op_node`` on the op's first record)
        self.node_class = self.uniform_node_class = None
        self.non_differentiable = tuple(non_differentiable)
        self.opmath_backward = opmath_backward
        self.kind = kind
        self.impl = impl
        self.meta = meta
        self.vjp = vjp
        self.jvp = jvp
        self.save = save if save is SAVE_ALL else tuple(save)
        self.save_output = save_output
        self.template = template
        self.promote = promote
        self.n_outputs = n_outputs
        self.nonpromoted = tuple(nonpromoted)
        self.decompose = decompose
        self.differentiable = differentiable and vjp is not None
        self.view = view  # outputs alias the first input (numpy views): they share its version
        # counter (MULTI_OUTPUT_VIEW: torch's multi-output views, never changed in place)
        # the output is the first input broadcast to a shape (expand): inside a fused kernel it
        # is no copy, just the input read with the broadcast dims' index held at 0
        self.broadcast = broadcast
        # each output element is one element of the first input, picked by position alone
        # (transpose, slice, ...): the op applies unchanged to any array of the input's shape,
        # so it commutes with pointwise ops (jit/passes/index_maps.py moves it to kernel inputs)
        self.index_map = index_map
        # vmap's batching rule (jitgrad/func/batching.py): ``batch(op, values, flags, params,
        # size)`` on the batch values (batch dim first; flags: which are batched); None: the
        # generic rule of ``kind``, else a loop over the batch
        self.batch = batch
        self.program = program
        self.autocast = autocast
        self.check_operands = check_operands
        # A pointwise op whose result dtype follows its category alone and whose output is no
        # view (set by ``defop``): the dispatcher's fast path for same-dtype tensor operands.
        self.by_category = False
        self.save_if = save_if
        self.empty_forbidden = empty_forbidden
        self.identity = dict(identity or {})
        self.passthrough = passthrough
        self.involution = involution
        self.nondeterministic = nondeterministic
        self.graph_impl = graph_impl or impl
        self.outputs_requiring_grad = outputs_requiring_grad
        self.contiguous_fallback = contiguous_fallback
        self.saved_names = saved_names
        self.saved_indices = saved_indices
        self.public = Public(public, method=True) if isinstance(public, (str, tuple)) \
            else public

    def __repr__(self) -> str:
        return f"<OpDef {self.name} ({self.kind})>"


def _default_node_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Backward0"


class Meta:
    """Shape and dtype of a value that a backward rule needs only the metadata of."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: dtypes.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Meta({self.shape}, {self.dtype})"
