"""TensorBoard's font URLs under the session's prefix (spawner/jupyter/tensorboard/instances.py: fonts_under_prefix)."""

from __future__ import annotations

from spawner.jupyter.tensorboard.instances import fonts_under_prefix

PAGE = b"<style>@font-face{src: url(/font-roboto/a.woff2)}</style>"


def serve(app, path: str, accept: str = "gzip") -> tuple[str, dict, bytes]:
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen.update(status=status, headers=dict(headers))

    body = b"".join(app({"PATH_INFO": path, "HTTP_ACCEPT_ENCODING": accept}, start_response))
    return seen["status"], seen["headers"], body


def tensorboard(content_type: str, asked: list):
    def app(environ, start_response):
        asked.append(environ["HTTP_ACCEPT_ENCODING"])
        start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(PAGE)))])
        return [PAGE]

    return app


def test_the_pages_fonts_are_asked_under_the_prefix_uncompressed():
    asked = []
    status, headers, body = serve(
        fonts_under_prefix(tensorboard("text/html; charset=utf-8", asked), "/user/a/tb/1/"), "/"
    )
    expected = b"<style>@font-face{src: url(/user/a/tb/1/font-roboto/a.woff2)}</style>"
    assert (status, body, headers["Content-Length"], asked) == ("200 OK", expected, str(len(expected)), ["identity"])


def test_data_and_scripts_pass_untouched():
    asked = []
    app = fonts_under_prefix(tensorboard("application/javascript", asked), "/user/a/tb/1")
    assert serve(app, "/index.js")[2] == PAGE and asked == ["gzip"]
    assert serve(app, "/data/plugin/x.html")[2] == PAGE  # read, but not HTML: kept as it is
