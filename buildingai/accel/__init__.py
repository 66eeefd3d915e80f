"""Acceleration: faster kernels registered beside the op records they speed up."""
