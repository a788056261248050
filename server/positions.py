"""Positions in the client's documents, converted at C speed.

pygls converts an LSP position (a line and a character counted in the client's code units, UTF-16
by default) to a Python index by walking the line one character at a time in Python. On a line of
tens of megabytes (a 20 MB document of one line, opened and then changed) every conversion takes
seconds on the event loop, and a didChange with a few positions stops the server from reading its
input at all. These conversions give the same answers by encoding the line once (C speed): ASCII
lines need no conversion, others are measured by their encoded length.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

_WIDTH = {types.PositionEncodingKind.Utf16: ("utf-16-le", 2), types.PositionEncodingKind.Utf8: ("utf-8", 1),
          types.PositionEncodingKind.Utf32: ("utf-32-le", 4)}


class FastPositionCodec(PositionCodec):
    """pygls' PositionCodec with the per-character Python loops replaced (same results)."""

    def _units(self, text: str) -> int:
        if text.isascii():
            return len(text)
        codec, width = _WIDTH.get(self.encoding, _WIDTH[types.PositionEncodingKind.Utf16])
        return len(text.encode(codec, "surrogatepass")) // width

    def client_num_units(self, string: str) -> int:
        return self._units(string)

    def position_from_client_units(self, lines: Sequence[str], position: types.Position) -> ServerTextPosition:
        if len(lines) == 0:
            return ServerTextPosition(0, 0)
        if position.line >= len(lines):
            return ServerTextPosition(len(lines) - 1, self._units(lines[-1]))
        line = lines[position.line].replace("\r\n", "\n")
        total = self._units(line)
        if total == 0:
            return ServerTextPosition(position.line, 0)
        character = min(position.character, total - 1) if position.character > total else position.character
        if line.isascii():
            return ServerTextPosition(position.line, min(character, len(line)))
        codec, width = _WIDTH.get(self.encoding, _WIDTH[types.PositionEncodingKind.Utf16])
        prefix = line.encode(codec, "surrogatepass")[: character * width]
        index = len(prefix.decode(codec, "ignore"))
        if len(prefix.decode(codec, "ignore").encode(codec, "surrogatepass")) < len(prefix):
            index += 1  # a position inside a character counts that character, as pygls does
        return ServerTextPosition(position.line, min(index, len(line)))

    def position_to_client_units(self, lines: Sequence[str], position) -> types.Position:
        try:
            return types.Position(line=position.line, character=self._units(lines[position.line][: position.character]))
        except IndexError:
            return types.Position(line=len(lines), character=0)


def speed_up(workspace) -> None:
    """Give a pygls Workspace (and the documents it opens from now on) the fast codec."""
    codec = getattr(workspace, "_position_codec", None)
    if codec is not None and not isinstance(codec, FastPositionCodec):
        workspace._position_codec = FastPositionCodec(codec.encoding)
