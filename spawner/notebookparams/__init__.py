"""A notebook's papermill parameters: read from its parameters cell in the notebook's own language, checked,
and written back (pure, standard library only; the hub and the user's Jupyter server both use it).

The cell tagged "parameters" holds assignments (`lr = 0.01  # learning rate`,
`formula_text <- "mpg ~ wt + hp"`); each becomes a typed field in
JupyterLab's dialog and a value papermill injects.

    model.py     Parameter, where a value lies, the limits
    notebook.py  the notebook's JSON, its parameters cell and language; the reader for that language
    python.py    Python's cell (ast)      r.py  R's cell      generic.py  any other language's
    scanner.py   the line-based readers' common part
    values.py    the user's values checked against the declaration
    rewrite.py   new values written into the cell's text
"""

from .model import MAX_CELL, MAX_PARAMETERS, MAX_VALUES, PARAMETERS_TAG, Assignment, NotRunnable, Parameter
from .notebook import (
    assignments,
    language_of,
    notebook_parameters,
    parameters,
    parameters_cell,
    parameters_index,
    read_notebook,
)
from .rewrite import rewrite
from .values import check_value, check_values

__all__ = [
    "MAX_CELL",
    "MAX_PARAMETERS",
    "MAX_VALUES",
    "PARAMETERS_TAG",
    "Assignment",
    "NotRunnable",
    "Parameter",
    "assignments",
    "check_value",
    "check_values",
    "language_of",
    "notebook_parameters",
    "parameters",
    "parameters_cell",
    "parameters_index",
    "read_notebook",
    "rewrite",
]
