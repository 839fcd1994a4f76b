"""tf.train: training checkpoints (saving/checkpoint.py), by TensorFlow's names."""

from .saving.checkpoint import (Checkpoint, CheckpointManager, latest_checkpoint, list_variables,
                                load_variable)

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "list_variables",
           "load_variable"]
