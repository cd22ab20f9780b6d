"""axlint: lint Axolotl + DeepSpeed configs and predict per-GPU peak memory."""
__version__ = "0.1.0"
