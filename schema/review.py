"""What a person answers for one escalated check: the value an inline review resumes the graph with,
and what the terminal review and the desk store as a `Review`."""

from __future__ import annotations

from pydantic import BaseModel

from ragcourt.schema.enums import Label, ReviewAction


class ReviewDecision(BaseModel):
    """What a person answers for one escalated check."""

    model_config = {"frozen": True}

    check_id: str
    reviewer: str
    action: ReviewAction
    label: Label | None = None
    score: float | None = None
    accepted_judge: str | None = None
    comment: str = ""
