"""Nexus Agent: a local agent runtime for LLMs that use many MCP tools."""

__version__ = "0.1.0"
