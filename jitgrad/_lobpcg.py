"""``lobpcg``: torch's Locally Optimal Block Preconditioned Conjugate Gradient eigensolver
(``torch._lobpcg``, Knyazev 2001; Duersch et al. 2018), ported to jitgrad ops: the ``basic``
and ``ortho`` methods, a generalized problem ``A X = B X E``, a preconditioner ``iK``, batches,
and the gradient with respect to ``A`` (``_lobpcg_backward``)."""

from __future__ import annotations

from typing import Any

from . import dtypes
from .autograd.function import Function
from .autograd.grad_mode import no_grad
from .linalg import cholesky, eigh, qr, solve_triangular
from .ops.creation import empty, eye, zeros
from .random import randn

__all__ = ["lobpcg"]


def _mm(A: Any, B: Any) -> Any:  # noqa: N803
    return B if A is None else A @ B


def _qform(A: Any, S: Any) -> Any:  # noqa: N803
    """``S^T A S`` (``A`` None: the identity)."""
    return S.mT @ _mm(A, S)


def _symeig(A: Any, largest: bool | None = False) -> tuple:  # noqa: N803
    E, Z = eigh(A, UPLO="U")  # noqa: N806
    if largest:
        E, Z = E.flip(-1), Z.flip(-1)  # noqa: N806
    return E, Z


def _floating(A: Any) -> dtypes.dtype:  # noqa: N803
    return A.dtype if A.dtype in (dtypes.float16, dtypes.float32, dtypes.float64) else \
        dtypes.float32


