"""Size-bounded packing of sentences into chunks with word-aligned overlap (shared by the splitters), and the
characters-per-token estimate that sizes text for the bundled LLM."""

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


def pack_sentences(sentences: list[str], max_chars: int, overlap: int, separator: str = " ") -> list[str]:
    """
    Greedily pack sentences into chunks of at most `max_chars`, repeating ~`overlap` chars between chunks.

    Sentences longer than `max_chars - overlap` are first cut at word boundaries, so every chunk respects
    `max_chars` (except a single word longer than it).
    """
    units = [piece for sentence in sentences for piece in wrap_words(sentence, max_chars - overlap)]
    chunks: list[str] = []
    current = ""
    for unit in units:
        candidate = f"{current}{separator}{unit}" if current else unit
        if len(candidate) <= max_chars or not current:
            current = candidate
            continue
        chunks.append(current)
        tail = word_tail(current, overlap) if overlap > 0 else ""
        current = f"{tail} {unit}" if tail and len(tail) + 1 + len(unit) <= max_chars else unit
    if current:
        chunks.append(current)
    return chunks
