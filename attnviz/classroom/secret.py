"""Class codes, teacher tokens and student ids: made with ``secrets``, parsed strictly.

A class code is 9 letters and digits from an alphabet without look-alikes (no 0/O, 1/I/L, 5/S, 2/Z,
8/B, U/V), shown as ``ABC-DEF-GHJ``: 23 symbols, 23**9 ~ 1.8e12 codes. Failed joins are rate-limited
in the store per address (``attnviz.classroom.service.LIMITS``: 100 a minute), so over a class's
4-hour life one address gets 24,000 tries: with 1,000 live classes the chance of hitting any one of
them is ~1.3e-5 per address.

The teacher token is 32 url-safe characters (192 random bits); the store keeps only its SHA-256, so a
leaked store does not let anyone move a class. A student id is a random 16-character handle that
lets a reconnecting browser keep its answers; it identifies nobody. A teacher session's id (one per
browser tab) tells two devices presenting one class apart; it is no secret.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata

from attnviz.errors import AttnvizError

CODE_ALPHABET = "34679ACDEFGHJKMNPQRTWXY"  # 23 unambiguous digits and capitals
CODE_LENGTH = 9
TOKEN_BYTES = 24  # -> 32 url-safe characters
STUDENT_BYTES = 12  # -> 16 url-safe characters
_CODE_HELP = (
    "A class code is 9 letters and digits in three groups, like ACD-EFG-HJK "
    "(it never holds 0, 1, 2, 5, 8, O, I, L, S, B, Z, U or V)."
)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")
_STUDENT = re.compile(r"[A-Za-z0-9_-]{16}")


def new_code() -> str:
    """A fresh class code, 9 symbols without separators (``format_code`` adds the dashes)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def format_code(code: str) -> str:
    """ACDEFGHJK -> ACD-EFG-HJK, easier to read out and to type."""
    return f"{code[:3]}-{code[3:6]}-{code[6:]}"


def parse_code(text: object) -> str:
    """What a student typed (or a link carried) -> the canonical code, or AttnvizError.

    Spaces and dashes between the groups of three are allowed and lower case is folded; anything
    else is refused, whatever its length. The text is never echoed back."""
    if not isinstance(text, str) or len(text) > 32:
        raise AttnvizError(_CODE_HELP)
    folded = re.sub(r"[ -]", "", text.strip().upper())
    if (
        len(folded) != CODE_LENGTH
        or not text.isascii()
        or any(c not in CODE_ALPHABET for c in folded)
        or not re.fullmatch(r"[A-Z0-9]{3}[ -]?[A-Z0-9]{3}[ -]?[A-Z0-9]{3}", text.strip().upper())
    ):
        raise AttnvizError(_CODE_HELP)
    return folded


def new_token() -> str:
    """A teacher token: 32 url-safe characters."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def parse_token(text: object) -> str:
    """A teacher token from a link or the session, or AttnvizError."""
    if not isinstance(text, str) or not _TOKEN.fullmatch(text):
        raise AttnvizError("This teacher link is not valid: its token is damaged.")
    return text


def token_hash(token: str) -> str:
    """What the store keeps instead of the token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def token_matches(token: str, stored_hash: str) -> bool:
    """True when token hashes to stored_hash (compared in constant time)."""
    return hmac.compare_digest(token_hash(token), stored_hash)


def new_student() -> str:
    """A student id: 16 url-safe characters, random, tied to nobody."""
    return secrets.token_urlsafe(STUDENT_BYTES)


def parse_student(text: object) -> str:
    """A student id from a link or the session, or AttnvizError."""
    if not isinstance(text, str) or not _STUDENT.fullmatch(text):
        raise AttnvizError("This student link is not valid.")
    return text


def new_session() -> str:
    """A teacher session's id (one browser tab): 16 url-safe characters, not a secret."""
    return secrets.token_urlsafe(STUDENT_BYTES)


def parse_session(text: object) -> str:
    """A teacher session's id from the browser, or AttnvizError."""
    if not isinstance(text, str) or not _STUDENT.fullmatch(text):
        raise AttnvizError("This browser tab's id is damaged.")
    return text


MAX_NAME_CHARS = 40
#: what a name may be before anything is done with it (room for spaces a paste adds)
MAX_NAME_INPUT = 4 * MAX_NAME_CHARS
MAX_MARKS = 3  # combining marks on one letter (Vietnamese uses two)
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u2060\ufeff"))  # zero-width spaces a paste brings


def parse_name(text: object) -> str:
    """An optional display name: printable, at most 40 characters after trimming ('' for none).

    Shown only as plain text. The length is checked first, before any work on the text; then
    compatibility forms are folded (NFKC: a ligature or a presentation form becomes its letters,
    and counts as them), zero-width spaces dropped and whitespace collapsed. Control characters,
    more than three combining marks on one letter, presentation forms that do not fold (a whole
    phrase in one glyph, U+FDFD) and anything longer are refused."""
    if text is None:
        return ""
    if not isinstance(text, str):
        raise AttnvizError("A display name is text.")
    if len(text) > MAX_NAME_INPUT:
        raise AttnvizError(f"A display name has at most {MAX_NAME_CHARS} characters.")
    name = " ".join(unicodedata.normalize("NFKC", text).translate(_INVISIBLE).split())
    if len(name) > MAX_NAME_CHARS:
        raise AttnvizError(f"A display name has at most {MAX_NAME_CHARS} characters.")
    if any(not c.isprintable() for c in name):
        raise AttnvizError("A display name cannot hold control characters.")
    if any(0xFB00 <= ord(c) <= 0xFDFF or 0xFE70 <= ord(c) <= 0xFEFF for c in name):
        raise AttnvizError("A display name is written in letters, not presentation forms.")
    marks = 0
    for c in name:
        marks = marks + 1 if unicodedata.combining(c) else 0
        if marks > MAX_MARKS:
            raise AttnvizError("A display name cannot stack that many accents on one letter.")
    return name
