"""
Special regimes (`components/legal/data/special_regimes.yaml`, `load_special_regimes`): the parts of a statute that
govern one group of workers only ("Do Serviço Ferroviário", RD 1620/2011 on household service), the groups a statute
leaves out of its scope (CLT art. 7, a: domestic employees, whose own law is not in the corpus), and the words that
name each group in a question.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Final

import yaml

from components.legal.topics import fold, keyword_pattern

DEFAULT_REGIMES_FILE: Final[Path] = Path(__file__).resolve().parent / "data" / "special_regimes.yaml"


@dataclass(frozen=True)
class SpecialRegime:
    """
    One special regime of a law: the part under `heading` (folded), or the articles `articles`, or (neither) the
    whole law; `named_by`: the folded word prefixes that name its group; `unless`: phrases that hold such a word
    without naming the group ("banco de horas" is no bank); `replaces`: (general article, the regime's article that
    displaces it for the group) pairs of article keys (CLT art. 58 -> art. 303 for journalists).
    """

    law_id: str
    group: str
    named_by: tuple[str, ...]
    heading: str | None = None
    articles: frozenset[str] | None = None
    unless: tuple[str, ...] = ()
    replaces: tuple[tuple[str, str], ...] = ()
    _pattern: Any = field(default=None, compare=False, repr=False)
    _unless: Any = field(default=None, compare=False, repr=False)

    @property
    def whole_law(self) -> bool:
        """Whether the regime is the whole law (no heading, no articles)."""
        return self.heading is None and self.articles is None

    def covers(self, meta: Mapping[str, Any]) -> bool:
        """Whether the block with this meta (`law_id`, `article`, `heading_path`) is inside the regime."""
        folded = tuple(fold(heading) for heading in _headings(meta))
        return meta.get("law_id") == self.law_id and self._covers(str(meta.get("article") or ""), folded)

    def _covers(self, article: str, folded_headings: tuple[str, ...]) -> bool:
        if self.articles is not None:
            return article.lower() in self.articles
        if self.heading is not None:
            return any(self.heading in heading for heading in folded_headings)
        return True

    def named_in(self, folded_text: str) -> bool:
        """Whether the (folded) text names the regime's group (its `unless` phrases left out)."""
        return _names(self._pattern, self._unless, folded_text)


@dataclass(frozen=True)
class LeftOutGroup:
    """
    A group of workers a law leaves out of its scope: `article` of the law says so (CLT art. 7, a: domestic
    employees), and `own_law`, which the corpus does not hold, governs them; `constitution` says where the
    constitution states their rights ("" when the table says nothing); `named_by` / `unless` as a regime's.
    """

    law_id: str
    group: str
    article: str
    own_law: str
    named_by: tuple[str, ...]
    unless: tuple[str, ...] = ()
    constitution: str = ""
    _pattern: Any = field(default=None, compare=False, repr=False)
    _unless: Any = field(default=None, compare=False, repr=False)

    def named_in(self, folded_text: str) -> bool:
        """Whether the (folded) text names the group (its `unless` phrases left out)."""
        return _names(self._pattern, self._unless, folded_text)

    def note(self) -> dict[str, str]:
        """The mark of a block of the law, for the answer stages: `group`, `article`, `own_law`, `constitution`."""
        return {"group": self.group, "article": self.article, "own_law": self.own_law,
                "constitution": self.constitution}


def _names(pattern: Any, unless: Any, folded_text: str) -> bool:
    if pattern is None:
        return False
    if unless is not None:
        folded_text = unless.sub(" ", folded_text)
    return pattern.search(folded_text) is not None


