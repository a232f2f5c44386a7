"""Law Documents -> one Document per article, disposition, annex and preamble, with article keys and heading paths."""

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.access import owner_key
from components.legal.ids import ADCT_PREFIX, APPROVAL_PREFIX, IN_FORCE, PREAMBLE, REPEALED, repeated_key
from components.legal.legal_text import (
    BR_PROVISION_MARKER,
    LATIN_SUFFIXES,
    fold_accents,
    normalize_article_key,
    repealed_provision,
)

logger = logging.getLogger(__name__)

DISPOSITION_GROUPS: Final[dict[str, str]] = {
    "adicional": "Disposiciones adicionales",
    "transitoria": "Disposiciones transitorias",
    "derogatoria": "Disposiciones derogatorias",
    "final": "Disposiciones finales",
}

_MD_HEADING_RE: Final[re.Pattern[str]] = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
# "Artículo 38. Vacaciones anuales.", "Artículo 1", "Artículos 93 a 97.", "Artículo único. Aprobación ..."
_MD_ARTICLE_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?P<label>Art[íi]culos?\s+(?P<num>[^.\[]+?))\s*(?P<note>\[[^\]]*\])?\s*(?:\.\s*(?P<title>.*))?$",
    re.IGNORECASE,
)
# plain text / PDF: the number must be followed by ".", a dash, a colon or the end of the line
_PLAIN_ARTICLE_RE: Final[re.Pattern[str]] = re.compile(
    rf"^(?P<label>(?:ART[ÍI]CULO|Art[íi]culo)[Ss]?\s+(?P<num>\d+(?:\s*(?:{LATIN_SUFFIXES}))?"
    r"(?:\s+a\s+\d+)?|[A-Za-zÁÉÍÓÚáéíóú]+(?:\s+[a-záéíóú]+)?))\s*(?:[.:\-–—]+\s*(?P<title>.*)|$)"
)
# Brazilian plain text: "Art. 5º Todos são iguais ...", "Art. 10. Compete ..."
_PLAIN_BR_ARTICLE_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?P<label>Art\.\s*(?P<num>\d+\s*[ºo°]?(?:-[A-Z])?))\.?(?=\s|$)\s*(?P<rest>.*)$"
)
# Brazilian Markdown: "**Art. 1º** A República ...", "**Art. 5º-A.** ..."
_BR_ARTICLE_RE: Final[re.Pattern[str]] = re.compile(
    r"^\*\*(?P<label>Art\.\s*(?P<num>[^*]+?))(?P<dot>\.)?\*\*\s*(?P<rest>.*)$"
)
_DISPOSITION_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?P<label>Disposici[óo]n\s+(?P<kind>adicional|transitoria|derogatoria|final)"
    r"(?:\s+(?P<num>[A-Za-zÁÉÍÓÚáéíóú]+(?:\s+[A-Za-zÁÉÍÓÚáéíóú]+){0,2}?))?)"
    r"\s*(?P<note>\[[^\]]*\])?\s*(?:[.:\-–—]+\s*(?P<title>.*))?$",
    re.IGNORECASE,
)
_STRUCTURE_RANKS: Final[dict[str, int]] = {
    "libro": 0, "livro": 0, "titulo": 1, "capitulo": 2, "seccion": 3, "secao": 3, "subseccion": 4, "subsecao": 4,
}
_STRUCTURE_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?P<kw>libro|livro|t[íi]tulo|cap[íi]tulo|secci[óo]n|se[çc][ãa]o|subsecci[óo]n|subse[çc][ãa]o)\b",
    re.IGNORECASE,
)
# numbering that makes a plain line a heading: "CAPÍTULO II", "Sección 1.ª De ...", "TÍTULO PRELIMINAR"; the match
# ends where the heading's name begins (`section_name`)
_STRUCTURE_NUMBER_RE: Final[re.Pattern[str]] = re.compile(
    r"^\S+\s+(?:[IVXLCDM]+|\d+\s*\.?\s*[ºª°]?(?:\s*bis)?|PRELIMINAR|Preliminar|[A-ZÁÉÍÓÚ]+[OA]"
    r"|[Úú]nic[oa])\b\.?"
    r"(?:\s*$|\s*[.:\-–—]|\s+(?=[A-ZÁÉÍÓÚ«\"(]))"
)
# a grouping label right before an article: "A) Trabajadores por cuenta propia"
_GROUP_LABEL_RE: Final[re.Pattern[str]] = re.compile(r"^(?P<letter>[A-Z]\)\s+)[^.;:]{3,150}$")
_DISPOSITION_GROUP_RE: Final[re.Pattern[str]] = re.compile(
    r"^Disposiciones\s+(?:adicionales|transitorias|derogatorias|finales)\.?$", re.IGNORECASE
)
_ANNEX_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?:ANEXO|Anexo)(?:\s+(?P<num>[IVXLC]+|\d+|[ÚU]NICO|[Úú]nico))?\.?$"
)
_ADCT_RE: Final[re.Pattern[str]] = re.compile(
    r"^Ato das Disposi[çc][õo]es Constitucionais Transit[óo]rias$", re.IGNORECASE
)
_APPROVAL_TITLE_RE: Final[re.Pattern[str]] = re.compile(r"\bpor (?:el|la) que se aprueb[a-z]+\b", re.IGNORECASE)
_APPROVAL_INSTRUMENT_RE: Final[re.Pattern[str]] = re.compile(
    r"^(Real Decreto Legislativo|Real Decreto-ley|Real Decreto|Decreto Legislativo|Decreto-ley|Decreto|Orden)\b",
    re.IGNORECASE,
)
# in an approving decree, the line that opens the approved text: "TEXTO REFUNDIDO DE LA LEY ...", "ANEXO"
_APPROVED_TEXT_MARKER_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?:ANEXO(?:\s+[IVX\d]+)?\.?|(?:TEXTO REFUNDIDO|REGLAMENTO|ESTATUTO|LEY|CÓDIGO)\b[^a-záéíóúñ]*)$"
)


