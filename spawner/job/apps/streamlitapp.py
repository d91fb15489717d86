"""A Streamlit script as an ASGI application (Streamlit's public `st.App`), for uvicorn on a Unix socket.

Streamlit's own `streamlit run` binds TCP only (1.67 refuses `server.address unix://` with its Starlette
server); `st.App` is the application that command serves, documented for "any ASGI server".
"""

from __future__ import annotations

import os


def make():
    import streamlit as st

    return st.App(os.environ["DSPORTAL_APP_FILE"])
