"""Verified usage examples of a server's tools: a request in plain words with the call, or calls, that do it.

``bank.py`` reads and checks example files (the shipped banks under ``data/``, a user's ``"examples": FILE``, a
tool's ``_meta``); the runtime's use of them (routing keys, the decision, argument writing, repair) lives in the
layers above, which only read :class:`Example` objects.
"""

from nexus_agent.examples.bank import (
    Example,
    ExampleCall,
    ExamplesError,
    load_examples,
    shipped_bank_files,
)
from nexus_agent.examples.keys import ArgKeys
from nexus_agent.examples.sets import ExampleSet, Usage, gather

__all__ = [
    "ArgKeys",
    "Example",
    "ExampleCall",
    "ExampleSet",
    "ExamplesError",
    "Usage",
    "gather",
    "load_examples",
    "shipped_bank_files",
]
