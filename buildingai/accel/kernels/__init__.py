"""Array kernels the op records run on: threaded splitting, row sums, scalar max/min loops,
the flat col2im grid of convolutions, flat max pooling. Plain functions on backend arrays,
no op records (``all_ops`` does not look here)."""
