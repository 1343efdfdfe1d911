"""Stream the XML that `xctrace export --xpath` writes, one resolved table row at a time.

The export is ``<trace-query-result>`` holding one ``<node>`` per exported table; a node has
a ``<schema name=…>`` of ``<col>``s (``mnemonic``, ``name``, ``engineering-type``) and then
``<row>``s whose children are one cell per column, in column order. A cell's tag is its
column's engineering type; ``<sentinel/>`` is an empty cell. Xcode interns values: the
first occurrence of a value carries ``id="N"``, later ones are an empty ``<tag ref="N"/>``,
at any depth (a ``<thread>``'s ``<process>``, a ``<process>``'s ``<pid>``), across rows
and across the nodes of one document.

expat is driven directly (not ElementTree) for two reasons: a document type declaration is
refused before any entity is declared, so neither entity expansion (the "billion laughs")
nor external entities can happen; and errors carry the line the user can open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from xml.parsers import expat

from ingest._io import ByteStream
from ingest.errors import ParseError

MAX_VALUE_CHARS = 64 * 1024  # one attribute or one cell's text
MAX_DEPTH = 32
MAX_CELLS = 512  # cells of one row, or elements under one cell
ROOT = "trace-query-result"


@dataclass(slots=True)
class Cell:
    """One element of a row (a cell, or an element inside one), refs already resolved."""

    tag: str
    text: str = ""
    fmt: str = ""
    children: list[Cell] = field(default_factory=list)

    def child(self, tag: str) -> Cell | None:
        """The first direct child with `tag`, if any."""
        return next((c for c in self.children if c.tag == tag), None)


@dataclass(slots=True)
class Column:
    """A schema column: `mnemonic` names it, `kind` (engineering type) is its cells' tag."""

    mnemonic: str
    name: str = ""
    kind: str = ""


@dataclass(slots=True)
class Table:
    """One ``<node>``: the schema it holds and its columns."""

    schema: str
    columns: list[Column]
    xpath: str = ""
    rows: int = 0


@dataclass(slots=True)
class Row:
    """A complete row: its table, its cells (one per column) and where it started."""

    table: Table
    cells: list[Cell]
    line: int
    index: int


