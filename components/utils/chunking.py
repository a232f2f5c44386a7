"""Size-bounded packing of sentences into chunks with word- or sentence-aligned overlap (shared by the splitters),
and the characters-per-token estimate that sizes text for the bundled LLM."""

# Characters per token of the Qwen2.5 tokenizer per language, with a ~5% safety margin (how it was measured:
# benchmarks/README.md); `DEFAULT_CHARS_PER_TOKEN` for other languages. Shared by the context compressor (token
# budget) and the contextualizer (LLM usage estimate).
CHARS_PER_TOKEN = {"es": 3.8, "pt": 3.35}
DEFAULT_CHARS_PER_TOKEN = 3.3


def wrap_words(text: str, limit: int) -> list[str]:
    """Cut one over-long sentence into word-aligned pieces of at most `limit` characters (a longer word stays whole)."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if len(candidate) > limit and current:
            pieces.append(current)
            current = word
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def word_tail(text: str, n: int) -> str:
    """The last whole words of `text` that fit in `n` characters."""
    words: list[str] = []
    size = 0
    for word in reversed(text.split()):
        added = len(word) + (1 if words else 0)
        if size + added > n:
            break
        words.append(word)
        size += added
    return " ".join(reversed(words))


OVERLAP_UNITS = ("word", "sentence")


def pack_sentences(
    sentences: list[str], max_chars: int, overlap: int, separator: str = " ", overlap_unit: str = "word"
) -> list[str]:
    """
    Greedily pack sentences into chunks of at most `max_chars`, repeating ~`overlap` chars between chunks.

    Sentences longer than `max_chars - overlap` are first cut at word boundaries, so every chunk respects
    `max_chars` (except a single word longer than it).

    :param overlap_unit: What the repeated text is made of: `word` (the last whole words of the previous chunk
        that fit in `overlap`: the next chunk may start mid-sentence) or `sentence` (its last whole sentences that
        fit, none when its last sentence is longer: every chunk starts where a sentence starts).
    :raises ValueError: `overlap_unit` is neither.
    """
    if overlap_unit not in OVERLAP_UNITS:
        raise ValueError(f"overlap_unit must be one of {OVERLAP_UNITS}, got {overlap_unit!r}")
    units = [piece for sentence in sentences for piece in wrap_words(sentence, max_chars - overlap)]
    chunks: list[str] = []
    current: list[str] = []
    for unit in units:
        if not current or len(separator.join([*current, unit])) <= max_chars:
            current.append(unit)
            continue
        chunks.append(separator.join(current))
        if overlap_unit == "sentence":
            tail = _sentence_tail(current, overlap, separator)
            current = [*tail, unit] if tail and len(separator.join([*tail, unit])) <= max_chars else [unit]
        else:
            words = word_tail(separator.join(current), overlap) if overlap > 0 else ""
            current = [f"{words} {unit}"] if words and len(words) + 1 + len(unit) <= max_chars else [unit]
    if current:
        chunks.append(separator.join(current))
    return chunks


def _sentence_tail(units: list[str], n: int, separator: str) -> list[str]:
    """The last whole units (sentences) of a chunk that, joined, fit in `n` characters."""
    tail: list[str] = []
    for unit in reversed(units):
        if len(separator.join([unit, *tail])) > n:
            break
        tail.insert(0, unit)
    return tail
