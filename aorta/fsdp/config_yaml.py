"""YAML as an FSDP configuration reads it: no aliases, and the values smoke sizes replace (pure: no torch).

An alias (``*name``) lets a few hundred bytes expand to gigabytes (the "billion laughs": a 343-byte
``--aorta-config`` gave a 4.3 MB error line, or ``MemoryError`` after 63 s; issue 38, case 18). A
configuration has no use for them: an anchor or alias is refused at once, naming where it is.

At smoke size (a CPU run, or ``--aorta-size smoke``) ``config/smoke.yaml`` is merged over the file the user gave:
``smoke_replaced`` names each value of theirs that it replaces, for a note (case 19: ``d_model: 1e9`` was
recorded as 32 without a word).
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml


class NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses anchors and aliases before expanding anything."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            mark = event.start_mark
            raise yaml.YAMLError(
                f"line {mark.line + 1}, column {mark.column + 1}: an anchor or alias (&name, *name); "
                "a configuration spells every value out"
            )
        return super().compose_node(parent, index)


def load(text: str) -> object:
    """``text`` as YAML, aliases refused (``yaml.YAMLError`` says where)."""
    return yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader


def smoke_replaced(data: Mapping, smoke: Mapping, prefix: str = "") -> list[str]:
    """``key.path: theirs -> smoke's`` for each value of ``data`` that ``smoke`` replaces with another."""
    out = []
    for key, top in smoke.items():
        if key not in data:
            continue
        name = f"{prefix}{key}"
        mine = data[key]
        if isinstance(top, Mapping) and isinstance(mine, Mapping):
            out += smoke_replaced(mine, top, f"{name}.")
        elif mine != top:
            out.append(f"{name}: {mine!r} -> {top!r}")
    return out
