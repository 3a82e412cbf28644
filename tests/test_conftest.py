"""The suite-wide secret scanner flags a secret in a message, its arguments or a traceback."""

from __future__ import annotations

import logging

from tests.conftest import SecretScanner


def test_the_scanner_flags_secrets_wherever_they_appear_in_a_record() -> None:
    scanner = SecretScanner()
    logger = logging.getLogger("genbot.test.scanner")
    logger.addHandler(scanner)
    logger.propagate = False
    try:
        logger.info("key is %s", "sim-key")
        logger.debug("nothing to see")
        try:
            raise RuntimeError("token xoxb-fake-bot-token refused")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(scanner)
        logger.propagate = True
    assert len(scanner.leaks) == 2
    assert "sim-key" in scanner.leaks[0] and "xoxb-fake-bot-token" in scanner.leaks[1]
