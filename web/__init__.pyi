"""The public names of ragcourt.web (see __init__.py)."""

from .app import DeskSettings, create_app
from .security import ServeRefused

__all__ = [
    "DeskSettings",
    "ServeRefused",
    "create_app",
]
