"""One user-error class. Anything else raised inside storbench is a bug and keeps its traceback."""

from __future__ import annotations

from storbench.safe_text import safe_text


class UserError(Exception):
    """A problem the user can fix: a bad plan, a missing file, a refused target.

    ``where`` names the place (``plan.yaml:12: workload.iodepth``), ``hint`` says what to do.
    The CLI prints it as one line and exits with status 2; ``one_line`` shows the control characters of what it
    quotes (a plan's key, a file's text) escaped.
    """

    def __init__(self, message: str, *, where: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def one_line(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return safe_text(" ".join(text.split()))


def closest(word: str, choices: list[str] | tuple[str, ...] | set[str] | frozenset[str]) -> str | None:
    """The choice a misspelt ``word`` most likely meant, or None when nothing is close."""
    import difflib  # lazy: every module imports errors; only a misspelt word needs difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: list[str] | tuple[str, ...] | set[str] | frozenset[str]) -> str:
    """A "did you mean 'x'?" hint for a misspelt ``word``, or "" when nothing is close."""
    close = closest(word, choices)
    return f"did you mean '{close}'?" if close else ""


def described(error: BaseException) -> str:
    """An error in one line: a UserError's own (`UserError.one_line`), else its type and text."""
    return error.one_line() if isinstance(error, UserError) else f"{type(error).__name__}: {error}"
