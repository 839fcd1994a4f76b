"""Saving and restoring: checkpoints (NOTE(bundle-format) in saving/bundle.py)."""
