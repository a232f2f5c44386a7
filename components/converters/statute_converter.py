"""Statute files (Markdown with YAML front matter, Brazilian Markdown, plain text, PDF) -> one Document per law."""

import datetime as dt
import re
from pathlib import Path
from typing import Any, Final

import yaml
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.components.converters.utils import normalize_metadata
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from components.legal.citations import law_key
from components.legal.ids import IN_FORCE, PARTIALLY_REPEALED, REPEALED
from components.legal.jurisdiction import COUNTRY_LANGUAGE, LANGUAGE_COUNTRY
from components.legal.laws import load_laws_table
from components.legal.legal_text import detect_language, fold_accents

logger = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS: Final[dict[str, str]] = {".md": "md", ".markdown": "md", ".txt": "text", ".pdf": "pdf"}

# rank: 1 Constitución / ley orgánica, 2 ley / RDL / RD-ley, 3 reglamento general, 4 real decreto, 5 other
_RANK_BY_NAME: Final[dict[str, int]] = {
    "constitucion": 1, "ley_organica": 1,
    "ley": 2, "real_decreto_legislativo": 2, "real_decreto_ley": 2, "decreto_ley": 2, "decreto_legislativo": 2,
    "lei": 2, "lei_complementar": 2, "medida_provisoria": 2,
    "reglamento": 3,
    "real_decreto": 4, "decreto": 4,
}
# rank names inferred from a title (files without front matter), first match wins
_RANK_NAME_PATTERNS: Final[tuple[tuple[str, str], ...]] = (
    ("constitucion", r"^constitu(?:cion|icao)\b"),
    ("ley_organica", r"^ley organica\b"),
    ("real_decreto_legislativo", r"^real decreto legislativo\b"),
    ("real_decreto_ley", r"^real decreto[- ]ley\b"),
    ("real_decreto", r"^real decreto\b"),
    ("decreto_legislativo", r"^decreto legislativo\b"),
    ("decreto_ley", r"^decreto[- ]le[iy]\b"),
    ("decreto", r"^decreto\b"),
    ("lei_complementar", r"^lei complementar\b"),
    ("ley", r"^ley\b"),
    ("lei", r"^lei\b"),
    ("medida_provisoria", r"^medida provisoria\b"),
    ("orden", r"^orden\b"),
    ("convenio", r"^convenio\b"),
)
_SHORT_ES_RE: Final[re.Pattern[str]] = re.compile(
    r"^(Ley Orgánica|Ley|Real Decreto Legislativo|Real Decreto-ley|Real Decreto|Decreto Legislativo|Decreto-ley"
    r"|Decreto|Orden)\s+((?:[A-Z]{2,}/)?\d+/\d{4})\b",
    re.IGNORECASE,
)
_SHORT_ES: Final[dict[str, str]] = {
    "ley orgánica": "LO", "ley": "Ley", "real decreto legislativo": "RDLeg", "real decreto-ley": "RDL",
    "real decreto": "RD", "decreto legislativo": "DLeg", "decreto-ley": "DL", "decreto": "Decreto", "orden": "Orden",
}
_SHORT_PT_RE: Final[re.Pattern[str]] = re.compile(
    r"^(Lei Complementar|Lei|Decreto-Lei|Decreto|Medida Provisória)\s+(?:n[º°o.]\s*)?(\d[\d.]*)"
    r"(?:,\s*de\s[^,]*?(\d{4}))?",
    re.IGNORECASE,
)
_SHORT_PT: Final[dict[str, str]] = {
    "lei complementar": "LC", "lei": "Lei", "decreto-lei": "DL", "decreto": "Decreto", "medida provisória": "MP",
}
_STATUS_ALIASES: Final[dict[str, str]] = {
    "in_force": IN_FORCE, "vigente": IN_FORCE, "en_vigor": IN_FORCE, "vigor": IN_FORCE,
    "repealed": REPEALED, "derogada": REPEALED, "derogado": REPEALED, "revogada": REPEALED,
    "partially_repealed": PARTIALLY_REPEALED, "derogada_parcialmente": PARTIALLY_REPEALED,
    "parcialmente_derogada": PARTIALLY_REPEALED,
}
_DATE_LAYOUTS: Final[tuple[tuple[str, str], ...]] = (
    (r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d"), (r"\d{8}", "%Y%m%d"), (r"\d{1,2}/\d{1,2}/\d{4}", "%d/%m/%Y")
)
# BOE consolidated texts open with e.g. "Norma derogada, con efectos de ..., por ... Ref. BOE-A-2015-11430#ddunica."
_DEROGATION_RE: Final[re.Pattern[str]] = re.compile(
    r"^Norma derogada(?P<partial>\s+parcialmente)?\b(?P<rest>[^\n]*)", re.M
)
_BOE_REF_RE: Final[re.Pattern[str]] = re.compile(r"Ref\.\s*(BOE-[A-Z]-\d{4}-\d+)")
_PRINTABLE_RE: Final[re.Pattern[str]] = re.compile(r"[\w\s.,;:()¿?¡!«»\"'/%§ºª°*#\-–—]")


class _InputError(Exception):
    """A source that cannot be converted; its message goes to the `errors` output."""


# Input limits: a front matter is a few short fields; a statute's text is at most a few MB (the LGSS is ~1.5 MB).
MAX_FRONT_MATTER_CHARS: Final[int] = 20_000
MAX_TEXT_CHARS: Final[int] = 20_000_000
MAX_PDF_PAGES: Final[int] = 3_000
# front matter fields read as one value each: a list or a mapping there is refused, not stringified
FRONT_MATTER_SCALARS: Final[tuple[str, ...]] = (
    "identifier", "title", "country", "status", "rank", "derogated_by", "publication_date", "last_updated",
    "repeal_date", "source", "official_number", "short_name",
)


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases: no alias expansion (a few bytes can expand to GBs)."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases are not allowed in front matter", event.start_mark
            )
        return super().compose_node(parent, index)


