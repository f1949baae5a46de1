"""Plain-text rendering of injected snapshots and briefs, for agents that escape XML.

Gemini CLI escapes ``<`` and ``>`` in hook context, so the model would read
``&lt;session_knowledge&gt;``; this turns the fenced XML of
``sessions.snapshot.injection_text`` into the same facts as plain sections (``requests:``
then ``- item`` lines), fenced by ``[ctxmode_data kind="..."]`` ... ``[/ctxmode_data]``.
Standard library only (hook path).

Invariant: stored text cannot end (or open) the frame. Every piece of it is put on one line and
any fence word in it, in either form (``[/ctxmode_data]``, ``</ctxmode_data>``, opening ones
too), has its bracket replaced by the full-width one (``［/ctxmode_data］``): the text stays
readable, and the only frame lines are the ones written here.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

#: A fence word with its opening bracket, in the plain and the XML form, any case or spacing.
_FENCE_WORD = re.compile(r"([\[<])(\s*/?\s*ctxmode_data)", re.IGNORECASE)
_FULL_WIDTH = {"[": "\uff3b", "<": "\uff1c"}


def neutral(text: str) -> str:
    """``text`` on one line, unable to open or close a ``[ctxmode_data]`` frame."""
    one = " ".join(text.split())
    if "ctxmode_data" not in one.lower():
        return one
    return _FENCE_WORD.sub(lambda m: _FULL_WIDTH[m.group(1)] + m.group(2), one)


def _one_line(text: str | None) -> str:
    return neutral(text or "")


def _item(element: Element) -> str:
    attrs = " ".join(f"{k}={_one_line(v)}" for k, v in element.attrib.items())
    body = _one_line(element.text)
    if attrs and body:
        return f"{attrs}: {body}"
    return attrs or body


def _lines(root: Element) -> list[str]:
    head = " ".join(f"{k}={_one_line(v)}" for k, v in root.attrib.items())
    out = [f"{root.tag.replace('_', ' ')}: {head}" if head else f"{root.tag.replace('_', ' ')}:"]
    for child in root:
        if len(child):
            out.append(f"{child.tag}:")
            out += [f"- {_item(item)}" for item in child]
        else:
            out.append(f"- {child.tag} {_item(child)}".rstrip())
    return out


def plain_text(fenced: str) -> str:
    """``<ctxmode_data ...>XML</ctxmode_data>`` (and what follows) as plain text; the input
    unchanged when it does not parse."""
    from xml.etree.ElementTree import ParseError, fromstring

    start = fenced.find("<ctxmode_data")
    end = fenced.rfind("</ctxmode_data>")
    if start == -1 or end == -1:
        return fenced
    try:
        fence = fromstring(fenced[start : end + len("</ctxmode_data>")])
    except ParseError:
        return fenced
    attrs = " ".join(f'{k}="{_one_line(v)}"' for k, v in fence.attrib.items())
    lines = [f"[ctxmode_data {attrs}]"]
    for root in fence:
        lines += _lines(root)
    lines.append("[/ctxmode_data]")
    tail = fenced[end + len("</ctxmode_data>") :].strip()
    return "\n".join(lines) + ("\n" + tail if tail else "")