class ExportReader:
    """Feeds the file to expat and turns its callbacks into `Row`s.

    `accept(schema, line)` is called when a node's schema name is read; it raises to
    refuse the table.
    """

    def __init__(self, source: str, accept: Callable[[str, int], None]) -> None:
        self.source = source
        self.accept = accept
        self.parser = expat.ParserCreate()
        self.parser.buffer_text = True
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._text
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._entity
        self.ids: dict[str, Cell] = {}
        self.done: list[Row] = []
        self.tables: list[Table] = []
        self._path: list[str] = []
        self._cells: list[Cell] = []  # open elements inside the current row, outermost first
        self._row: list[Cell] | None = None
        self._row_line = 0
        self._ids_open: list[str | None] = []
        self._ref_depth = 0  # > 0 while inside an element written as a ref (must be empty)
        self._columns: list[Column] = []
        self._column: Column | None = None
        self._field = ""
        self._schema = ""
        self._xpath = ""
        self._table: Table | None = None
        self._seen_root = False

    def error(self, message: str) -> ParseError:
        """A `ParseError` located at the parser's current line."""
        line = self.parser.CurrentLineNumber
        return ParseError(message, source=self.source, location=f"line {line}")

    def rows(self, stream: ByteStream) -> Iterator[Row]:
        """Every row of every node, in file order.

        Raises:
            ParseError: malformed or truncated XML, a DTD, an unknown ref, a value or
                nesting past its limit, a node without a schema, a refused schema.
        """
        for chunk in stream.chunks():
            self._feed(chunk, final=False)
            yield from self._drain()
        self._feed(b"", final=True)
        yield from self._drain()
        if not self._seen_root:
            raise ParseError(f"no <{ROOT}> element", source=self.source)

    def _drain(self) -> Iterator[Row]:
        done, self.done = self.done, []
        yield from done

    def _feed(self, data: bytes, *, final: bool) -> None:
        try:
            self.parser.Parse(data, final)
        except expat.ExpatError as e:
            message = expat.ErrorString(e.code)
            if final:  # only the end of input is left to check at this call
                message = f"the XML ends early (truncated export?): {message}"
            raise ParseError(
                f"malformed XML: {message}",
                source=self.source,
                location=f"line {e.lineno}, column {e.offset}",
            ) from e

    # expat callbacks -----------------------------------------------------------------

    def _doctype(self, name: str, *_: object) -> None:
        raise self.error(
            f"a document type declaration (<!DOCTYPE {name}>) is not allowed: "
            "xctrace exports have none, and entities are refused"
        )

    def _entity(self, name: str, *_: object) -> None:
        raise self.error(f"an entity declaration (<!ENTITY {name}>) is not allowed")

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        # Cells first: they are nearly every element of an export, so their path is short.
        if self._row is not None:
            for key, value in attrs.items():
                if len(value) > MAX_VALUE_CHARS:
                    raise self._too_long(key, tag, value)
            self._cell_start(tag, attrs)
            return
        for key, value in attrs.items():
            if len(value) > MAX_VALUE_CHARS:
                raise self._too_long(key, tag, value)
        depth = len(self._path)
        self._path.append(tag)
        self._field = ""
        if depth == 0:
            if tag == "trace-toc":
                raise self.error(
                    "this is the table of contents (xctrace export --toc); export the "
                    "tables with --xpath instead (see the README)"
                )
            if tag != ROOT:
                raise self.error(f"the root element is <{tag}>, not <{ROOT}>")
            self._seen_root = True
        elif depth >= MAX_DEPTH:
            raise self.error(f"elements nest deeper than {MAX_DEPTH} levels")
        elif depth == 1 and tag == "node":
            self._xpath, self._schema = attrs.get("xpath", ""), ""
            self._columns, self._table = [], None
        elif depth == 2 and tag == "schema" and self._path[1] == "node":
            self._schema = attrs.get("name", "")
            self.accept(self._schema, self.parser.CurrentLineNumber)
        elif depth == 3 and tag == "col" and self._path[2] == "schema":
            self._column = Column("")
        elif depth == 2 and tag == "row" and self._path[1] == "node":
            if self._table is None:
                raise self.error("a <row> before its node's <schema>")
            self._row, self._row_line = [], self.parser.CurrentLineNumber

    def _too_long(self, key: str, tag: str, value: str) -> ParseError:
        return self.error(
            f"attribute {key} of <{tag}> is {len(value):,} characters (limit {MAX_VALUE_CHARS:,})"
        )

    def _cell_start(self, tag: str, attrs: dict[str, str]) -> None:
        if self._ref_depth:
            raise self.error(f"<{tag}> inside an element written as a ref")
        cells = self._cells
        if len(cells) >= MAX_DEPTH:
            raise self.error(f"elements nest deeper than {MAX_DEPTH} levels")
        siblings = cells[-1].children if cells else self._row
        assert siblings is not None
        if len(siblings) >= MAX_CELLS:
            raise self.error(f"more than {MAX_CELLS} elements in one row or cell")
        self._field = ""
        ref = attrs.get("ref")
        if ref is not None:
            target = self.ids.get(ref)
            if target is None:
                raise self.error(
                    f'<{tag} ref="{ref}"> refers to id {ref}, which no earlier element defines'
                )
            siblings.append(target)
            self._ref_depth = 1
            cells.append(target)
            self._ids_open.append(None)
            return
        cell = Cell(tag, "", attrs.get("fmt", ""), [])
        siblings.append(cell)
        cells.append(cell)
        self._ids_open.append(attrs.get("id"))

    def _text(self, data: str) -> None:
        if self._ref_depth:
            if data.strip():
                raise self.error("text inside an element written as a ref")
            return
        self._field += data
        if len(self._field) > MAX_VALUE_CHARS:
            raise self.error(f"an element's text is over {MAX_VALUE_CHARS:,} characters")

    def _end(self, tag: str) -> None:
        cells = self._cells
        if cells:
            cell = cells.pop()
            key = self._ids_open.pop()
            text, self._field = self._field, ""
            if self._ref_depth:
                self._ref_depth = 0
                return
            cell.text = text.strip()
            if key is not None:
                if key in self.ids:
                    raise self.error(f'id "{key}" is defined twice')
                self.ids[key] = cell
            return
        depth = len(self._path) - 1
        self._path.pop()
        text, self._field = self._field.strip(), ""
        if self._row is not None:
            self._finish_row()  # the only element left open in a row is the row
        elif self._column is not None:
            if tag == "col":
                if not self._column.mnemonic:
                    raise self.error("a <col> without a <mnemonic>")
                self._columns.append(self._column)
                self._column = None
            elif tag in ("mnemonic", "name", "engineering-type"):
                setattr(self._column, "kind" if tag == "engineering-type" else tag, text)
        elif depth == 2 and tag == "schema":
            if not self._columns:
                raise self.error(f"schema {self._schema!r} declares no columns")
            self._table = Table(self._schema, self._columns, self._xpath)
            self.tables.append(self._table)
        elif depth == 1 and tag == "node" and self._table is None:
            raise self.error("a <node> without a <schema>")

    def _finish_row(self) -> None:
        table, cells = self._table, self._row
        assert table is not None and cells is not None
        self._row = None
        if len(cells) != len(table.columns):
            raise ParseError(
                f"{table.schema} row {table.rows + 1} has {len(cells)} cells for "
                f"{len(table.columns)} columns",
                source=self.source,
                location=f"line {self._row_line}",
            )
        self.done.append(Row(table, cells, self._row_line, table.rows))
        table.rows += 1
