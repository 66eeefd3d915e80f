"""The functional layer: every layer's math as a plain function of tensors, composed from the
primitives (``import buildingai.nn.functional as F``)."""

from ...functions.activation import *
from ...functions.elementwise import gelu, sigmoid, softplus, tanh
from ...functions.index import one_hot
from ...functions.linalg import linear
from ...functions.nn import dropout
from .activation import *  # the activations that take inplace=, after their plain forms
from .alpha_dropout import *
from .attention import *
from .bilinear import *
from .channel_dropout import *
from .channel_shuffle import *
from .conv import *
from .conv3d import *
from .ctc import *
from .distance import *
from .embedding_bag import *
from .embedding_lookup import *
from .fold import *
from .grid_sampling import *
from .gumbel import *
from .instance_norm import *
from .interpolate import *
from .loss import *
from .lp_pool import *
from .margin_loss import *
from .norm import *
from .padding import *
from .pixel_shuffle import *
from .pool import *
from .pool3d import *
from .response_norm import *
from .rnn import *
from .shrink import *
from .softmax import *
from .unpool import *