class SpecialRegimes:
    """
    The special regimes of a table, by law, and which of them a question leaves out; the groups the laws leave out
    of their scope, and which of them a question names.

    ### Usage example

    ```python
    from components.legal.regimes import load_special_regimes

    regimes = load_special_regimes()
    outside = regimes.outside("fiz 2 horas a mais, quanto tem que pagar?")
    outside(block.meta)  # "serviço ferroviário" for CLT art. 241; None for CLT art. 59
    regimes.leaving_out("sou empregada doméstica")  # the CLT's domestic employees, by law id
    regimes.replacements("sou jornalista")  # {("DEL-5452-1943", "58"): ("303", "jornalistas profissionais")}
    regimes.inside("trabajo de interna")(block.meta)  # "servicio del hogar familiar" for RD 1620/2011 art. 9
    ```
    """

    def __init__(self, regimes: Iterable[SpecialRegime], left_out: Iterable[LeftOutGroup] = ()) -> None:
        """
        :param regimes: The regimes, in table order.
        :param left_out: The groups the laws leave out of their scope, in table order.
        """
        self.regimes = tuple(regimes)
        self.left_out = tuple(left_out)
        self._by_law: dict[str, list[SpecialRegime]] = {}
        for regime in self.regimes:
            self._by_law.setdefault(regime.law_id, []).append(regime)

    def __len__(self) -> int:
        return len(self.regimes)

    @lru_cache(maxsize=32_768)  # noqa: B019 - a table is loaded once per file and lives as long as the process
    def _covering(self, law_id: str, article: str, headings: tuple[str, ...]) -> tuple[SpecialRegime, ...]:
        """The regimes of `law_id` a block of that article and headings is inside (blocks recur across questions)."""
        folded = tuple(fold(heading) for heading in headings)
        return tuple(r for r in self._by_law.get(law_id, ()) if r._covers(article, folded))

    def outside(self, *texts: str | None, named_laws: Iterable[str] = ()):
        """
        A function of a block's meta giving the group of a regime the block is in and `texts` (the question, the
        query made from it) do not name, or None: a block in no regime, or in regimes whose groups are all named.
        A whole-law regime is named by its own words, by naming the law (`named_laws`: law ids) or by naming any
        other regime of the law.
        """
        return self._groups(texts, named_laws, wanted=False)

    def inside(self, *texts: str | None, named_laws: Iterable[str] = ()):
        """
        A function of a block's meta giving the group of a regime the block is in and `texts` name (as `outside`
        reads them), or None: the special law the question asks about ("trabajo de interna" and the household
        service's RD 1620/2011).
        """
        return self._groups(texts, named_laws, wanted=True)

    def _groups(self, texts: Iterable[str | None], named_laws: Iterable[str], *, wanted: bool):
        """A function of a block's meta giving the group of its first covering regime whose naming is `wanted`."""
        named = self._named(_folded(texts), frozenset(named_laws))

        def group(meta: Mapping[str, Any]) -> str | None:
            law_id = str(meta.get("law_id"))
            if law_id not in self._by_law:
                return None
            covering = self._covering(law_id, str(meta.get("article") or ""), _headings(meta))
            return next((regime.group for regime in covering if named[regime] == wanted), None)

        return group

    @lru_cache(maxsize=256)  # noqa: B019 - `outside` and `inside` read the same question within one request
    def _named(self, folded: str, named_laws: frozenset[str]) -> dict[SpecialRegime, bool]:
        """Whether the folded texts name each regime (a whole-law regime also by naming its law or another regime)."""
        named: dict[SpecialRegime, bool] = {}
        for law_id, regimes in self._by_law.items():
            parts = {regime: regime.named_in(folded) for regime in regimes}
            any_part = any(hit for regime, hit in parts.items() if not regime.whole_law)
            for regime, hit in parts.items():
                named[regime] = hit or (regime.whole_law and (law_id in named_laws or any_part))
        return named

    def replacements(self, *texts: str | None) -> dict[tuple[str, str], tuple[str, str]]:
        """
        The replacements of the regimes `texts` (the question, the query made from it) name: (law id, general
        article key) -> (the regime's article key that displaces it, the regime's group); the first regime in table
        order wins ("sou jornalista" -> CLT art. 58 -> (art. 303, "jornalistas profissionais")).
        """
        folded = _folded(texts)
        found: dict[tuple[str, str], tuple[str, str]] = {}
        for regime in self.regimes:
            if regime.replaces and regime.named_in(folded):
                for general, special in regime.replaces:
                    found.setdefault((regime.law_id, general), (special, regime.group))
        return found

    def leaving_out(self, *texts: str | None) -> dict[str, LeftOutGroup]:
        """
        The laws that leave out a group `texts` (the question, the query made from it) name: law id -> the first
        such group in table order ("sou empregada doméstica" -> the CLT's domestic employees).
        """
        folded = _folded(texts)
        found: dict[str, LeftOutGroup] = {}
        for group in self.left_out:
            if group.law_id not in found and group.named_in(folded):
                found[group.law_id] = group
        return found


def _folded(texts: Iterable[str | None]) -> str:
    """The texts a question is read in (the question, the query made from it), folded, on separate lines."""
    return " \n ".join(fold(text) for text in texts if isinstance(text, str))


def _headings(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """A block's enclosing headings (`heading_path`)."""
    headings = meta.get("heading_path")
    return tuple(str(h) for h in headings) if isinstance(headings, (list, tuple)) else ()


def _words(value: Any, where: str, key: str = "named_by") -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(w, str) and w.strip() for w in value):
        raise ValueError(f"{where}: `{key}` must be a non-empty list of words, got {value!r}")
    return tuple(dict.fromkeys(fold(" ".join(w.split())) for w in value))


