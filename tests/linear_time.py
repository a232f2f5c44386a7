"""A guard for the text scanners that read hostile input (questions, uploaded statutes): quadratic backtracking."""

import contextlib
import signal
from collections.abc import Iterator

# far above what a linear scan of the tests' inputs takes (milliseconds), far below a quadratic one (minutes)
GUARD_SECONDS = 20


@contextlib.contextmanager
def linear_time(seconds: int = GUARD_SECONDS) -> Iterator[None]:
    """Fail the test, instead of letting it run for minutes, when the block takes more than `seconds`."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(f"took over {seconds} s: quadratic (or worse) backtracking on a long input")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
