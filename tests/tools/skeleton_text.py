"""The text rules of the skeletonizer: filler, short hashes, skeletal shell commands.

Prose becomes filler of the same length: every word is replaced by a pseudo-word of the
same length, spaces, punctuation and newlines stay. Equal words give equal pseudo-words
within a file, so what the engine measures between texts (a summary that contains the
previous summary, a tool output repeated) survives, which plain lorem-ipsum filler would
destroy (every filler text contains every other). Values that identify something (paths,
patterns, URLs) become a short hash, equal for equal values, so a file read twice still
reads as the same file. Both are keyed by a digest of the whole input file
(:func:`keyed`): deterministic for the same input, and a guessed word or path cannot be
tested against the output. A shell command keeps what decides its tool category in the
phase model (the program, its sub-command and flags, redirections, the separators) and
hashes the rest; the skeleton's category is checked against the original's.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from otel_compaction.signals.tools import ToolCategory, categorize_command

_KEY: ContextVar[bytes] = ContextVar("skeleton_key", default=b"")
_WORD = re.compile(r"\w+")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"

# Claude Code's compaction summary template headings: kept so a schema-coverage rule
# can be tried on real summaries; every other line of a summary is filler.
SUMMARY_HEADINGS = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*|\d+\.\s*|\*\*)?(" + "|".join(map(re.escape, SUMMARY_HEADINGS)) + r")"
    r"(?:\*\*)?:?\s*(?:\*\*)?\s*$"
)

_IDENT = re.compile(r"^[A-Za-z0-9_.:+-]{1,80}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_FLAG = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9-]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = frozenset(("&&", "||", ";", "|", "&", "\n", "(", ")"))
_REDIRECT = re.compile(r"^(?:\d?>>?|&>>?|<<-?|<|\d?>&\d?)$")


def words(text: str) -> frozenset[str]:
    """The space-separated words of ``text``, for the vocabularies of the rules."""
    return frozenset(text.split())


@contextmanager
def keyed(source: bytes) -> Iterator[None]:
    """Key the filler and the hashes of this context by a digest of ``source``."""
    token = _KEY.set(hashlib.sha256(source).digest())
    try:
        yield
    finally:
        _KEY.reset(token)


def _digest(value: str) -> bytes:
    return hmac.new(_KEY.get(), value.encode("utf-8"), hashlib.sha256).digest()


def _pseudo_word(match: re.Match[str]) -> str:
    word = match.group(0)
    digest = _digest(word)
    while len(digest) < len(word):
        digest += _digest(word + str(len(digest)))
    return "".join(
        str(b % 10) if ch.isdigit() else _LETTERS[b % 26]
        for ch, b in zip(word, digest, strict=False)
    )


def filler(text: str) -> str:
    """Same-length filler for ``text``: each word a pseudo-word, the rest unchanged."""
    return _WORD.sub(_pseudo_word, text)


def summary_filler(text: str) -> str:
    """Filler for a compaction summary that keeps the template's section headings."""
    return "\n".join(line if _HEADING.match(line) else filler(line) for line in text.split("\n"))


def short_hash(value: str) -> str:
    """``h:`` and 16 hex digits of the value's keyed digest: equal values, equal hashes."""
    return "h:" + _digest(value).hex()[:16]


def is_identifier(value: str) -> bool:
    """Whether a string reads as an id, enum, version or timestamp (no spaces, no paths)."""
    return bool(_IDENT.match(value) or _UUID.match(value))


def _line_tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.commenters = ""
    merged: list[str] = []
    for token in lexer:  # `2>&1`, `2>` come out as "2", ">&", "1": put them back together
        if merged and _joins(merged[-1], token):
            token = merged.pop() + token
        merged.append(token)
    return merged


def _joins(previous: str, token: str) -> bool:
    """Whether ``token`` continues a redirection begun by ``previous`` (``2`` ``>&`` ``1``)."""
    if token[:1] in ("<", ">") and previous.isdigit():
        return True
    return token.isdigit() and previous.endswith(">&")