def parse_special_regimes(table: Any, source: str = "special_regimes") -> SpecialRegimes:
    """
    The regimes and left-out groups of a table laid out as `special_regimes.yaml` is: `{law_id: [{group, heading |
    articles, named_by, unless}, ...]}`, a left-out group given by `excluded_by` (the article) and `own_law`
    instead of `heading` / `articles`.

    :raises ValueError: A table not laid out so (the message says where).
    """
    if not isinstance(table, dict):
        raise ValueError(f"{source}: expected a mapping of law ids, got {type(table).__name__}")
    regimes: list[SpecialRegime] = []
    left_out: list[LeftOutGroup] = []
    for law_id, entries in table.items():
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{source}: {law_id} must list its regimes")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("group"), str) or not entry["group"].strip():
                raise ValueError(f"{source}: {law_id}: a regime needs a `group` (its name), got {entry!r}")
            where = f"{source}: {law_id} {entry['group']!r}"
            unknown = set(entry) - {"group", "heading", "articles", "named_by", "unless", "replaces", "excluded_by",
                                    "own_law", "constitution"}
            if unknown:
                raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
            words = _words(entry.get("named_by"), where)
            unless = _words(entry["unless"], where, key="unless") if "unless" in entry else ()
            if {"excluded_by", "own_law", "constitution"} & set(entry):
                left_out.append(_left_out(str(law_id), entry, where, words, unless))
                continue
            heading, articles = entry.get("heading"), entry.get("articles")
            if heading is not None and articles is not None:
                raise ValueError(f"{where}: give `heading` or `articles`, not both")
            if heading is not None and (not isinstance(heading, str) or not heading.strip()):
                raise ValueError(f"{where}: `heading` must be a heading of the law, got {heading!r}")
            if articles is not None and (
                not isinstance(articles, list) or not articles or not all(str(a).strip() for a in articles)
            ):
                raise ValueError(f"{where}: `articles` must list article keys, got {articles!r}")
            replaces = entry.get("replaces", {})
            if not isinstance(replaces, dict) or ("replaces" in entry and not replaces) or not all(
                isinstance(k, (str, int)) and str(k).strip() and isinstance(v, (str, int)) and str(v).strip()
                for k, v in replaces.items()
            ):
                raise ValueError(f"{where}: `replaces` must map general article keys to the regime's, got {replaces!r}")
            regimes.append(SpecialRegime(
                law_id=str(law_id),
                group=entry["group"].strip(),
                replaces=tuple((str(k).strip().lower(), str(v).strip().lower()) for k, v in replaces.items()),
                named_by=words,
                heading=fold(" ".join(heading.split())) if heading is not None else None,
                articles=frozenset(str(a).strip().lower() for a in articles) if articles is not None else None,
                unless=unless,
                _pattern=keyword_pattern(list(words)),
                _unless=keyword_pattern(list(unless)),
            ))
    return SpecialRegimes(regimes, left_out)


def _left_out(
    law_id: str, entry: dict[str, Any], where: str, words: tuple[str, ...], unless: tuple[str, ...]
) -> LeftOutGroup:
    """
    A left-out group's entry: `excluded_by` (the article that leaves the group out) and `own_law`, both needed, and
    optionally `constitution`.
    """
    if "heading" in entry or "articles" in entry or "replaces" in entry:
        raise ValueError(f"{where}: a left-out group (`excluded_by`) has no `heading`, `articles` or `replaces`")
    article, own_law = entry.get("excluded_by"), entry.get("own_law")
    for key, value in (("excluded_by", article), ("own_law", own_law)):
        if not isinstance(value, (str, int)) or not str(value).strip():
            raise ValueError(f"{where}: a left-out group needs `{key}`, got {value!r}")
    constitution = entry.get("constitution", "")
    if not isinstance(constitution, str) or ("constitution" in entry and not constitution.strip()):
        raise ValueError(f"{where}: `constitution` must say where the constitution states the group's rights")
    return LeftOutGroup(
        law_id=law_id,
        group=entry["group"].strip(),
        article=str(article).strip().lower(),
        own_law=" ".join(str(own_law).split()),
        named_by=words,
        unless=unless,
        constitution=" ".join(constitution.split()),
        _pattern=keyword_pattern(list(words)),
        _unless=keyword_pattern(list(unless)),
    )


@cache
def _load(path: str) -> SpecialRegimes:
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"special regimes file {path!r} does not exist")
    return parse_special_regimes(yaml.safe_load(file.read_text(encoding="utf-8")) or {}, source=file.name)


def load_special_regimes(path: str | Path | None = None) -> SpecialRegimes:
    """
    The special regimes of `path` or of the bundled `special_regimes.yaml` (read once per path).

    :raises ValueError: The file does not exist or is not laid out as `special_regimes.yaml` is.
    """
    return _load(str(Path(path) if path else DEFAULT_REGIMES_FILE))
