"""The presentation layer: what every output shows of an answer, worded and formatted once.

The advice (:mod:`hwadvisor.advise`) builds the answer as data; this package turns it into the
lines, figures and table rows that the terminal, the HTML/PDF report and the recap show, so that
one run says the same thing, with the same numbers, everywhere. Renderers lay these out; they
compute nothing of the answer themselves.
"""
