"""The session's file manager: Jupyter Server's, with a folder's listing that survives its files changing.

Jupyter Server (2.x, `AsyncFileContentsManager._dir_model`) lists a folder by
reading its names, then asking its own `get()` about each.  A file that goes
in between (SQLite's `mlflow.db-journal` while MLflow logs a metric, a
framework's temporary checkpoint) makes that `get()` raise a 404, which is
answered for the whole folder: JupyterLab's file browser then says "Directory
not found", and goes back to the home folder, while a notebook in that folder
is training.  The listing's own `lstat` already skips a name that is gone; its
`get()` does not, so the listing is read again: it comes out whole as soon as
no file went between the two reads.
"""

from __future__ import annotations

import os

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web

LISTING_TRIES = 5  # a folder whose files come and go faster than it is read fails after these, as it did before


class SessionContentsManager(AsyncLargeFileManager):
    """Jupyter Server's default contents manager, whose folder listing is read again when a file went meanwhile."""

    async def _dir_model(self, path, content=True):
        for attempt in range(1, LISTING_TRIES + 1):
            try:
                return await super()._dir_model(path, content=content)
            except web.HTTPError as e:
                # the folder itself gone, or not a listing: that 404 is the answer
                if e.status_code != 404 or not content or attempt == LISTING_TRIES:
                    raise
                if not os.path.isdir(self._get_os_path(path)):
                    raise
                self.log.debug("dsportal: a file of %r went while it was listed; listing it again", path)
