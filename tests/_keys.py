"""Key types shared by the tests."""

from __future__ import annotations


class Folded(str):
    """A str subclass with its own __eq__/__hash__: case-insensitive, equal to plain str too."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, str):
            return self.casefold() == other.casefold()
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self.casefold())

    def __repr__(self):
        return f"Folded({str.__repr__(self)})"
