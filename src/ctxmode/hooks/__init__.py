"""Agent hooks (see issue: session continuity)."""
