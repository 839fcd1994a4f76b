"""Keras layers that add noise or drop features in training: GaussianNoise, GaussianDropout, SpatialDropout1D/2D; and PReLU."""

from __future__ import annotations

__all__: list[str] = []