# Brazilian consolidated texts (Planalto) annotate provisions with their legislative history: "(Redação dada pela
# Lei nº 13.467, de 2017)", "(Incluído pela ...)", "(Revogado pela ...)", "(Vide ADI 5766)", "(Vigência)". A bare
# "(Revogado)" or "(VETADO)" is the provision's own text and is not a note.
_BR_NOTE_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*\((?P<note>(?:Reda[çc][ãa]o\s+(?:dada|restabelecida)"
    r"|(?:(?:Par[áa]grafo|Inciso|Al[íi]nea|Artigo|Caput)(?:\s+[\wº°]+)?\s+)?"
    r"(?:Inclu[íi]d|Renumerad|Acrescentad|Acrescid|Restaurad|Transformad)[oa]s?"
    r"|(?:Restabelecid|Revigorad)[oa]s?\s+com\s+nova\s+reda[çc][ãa]o"  # "(Restabelecido com nova redação pela ...)"
    r"|(?:Revogad|Suprimid)[oa]s?\s+pel[oa]s?|Vide|Vig[êe]ncia|Declarad[oa]s?\s+inconstitucional"
    r"|Produ[çc][ãa]o\s+de\s+efeito|Execu[çc][ãa]o\s+suspensa|Regulamento)\b"
    r"(?:[^()]|\([^()]*\))*)(?:\)|$)",  # a few headings never close the parenthesis
    re.IGNORECASE,
)
# what is left of a provision whose only text was a note: its marker ("§ 2º", "Parágrafo único.", "I -", "a)")
_BR_BARE_MARKER_RE: Final[re.Pattern[str]] = re.compile(rf"^(?P<marker>{BR_PROVISION_MARKER})?\s*(?P<end>[.;:,]?)$")
_BR_GONE_NOTE_RE: Final[re.Pattern[str]] = re.compile(r"^(Revogad[oa]|Suprimid[oa])s?\b", re.IGNORECASE)


def split_br_notes(line: str) -> tuple[str, list[str]]:
    """
    A Brazilian provision line without its legislative-history notes, and the notes.

    `"§ 1º (Revogado). (Redação dada pela Lei nº 13.467, de 2017)"` -> `("§ 1º (Revogado).", ["Redação dada pela
    Lei nº 13.467, de 2017"])`; a line that held nothing but a repeal note keeps "(Revogado)" / "(Suprimido)".
    """
    notes = [re.sub(r"\s+", " ", match.group("note")).strip() for match in _BR_NOTE_RE.finditer(line)]
    if not notes:
        return line, []
    text = _BR_NOTE_RE.sub("", line).strip()
    bare = _BR_BARE_MARKER_RE.match(text)
    if bare:
        gone = next((m for m in map(_BR_GONE_NOTE_RE.match, notes) if m), None)
        if gone:
            text = f"{bare.group('marker') or ''} ({gone.group(1).capitalize()}){bare.group('end')}".strip()
    return text, notes


@dataclass
class _Unit:
    """One output Document in the making."""

    key: str
    label: str
    title: str
    heading: str
    heading_path: list[str]
    lines: list[str] = field(default_factory=list)


_STAR_EMPHASIS_RES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"\*\*"), ""),  # bold
    (re.compile(r"(?<![\w*])\*([^*\s](?:[^*]*?[^*\s])?)\*(?![\w*])"), r"\1"),  # *prorrata temporis*
    (re.compile(r"(?<=\w)\*(\w+)\*(?=\w)"), r"\1"),  # d*e*terminados
)
_UNDERSCORE_EMPHASIS_RE: Final[re.Pattern[str]] = re.compile(r"(?<!\w)_([^_\s](?:[^_]*?[^_\s])?)_(?!\w)")  # _a)_


