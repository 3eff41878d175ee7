"""Importing a user's module named on the command line: a ``.py`` file or a dotted name, with errors that help."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def import_user_module(ref: str, *, prefix: str = "_shadow_user") -> ModuleType:
    """Import ``ref``: a ``.py`` file (its folder importable meanwhile) or a dotted name (the working directory
    importable meanwhile). Raises ``ValueError`` saying what to fix: a missing file, an import or syntax error, an
    exception while importing."""
    path = Path(ref)
    is_file = ref.endswith(".py") or path.is_file()
    if is_file and not path.is_file():
        raise ValueError(f"no file {ref}; pass a Python file or a dotted module name, for example myapp.rules")
    extra = str(path.resolve().parent) if is_file else os.getcwd()
    added = extra not in sys.path
    if added:
        sys.path.insert(0, extra)
    try:
        if is_file:
            spec = importlib.util.spec_from_file_location(f"{prefix}_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise ValueError(f"{ref} cannot be loaded as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(ref)
    except ValueError:
        raise
    except ImportError as exc:
        raise ValueError(f"cannot import {ref} ({exc}); pass a dotted module name importable from the current "
                         "directory, or a .py file") from None
    except SyntaxError as exc:
        raise ValueError(f"{ref} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:
        raise ValueError(f"importing {ref} raised {type(exc).__name__}: {str(exc)[:200]}") from None
    finally:
        if added:
            sys.path.remove(extra)