def _tokens(command: str) -> list[str]:
    """Shell words and operators, line by line (a newline separates like ``;``); the body
    of a here-document becomes one hash per line."""
    parts: list[str] = []
    delimiter: str | None = None
    for line_no, line in enumerate(command.split("\n")):
        if line_no:
            parts.append("\n")
        if delimiter is not None:
            if line.strip() == delimiter:
                delimiter = None
                parts.append(short_hash(line))
            else:
                parts.append(_BODY + short_hash(line))
            continue
        words = _line_tokens(line)
        for i, word in enumerate(words[:-1]):
            if word in ("<<", "<<-"):
                delimiter = words[i + 1]
        parts.extend(words)
    return parts


_BODY = "\x00"  # marks a here-document line, kept as its hash


def _keep_word(word: str, first: bool, after_redirect: bool) -> str:
    if word.startswith(_BODY):
        return word[len(_BODY) :]
    if word in _SEPARATORS or _REDIRECT.match(word):
        return word
    if after_redirect:
        return word if word.startswith("/dev/") else short_hash(word)
    if _ENV.match(word):
        name = word.split("=", 1)[0]
        return f"{name}={short_hash(word.split('=', 1)[1])}"
    if _FLAG.match(word):
        return word
    if first:
        base = word.rsplit("/", 1)[-1]
        return base if is_identifier(base) else short_hash(word)
    return word if word in _VOCABULARY else short_hash(word)


# Words after the program that stay: the sub-commands and runners the tool categories
# look at (`git status`, `npm run test`, `uv run pytest`, `python -m pytest`) and a few
# common verbs; any other word is content and is hashed.
_VOCABULARY = words(
    "pytest py.test tox nox unittest jest vitest mocha rspec phpunit ctest "
    "go cargo dotnet mvn gradle npm npx yarn pnpm bun deno make mix swift zig uv uvx "
    "python python3 node poetry pip pip3 docker kubectl gh git "
    "run test tests check exec install build compose up down start stop add commit "
    "push pull checkout switch status log show diff blame grep ls-files branch fetch "
    "merge rebase stash clone init apply reset restore tag remote config cat ls find "
    "head tail wc sort sed awk jq echo tee patch perl"
)


def _skeleton_words(command: str) -> str:
    out: list[str] = []
    first = True
    after_redirect = False
    for word in _tokens(command):
        kept = _keep_word(word, first, after_redirect)
        out.append(kept)
        after_redirect = bool(_REDIRECT.match(word)) and not word.startswith("<<")
        if word in _SEPARATORS:
            first = True
        elif not _ENV.match(word) and not _REDIRECT.match(word):
            first = False
    return " ".join(out).replace(" \n ", "\n")


_CANONICAL = {
    ToolCategory.TEST: "pytest",
    ToolCategory.EDIT: "sed -i h:0",
    ToolCategory.READ: "cat h:0",
    ToolCategory.RUN: "h:0",
}


def _segment_words(command: str) -> str:
    """A second reading, word by word on the engine's own segmentation (which splits
    inside quotes: ``rg "a|b"`` is two segments to it)."""
    out: list[str] = []
    for part in _ENGINE_SPLIT.split(command):
        if _ENGINE_SPLIT.fullmatch(part):
            out.append(part)
            continue
        words_ = part.split()
        out.append(" ".join(_keep_word(w, i == 0, False) for i, w in enumerate(words_)))
    return " ".join(out)


_ENGINE_SPLIT = re.compile(r"(&&|\|\||[;|\n])")


def skeleton_command(command: str) -> str:
    """The command with everything but its category-relevant words hashed.

    Words after the program are kept only when they are in a small vocabulary of
    sub-commands and runners. The shell reading comes first; if its skeleton falls into
    another tool category than the original, a word-by-word reading on the engine's own
    segmentation is tried, and if that differs too a canonical command of the original's
    category is returned, marked with ``# skeleton``.
    """
    original = categorize_command(command)
    for reading in (_skeleton_words, _segment_words):
        try:
            skeleton = reading(command)
        except ValueError:
            continue
        if skeleton.strip() and categorize_command(skeleton) == original:
            return skeleton
    return _CANONICAL.get(original, _CANONICAL[ToolCategory.RUN]) + " # skeleton"
