"""Behavioural evaluation: does the model do what an error payload's ``next_action`` says?"""

from __future__ import annotations

from shadow.eval._client import Endpoint, EndpointError, HttpChatClient, Reply
from shadow.eval._report import EvalReport, render_table
from shadow.eval._run import EvalInputError, evaluate, load, plan, save
from shadow.typing import ChatClient

__all__ = [
    "ChatClient",
    "Endpoint",
    "EndpointError",
    "EvalInputError",
    "EvalReport",
    "HttpChatClient",
    "Reply",
    "evaluate",
    "load",
    "plan",
    "render_table",
    "save",
]
