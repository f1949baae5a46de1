"""Token estimate and digest packing (pure functions)."""

from __future__ import annotations

from ctxmode.core.models import Context, RankedItem
from ctxmode.knowledge.packing import estimate_tokens, first_sentence, pack


def _item(cid: int, ctype: str, content: str) -> RankedItem:
    ctx = Context(
        id=cid, type=ctype, content=content, metadata={}, scope="global", owner="me",
        content_hash="h", superseded_by=None, created_at=0, updated_at=0,
        last_accessed_at=None, access_count=0,
    )  # fmt: skip
    return RankedItem(ctx, 0, 1.0, "task")


def test_cjk_counts_per_character() -> None:
    assert estimate_tokens("决定采用方案") == 6
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("方案 abcd") == 2 + 2


def test_first_sentence_handles_both_scripts() -> None:
    assert first_sentence("Use JWT. Because stateless.") == "Use JWT."
    assert first_sentence("决定使用JWT。因为无状态。") == "决定使用JWT。"
    assert first_sentence("x" * 200).endswith("…")


def test_unlimited_budget_keeps_everything() -> None:
    items = [_item(1, "decision", "a"), _item(2, "reference", "b")]
    result = pack(items, None)
    assert result.included == (1, 2) and result.omitted == ()


def test_what_does_not_fit_gets_one_digest_line_per_type() -> None:
    items = [_item(i, "decision", f"Decision {i}. " + "word " * 30) for i in range(1, 4)]
    items += [_item(10 + i, "snippet", f"Snippet {i} first. rest") for i in range(5)]
    result = pack(items, 120)
    assert result.tokens <= 120
    assert "[5 more snippets left out]" in result.text
    assert result.included == (1, 2)
    assert result.digested == (3,)
    assert "[1 more decision, first words] #3 Decision 3." in result.text
    assert result.omitted == (10, 11, 12, 13, 14)


def test_digest_lines_evict_full_items_when_needed() -> None:
    items = [_item(i, "decision", f"Decision {i}. " + "word " * 30) for i in range(1, 4)]
    items += [_item(10 + i, "snippet", f"Snippet {i}.") for i in range(3)]
    items += [_item(20 + i, "reference", f"Reference {i}.") for i in range(3)]
    items += [_item(30 + i, "issue", f"Issue {i}.") for i in range(3)]
    result = pack(items, 100)
    assert result.tokens <= 100
    for kind in ("decision", "snippet", "reference", "issue"):
        assert f"[3 {kind}s, first words]" in result.text  # nothing printed before: not "more"
    # two full decisions fit alone, but then three types would vanish: they give way
    assert result.included == ()
    assert len(result.digested) == 12 and result.omitted == ()


def test_tiny_budget_still_says_what_was_left_out() -> None:
    items = [_item(i, "reference", "Long reference text. " * 20) for i in range(1, 30)]
    result = pack(items, 20)
    assert result.included == ()
    assert "[29 references, first words] #1 Long reference text. (and 28 left out)" in result.text
    assert result.tokens <= 20
