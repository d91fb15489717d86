"""A notebook's papermill parameters, as the hub reads them (pure; hub side).

The reading itself (in the notebook's own language: Python, R, others) is
spawner/notebookparams/, shared with the user's Jupyter server, which writes
chosen values back ("Make this the notebook's defaults"); these names are the
hub's way in (runs/service.py).
"""

from __future__ import annotations

from ...notebookparams import (
    MAX_CELL,
    MAX_PARAMETERS,
    MAX_VALUES,
    PARAMETERS_TAG,
    NotRunnable,
    Parameter,
    check_value,
    check_values,
    language_of,
    notebook_parameters,
    parameters,
    parameters_cell,
    read_notebook,
)

__all__ = [
    "MAX_CELL",
    "MAX_PARAMETERS",
    "MAX_VALUES",
    "PARAMETERS_TAG",
    "NotRunnable",
    "Parameter",
    "check_value",
    "check_values",
    "language_of",
    "notebook_parameters",
    "parameters",
    "parameters_cell",
    "read_notebook",
]
