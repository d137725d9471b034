"""What a checker says: a status (an enum), a message, the recognised mistake, and how many cases
passed. Displays as a coloured box in a notebook (HTML, escaped) and as plain text elsewhere."""

from __future__ import annotations

import enum
import html
import re
from dataclasses import dataclass


class Status(str, enum.Enum):
    """The kinds of verdict. A str enum, so ``result.status == "passed"`` reads naturally."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


STATUSES = tuple(s.value for s in Status)
_ICONS = {Status.PASSED: "✓", Status.FAILED: "✗", Status.NOT_ATTEMPTED: "…", Status.ERROR: "⚠"}
# Okabe-Ito colours (colour-blind safe); the icon and the word carry the meaning too.
_COLOURS = {
    Status.PASSED: "#009E73",
    Status.FAILED: "#D55E00",
    Status.NOT_ATTEMPTED: "#999999",
    Status.ERROR: "#E69F00",
}

#: The one "not attempted" text, for every checker.
NOT_ATTEMPTED = (
    "Not attempted yet: your function still raises `NotImplementedError`. Replace that line with "
    "your code, run its cell, then run this check again."
)


@dataclass(frozen=True, repr=False)
class CheckResult:
    """What a checker found: ``passed`` (bool), ``status``, ``message``, ``mistake`` (the key of
    the recognised mistake, e.g. "wrong_axis", or None), ``cases_passed`` of ``cases_total``, and
    ``function``: the name of the student's function that was checked (the header shows it; the
    exercise's own name where the function has none, e.g. a lambda)."""

    exercise: str
    status: Status
    message: str
    mistake: str | None = None
    cases_passed: int = 0
    cases_total: int = 0
    function: str = ""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "status", Status(self.status))
        except ValueError:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}") from None

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def __bool__(self) -> bool:
        return self.passed

    @property
    def title(self) -> str:
        return f"{_ICONS[self.status]} {self.function or self.exercise}: {self.status.value}"

    def __str__(self) -> str:
        return f"{self.title}\n{self.message}"

    __repr__ = __str__

    def _blocks(self) -> list[tuple[bool, str]]:
        """The message as (is_code, text) blocks: lines indented by 4 spaces are a code block."""
        blocks: list[tuple[bool, str]] = []
        for line in self.message.split("\n"):
            code = line.startswith("    ")
            if blocks and blocks[-1][0] == code:
                blocks[-1] = (code, blocks[-1][1] + "\n" + line)
            else:
                blocks.append((code, line))
        return blocks

    def _repr_markdown_(self) -> str:
        parts = [f"**{self.title}**", ""]
        for code, text in self._blocks():
            if code:
                parts += ["", text, ""]
            else:
                parts += [line + "  " if line else "" for line in text.split("\n")]
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        colour = _COLOURS[self.status]
        body = []
        for code, text in self._blocks():
            if code:
                body.append(f'<pre style="margin:4px 0 4px 8px">{html.escape(text)}</pre>')
            else:
                escaped = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(text))
                body.append(f'<div style="white-space:pre-wrap">{escaped}</div>')
        return (
            f'<div class="attnviz-check attnviz-{self.status.value.replace(" ", "-")}" '
            f'style="border-left:6px solid {colour};padding:6px 12px;margin:4px 0;'
            f"background:{colour}1a;color:#1a1a1a;font-family:system-ui,sans-serif;"
            f'line-height:140%">'
            f'<div style="font-weight:bold">{html.escape(self.title)}</div>'
            + "".join(body)
            + "</div>"
        )
