"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``weight_norm``,
``spectral_norm`` and ``orthogonal``, each registered on a module's tensor with
``parametrize.register_parametrization``, with PyTorch's state-dict layout."""

from __future__ import annotations

from enum import Enum, auto

from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...errors import ArgumentError, DTypeError, IndexingError, ShapeError, tensor_with_dimensions
from ...functions.arrangement import mv
from ...functions.creation import eye, randn, zeros_like
from ...functions.linalg import dot
from ...functions.linear_algebra import solve
from ...functions.shape import concatenate
from .. import init
from ..conv import ConvTranspose2d
from ..functional import normalize
from ..module import Module
from . import _matrix_maps, parametrize
from .weight_norm import norm_except_dim, weight_norm_value

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ----- orthogonal ------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix X: (..., n, k) to one with orthonormal columns (rows when
    n < k): the exponential or the Cayley transform of the skew-symmetric matrix made from X's
    lower triangle, or the product of the Householder reflectors below X's diagonal. With
    ``use_trivialization`` the result is multiplied by the orthogonal buffer ``base`` (set by
    ``right_inverse``): the dynamic trivialization of Lezcano-Casado (2019)."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # from here on X is tall: n >= k
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()  # n*k - k*(k-1)/2 free entries
            if n != k:  # embed into a square matrix
                padding = X.new_zeros((n, n - k)).expand(*X.shape[:-2], n, n - k)
                X = concatenate([X, padding], -1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_maps.matrix_exp(A)
            else:  # the Cayley retraction (I - A/2)^-1 (I + A/2)
                identity = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _matrix_maps.householder_product(A, tau)
            # X's diagonal holds the signs (+1 or -1) of the columns; it is not trained, hence
            # outside the graph, and truncated to an integer as PyTorch does
            with no_grad():
                diagonal = X.diagonal(0, -2, -1)
                signs = diagonal.sign() * diagonal.abs().floor()
            Q = Q * signs.unsqueeze(-2)
        if self.has_base:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    @property
    def has_base(self) -> bool:
        return "base" in self._buffers

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        """An X with forward(X) = Q (Q orthogonalised by QR first if it is not orthogonal)."""
        if tuple(Q.shape) != self.shape:
            raise ShapeError(
                f"[orthogonal] expected a matrix or batch of matrices of shape {self.shape}, "
                f"got {tuple(Q.shape)}"
            )
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803
        Q_init = Q  # noqa: N806
        n, k = Q.shape[-2], Q.shape[-1]
        transposed = n < k
        if transposed:
            Q = Q.mT
            n, k = k, n
        if not self.has_base:
            if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False."
                )
            # The Householder reflectors of Q's QR factorisation, with Q's diagonal the signs
            # that make R's diagonal positive (a reflector LAPACK skipped, tau = 0, flips it).
            reflectors, tau = _matrix_maps.geqrf(Q)
            diagonal = reflectors.diagonal(0, -2, -1)
            signs = diagonal.sign() * (1 - 2 * (tau == 0.0).to(diagonal.dtype))
            identity = eye(n, k, dtype=reflectors.dtype, device=reflectors.device)
            A = reflectors * (1 - identity) + identity * signs.unsqueeze(-2)  # noqa: N806
            return A.mT if transposed else A
        if n == k:
            Q = Q.clone() if _matrix_maps.is_orthogonal(Q) else _matrix_maps.make_orthogonal(Q)
        else:  # complete Q into a square orthogonal matrix
            completion = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _matrix_maps.make_orthogonal(concatenate([Q, completion], -1))
        self.base = Q
        # -I: the Householder map sends it to I (and the other maps send it to I as well)
        identity = eye(Q_init.shape[-2], Q_init.shape[-1], dtype=Q.dtype, device=Q.device)
        return zeros_like(Q_init) - identity


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Make ``module.<name>`` (m, n), or a stack (..., m, n), orthogonal: orthonormal columns
    when m >= n, orthonormal rows otherwise, whatever the trained original becomes.

    ``orthogonal_map`` is ``"matrix_exp"`` (Q = exp(A)), ``"cayley"``
    (Q = (I - A/2)^-1 (I + A/2)), both of a skew-symmetric A, or ``"householder"`` (a product
    of reflectors); the default is ``"matrix_exp"`` for square matrices and ``"householder"``
    otherwise. With ``use_trivialization=True`` the result is multiplied by an orthogonal
    ``base`` buffer (``module.parametrizations.<name>[0].base``), which helps training.

    The starting value is the tensor itself if it is orthogonal, else its QR orthogonalisation.
    Returns ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(
            f"[orthogonal] {type(module).__name__} has no parameter or buffer named '{name}'"
        )
    if weight.ndim < 2:
        raise ShapeError(
            f"[orthogonal] expected a matrix or batch of matrices, got "
            f"{tensor_with_dimensions(weight.ndim)} (shape {tuple(weight.shape)})"
        )
    if weight.is_complex():
        raise DTypeError(
            f"[orthogonal] complex weights ({weight.dtype}) are not supported",
            help="use a real floating dtype",
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ArgumentError(
            f'[orthogonal] orthogonal_map has to be one of "matrix_exp", "cayley", '
            f'"householder", got {orthogonal_map!r}'
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ----- weight norm -----------------------------------------------------------------------------
class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||, the norm over every dimension but ``dim`` (all for dim=None)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalisation (Salimans & Kingma, 2016): ``module.<name>`` becomes
    ``g * v / ||v||``, with the magnitude ``g`` in
    ``module.parametrizations.<name>.original0`` and the direction ``v`` in ``original1``.

    With ``dim=0`` the norm is per output channel: a Linear weight (out, in) gets g (out, 1) and
    v (out, in); ``dim=None`` takes one norm of the whole tensor (g 0-d). Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# ----- spectral norm ---------------------------------------------------------------------------
class _SpectralNorm(Module):
    """W -> W / sigma(W), sigma the largest singular value of W seen as a matrix (``dim`` first,
    the other dimensions flattened), estimated by power iteration on the buffers ``_u`` and
    ``_v``, which advance ``n_power_iterations`` steps on every computation in training mode.
    A vector is simply divided by its norm."""

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexingError(
                f"[spectral_norm] dimension out of range (expected to be in range of "
                f"[{-ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ArgumentError(
                f"[spectral_norm] expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:  # a vector needs no estimate (see forward)
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = init.normal_(weight_mat.new_empty((h,)))
            v = init.normal_(weight_mat.new_empty((w,)))
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            # start from a reasonable estimate of the singular vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """(d0, ..., d_dim, ...) -> (d_dim, the product of the others)."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place: a replica of the module (DataParallel) sharing the
        # buffers advances the same estimate
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mv(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: a later in-place update must not change what this graph saved (two forwards
        # before one backward, as in a GAN's D(real) - D(fake))
        u = self._u.clone()
        v = self._v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Spectral normalisation (Miyato et al., 2018): ``module.<name>`` becomes W / sigma(W),
    sigma the spectral norm of W as a matrix (``dim`` first, the rest flattened), estimated by
    ``n_power_iterations`` steps of power iteration on each access in training mode, on the
    buffers ``module.parametrizations.<name>[0]._u`` (d_dim,) and ``._v`` (the rest).
    ``dim`` defaults to 1 for transposed convolutions and 0 otherwise. Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(
            f"[spectral_norm] {type(module).__name__} has no parameter or buffer named '{name}'"
        )
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose2d) else 0  # ConvTranspose1d is one too
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
