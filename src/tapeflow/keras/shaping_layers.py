"""Keras layers that pad, crop, upsample and pool along one or two axes: ZeroPadding, Cropping, UpSampling, MaxPooling1D, AveragePooling1D."""

from __future__ import annotations

__all__: list[str] = []
