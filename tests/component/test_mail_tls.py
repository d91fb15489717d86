"""Mail over STARTTLS reaches only a relay that proves its name: a relay on a loopback port with a certificate
from a site CA, one for another name, and a self-signed one (tests/support/smtprelay.py).

The attack: whoever can answer on the relay's address (a spoofed DNS name, a host on the path) offers
STARTTLS with a certificate of their own and reads every mail the hub sends.
"""

from __future__ import annotations

import logging
import ssl

import pytest

from portal.settings import NotifySettings
from spawner.hub.base import notices
from tests.support.http import wait_until
from tests.support.smtprelay import Relay, certificates


@pytest.fixture(scope="module")
def a_site_ca(tmp_path_factory):
    """A site CA and the relay certificates: from it for localhost, from it for another name, self-signed."""
    return certificates(tmp_path_factory.mktemp("mailtls"))


def notify(port: int, ca_file: str) -> NotifySettings:
    return NotifySettings(smtp_host="localhost", smtp_port=port, starttls=True, ca_file=ca_file, timeout=5)


async def mail(settings: NotifySettings) -> bool:
    return await notices.send(settings, "alice@dsportal.test", "Your job 7 ended", "It ended.\n")


@pytest.fixture
def a_trusted_relay(a_site_ca):
    """A relay whose certificate the site's CA signed for localhost."""
    relay = Relay(*a_site_ca.right)
    yield relay
    relay.stop()


async def test_a_relay_with_the_sites_ca_named_gets_the_mail(a_site_ca, a_trusted_relay):
    assert await mail(notify(a_trusted_relay.port, str(a_site_ca.ca)))
    assert len(a_trusted_relay.received) == 1 and b"Subject: Your job 7 ended" in a_trusted_relay.received[0]


async def test_a_relay_whose_ca_is_not_named_gets_no_mail_and_the_log_says_what_to_do(
    a_site_ca, a_trusted_relay, caplog
):
    with caplog.at_level(logging.WARNING, logger="JupyterHub.notices"):
        assert not await mail(notify(a_trusted_relay.port, ""))  # the system's CAs do not know the site's
    assert a_trusted_relay.received == []
    assert any(
        "its certificate does not prove it is localhost" in r.getMessage()
        and "name the site's CA in notify.ca_file" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("which", ["wrong_name", "self_signed"])
async def test_a_relay_that_cannot_prove_its_name_gets_no_mail(a_site_ca, which, caplog):
    relay = Relay(*getattr(a_site_ca, which))
    try:
        with caplog.at_level(logging.WARNING, logger="JupyterHub.notices"):
            assert not await mail(notify(relay.port, str(a_site_ca.ca)))
        assert relay.received == []
        wait_until(lambda: relay.refused, 10, "the relay seeing its certificate refused in the handshake")
        assert any("Mail to alice@dsportal.test (Your job 7 ended) not sent" in r.getMessage() for r in caplog.records)
    finally:
        relay.stop()


def test_the_tls_context_checks_the_relays_name_and_certificate(a_site_ca):
    context = notices.tls_context(notify(25, str(a_site_ca.ca)))
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
