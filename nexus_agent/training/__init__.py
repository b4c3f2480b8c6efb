"""Offline builders: what the project makes once and ships, never on a user's first run.

* :mod:`.synth` generates the synthetic example requests per tool with the local LLM;
* :mod:`.dataset` turns them (and the tool definitions) into the embedder's fine-tuning set;
* :mod:`.minilm_tools` trains the routing embedder in a pinned torch venv (:mod:`.train_biencoder`) and writes
  the shipped artifact (``nexus_agent/models/artifacts/minilm-tools``): ``nexus-agent models rebuild minilm-tools``.

This package sits above the runtime (it may import ``routing``); nothing in the runtime imports it.
"""
