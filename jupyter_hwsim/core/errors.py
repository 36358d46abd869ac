"""The one error type users see: it names the field, the bad value and what is accepted."""

from __future__ import annotations

import difflib


class HwsimError(ValueError):
    """A refused input. ``str(err)`` is one readable line."""

    def __init__(self, field: str, value, accepted: str, hint: str = ""):
        self.field, self.value, self.accepted, self.hint = field, value, accepted, hint
        msg = f"{field}={value!r} is not accepted: {accepted}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)

    def __reduce__(self):  # survives pickling across worker processes
        return (type(self), (self.field, self.value, self.accepted, self.hint))

    def to_dict(self) -> dict:
        return {
            "field": self.field,
            "value": repr(self.value),
            "accepted": self.accepted,
            "hint": self.hint,
            "message": str(self),
        }


def did_you_mean(name: str, choices) -> str:
    """A 'did you mean' hint for a near miss, or an empty string."""
    close = difflib.get_close_matches(str(name).lower(), list(choices), n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}?" if close else ""
