"""The padded forms in which ONNX Runtime's NCHWc kernels run convolutions whose channels are not whole blocks."""

from __future__ import annotations

import pytest

from ir.op.nchwc import PaddedConv, padded_channels, padded_conv


@pytest.mark.parametrize("channels, read, padded", [(16, True, 16), (116, True, 120), (20, True, 24), (4, True, 8),
                                                    (58, True, None), (58, False, 64), (6, True, None),
                                                    (0, True, None), (0, False, None)])
def test_channels_pad_to_whole_blocks_where_reorder_input_can_pad_them(channels, read, padded):
    assert padded_channels(channels, 8, read) == padded


@pytest.mark.parametrize("conv, form", [
    ((116, 116, 1), PaddedConv(120, 120, 1, "NCHW8c", "OIHW8i8o")),      # ShuffleNet-v2's 1x1 layers
    ((116, 116, 116), PaddedConv(120, 120, 120, "NCHW8c", "OIHW1i8o")),  # and its depthwise ones
    ((24, 58, 1), PaddedConv(24, 64, 1, "NCHW8c", "OIHW8i8o")),          # only the output padded
    ((3, 20, 1), PaddedConv(3, 24, 1, "NCHW", "OIHW8o")),                # a first layer reads NCHW as it is
    ((480, 20, 1), PaddedConv(480, 24, 1, "NCHW8c", "OIHW8i8o")),        # EfficientNet's squeeze and excitation
    ((20, 480, 1), PaddedConv(24, 480, 1, "NCHW8c", "OIHW8i8o")),
    ((32, 64, 2), PaddedConv(32, 64, 2, "NCHW8c", "OIHW8i8o")),          # grouped, whole blocks
    ((58, 58, 1), None), ((58, 58, 58), None),                           # ReorderInput cannot pad 58
    ((32, 60, 2), None),                                                 # grouped ones do not pad
    ((12, 12, 5), None),                                                 # channels not a multiple of groups
])
def test_the_padded_form_of_a_convolution(conv, form):
    assert padded_conv(*conv, 8) == form
