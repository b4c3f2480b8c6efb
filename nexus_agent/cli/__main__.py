"""``python -m nexus_agent.cli`` (same as the ``nexus-agent`` console script)."""

from nexus_agent.cli import main

main()
