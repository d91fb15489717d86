"""A folder of alice's with apps to open (a Streamlit app, a Dash app, MLflow runs), for the apps' tests."""

from __future__ import annotations

import subprocess

FOLDER = "/home/alice/apps-test"
STREAMLIT_APP = """import streamlit as st

st.title("Hello from alice's Streamlit app")
name = st.text_input("Your name")
st.write("Nice to meet you,", name or "stranger")
"""
DASH_APP = """import flask
from dash import Dash, html

app = Dash(__name__)
app.layout = html.Div("alice's Dash app", id="greeting")


# what a hostile app would do: read what the browser sent it, and plant the session's cookies
@app.server.route("/echo")
def echo():
    answer = flask.jsonify(
        {
            "headers": dict(flask.request.headers),
            "cookies": dict(flask.request.cookies),
            "query": flask.request.query_string.decode(),
        }
    )
    answer.set_cookie("jupyterhub-user-alice", "planted", path="/user/alice/")
    answer.set_cookie("_xsrf", "planted")
    answer.set_cookie("dash_own", "kept")
    return answer

# what an app may render that is not its author's (a notebook's stored outputs, a page of someone else's): a
# script that tries to act with the session's login, from wherever the app is served, and shows what it got
@app.server.route("/hostile")
def hostile():
    return HOSTILE_PAGE


HOSTILE_PAGE = '''<!doctype html><html><body><pre id="out" style="white-space: pre-wrap; max-width: 60em">running</pre><script>
(async () => {
  const session = new URLSearchParams(location.search).get("session");
  const out = {origin: location.origin, cookie: document.cookie};
  try { out.top = String(window.top.location.href); } catch (e) { out.top = "blocked"; }
  const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]+)/) || [])[1] || "";
  async function attempt(name, url, options) {
    try { const r = await fetch(url, {credentials: "include", ...options}); out[name] = r.status; }
    catch (e) { out[name] = "blocked"; }
  }
  await attempt("list_here", "/user/alice/api/contents/", {redirect: "manual"});
  await attempt("list_session", session + "/user/alice/api/contents/", {});
  const put = {method: "PUT", headers: {"X-XSRFToken": xsrf, "Content-Type": "application/json"},
               body: JSON.stringify({type: "file", format: "text", content: "written by an app's page"})};
  await attempt("write_here", "/user/alice/api/contents/apps-test/pwned.txt", {...put, redirect: "manual"});
  await attempt("write_session", session + "/user/alice/api/contents/apps-test/pwned.txt", put);
  // another app of the session (VS Code serves any file the user can read), at its own origin and at this one
  const other = new URLSearchParams(location.search).get("other");
  const resource = "vscode-remote-resource?path=/home/alice/apps-test/hello.py";
  await attempt("other_app", other + resource, {});
  await attempt("other_app_here", new URL(other).pathname + resource, {redirect: "manual"});
  document.getElementById("out").textContent = JSON.stringify(out);
})();
</script></body></html>'''

if __name__ == "__main__":
    app.run()
"""
MLFLOW_RUN = f"""
import mlflow
mlflow.set_tracking_uri("sqlite:///{FOLDER}/runs/mlflow.db")
mlflow.set_experiment("alice-experiment")
with mlflow.start_run():
    mlflow.log_param("learning_rate", 0.01)
    mlflow.log_metric("accuracy", 0.97)
"""
API = "/user/alice/dsportal/apps/api/instances"


def as_alice(*argv: str, stdin: str | None = None) -> None:
    subprocess.run(
        ["sudo", "-u", "alice", *argv], input=stdin, text=True, check=True, timeout=180, stdout=subprocess.DEVNULL
    )


def write_as_alice(path: str, text: str) -> None:
    as_alice("tee", path, stdin=text)


def prepare_folder() -> None:
    """FOLDER afresh, alice's: hello.py (Streamlit), board.py (Dash), runs/mlflow.db with one run."""
    subprocess.run(["rm", "-rf", FOLDER], check=True, timeout=30)
    as_alice("mkdir", "-p", f"{FOLDER}/runs")
    write_as_alice(f"{FOLDER}/hello.py", STREAMLIT_APP)
    write_as_alice(f"{FOLDER}/board.py", DASH_APP)
    as_alice("/opt/dsportal/venv/bin/python", "-c", MLFLOW_RUN)
