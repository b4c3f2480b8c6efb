"""Compiled tool blocks: KV-cache rows computed ahead of time and spliced into a live llama.cpp context.

One module per job: ``format`` (the ``.atb`` layout, its header and a loaded block; docs/atb-format.md),
``fingerprint`` (what a block must match: the model and the running context), ``atb_io`` (writing, reading and the
compatibility check), ``cache`` (loaded blocks in a buddy-allocated arena), ``blob`` (llama.cpp's sequence-state
blob), ``repair/`` (which spliced tokens to re-decode) and ``mode`` (when a prompt splices at all).
"""
