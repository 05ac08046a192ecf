"""An in-memory API index with ranked search: exact names first, then prefixes, then words in docs."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

DEFAULT_LIMIT = 12
DEFAULT_MAX_CHARS = 6_000
DOC_CHARS = 320
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class ApiEntry:
    name: str  # fully qualified, e.g. "ifcopenshell.api.root.create_entity" or "Autodesk.Revit.DB.Transaction.Commit"
    kind: str  # function | class | method | property | entity | attribute | module | enum
    signature: str = ""
    doc: str = ""

    def render(self) -> str:
        head = f"{self.kind} {self.name}{self.signature}"
        doc = " ".join(self.doc.split())
        if len(doc) > DOC_CHARS:
            doc = doc[:DOC_CHARS].rsplit(" ", 1)[0] + " ..."
        return head + (f"\n    {doc}" if doc else "")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class ApiIndex:
    def __init__(self, entries: list[ApiEntry], label: str):
        self.label = label
        self.entries = entries
        self._names = [e.name.lower() for e in entries]
        self._short = [e.name.rsplit(".", 1)[-1].lower() for e in entries]
        self._docs = [e.doc.lower() for e in entries]
        # One lowercase haystack of every name and doc lets str.find (C speed) pick the candidates.
        rows = [f"{n} {d}" for n, d in zip(self._names, self._docs, strict=True)]
        self._haystack = "\n".join(rows)
        self._starts, offset = [], 0
        for row in rows:
            self._starts.append(offset)
            offset += len(row) + 1

    def __len__(self) -> int:
        return len(self.entries)

    def _score(self, i: int, query: str, words: list[str]) -> int:
        name, short = self._names[i], self._short[i]
        if name == query or name.endswith("." + query):
            return 1000 - len(name) // 8  # exact (qualified) name, shorter first
        if short == query:
            return 900 - len(name) // 8
        if short.startswith(query):
            return 700 - len(short)
        if query in name:
            return 500 - len(name) // 8
        hits_in_name = sum(1 for w in words if w in name)
        if hits_in_name == len(words):
            return 400 + 10 * hits_in_name - len(name) // 16
        hits_in_doc = sum(1 for w in words if w in self._docs[i])
        if hits_in_name + hits_in_doc == len(words):
            return 100 + 20 * hits_in_name + 5 * hits_in_doc
        return 10 * hits_in_name + 2 * hits_in_doc  # some words only: listed after every full match

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> tuple[list[ApiEntry], int]:
        """The best `limit` entries and how many matched in all."""
        query = query.strip().lower()
        words = _words(query)
        if not words:
            return [], 0
        scored = []
        for i in self._candidates(words):
            score = self._score(i, query, words)
            if score:
                scored.append((score, i))
        scored.sort(key=lambda s: (-s[0], self._names[s[1]]))
        return [self.entries[i] for _, i in scored[:limit]], len(scored)

    def _candidates(self, words: list[str]) -> set[int]:
        """Entries whose name or doc mentions at least one query word."""
        found: set[int] = set()
        for word in words:
            at = self._haystack.find(word)
            while at != -1:
                i = bisect.bisect_right(self._starts, at) - 1
                found.add(i)
                # Skip to the next entry: one hit per entry is enough.
                nxt = self._starts[i + 1] if i + 1 < len(self._starts) else len(self._haystack)
                at = self._haystack.find(word, nxt)
        return found

    def answer(self, query: str, limit: int = DEFAULT_LIMIT, max_chars: int = DEFAULT_MAX_CHARS) -> str:
        """The tool result for the model: ranked matches, capped, with a note on what was left out."""
        found, total = self.search(query, limit)
        if not found:
            return f"No match for {query!r} in the {self.label}. Try a class or member name, or fewer words."
        lines, used, shown = [f"{total} match(es) for {query!r} in the {self.label}, best first:"], 0, 0
        for entry in found:
            block = entry.render()
            if used + len(block) > max_chars:
                break
            lines.append(block)
            used += len(block)
            shown += 1
        if shown < total:
            lines.append(f"[Note: {total - shown} more match(es) not shown; ask for an exact name to see one in full.]")
        return "\n".join(lines)
