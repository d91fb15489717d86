"""The page of what a session runs (TensorBoards, apps): its words escaped, its rows as given, its Stop script."""

from __future__ import annotations

from spawner.jupyter.session.listpage import running_page


def test_the_page_escapes_its_words_and_keeps_its_rows():
    page = running_page("Apps", "Running <apps>", "<tr><td>x</td></tr>", "a & b", '/api"x', "tok<")
    assert "<title>Apps - DS Portal</title>" in page
    assert "<h1>Running &lt;apps&gt;</h1>" in page and 'aria-label="Running &lt;apps&gt;"' in page
    assert "<tbody><tr><td>x</td></tr></tbody>" in page and "<p>a &amp; b</p>" in page
    assert 'fetch("/api&quot;x/" + b.dataset.id' in page and '"X-XSRFToken": "tok&lt;"' in page
