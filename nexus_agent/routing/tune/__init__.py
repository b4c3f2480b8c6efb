"""Fine-tuning the router's MiniLM on data generated from tool definitions only (never from ``eval/``).

* :mod:`.dataset` builds the training set (tool document + example requests per tool) in the project venv;
* :mod:`.train_biencoder` is a standalone torch script, run in a separate build venv, that trains and exports
  the int8 ONNX model the ``minilm-tools`` embedder loads;
* :mod:`.build` creates that build venv and runs the script (``nexus-agent models fetch minilm-tools``).
"""
