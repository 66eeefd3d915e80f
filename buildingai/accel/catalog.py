"""Every module that registers kernels, imported once so that their kernels are known."""