def _strip_markup(text: str) -> str:
    """Text without Markdown bold / italic markers."""
    if "*" in text:
        for pattern, replacement in _STAR_EMPHASIS_RES:
            text = pattern.sub(replacement, text)
    if "_" in text:
        text = _UNDERSCORE_EMPHASIS_RE.sub(r"\1", text)
    return text.strip()


def _clean(line: str) -> str:
    """A body line without Markdown heading marks and emphasis markers."""
    heading = _MD_HEADING_RE.match(line.strip())
    return _strip_markup(heading.group(2) if heading else line.strip())


def _body(lines: list[str]) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@component
class ArticleParser:
    """
    Splits law Documents (from `StatuteConverter`) into one Document per article.

    Articles, dispositions (adicional / transitoria / derogatoria / final), annexes and a non-trivial preamble
    (the text before the first article or heading) each become a Document whose content is the heading line
    ("Artículo 38. Vacaciones anuales."), a blank line and the body, without Markdown marks. Meta: everything of
    the law plus `article` (normalized key: `38`, `2 bis`, `da1`, `dt2`, `dd`, `df1`, `anexo1`, `preambulo`),
    `article_title`, `article_label` ("Artículo 38"), `heading_path` (enclosing Título / Capítulo / Sección /
    Subsección headings) and `article_order` (0-based position in the law). An article whose title another one of
    its law shares (the LISOS has eight "Infracciones muy graves", one per matter) also gets `section_name`, the name
    of its nearest heading (`section_name()`), which is what tells them apart: the embedders read it with the
    title. The id is the sha256 of "law_id|article", so re-indexing a law updates its articles in place.

    Recognized layouts: BOE Markdown (`## TÍTULO`, `### CAPÍTULO`, `#### Sección`, `##### Artículo N. Título.`),
    Brazilian Markdown (`## Título I: ...`, `**Art. 5º-A.**` opening a paragraph, the ADCT numbered apart with
    keys `adct-N`), and plain text / PDF (lines starting with "Artículo N.", "Art. N" in Portuguese,
    "Disposición adicional primera.", and TÍTULO / CAPÍTULO lines). In an approving decree ("Real Decreto
    Legislativo ... por el que se aprueba el texto refundido ..."), the decree's own "Artículo único" and
    dispositions get keys prefixed `rd-` (`rd-unico`, `rd-dd`) so they never collide with the approved text.
    A key that still repeats gets `-2`, `-3` appended (with a warning). A law without recognizable articles
    becomes one Document with article `texto`.

    Portuguese (`lang` `pt`) texts such as the CLT carry the legislative history of each provision in notes
    ("(Redação dada pela Lei nº 13.467, de 2017)", "(Incluído pela ...)", "(Vide ADI 5766)"): they are moved out of
    the content (which is what gets embedded, indexed for BM25 and shown) and out of the heading path into
    `meta["amendments"]` (the unit's distinct notes, in order). A unit whose every provision is "(Revogado)" /
    "(Suprimido)" or "(VETADO)" is kept, with `meta["status"]` `repealed` or `vetoed` instead of the law's
    `in_force`, so a `meta.status == in_force` filter leaves it out.

    ### Usage example

    ```python
    from components.preprocessors.article_parser import ArticleParser
    from components.converters.statute_converter import StatuteConverter

    laws = StatuteConverter().run(sources=["data/corpus/BOE-A-2015-11430.md"])["documents"]
    articles = ArticleParser().run(documents=laws)["documents"]
    art38 = next(d for d in articles if d.meta["article"] == "38")
    print(art38.meta["article_title"], art38.meta["heading_path"])
    # Vacaciones anuales ['TÍTULO I. De la relación individual de trabajo', 'CAPÍTULO II. ...', 'Sección 5.ª ...']
    ```
    """

    def __init__(self, *, min_preamble_chars: int = 200, include_preamble: bool = True):
        """
        Create an ArticleParser.

        :param min_preamble_chars: A preamble (text before the first article or heading) becomes a Document with
            article `preambulo` only when its body has at least this many characters.
        :param include_preamble: Whether to emit the preamble at all.
        :raises ValueError: If `min_preamble_chars` is negative.
        """
        if not isinstance(min_preamble_chars, int) or min_preamble_chars < 0:
            raise ValueError(f"min_preamble_chars must be an integer >= 0, got {min_preamble_chars!r}")
        self.min_preamble_chars = min_preamble_chars
        self.include_preamble = include_preamble

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize this component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(self, min_preamble_chars=self.min_preamble_chars, include_preamble=self.include_preamble)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ArticleParser":
        """
        Deserialize this component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], errors=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Split law Documents into article Documents.

        :param documents: One Document per law, with law meta (`law_id`, `law_title`, `lang`, ...); without
            `law_id` the Document id is used.
        :returns: A dictionary with:
            - `documents`: The article Documents of all laws, in law order and then text order.
            - `errors`: `{"source": ..., "error": ...}` for each Document without text.
        """
        output: list[Document] = []
        errors: list[dict[str, Any]] = []
        for doc in documents:
            if not (doc.content or "").strip():
                source = str(doc.meta.get("source_path") or doc.meta.get("law_id") or doc.id)
                logger.warning("Skipping Document {source}: it has no text", source=source)
                errors.append({"source": source, "error": "Document has no text content"})
                continue
            output.extend(self._split(doc))
        return {"documents": output, "errors": errors}

    def _split(self, doc: Document) -> list[Document]:
        law_meta = dict(doc.meta)
        law_id = str(law_meta.get("law_id") or doc.id)
        law_meta["law_id"] = law_id
        preamble, *units = _LawSplitter(doc.content or "", law_meta).split()
        if not units:
            logger.warning("No articles found in {law_id}: keeping the whole text as one Document", law_id=law_id)
            title = str(law_meta.get("law_title") or law_id)
            lines = [_clean(line) for line in (doc.content or "").split("\n")]
            units = [_Unit("texto", "Texto", title, title, [], lines)]
        elif self.include_preamble and len(_body(preamble.lines)) >= self.min_preamble_chars:
            units.insert(0, preamble)

        titles = Counter(unit.title.casefold() for unit in units if unit.title)
        seen: dict[str, int] = {}
        out: list[Document] = []
        for order, unit in enumerate(units):
            key = unit.key
            if key in seen:
                seen[key] += 1
                key = repeated_key(unit.key, seen[unit.key])
                logger.warning(
                    "{law_id}: article key {key} repeats ({label}); renamed to {new_key}",
                    law_id=law_id, key=unit.key, label=unit.heading, new_key=key,
                )
            seen.setdefault(key, 1)
            extra: dict[str, Any] = {}
            if law_meta.get("lang") == "pt":
                extra = _strip_br_notes(unit, str(law_meta.get("status") or IN_FORCE))
            body = _body(unit.lines)
            content = body if unit.key == "texto" else f"{unit.heading}\n\n{body}".strip()
            meta = {
                **law_meta,
                "article": key,
                "article_title": unit.title,
                "article_label": unit.label,
                "heading_path": list(unit.heading_path),
                "article_order": order,
                **extra,
            }
            if unit.title and titles[unit.title.casefold()] > 1 and (section := section_name(unit.heading_path)):
                meta["section_name"] = section
            owner = owner_key(meta)
            doc_id = hashlib.sha256(f"{owner + '|' if owner else ''}{law_id}|{key}".encode()).hexdigest()
            out.append(Document(id=doc_id, content=content, meta=meta))
        return out


