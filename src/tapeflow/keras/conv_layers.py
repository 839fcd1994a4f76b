"""Keras convolution layers beyond Conv2D: Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D."""

from __future__ import annotations

__all__: list[str] = []
