"""What comes after a vision encoder: ``AdaptiveAvgPooler`` (features to one vector per image),
``DenseClassifier`` (vector to class scores), and ``image_classifier`` which joins the four parts
(preprocessor, encoder, pooler, classifier) into one ``Sequential``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ..activation import GELU, ReLU
from ..containers import Identity, Sequential
from ..dropout import Dropout
from ..linear import Linear
from ..module import Module

_ACTIVATIONS = {"relu": ReLU, "gelu": GELU}


class AdaptiveAvgPooler(Module):
    """One feature vector per image, from either kind of encoder output.

    - conv feature maps (N, C, H, W) -> (N, C): the mean over all positions (global average
      pooling, as ``AdaptiveAvgPool2d(1)`` then flatten);
    - token sequences (N, T, D) -> (N, D): the mean over the tokens, or with
      ``class_token=True`` the first token (the class token of a ``VisionTransformer`` built with
      ``class_token=True``).

    A feature map has no class token, so ``class_token`` does not change how one is pooled: the
    same pooler serves a ResNet and a ViT. The rank decides the reading: a 3-D input is always
    (N, T, D) tokens.
    """

    def __init__(self, class_token: bool = False) -> None:
        super().__init__()
        self.class_token = class_token

    def forward(self, features: Tensor) -> Tensor:
        if features.ndim == 4:
            return features.mean(axis=(2, 3))  # (N, C)
        if features.ndim == 3:
            if self.class_token:
                if features.shape[1] == 0:
                    raise ShapeError(
                        f"[AdaptiveAvgPooler] class_token=True needs at least one token, got "
                        f"shape {tuple(features.shape)}"
                    )
                return features[:, 0]  # (N, D)
            return features.mean(axis=1)  # (N, D)
        raise ShapeError(
            f"[AdaptiveAvgPooler] expected conv features (N, C, H, W) or tokens (N, T, D), got "
            f"shape {tuple(features.shape)}",
            help="features already pooled to (N, D) go straight to the classifier",
        )

    def extra_repr(self) -> str:
        return "class_token=True" if self.class_token else ""


class DenseClassifier(Module):
    """Class scores from pooled features: x (*, in_features) -> logits (*, num_classes).

    With ``hidden`` (an int or a list of ints) the features first pass through one
    ``Linear -> activation`` per hidden width (``mlp``); ``fc`` then gives the logits.
    ``dropout`` is applied to the input of every Linear layer, in training only.

    ``in_features`` may be given (the encoder's ``out_channels``) or left out: then the layers
    are created on the first call, sized from the features they receive, so the same classifier
    follows a ResNet or a Vision Transformer encoder unchanged. As with PyTorch's lazy modules,
    run one batch through the model before building the optimizer (the parameters do not exist
    before that call, and ``parameters()`` is empty). The last layer is named ``fc``, as in
    torchvision's ResNet, so the ``fc.*`` entries of a torchvision state dict load into
    ``DenseClassifier(1000, in_features=512)`` directly.
    """

    def __init__(
        self,
        num_classes: int,
        hidden: int | Sequence[int] | None = None,
        dropout: float = 0.0,
        *,
        in_features: int | None = None,
        activation: str = "relu",
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        hidden_sizes = () if hidden is None else (hidden,) if isinstance(hidden, int) else hidden
        hidden_sizes = tuple(hidden_sizes)
        for name, value in [("num_classes", num_classes), ("in_features", in_features)]:
            if value is None and name == "in_features":
                continue
            if not isinstance(value, int) or value < 1:
                raise ArgumentError(
                    f"[DenseClassifier] {name} must be a positive int, got {value!r}",
                    help="in_features is the encoder's out_channels (or leave it out to size "
                    "the classifier on its first call)",
                )
        if not all(isinstance(h, int) and h >= 1 for h in hidden_sizes):
            raise ArgumentError(
                f"[DenseClassifier] hidden must be None, a positive int or a list of them, got "
                f"{hidden!r}"
            )
        if activation not in _ACTIVATIONS:
            raise ArgumentError(
                f"[DenseClassifier] activation must be 'relu' or 'gelu', got {activation!r}"
            )
        self.num_classes = num_classes
        self.in_features = in_features
        self.hidden_sizes = hidden_sizes
        self._build_options = (dropout, activation, {"dtype": dtype, "device": device})
        self.dropout = Dropout(dropout)
        if in_features is not None:
            self._build(in_features)

    def _build(self, in_features: int) -> None:
        """Create ``mlp`` and ``fc`` for features of width ``in_features``."""
        dropout, activation, options = self._build_options
        layers = []
        width = in_features
        for size in self.hidden_sizes:
            layers += [Dropout(dropout), Linear(width, size, **options), _ACTIVATIONS[activation]()]
            width = size
        self.in_features = in_features
        self.mlp = Sequential(*layers) if layers else Identity()
        self.fc = Linear(width, self.num_classes, **options)
        # layers built on the first call follow this module's mode (eval() may have come first)
        self.mlp.train(self.training)
        self.fc.train(self.training)

    def forward(self, features: Tensor) -> Tensor:
        if self.in_features is None and features.ndim >= 1:
            self._build(features.shape[-1])  # first call of a lazily sized classifier
        if features.ndim == 0 or features.shape[-1] != self.in_features:
            hint = (
                "pool the encoder's output first (AdaptiveAvgPooler)"
                if features.ndim in (3, 4)
                else "build the classifier with in_features=encoder.out_channels"
            )
            raise ShapeError(
                f"[DenseClassifier] expected features (N, {self.in_features}), got shape "
                f"{tuple(features.shape)}",
                help=hint,
            )
        return self.fc(self.dropout(self.mlp(features)))  # (*, num_classes)

    def extra_repr(self) -> str:
        size = "lazy" if self.in_features is None else self.in_features
        text = f"in_features={size}, num_classes={self.num_classes}"
        if self.hidden_sizes:
            text += f", hidden={list(self.hidden_sizes)}"
        return text


def image_classifier(
    encoder: Module,
    num_classes: int,
    *,
    preprocessor: Module | None = None,
    pooler: Module | None = None,
    hidden: int | Sequence[int] | None = None,
    dropout: float = 0.0,
) -> Sequential:
    """``Sequential(preprocess, encoder, pool, classifier)``: images -> logits (N, num_classes).

    The parts keep their names (``model.encoder``, ``model.classifier``...), so any one of them
    can be replaced afterwards (``model.encoder = VisionTransformer(...)``) as long as the new
    encoder has the same ``out_channels``. ``preprocessor`` defaults to ``Identity()`` (the
    images are fed as given), ``pooler`` to ``AdaptiveAvgPooler()``; the classifier is a
    ``DenseClassifier`` sized from ``encoder.out_channels``.
    """
    out_channels = getattr(encoder, "out_channels", None)
    if not isinstance(out_channels, int):
        raise ArgumentError(
            f"[image_classifier] the encoder ({type(encoder).__name__}) has no integer "
            "out_channels attribute, so the classifier cannot be sized",
            help="set encoder.out_channels to the feature size the pooler produces",
        )
    classifier = DenseClassifier(num_classes, hidden, dropout, in_features=out_channels)
    return Sequential(
        OrderedDict(
            [
                ("preprocess", Identity() if preprocessor is None else preprocessor),
                ("encoder", encoder),
                ("pool", AdaptiveAvgPooler() if pooler is None else pooler),
                ("classifier", classifier),
            ]
        )
    )


__all__ = ["AdaptiveAvgPooler", "DenseClassifier", "image_classifier"]
