"""A Streamlit script as an ASGI application (Streamlit's public `st.App`), for uvicorn on a Unix socket.

Streamlit's own `streamlit run` binds TCP only (1.67 refuses `server.address unix://` with its Starlette
server); `st.App` is the application that command serves, documented for "any ASGI server".  Served so,
Streamlit reads its config files but not the options `streamlit run` takes as flags or STREAMLIT_*
variables: the two the portal sets go through the loader `streamlit run` uses, after the App (which names
the script's folder, where a user's own .streamlit/config.toml is read from).
"""

from __future__ import annotations

import os

# no telemetry from the user's browser to Streamlit's servers; no browser opened on the node
OPTIONS = {"browser_gatherUsageStats": False, "server_headless": True}


def make():
    import streamlit as st
    from streamlit.web import bootstrap

    app = st.App(os.environ["DSPORTAL_APP_FILE"])
    bootstrap.load_config_options(OPTIONS)
    return app
