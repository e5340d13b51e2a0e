"""Where a falling quantity crosses zero: the longest context that fits, the most users served at
a target speed.

Both are searched thousands of times in a sweep of the model catalog (once for each option of
each answer), and both fall about linearly (memory left as the context grows, the time between
a user's tokens as users are added): a guess where the line through the bracket's ends crosses
zero lands on or next to the answer, where halving the bracket took fifteen to twenty looks.
A guess that did not halve the bracket is followed by a halving, so a function far from a line
costs at most about twice the halving's looks. The answer is the halving's: the last point at
or above zero, for any function that never rises.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def last_at_or_above_zero(
    f: Callable[[int], float], lo: int, hi: int, f_lo: float, f_hi: float
) -> int:
    """The largest ``n`` in ``[lo, hi)`` with ``f(n) >= 0``, where ``f`` never rises,
    ``f(lo) = f_lo >= 0`` and ``f(hi) = f_hi < 0`` (either may be infinite)."""
    guess = True
    while hi - lo > 1:
        width = hi - lo
        if guess and math.isfinite(f_lo) and math.isfinite(f_hi) and f_lo > f_hi:
            mid = lo + int(f_lo / (f_lo - f_hi) * width)
            mid = min(max(mid, lo + 1), hi - 1)
        else:
            mid = (lo + hi) // 2
        f_mid = f(mid)
        if f_mid >= 0:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
        # after a halving, a guess; after a guess, another only where it halved the bracket
        guess = not guess or 2 * (hi - lo) <= width
    return lo


__all__ = ["last_at_or_above_zero"]
