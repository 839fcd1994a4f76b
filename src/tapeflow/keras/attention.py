"""Keras attention layers: Attention, AdditiveAttention, MultiHeadAttention."""

from __future__ import annotations

__all__: list[str] = []
