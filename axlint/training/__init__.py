"""The training step that simulate (on fake tensors) and validate (on GPUs) both run: the spec of a run read from
its config (`spec`) and the HF model built and prepared for it (`model`). torch, transformers and peft are
imported inside functions only."""
