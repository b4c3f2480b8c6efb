"""The splice modes: when a prompt's stable lines come from compiled blocks instead of a prefill."""

from __future__ import annotations

from enum import StrEnum


class SpliceMode(StrEnum):
    """The one list of splice modes (``--splice``, ``AgentConfig.splice`` and ``RouterOptions.splice`` derive from
    it); what each does is ``engine.blocks.SpliceConfig``'s docstring."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"
