"""Offline, real local MCP servers that stand in for hosted ones (``nexus-agent sandbox ...``)."""
