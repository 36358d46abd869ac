"""The one error type users see: it names the field, the bad value and what is accepted."""

from __future__ import annotations

import difflib


class HwsimError(ValueError):
    """A refused input. ``str(err)`` is one readable line."""

    def __init__(self, field: str, value, accepted: str, hint: str = ""):
        self.field, self.value, self.accepted, self.hint = field, value, accepted, hint
        # the field as sent may be any text (an unknown key): quoted when it is empty or not plain printable text
        name = field if isinstance(field, str) and field.isprintable() and 0 < len(field) <= 80 else show(field)
        msg = f"{name}={show(value)} is not accepted: {accepted}"
        if hint:
            msg += f" ({hint})"
        msg = " ".join(msg.splitlines())  # one line, whatever text the accepted words quote
        # args rebuild the error (SimPy re-raises a failed process's error as type(e)(*e.args))
        super().__init__(field, value, accepted, hint)
        self.message = msg

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # survives pickling across worker processes
        return (type(self), (self.field, self.value, self.accepted, self.hint))

    def to_dict(self) -> dict:
        return {
            "field": self.field,
            "value": show(self.value),
            "accepted": self.accepted,
            "hint": self.hint,
            "message": str(self),
        }


def show(value, limit: int = 80) -> str:
    """repr(value) cut to one short line; an integer too long to print is named by its size."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        text = f"<an integer of {value.bit_length()} bits>" if isinstance(value, int) else f"<a {type(value).__name__}>"
    except RecursionError:
        text = f"<a {type(value).__name__} nested too deeply to print>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def did_you_mean(name: str, choices) -> str:
    """A 'did you mean' hint for a near miss, or an empty string."""
    close = difflib.get_close_matches(str(name).lower(), list(choices), n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}?" if close else ""
