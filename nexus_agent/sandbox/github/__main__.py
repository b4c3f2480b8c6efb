"""``python -m nexus_agent.sandbox.github [--data-dir D] [--reset] [--http] [--host H] [--port P] [--world FILE]``.

The same command as ``nexus-agent sandbox github`` (:func:`nexus_agent.sandbox.github.app.command`).
"""

from nexus_agent.sandbox.github.app import main

if __name__ == "__main__":
    main()
