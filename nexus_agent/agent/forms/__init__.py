"""Value forms: whether a conversation states an argument value in another form than the value's own spelling.

Argument writing drops optional values the conversation does not support (``agent/args.py: drop_ungrounded``), so
that placeholders (``your_username``) and defaults nobody asked for (``page: 1``) do not reach a call. A value the
request gives in another form is supported too: "3rd of June 2025" gives ``2025-06-03``, "ten" gives ``10``,
"two hours" gives ``120`` for a parameter in minutes, "unsolved" gives ``open``, "just show me a preview" gives
``dryRun: true``. One module per form, each a
:data:`Form`, all listed in :data:`FORMS`; :func:`stated` asks them in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nexus_agent.agent.forms import dates, enums, flags, numbers, units
from nexus_agent.agent.forms.base import Context

Form = Callable[[Any, Mapping[str, Any], str, Context], bool]
"""``form(value, prop, name, ctx)``: whether ``ctx.text`` states ``value`` of parameter ``name`` (schema ``prop``)."""

FORMS: dict[str, Form] = {
    "date": dates.stated,
    "number": numbers.stated,
    "unit": units.stated,
    "enum": enums.stated,
    "flag": flags.stated,
}


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    """Whether some form says ``ctx.text`` states ``value`` (the literal spelling is checked by the caller)."""
    return any(form(value, prop, name, ctx) for form in FORMS.values())


__all__ = ["FORMS", "Context", "Form", "stated"]
