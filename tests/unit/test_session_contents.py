"""The session's file manager (spawner/jupyter/session/contents.py): a folder's listing while its files change."""

from __future__ import annotations

import asyncio

import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web

from spawner.jupyter.session.contents import LISTING_TRIES, SessionContentsManager


def vanishing(base: type, name: str, times: int) -> type:
    """`base`, whose listing sees `name` go between reading the folder's names and asking about it, `times` times
    (SQLite's journal of MLflow's database while a notebook logs metrics)."""

    class Manager(base):
        gone = 0

        async def get(self, path, content=True, type=None, format=None, require_hash=False):
            if path.endswith("/" + name) and self.gone < times:
                self.gone += 1
                (self.root_path / path).unlink()  # gone after the listing's lstat, before this get
                try:
                    return await super().get(path, content=content, type=type, format=format)
                finally:
                    (self.root_path / path).write_text("")  # and back, for the next write
            return await super().get(path, content=content, type=type, format=format, require_hash=require_hash)

    return Manager


def a_folder(tmp_path):
    (tmp_path / "templates").mkdir()
    for name in ("train.ipynb", "mlflow.db", "mlflow.db-journal"):
        (tmp_path / "templates" / name).write_text("")
    return tmp_path


def listing(manager_class: type, root) -> dict:
    manager = manager_class(root_dir=str(root))
    manager.root_path = root
    return asyncio.run(manager.get("templates", content=True))


def test_a_file_gone_between_the_names_and_its_details_fails_jupyter_servers_listing(tmp_path):
    with pytest.raises(web.HTTPError) as refused:  # what JupyterLab's file browser got: "Directory not found"
        listing(vanishing(AsyncLargeFileManager, "mlflow.db-journal", 1), a_folder(tmp_path))
    assert refused.value.status_code == 404


def test_the_sessions_listing_is_read_again_and_comes_out_whole(tmp_path):
    model = listing(vanishing(SessionContentsManager, "mlflow.db-journal", 1), a_folder(tmp_path))
    assert sorted(item["name"] for item in model["content"]) == ["mlflow.db", "mlflow.db-journal", "train.ipynb"]


def test_a_folder_that_changes_at_every_read_still_fails_and_a_missing_one_at_once(tmp_path):
    root = a_folder(tmp_path)
    manager = vanishing(SessionContentsManager, "mlflow.db-journal", LISTING_TRIES)(root_dir=str(root))
    manager.root_path = root
    with pytest.raises(web.HTTPError):
        asyncio.run(manager.get("templates", content=True))
    assert manager.gone == LISTING_TRIES  # bounded: it stops trying
    with pytest.raises(web.HTTPError) as refused:
        asyncio.run(SessionContentsManager(root_dir=str(root)).get("nowhere", content=True))
    assert refused.value.status_code == 404
