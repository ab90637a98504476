"""Quantised checkpoints: one record per scheme (:mod:`.schemes`), the reader of a config's ``quantization_config``
(:mod:`.config`) and the stored bytes of a model under a scheme (:mod:`.stored`).

A scheme record says, for one weight matrix of shape (out, in), the tensors the quantiser writes (name suffix, shape
as a formula in out, in and the scheme's sizes, dtype), which modules its own code leaves in the checkpoint's dtype,
and the source file it was transcribed from. Nothing here imports torch or the quantisers' libraries.
"""