def section_name(heading_path: list[str]) -> str:
    """
    The name of the nearest enclosing heading that has one, without its numbering ("Sección 2.ª Infracciones en
    materia de prevención de riesgos laborales" -> "Infracciones en materia de prevención de riesgos laborales",
    "A) Trabajadores por cuenta propia" -> "Trabajadores por cuenta propia"); empty when no heading names anything
    ("TÍTULO PRELIMINAR" alone).
    """
    for heading in reversed(heading_path):
        numbering = _STRUCTURE_NUMBER_RE.match(heading)
        name = heading[numbering.end() :] if numbering else heading
        label = _GROUP_LABEL_RE.match(name)
        name = (name[label.end("letter") :] if label else name).strip(" .:-–—")
        if name:
            return name
    return ""


def _strip_br_notes(unit: _Unit, law_status: str) -> dict[str, Any]:
    """
    Moves the legislative-history notes of a Brazilian unit out of its text (in place) into meta.

    :returns: `amendments` (the unit's distinct notes, "(Vigência)" links left out) and, for a unit in force
        whose every provision is repealed or vetoed, `status` `repealed` / `vetoed`.
    """
    notes: list[str] = []
    lines = []
    for line in unit.lines:
        text, found = split_br_notes(line)
        lines.append(text)
        notes.extend(note for note in found if not note.lower().startswith("vig"))
    unit.lines = lines
    unit.heading = split_br_notes(unit.heading)[0]
    unit.heading_path = [split_br_notes(heading)[0] for heading in unit.heading_path]
    extra: dict[str, Any] = {"amendments": list(dict.fromkeys(notes))} if notes else {}
    # the whole text of a repealed / vetoed provision, once its notes are gone
    kinds = [kind[:3] for kind in map(repealed_provision, lines) if kind]
    if law_status == IN_FORCE and kinds and len(kinds) == sum(1 for line in lines if line.strip()):
        extra["status"] = "vetoed" if set(kinds) == {"vet"} else REPEALED
    return extra