def infer_rank_name(title: str) -> str:
    """Rank name from a norm's title ("Ley Orgánica 11/1985 ..." -> "ley_organica"); "other" when unknown."""
    folded = fold_accents(title).lower().strip()
    for name, pattern in _RANK_NAME_PATTERNS:
        if re.search(pattern, folded):
            return name
    return "other"


def rank_for(rank_name: str, title: str = "") -> int:
    """
    Hierarchy rank 1-5 of a norm.

    1 constitución, ley orgánica; 2 ley, real decreto legislativo, (real) decreto-ley; 3 reglamento general (a real
    decreto whose title says "Reglamento General"); 4 real decreto, decreto; 5 orden, convenio, anything else.
    """
    key = re.sub(r"[\s\-]+", "_", fold_accents(rank_name).lower().strip())
    if key in ("real_decreto", "decreto") and "reglamento general" in fold_accents(title).lower():
        return 3
    return _RANK_BY_NAME.get(key, 5)


# the longest title a citation names a law by when the title has no short form (else the law id, its file name)
CITED_TITLE_MAX_CHARS: Final[int] = 90


def short_name(title: str) -> str | None:
    """Short name from a title: "Ley 31/1995, de ..." -> "Ley 31/1995", "Real Decreto 295/2009 ..." -> "RD 295/2009"."""
    match = _SHORT_ES_RE.match(title.strip())
    if match:
        return f"{_SHORT_ES[match.group(1).lower()]} {match.group(2)}"
    match = _SHORT_PT_RE.match(title.strip())
    if match:
        base = f"{_SHORT_PT[match.group(1).lower()]} {match.group(2)}"
        return f"{base}/{match.group(3)}" if match.group(3) else base
    return None


def iso_date(value: Any) -> str | None:
    """ISO date string from a date, "YYYY-MM-DD", "YYYYMMDD" or "DD/MM/YYYY"; None when unparseable."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value or "").strip()
    for pattern, layout in _DATE_LAYOUTS:
        if re.fullmatch(pattern, text):
            try:
                return dt.datetime.strptime(text, layout).date().isoformat()
            except ValueError:
                return None
    return None


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """
    Split a leading YAML front matter block (between two `---` lines) from the body.

    The block is parsed with `_FrontMatterLoader` (safe, no anchors / aliases), at most `MAX_FRONT_MATTER_CHARS`
    characters, and the fields of `FRONT_MATTER_SCALARS` must be single values.

    :returns: (front matter mapping, body); an empty mapping when there is none.
    :raises _InputError: If the block is not closed, too long, uses anchors / aliases, is not a valid YAML
        mapping, or holds a list / mapping where a single value is expected.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            break
    else:
        raise _InputError("unterminated YAML front matter: no closing '---' line")
    block = "\n".join(lines[1:index])
    if len(block) > MAX_FRONT_MATTER_CHARS:
        raise _InputError(f"front matter too long: {len(block)} characters, at most {MAX_FRONT_MATTER_CHARS}")
    try:
        front = yaml.load(block, Loader=_FrontMatterLoader) or {}  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise _InputError(f"invalid YAML front matter: {exc}") from exc
    if not isinstance(front, dict):
        raise _InputError("front matter is not a YAML mapping")
    for key in FRONT_MATTER_SCALARS:
        if isinstance(front.get(key), (list, dict, set, tuple)):
            raise _InputError(f"front matter field {key!r} must be a single value, got {type(front[key]).__name__}")
    return front, "\n".join(lines[index + 1 :])


