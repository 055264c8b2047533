"""Numpy formulas for IR ops whose meaning is more than one numpy call, written from the op docs."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def channel(vector: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast along `axis`."""
    shape = [1] * ndim
    shape[axis] = -1
    return vector.reshape(shape)


def batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-5, center=True, scale=True):
    ndim = x.ndim
    out = (x - channel(mean, axis, ndim)) / np.sqrt(channel(var, axis, ndim) + epsilon)
    out = out * channel(gamma, axis, ndim) if scale else out
    out = out + channel(beta, axis, ndim) if center else out
    return out, mean, var


def layer_norm(x, gamma, beta, axis=-1, epsilon=1e-5):
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    axis = axis % x.ndim
    return (x - mean) / np.sqrt(var + epsilon) * channel(gamma, axis, x.ndim) + channel(beta, axis, x.ndim)


def conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW / OIHW convolution; padding is (top, left, bottom, right)."""
    top, left, bottom, right = padding
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, h, wd = xp.shape
    out_c, group_c, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, out_c, oh, ow))
    per_group = out_c // groups
    for g in range(groups):
        xs, ws = xp[:, g * group_c:(g + 1) * group_c], w[g * per_group:(g + 1) * per_group]
        for i in range(kh):
            for j in range(kw):
                r, c = i * dilation[0], j * dilation[1]
                patch = xs[:, :, r:r + strides[0] * (oh - 1) + 1:strides[0], c:c + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * per_group:(g + 1) * per_group] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out.astype(x.dtype)


def pool2d(x, kind, pool_size, strides=(1, 1), padding=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False):
    """NCHW max/avg pooling; with ceil_mode a window that would start in the end padding is dropped."""
    top, left, bottom, right = padding
    h, w = x.shape[2:]

    def out_len(size, k, s, before, after):
        room = size + before + after - k
        n = (room + s - 1) // s + 1 if ceil_mode else room // s + 1
        return n - 1 if ceil_mode and (n - 1) * s >= size + before else n

    oh, ow = (out_len(h, pool_size[0], strides[0], top, bottom), out_len(w, pool_size[1], strides[1], left, right))
    out = np.zeros(x.shape[:2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - top, j * strides[1] - left
            r1, c1 = r0 + pool_size[0], c0 + pool_size[1]
            window = x[:, :, max(r0, 0):min(r1, h), max(c0, 0):min(c1, w)]
            if kind == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                padded_area = (min(r1, h + bottom) - r0) * (min(c1, w + right) - c0)
                count = padded_area if count_include_pad else window.shape[2] * window.shape[3]
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


def lrn(x, size, axis=1, bias=2.0, alpha=1e-4, beta=0.75):
    """x / (bias + alpha / size * sum of x^2 over a window of `size` channels centred on each) ^ beta."""
    moved = np.moveaxis(x, axis, 0)
    squares = np.pad(moved ** 2, [((size - 1) // 2, size // 2)] + [(0, 0)] * (x.ndim - 1))
    window_sum = sum(squares[i:i + moved.shape[0]] for i in range(size))
    return np.moveaxis(moved / (bias + alpha / size * window_sum) ** beta, 0, axis)


def arg_reduce(x, fn, axes, keepdims=False):
    """argmax/argmin over several axes: the row-major index within the reduced block, as int32."""
    kept = [a for a in range(x.ndim) if a not in axes]
    merged = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
    index = fn(merged, axis=-1)
    return (np.expand_dims(index, tuple(axes)) if keepdims else index).astype("int32")
