"""Rerank signals of ``search_rank`` that rankings alone do not pin down."""

from __future__ import annotations

from ctxmode.search import rank as sr


def test_title_terms_count_as_near_every_body_word() -> None:
    """Proximity (``search_rank._proximity``): the largest IDF share of distinct terms within a
    window of body tokens; terms of the title (``extra``) count as inside every window, so one
    body term is enough and the title's weight joins each window."""
    weights, total = [1.0, 2.0, 3.0], 6.0
    far = sr.PROXIMITY_WINDOW + 5
    assert sr._proximity({1: [0], 2: [far]}, weights, total) == 0.0  # too far apart
    assert sr._proximity({1: [0], 2: [3]}, weights, total) == 5.0 / 6.0
    assert sr._proximity({1: [0]}, weights, total) == 0.0  # one term alone is near nothing
    assert sr._proximity({1: [0]}, weights, total, extra=1.0) == 3.0 / 6.0
    assert sr._proximity({1: [0], 2: [far]}, weights, total, extra=1.0) == 4.0 / 6.0
