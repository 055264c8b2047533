"""Numpy kernels: the reference implementation of every op, and competing implementations of the heavy ones."""
