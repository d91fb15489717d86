"""What the portal relies on past JupyterHub's public hooks: each test fails when JupyterHub changes it.

The places are listed, with why, in spawner/hub/base/upstream_jupyterhub.py (the hub)
and spawner/jupyter/session/upstream_jupyterhub.py (the session's server); the
hub's stop is tests/unit/test_shutdown.py's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from types import SimpleNamespace

import batchspawner.api
from jupyterhub import apihandlers, roles
from jupyterhub import handlers as jupyterhub_handlers
from jupyterhub.apihandlers.users import UserServerAPIHandler
from jupyterhub.app import JupyterHub
from jupyterhub.handlers import pages
from jupyterhub.services.auth import HubAuth
from jupyterhub.singleuser import extension
from jupyterhub.spawner import Spawner

from spawner.hub.base import upstream_jupyterhub as hub_side
from spawner.hub.base.logname import log_name
from spawner.hub.request.refusal import SessionRefused
from spawner.jupyter.session import upstream_jupyterhub as session_side


def source(obj) -> str:
    return inspect.getsource(obj)


# the hub


def test_jupyterhub_builds_its_application_from_the_api_route_list_when_it_starts():
    assert "apihandlers.default_handlers" in source(JupyterHub.init_handlers)
    assert all(isinstance(route, tuple) and isinstance(route[0], str) for route in apihandlers.default_handlers)


def test_batchspawners_import_adds_its_handler_to_that_list():
    added = source(batchspawner.api)
    assert "default_handlers.append" in added and "BatchSpawnerAPIHandler" in added


def test_the_route_list_is_changed_in_place(monkeypatch):
    routes = [("/api/info", object)]
    monkeypatch.setattr(apihandlers, "default_handlers", routes)
    hub_side.change_api_handlers(lambda found: [*found, ("/api/more", object)])
    assert apihandlers.default_handlers is routes and [url for url, _ in routes] == ["/api/info", "/api/more"]


def test_the_start_under_way_is_spawner_spawn_future_and_jupyterhubs_stop_api_cancels_it():
    assert Spawner._spawn_future is None  # none until a start
    assert "spawner._spawn_future = " in source(pages.BaseHandler.spawn_single_user)
    stop_api = source(UserServerAPIHandler.delete)
    assert "spawner._spawn_future" in stop_api and ".cancel()" in stop_api


async def test_cancel_start_cancels_the_start_under_way_only():
    start = asyncio.get_running_loop().create_future()
    assert hub_side.cancel_start(SimpleNamespace(_spawn_future=start)) is True and start.cancelled()
    assert hub_side.cancel_start(SimpleNamespace(_spawn_future=None)) is False


def test_jupyterhub_logs_a_refused_start_with_these_lines():
    # each: the spawner's own WARNING says it once; these ERRORs are dropped (spawner/hub/request/refusal.py)
    assert "Exception applying user_options" in source(sys.modules["jupyterhub.spawner"])
    assert "Not starting" in source(sys.modules["jupyterhub.user"])
    assert "Failed to spawn single-user server with form" in source(pages.SpawnHandler)
    assert "Error starting server" in source(pages.SpawnHandler._wrap_spawn_single_user)
    assert 'self.log.error("Previous spawn for %s failed: %s", spawner._log_name, exc)' in source(pages)
    # the last one names the refusal by its text only: JupyterHub's words for a SpawnException hold its class's name
    assert "SessionRefused(" in str(SessionRefused("No GPUs of that kind here."))


def record(level: int, message: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc else None
    return logging.LogRecord("JupyterHub", level, __file__, 1, message, (), exc_info)


def test_the_filter_drops_jupyterhubs_errors_about_a_refusal_and_nothing_else():
    quiet = hub_side.QuietRefusals(SessionRefused)
    refused = SessionRefused("No GPUs of that kind here.")
    assert not quiet.filter(record(logging.ERROR, "Error starting server alice", refused))
    assert not quiet.filter(record(logging.ERROR, f"Previous spawn for alice failed: {refused}"))
    assert quiet.filter(record(logging.WARNING, "Refused", refused))  # the spawner's own line
    assert quiet.filter(record(logging.ERROR, "Error starting server alice", RuntimeError("sbatch died")))
    try:
        raise refused
    except SessionRefused:  # JupyterHub's lines from inside its `except`, without exc_info
        assert not quiet.filter(record(logging.ERROR, "Not starting alice's server gpu"))


def test_the_default_server_scopes_are_jupyterhubs_server_role():
    server = next(role for role in roles.get_default_roles() if role["name"] == "server")
    resolved = {
        scope.replace("!server", "!server=alice/gpu").replace("!user", "!user=alice") for scope in server["scopes"]
    }
    assert set(hub_side.default_server_scopes("alice", "gpu")) == resolved


def test_the_portals_log_names_a_session_as_jupyterhubs_own_lines_do():
    for user, name in ((SimpleNamespace(name="alice"), ""), (SimpleNamespace(name="alice"), "gpu"), (None, "")):
        spawner = Spawner(user=user, name=name)
        assert log_name(spawner) == spawner._log_name


# the session's server


def test_jupyterhubs_single_user_app_makes_its_serverapp_before_it_loads_any_config():
    assert isinstance(inspect.getattr_static(extension.JupyterHubSingleUser, "make_serverapp"), classmethod)
    start = source(extension.ExtensionApp.initialize_server)
    assert start.index("cls.make_serverapp(") < start.index("serverapp.initialize(")


def test_the_prepared_serverapp_is_the_one_launched(monkeypatch):
    made, launched = object(), []
    app = extension.JupyterHubSingleUser
    monkeypatch.setattr(app, "make_serverapp", classmethod(lambda cls, **kwargs: made))
    monkeypatch.setattr(app, "launch_instance", classmethod(lambda cls, argv: launched.append(cls.make_serverapp())))
    prepared = []
    session_side.launch_singleuser(["--debug"], prepare=prepared.append)
    assert prepared == [made] and launched == [made]


def test_jupyterhubs_single_user_app_takes_its_identity_provider_by_its_modules_name():
    assert "cfg.identity_provider_class = JupyterHubIdentityProvider" in source(
        extension.JupyterHubSingleUser.load_config_file
    )


def test_every_question_about_a_token_goes_through_check_hub_authorization_with_its_cache_key():
    parameters = list(inspect.signature(HubAuth._check_hub_authorization).parameters)
    assert parameters == ["self", "url", "api_token", "cache_key", "use_cache"]
    asks = source(HubAuth.user_for_token)
    assert "self._check_hub_authorization" in asks and "cache_key=" in asks
    assert "self.cache[cache_key] = data" in source(HubAuth._check_hub_authorization)


def test_jupyterhubs_identity_provider_keeps_who_a_request_is_on_the_handler():
    get_user = source(extension.JupyterHubIdentityProvider.get_user)
    assert 'if hasattr(handler, "_jupyterhub_user"):' in get_user
    assert "handler._jupyterhub_user = JupyterHubUser(user)" in get_user
    handler = SimpleNamespace()
    assert not session_side.identified(handler)
    handler._jupyterhub_user = None  # asked: nobody
    assert session_side.identified(handler) and session_side.identified_user(handler) is None


def test_jupyterhub_makes_the_portals_table_with_its_own_at_each_start():
    # spawner/hub/session/userrecord.py's table is of JupyterHub's declarative base (TableBase): JupyterHub's
    # session factory, which the hub runs at each start, makes it in a new database and in one made without it
    from jupyterhub import orm
    from sqlalchemy import inspect

    from spawner.hub.session.userrecord import UserRecordRow

    db = orm.new_session_factory("sqlite:///:memory:")()
    assert inspect(db.get_bind()).has_table(UserRecordRow.__tablename__)
    foreign = inspect(db.get_bind()).get_foreign_keys(UserRecordRow.__tablename__)
    assert [(f["referred_table"], f["options"].get("ondelete")) for f in foreign] == [("users", "CASCADE")]


def test_jupyterhub_builds_its_routes_outside_the_prefix_in_init_handlers_ending_with_its_prefix_redirect():
    built = source(JupyterHub.init_handlers)
    assert "handlers.PrefixRedirectHandler" in built and "self.handlers" in built
    assert "def get(self)" in source(jupyterhub_handlers.PrefixRedirectHandler)  # the redirect the portal keeps


def test_the_outside_handler_takes_the_prefix_redirects_route_and_nothing_else_once_per_application():
    from spawner.hub.base.outside import OutsideHub

    app = SimpleNamespace(handlers=[])
    outside = (r"(?!/hub/).*", jupyterhub_handlers.PrefixRedirectHandler)
    app.init_handlers = lambda: setattr(app, "handlers", [("/hub/x", object), outside, (r"(.*)", object, {})])
    assert hub_side.replace_outside_handler(app, OutsideHub)
    assert not hub_side.replace_outside_handler(app, OutsideHub)
    app.init_handlers()
    assert app.handlers == [("/hub/x", object), (r"(?!/hub/).*", OutsideHub), (r"(.*)", object, {})]


def test_jupyterhubs_start_reads_the_running_servers_with_populate_existing_and_nested_selectin_loads():
    started = source(JupyterHub.init_spawners)
    assert "populate_existing()" in started
    assert "selectinload(orm.Spawner.user, orm.User._orm_spawners)" in started


def test_holding_the_running_users_turns_jupyterhubs_five_queries_per_running_server_into_a_few():
    import gc

    from jupyterhub import orm
    from sqlalchemy import event
    from sqlalchemy.orm import selectinload

    db = orm.new_session_factory("sqlite:///:memory:")()
    for i in range(40):
        user = orm.User(name=f"user{i}")
        db.add(user)
        db.add_all(
            [orm.Spawner(name="", user=user, server=orm.Server(port=9000 + i)), orm.Spawner(name="x", user=user)]
        )
    db.commit()
    statements = []
    event.listen(db.get_bind(), "before_cursor_execute", lambda *args: statements.append(args[2]))

    async def init_spawners():  # JupyterHub 6.1.1's query and reads (app.py, init_spawners)
        read = db.query(orm.Spawner).filter(orm.Spawner.server != None)  # noqa: E711
        read = read.options(selectinload(orm.Spawner.user), selectinload(orm.Spawner.user, orm.User._orm_spawners))
        for spawner in read.populate_existing():
            assert "" in spawner.user.orm_spawners and "x" in spawner.user.orm_spawners
            assert spawner.user.roles == [] and spawner.server.port >= 9000
        return len(statements)

    app = SimpleNamespace(db=db, init_spawners=init_spawners)

    def start() -> int:
        db.expunge_all()
        gc.collect()
        statements.clear()
        return asyncio.run(app.init_spawners())

    assert start() > 5 * 40  # without: each running server's user, roles, groups, shares and servers again
    assert hub_side.hold_running_users(app)
    assert not hub_side.hold_running_users(app)
    assert start() <= 12  # with: the wrapper's few queries and JupyterHub's own, whatever the number of servers


def test_jupyterhub_checks_the_proxys_routes_only_from_its_activity_loop_and_hands_it_its_services_by_name():
    # with last_activity_interval = 0 nothing of JupyterHub's adds a restarted proxy's routes back
    assert "check_routes(self.users, self._service_map" in source(JupyterHub.update_last_activity)
    assert "if self.last_activity_interval:" in source(JupyterHub.start)
    assert isinstance(JupyterHub()._service_map, dict)


def test_the_portal_checks_every_route_as_jupyterhub_does():
    checked = []

    async def check_routes(users, services):
        checked.append((users, services))

    app = SimpleNamespace(users={1: "alice"}, _service_map={"culler": "s"})
    app.proxy = SimpleNamespace(check_routes=check_routes)
    asyncio.run(hub_side.check_routes(app))
    assert checked == [({1: "alice"}, {"culler": "s"})]