def _decode(raw: bytes) -> str:
    """UTF-8 text (with a Windows-1252 fallback for legacy files that read as text); binary junk is an error."""
    if not raw.strip():
        raise _InputError("file is empty")
    if b"\x00" in raw:
        raise _InputError("binary content (NUL bytes): not a text file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        try:
            text = raw.decode("cp1252")
        except UnicodeDecodeError:
            raise _InputError(f"not UTF-8 text and not Windows-1252 either ({exc})") from exc
        if len(_PRINTABLE_RE.findall(text)) < 0.95 * len(text):
            raise _InputError(f"not UTF-8 text and looks binary ({exc})") from exc
        logger.warning("{error}: decoded as Windows-1252", error=str(exc))
        return text


def _first_heading(body: str) -> str | None:
    match = re.search(r"^#\s+(.+?)\s*#*\s*$", body, re.M)
    return match.group(1).strip() if match else None


def _first_line(body: str) -> str | None:
    for line in body.split("\n"):
        line = line.strip().lstrip("#").strip().strip("*").strip()
        if line:
            return line[:300]
    return None


@component
class StatuteConverter:
    """
    Converts statute files into one Document per law (the whole text), with law-level meta.

    Inputs: `.md` / `.markdown` (legalize Markdown with YAML front matter such as the BOE consolidated texts, or
    Markdown without front matter such as the Brazilian constitution), `.txt` (plain text, optional front matter)
    and `.pdf` (text layer read with pypdf). Directories are expanded to their supported files, sorted.

    Each Document's content is the law text without the front matter; its meta carries `law_id`, `law_title`,
    `law_short` and its `law_key` (how citations name it: "Lei 605/49" finds a "Lei 605/1949" the laws table lacks),
    `rank` (1-5) and `rank_name`, `status` (`in_force` / `repealed` / `partially_repealed`) and
    `derogated_by` when known, `publication_date` / `last_updated` (ISO), `lang`, `country` (front matter, law
    table, else the language's: `es` -> `es`, `pt` -> `br`), `collection`, `source_path` and `format`
    (`statute_md`, `br_md`, `text`, `pdf`). The front matter's `short_name` is the law's short name; short names
    and known derogations of norms the files do not describe come from a small table
    (`components/legal/data/laws.yaml`). Values passed in `meta` override them.

    A file that cannot be converted (missing, empty, binary, unterminated front matter, PDF without text) becomes
    an entry in `errors` and the other files are still converted.

    ### Usage example

    ```python
    from components.converters.statute_converter import StatuteConverter

    converter = StatuteConverter(collection="normativa")
    result = converter.run(sources=["data/corpus/BOE-A-2015-11430.md", "data/corpus/CF88.md"])
    et = result["documents"][0]
    print(et.meta["law_short"], et.meta["rank"], et.meta["status"])  # ET 2 in_force
    print(result["errors"])  # []
    ```
    """

    def __init__(
        self,
        *,
        collection: str = "normativa",
        default_lang: str = "es",
        laws_file: str | None = None,
        max_pdf_pages: int = MAX_PDF_PAGES,
        max_text_chars: int = MAX_TEXT_CHARS,
    ):
        """
        Create a StatuteConverter.

        :param collection: Logical collection written to every Document's meta (`normativa`, `sentencias`,
            `criterios`, ...); `meta={"collection": ...}` in `run` overrides it per call.
        :param default_lang: Language code used when neither the front matter (`country`) nor the text tells
            Spanish from Portuguese.
        :param laws_file: YAML table of known norms (short names, derogations); `None` uses the bundled
            `components/legal/data/laws.yaml`.
        :param max_pdf_pages: A PDF with more pages is refused (its error in `errors`) before any text is read.
        :param max_text_chars: A file whose text (PDF text extracted so far included) exceeds this is refused.
        :raises ValueError: If `collection` is empty or has spaces, `default_lang` is not a two-letter code,
            `laws_file` does not exist or is not a valid table, or a limit is not a positive integer.
        """
        for name, value in (("max_pdf_pages", max_pdf_pages), ("max_text_chars", max_text_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.max_pdf_pages = max_pdf_pages
        self.max_text_chars = max_text_chars
        if not isinstance(collection, str) or not collection.strip() or re.search(r"\s", collection):
            raise ValueError(f"collection must be a non-empty name without spaces, got {collection!r}")
        if not isinstance(default_lang, str) or not re.fullmatch(r"[a-z]{2}", default_lang):
            raise ValueError(
                f"default_lang must be a two-letter lowercase language code such as 'es', got {default_lang!r}"
            )
        self.collection = collection
        self.default_lang = default_lang
        self.laws_file = laws_file
        self._laws = load_laws_table(laws_file)

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize this component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self, collection=self.collection, default_lang=self.default_lang, laws_file=self.laws_file,
            max_pdf_pages=self.max_pdf_pages, max_text_chars=self.max_text_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StatuteConverter":
        """
        Deserialize this component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], errors=list[dict[str, Any]])
    def run(
        self, sources: list[str | Path], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """
        Convert statute files to Documents, one per law.

        :param sources: Files and/or directories (expanded to their `.md`, `.markdown`, `.txt`, `.pdf` files,
            recursively, sorted).
        :param meta: Meta merged into the Documents, overriding what the files say: one dict for all sources,
            or one dict per source (a directory's dict applies to each of its files).
        :returns: A dictionary with:
            - `documents`: One Document per converted file.
            - `errors`: `{"source": path, "error": message}` for each source that could not be converted.
        :raises ValueError: If `meta` is a list whose length differs from `sources`.
        """
        documents: list[Document] = []
        errors: list[dict[str, Any]] = []
        for source, source_meta in zip(sources, normalize_metadata(meta, sources_count=len(sources))):
            path = Path(source)
            files = (
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)
                if path.is_dir()
                else [path]
            )
            if not files:
                supported = ", ".join(SUPPORTED_EXTENSIONS)
                errors.append({"source": str(path), "error": f"directory has no supported files ({supported})"})
            for file in files:
                try:
                    documents.append(self._convert(file, source_meta))
                except Exception as exc:  # one bad file never stops the others
                    message = str(exc) if isinstance(exc, _InputError) else f"{type(exc).__name__}: {exc}"
                    logger.warning("Could not convert {source}: {error}", source=str(file), error=message)
                    errors.append({"source": str(file), "error": message})
        return {"documents": documents, "errors": errors}

    def _convert(self, path: Path, user_meta: dict[str, Any]) -> Document:
        if not path.is_file():
            raise _InputError("file not found" if not path.exists() else "not a regular file")
        kind = SUPPORTED_EXTENSIONS.get(path.suffix.lower())
        if kind is None:
            raise _InputError(f"unsupported file type {path.suffix!r}; supported: {', '.join(SUPPORTED_EXTENSIONS)}")
        if kind == "pdf":
            front, body = {}, self._read_pdf(path)
        else:
            # a UTF-8 character is at most 4 bytes: a larger file cannot hold an acceptable text
            if path.stat().st_size > 4 * self.max_text_chars:
                raise _InputError(f"file too large: more than {self.max_text_chars} characters of text")
            front, body = split_front_matter(_decode(path.read_bytes()).replace("\r\n", "\n").replace("\r", "\n"))
        if len(body) > self.max_text_chars:
            raise _InputError(f"text too long: {len(body)} characters, at most {self.max_text_chars}")
        body = body.strip("\n")
        if not body.strip():
            raise _InputError("no text after the front matter" if front else "file is empty")
        meta = self._law_meta(path, kind, front, body)
        meta.update(user_meta)
        known = self._laws.get(str(meta["law_id"]), {})
        # a title with no short form ("Convenio colectivo de Acme Hostelería 2025-2027") names the law in citations
        # better than its file name does, when it is a title (front matter or first heading) short enough to cite
        titled = bool(front.get("title") or (kind == "md" and _first_heading(body)))
        title = str(meta["law_title"])
        law_short = (
            known.get("law_short") or short_name(title)
            or (title if titled and len(title) <= CITED_TITLE_MAX_CHARS else str(meta["law_id"]))
        )
        meta.setdefault("law_short", law_short)
        # how a citation names it ("Lei 605/49" and "Lei 605/1949": "lei 605"), for a norm the laws table lacks
        meta.setdefault("law_key", law_key(str(meta["law_short"])))
        meta.setdefault("rank", rank_for(str(meta["rank_name"]), str(meta["law_title"])))
        return Document(content=body, meta=meta)

    def _read_pdf(self, path: Path) -> str:
        try:
            reader = PdfReader(path)
            pages = len(reader.pages)
            if pages > self.max_pdf_pages:
                raise _InputError(f"PDF has {pages} pages, at most {self.max_pdf_pages}")
            parts: list[str] = []
            size = 0
            for page in reader.pages:
                part = (page.extract_text() or "").strip()
                size += len(part) + 1
                if size > self.max_text_chars:
                    raise _InputError(f"PDF text longer than {self.max_text_chars} characters")
                parts.append(part)
            text = "\n".join(parts)
        except PyPdfError as exc:
            raise _InputError(f"cannot read PDF ({type(exc).__name__}: {exc})") from exc
        if not text.strip():
            raise _InputError(f"PDF has no extractable text ({len(reader.pages)} page(s); scanned images need OCR)")
        return text

    def _law_meta(self, path: Path, kind: str, front: dict[str, Any], body: str) -> dict[str, Any]:
        """Law-level meta from the front matter, the known-laws table and the text (law_short and rank come later)."""
        law_id = str(front.get("identifier") or path.stem)
        known = self._laws.get(law_id, {})
        heading = _first_heading(body) if kind == "md" else None
        title = str(front.get("title") or heading or _first_line(body) or law_id)
        country = str(front.get("country") or "").lower()
        lang = COUNTRY_LANGUAGE.get(country) or known.get("lang") or detect_language(body, default=self.default_lang)
        if kind == "md":
            fmt = "statute_md" if front or lang != "pt" else "br_md"
        else:
            fmt = kind

        derogation = _DEROGATION_RE.search(body[:5000])
        detected_ref = _BOE_REF_RE.search(derogation.group("rest")) if derogation else None
        status = _STATUS_ALIASES.get(re.sub(r"[\s\-]+", "_", fold_accents(str(front.get("status") or "")).lower()))
        if status is None and derogation:
            status = PARTIALLY_REPEALED if derogation.group("partial") else REPEALED
        status = status or known.get("status") or IN_FORCE

        meta: dict[str, Any] = {
            "law_id": law_id,
            "law_title": title,
            "rank_name": str(front.get("rank") or known.get("rank_name") or infer_rank_name(title)),
            "status": status,
            "lang": lang,
            "collection": self.collection,
            "source_path": str(path),
            "format": fmt,
        }
        derogated_by = front.get("derogated_by") or (detected_ref.group(1) if detected_ref else None)
        if not derogated_by and status != IN_FORCE:
            derogated_by = known.get("derogated_by")
        if derogated_by:
            meta["derogated_by"] = str(derogated_by)
        for field, value in (
            ("publication_date", front.get("publication_date") or known.get("publication_date")),
            ("last_updated", front.get("last_updated")),
            ("repeal_date", front.get("repeal_date")),
        ):
            if value and iso_date(value):
                meta[field] = iso_date(value)
            elif value:
                logger.warning(
                    "{source}: ignoring unparseable {field} {value!r}", source=str(path), field=field, value=value
                )
        if front.get("source"):
            meta["source_url"] = str(front["source"])
        if front.get("official_number"):
            meta["official_number"] = str(front["official_number"])
        country = country or str(known.get("country") or "").lower() or LANGUAGE_COUNTRY.get(lang, "")
        if country:  # ISO 3166 code ("es", "br"): the jurisdiction, for filters
            meta["country"] = country
        if front.get("short_name"):  # the file's own short name ("CLT") wins over one derived from the title
            meta["law_short"] = str(front["short_name"])
        return meta