class LOBPCG:
    """Worker class of LOBPCG methods (torch's): ``run()`` iterates ``update()`` until ``k``
    eigenpairs converged, ``niter`` iterations ran or a tracker set
    ``bvars['force_stop']``."""

    def __init__(self, A: Any, B: Any, X: Any, iK: Any, iparams: dict,  # noqa: N803
                 fparams: dict, bparams: dict, method: str, tracker: Any) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = zeros((n,), dtype=X.dtype, device=X.device)
        self.R = zeros((m, n), dtype=X.dtype, device=X.device)
        self.S = zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars: dict = {}
        self.ivars: dict = {"istep": 0}
        self.fvars: dict = {"_": 0.0}
        self.bvars: dict = {"_": False}

    def update(self) -> None:
        """Set and update iteration variables."""
        if self.ivars["istep"] == 0:
            X_norm = float(self.X.norm())  # noqa: N806
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(_mm(self.A, self.X).norm()) / X_norm
            self.fvars["B_norm"] = float(_mm(self.B, self.X).norm()) / X_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        """Update residual R from A, B, X, E."""
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """The number of leading eigenpairs whose backward-stable relative residual is below
        ``tol`` (Sec 4.3 of Duersch et al. 2018)."""
        prev = self.ivars["converged_count"]
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]  # noqa: N806
        rerr = self.R.norm(2, (0,)) / (self.X.norm(2, (0,))
                                       * (A_norm + self.E[:self.X.shape[-1]].abs() * B_norm))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break  # (strict ordering of the eigenpairs)
            count += 1
        if count < prev:
            raise AssertionError(f"the number of converged eigenpairs (was {prev}, got {count}) "
                                 "cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self) -> bool:
        """Return True to stop iterations."""
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self) -> None:
        """Run LOBPCG iterations (calling the tracker, if any, after each)."""
        self.update()
        if self.tracker is not None:
            self.tracker(self)
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.tracker(self)

    def _update_basic(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)  # noqa: N806
            E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)  # noqa: N806
            self.X = self.X @ (Ri @ Z)
            self.E = E
            np_ = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            W = _mm(self.iK, self.R)  # noqa: N806
        else:
            S_ = self.S[:, nc:ns]  # noqa: N806
            Ri = self._get_rayleigh_ritz_transform(S_)  # noqa: N806
            E_, Z = _symeig(_qform(_qform(self.A, S_), Ri), largest)  # noqa: N806
            self.X[:, nc:] = S_ @ (Ri @ Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Ri @ Z[:, n:2 * n - nc])  # noqa: N806
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            self.S[:, n:n + np_] = P
            W = _mm(self.iK, self.R[:, nc:])  # noqa: N806
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _update_ortho(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)  # noqa: N806
            _, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)  # noqa: N806
            self.X = self.X @ (Ri @ Z)
            self.update_residual()
            np_ = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)  # noqa: N806
        else:
            S_ = self.S[:, nc:ns]  # noqa: N806
            E_, Z = _symeig(_qform(self.A, S_), largest)  # noqa: N806 - Rayleigh-Ritz
            self.X[:, nc:] = S_ @ Z[:, :n - nc]
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Z[:, n - nc:] @ qr(Z[:n - nc, n - nc:].mT).Q)  # noqa: N806
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])  # noqa: N806
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S: Any) -> Any:  # noqa: N803
        """The upper-triangular ``Ri`` that reduces ``(S^T A S) C = (S^T B S) C E`` to the
        standard problem ``(Ri^T S^T A S Ri) Z = Z E`` with ``C = Ri Z``."""
        SBS = _qform(self.B, S)  # noqa: N806
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = cholesky((SBS * d_row) * d_col, upper=True)  # noqa: N806
        return solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U: Any, drop: bool, tau: float) -> Any:  # noqa: N803
        """B-orthonormal ``U`` (Algorithm 4 of Duersch 2015); ``drop``: without the columns
        that add little to ``span(U)``."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)  # noqa: N806
        d = UBU.diagonal(0, -2, -1)
        nonzero = (d.abs() != 0).nonzero().reshape(-1)  # (exact zero columns are dropped)
        if nonzero.shape[0] < d.shape[0]:
            U = U[:, nonzero]  # noqa: N806
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)  # noqa: N806
            d = UBU.diagonal(0, -2, -1)
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        E, Z = _symeig((UBU * d_col) * d_col.mT)  # noqa: N806
        t = tau * float(E.abs().max())
        if drop:
            keep = (E > t).nonzero().reshape(-1)
            E, Z, d_col = E[keep], Z[:, keep], d_col[keep]  # noqa: N806
        else:
            E = E.clamp(min=t)  # noqa: N806 - (the eigenvalues below t become t)
        return (U * d_col.mT) @ (Z * E ** -0.5)

    def _get_ortho(self, U: Any, V: Any) -> Any:  # noqa: N803
        """B-orthonormal ``U`` whose columns are B-orthogonal to ``V`` (Algorithms 3 and 6 of
        Duersch 2015); empty when every column of ``U`` is B-collinear to ``V``."""
        m = self.iparams["m"]
        tau_ortho, tau_drop = self.fparams["ortho_tol"], self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        i_max, j_max = self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [k for k in self.fvars if k.startswith("ortho_") and k.endswith("_rerr")]:
            self.fvars.pop(key)
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = _mm(self.B, V).norm()  # noqa: N806
        BU = _mm(self.B, U)  # noqa: N806
        VBU = V.mT @ BU  # noqa: N806
        i = j = 0
        for i in range(i_max):
            U = U - V @ VBU  # noqa: N806
            drop, tau_svqb = False, tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)  # noqa: N806
                    drop, tau_svqb = True, tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)  # noqa: N806
                if U.numel() == 0:
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _mm(self.B, U)  # noqa: N806
                UBU = U.mT @ BU  # noqa: N806
                R = UBU - eye(UBU.shape[-1], dtype=UBU.dtype, device=UBU.device)  # noqa: N806
                rerr = float(R.norm()) / float(BU.norm() * U.norm())
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = V.mT @ BU  # noqa: N806
            rerr = float(VBU.norm()) / float(BV_norm * U.norm())
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                raise ValueError(f"Overdetermined shape of U: #B-cols(={m}) >= #U-cols(="
                                 f"{U.shape[-1]}) + #V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


def _lobpcg(A: Any, k: Any, B: Any, X: Any, n: Any, iK: Any, niter: Any,  # noqa: N803
            tol: Any, largest: Any, method: Any, tracker: Any, ortho_iparams: Any,
            ortho_fparams: Any, ortho_bparams: Any) -> tuple:
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating(A)
    if tol is None:
        tol = {dtypes.float32: 1.2e-07, dtypes.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    def solve(A_: Any, B_: Any, X_: Any) -> tuple:  # noqa: N803
        X_ = randn((m, n), dtype=dtype, device=A.device) if X_ is None else X_  # noqa: N806
        if not (X_.ndim == 2 and tuple(X_.shape) == (m, n)):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCG(A_, B_, X_, iK, dict(iparams), fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.ndim == 2:
        return solve(A, B, X)
    batch = tuple(A.shape[:-2])
    count = 1
    for s in batch:
        count *= s
    bA = A.reshape((count, m, m))  # noqa: N806
    bB = B.reshape((count, m, m)) if B is not None else None  # noqa: N806
    bX = X.reshape((count,) + tuple(X.shape[-2:])) if X is not None else None  # noqa: N806
    bE, bXret = empty((count, k), dtype=dtype), empty((count, m, k), dtype=dtype)  # noqa: N806
    for i in range(count):
        iparams["batch_index"] = i
        bE[i], bXret[i] = solve(bA[i], bB[i] if bB is not None else None,
                                bX[i] if bX is not None else None)
    return bE.reshape(batch + (k,)), bXret.reshape(batch + (m, k))


class _LOBPCGFunction(Function):
    @staticmethod
    def forward(ctx: Any, A: Any, *args: Any) -> tuple:  # noqa: N803
        with no_grad():
            D, U = _lobpcg(A.contiguous(), *args)  # noqa: N806
        ctx.save_for_backward(A, D, U)
        ctx.largest = args[7]
        ctx.has_b = args[1] is not None
        return D, U

    @staticmethod
    def backward(ctx: Any, D_grad: Any, U_grad: Any) -> tuple:  # noqa: N803
        from ._lobpcg_backward import symeig_backward

        A, D, U = ctx.saved_tensors  # noqa: N806
        if ctx.has_b:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        if A.is_complex():
            raise ValueError("lobpcg.backward does not support complex input yet. Note that "
                             "lobpcg.forward does though.")
        largest = True if ctx.largest is None else ctx.largest
        D_grad = D.new_zeros(tuple(D.shape)) if D_grad is None else D_grad  # noqa: N806
        U_grad = U.new_zeros(tuple(U.shape)) if U_grad is None else U_grad  # noqa: N806
        return (symeig_backward(D_grad, U_grad, A, D, U, largest),) + (None,) * 13


def lobpcg(A: Any, k: int | None = None, B: Any = None, X: Any = None,  # noqa: N803
           n: int | None = None, iK: Any = None, niter: int | None = None,  # noqa: N803
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker: Any = None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None) -> tuple:
    """The ``k`` largest (or smallest) eigenpairs of the symmetric positive definite
    generalized eigenvalue problem ``A X = B X diag(E)`` (``B`` None: the identity), by LOBPCG.

    Args:
        A: ``(*, m, m)`` symmetric input.
        k: the number of eigenpairs (default: ``X``'s columns, or 1).
        B: ``(*, m, m)`` symmetric positive definite, or None.
        X: ``(*, m, n)`` initial approximation of the eigenvectors (default: random).
        n: the size of the generated random approximation when ``X`` is None (default ``k``).
        iK: ``(*, m, m)`` preconditioner, or None.
        niter: the maximum number of iterations (default 1000; -1 until convergence).
        tol: the residual tolerance for convergence (default ``sqrt(eps)``).
        largest: True (default) for the largest eigenvalues, False for the smallest.
        method: ``"ortho"`` (default) or ``"basic"``.
        tracker: called with the worker after each iteration (it may set
            ``worker.bvars['force_stop'] = True``).
        ortho_iparams, ortho_fparams, ortho_bparams: the ``ortho`` method's parameters
            (``ortho_i_max``, ``ortho_j_max``; ``ortho_tol``, ``ortho_tol_drop``,
            ``ortho_tol_replace``; ``ortho_use_drop``).

    Returns:
        ``(E, X)``: the ``(*, k)`` eigenvalues and ``(*, m, k)`` eigenvectors. A gradient
        flows back to ``A`` (symmetrized, as torch's); a backward with ``B`` raises, as
        torch's.
    """
    args = (k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
            ortho_fparams, ortho_bparams)
    if A.requires_grad or (B is not None and B.requires_grad):
        # (symmetrized, so that the gradient is symmetric too, as torch's)
        sym_args = (k, (B + B.mT) / 2 if B is not None else None) + args[2:]
        return _LOBPCGFunction.apply((A + A.mT) / 2, *sym_args)
    return _lobpcg(A, *args)
