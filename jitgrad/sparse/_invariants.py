"""``torch.sparse.check_sparse_tensor_invariants``: the global switch of the sparse
constructors' invariant checks, and torch 2.13's once-per-process warning where a constructor
is called while nobody has set it (jitgrad checks indices against the size always; the switch
only records the choice, as torch's ``is_enabled`` reports it)."""

from __future__ import annotations

from typing import Any

from .. import _config

# None until enable() / disable() / the context manager sets it (torch's optional flag)
_STATE: list = [None]

_IMPLICIT = ("Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) "
             "will occur when operating on a sparse tensor which violates the invariants, but "
             "checks incur performance overhead. To silence this warning, explicitly opt in or "
             "out. See `torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance. ")


def warn_if_implicit(check_invariants: Any) -> None:
    """torch's warning (once per process, or always under ``set_warn_always``) when a sparse
    tensor constructor runs with ``check_invariants=None`` and the switch was never set."""
    if check_invariants is None and _STATE[0] is None:
        _config.warn_once("sparse_invariants", _IMPLICIT)


class check_sparse_tensor_invariants:  # noqa: N801 - torch's name
    """A context manager, decorator and switch for the sparse constructors' invariant checks
    (torch.sparse.check_sparse_tensor_invariants): ``with check_sparse_tensor_invariants():``,
    ``@check_sparse_tensor_invariants()``, or ``enable()`` / ``disable()`` / ``is_enabled()``.
    """

    @staticmethod
    def is_enabled() -> bool:
        """Whether the checks are enabled (False until enabled)."""
        return bool(_STATE[0])

    @staticmethod
    def enable() -> None:
        """Enables the checks in sparse tensor constructors."""
        _STATE[0] = True

    @staticmethod
    def disable() -> None:
        """Disables the checks in sparse tensor constructors."""
        _STATE[0] = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved_state: bool | None = None

    def __enter__(self) -> None:
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        _STATE[0] = bool(self.state)

    def __exit__(self, type: Any, value: Any, traceback: Any) -> None:  # noqa: A002
        if self.saved_state is None:
            raise AssertionError("saved_state should not be None on exit")
        _STATE[0] = self.saved_state
        self.saved_state = None

    def __call__(self, mth: Any) -> Any:
        def test_mth(*args: Any, **kwargs: Any) -> Any:
            with type(self)(self.state):
                return mth(*args, **kwargs)

        return test_mth