class _LawSplitter:
    """Line-by-line state machine that cuts one law text into units."""

    def __init__(self, text: str, meta: dict[str, Any]):
        self.lines = text.split("\n")
        self.lang = str(meta.get("lang") or "es")
        if re.search(r"^#{1,6}\s+(?:Art[íi]culos?|Disposici[óo]n)\s", text, re.M | re.IGNORECASE):
            self.layout = "md"
        elif re.search(r"^\*\*Art\.\s*\d", text, re.M):
            self.layout = "br_md"
        else:
            self.layout = "plain"
        first_heading = next((m.group(2) for m in map(_MD_HEADING_RE.match, self.lines) if m and m.group(1) == "#"), "")
        self.title = str(meta.get("law_title") or first_heading)
        instrument = _APPROVAL_INSTRUMENT_RE.match(self.title)
        self.approval_label = f"{instrument.group(1) if instrument else 'Norma'} (aprobación)"
        self.approval = "none" if _APPROVAL_TITLE_RE.search(self.title) else "never"  # none/active/skip/done/never
        label = "Preâmbulo" if self.lang == "pt" else "Preámbulo"
        self.preamble = _Unit(PREAMBLE, label, "", label, [])
        self.units: list[_Unit] = [self.preamble]
        self.current: _Unit | None = self.preamble
        self.path: list[tuple[int, str]] = []
        self.key_prefix = ""
        self.in_heading = False  # after a structural heading, before the next article

    # -- classification ---------------------------------------------------------------------------------------

    def _article(self, line: str) -> dict[str, str] | None:
        """`kind`, `num`, `label`, `title`, `heading`, `rest` of an article/disposition start, or None."""
        stripped = line.strip()
        heading = _MD_HEADING_RE.match(stripped)
        if self.layout == "md":
            if not heading:
                return None
            text = _strip_markup(heading.group(2))
            match = _DISPOSITION_RE.match(text) or _MD_ARTICLE_RE.match(text)
            if not match:
                return None
            return self._article_parts(match, text)
        if self.layout == "br_md":
            match = _BR_ARTICLE_RE.match(stripped)
            if not match:
                return None
            label = match.group("label").strip()
            return {"kind": "articulo", "num": match.group("num"), "label": label, "title": "",
                    "heading": label + (match.group("dot") or ""), "rest": match.group("rest")}
        text = heading.group(2) if heading else stripped
        if self.lang == "pt":
            match = _PLAIN_BR_ARTICLE_RE.match(text)
            if match:
                return {"kind": "articulo", "num": match.group("num"), "label": match.group("label"), "title": "",
                        "heading": match.group("label"), "rest": match.group("rest")}
        match = _DISPOSITION_RE.match(text) or _PLAIN_ARTICLE_RE.match(text)
        if not match:
            return None
        parts = self._article_parts(match, text)
        try:  # plain lines must carry a real number ("Artículo primero de la Ley ..." is body text)
            normalize_article_key(parts["num"], parts["kind"], strict=True)
        except ValueError:
            return None
        return parts

    @staticmethod
    def _article_parts(match: re.Match[str], text: str) -> dict[str, str]:
        groups = match.groupdict()
        kind = (groups.get("kind") or "articulo").lower()
        label = re.sub(r"\s+", " ", groups["label"]).strip()
        title = (groups.get("title") or "").strip().rstrip(".").strip()
        num = groups.get("num") or ""
        return {"kind": kind, "num": num, "label": label, "title": title, "heading": text, "rest": ""}

    def _structure(self, line: str) -> tuple[int, str] | None:
        """(rank, heading text) of a Título / Capítulo / Sección / Subsección heading, or None."""
        stripped = line.strip()
        heading = _MD_HEADING_RE.match(stripped)
        if not _STRUCTURE_RE.match((heading.group(2) if heading else stripped).lstrip("*_")):
            return None
        text = _clean(stripped)
        match = _STRUCTURE_RE.match(text)
        if not match or len(text) > 250:
            return None
        rank = _STRUCTURE_RANKS[fold_accents(match.group("kw")).lower()]
        if heading and self.layout != "plain":
            return rank, text
        if self.layout != "plain" and rank < _STRUCTURE_RANKS["subseccion"]:
            return None  # in Markdown, a plain paragraph is a heading only for Subsección (BOE style)
        return (rank, text) if _STRUCTURE_NUMBER_RE.match(text) else None

    def _next_nonempty(self, index: int) -> str:
        return next((line for line in self.lines[index + 1 :] if line.strip()), "")

    # -- state machine ----------------------------------------------------------------------------------------

    def split(self) -> list[_Unit]:
        title_seen = False
        for index, line in enumerate(self.lines):
            stripped = line.strip()
            heading = _MD_HEADING_RE.match(stripped)
            text = _clean(stripped)
            if not title_seen and self.current is self.preamble and text:
                # the law's own title: the first "# " heading (Markdown) or the first line (plain text)
                if heading and heading.group(1) == "#":
                    title_seen = True
                    continue
                if self.layout == "plain":
                    title_seen = True
                    if text[:300] == self.title[:300]:
                        continue

            article = self._article(line)
            structure = None if article else self._structure(line)
            if self.approval == "skip":
                if not (article or structure):
                    continue
                self.approval = "done"

            if article:
                self._start_article(article)
            elif structure:
                self._add_structure(*structure)
            elif self.approval == "active" and _APPROVED_TEXT_MARKER_RE.match(text):
                self.approval = "skip"
            elif _ADCT_RE.match(text):
                self.key_prefix = ADCT_PREFIX
                self.path = [(-1, text)]
                self.in_heading = True
            elif _DISPOSITION_GROUP_RE.match(text):
                continue
            elif (
                self.layout == "md"
                and not heading
                and _GROUP_LABEL_RE.match(text)
                and self._article(self._next_nonempty(index))
            ):
                self._add_structure(5, text)
            elif (annex := _ANNEX_RE.match(text)) and self.current is not self.preamble:
                self._start_annex(annex.group("num") or "", text, self._next_nonempty(index))
            elif self.in_heading:
                if text:  # the heading's title on its own line (plain text), or a note such as "(Derogado)"
                    rank, heading_text = self.path[-1]
                    glue = " " if text.startswith("(") or heading_text.endswith((".", ":")) else ". "
                    self.path[-1] = (rank, f"{heading_text}{glue}{text}")
            elif self.current is not None:
                self.current.lines.append(text)
        first = next((line for line in self.preamble.lines if line), "")
        if fold_accents(first).lower().rstrip(".:") == fold_accents(self.preamble.label).lower():
            self.preamble.lines.remove(first)  # "**Preâmbulo**" written as the first paragraph
        return self.units

    def _start_article(self, article: dict[str, str]) -> None:
        kind = article["kind"]
        key = normalize_article_key(article["num"], kind)
        if self.approval == "none" and kind == "articulo" and key == "unico" and self.current is self.preamble:
            self.approval = "active"
            self.preamble.heading_path = [self.approval_label]  # the decree's own exposition
        elif self.approval == "active" and kind == "articulo" and key != "unico":
            self.approval = "done"  # the approved text starts without a marker line
        if self.approval == "active":
            key, path = APPROVAL_PREFIX + key, [self.approval_label]
        elif kind != "articulo":
            key, path = self.key_prefix + key, [DISPOSITION_GROUPS[kind]]
            self.path = []
        else:
            key, path = self.key_prefix + key, [text for _, text in self.path]
        self.in_heading = False
        unit = _Unit(key, article["label"], article["title"], _strip_markup(article["heading"]), path)
        if article["rest"].strip():
            unit.lines.append(_strip_markup(article["rest"]))
        self.units.append(unit)
        self.current = unit

    def _add_structure(self, rank: int, text: str) -> None:
        if self.approval == "active":
            self.approval = "done"
        self.path = [(r, t) for r, t in self.path if r < rank] + [(rank, text)]
        self.in_heading = True
        self.current = None

    def _start_annex(self, number: str, text: str, next_line: str) -> None:
        title = _clean(next_line)
        label = f"Anexo {number}".strip() if number else "Anexo"
        key = normalize_article_key(number, "anexo")
        unit = _Unit(key, label, title if len(title) <= 300 else "", text, ["Anexos"])
        self.path = []
        self.in_heading = False
        self.units.append(unit)
        self.current = unit
