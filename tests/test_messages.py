"""`show_messages`: the library's log records on the console for the CLI and the benchmark scripts."""

from __future__ import annotations

import logging

import pytest

from polyembed.messages import show_messages


def test_info_is_the_message_and_warnings_say_so_on_the_current_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("polyembed.test_messages")
    show_messages()
    show_messages()  # once: no second handler
    logger.info("bitext: 3 sources")
    logger.warning("kk: no encoder, using the pivot")
    logger.debug("not shown")
    shown = capsys.readouterr().err.splitlines()[-2:]
    assert shown == ["bitext: 3 sources", "warning: kk: no encoder, using the pivot"]
    handlers = [h for h in logging.getLogger("polyembed").handlers if type(h).__name__ == "_StderrHandler"]
    assert len(handlers) == 1


def test_quiet_hides_even_the_progress_bars_a_caller_asked_for(monkeypatch) -> None:
    """tqdm reads TQDM_DISABLE only where `disable` is not passed; `polyembed -q` sets it, and our bars obey it."""
    from polyembed.messages import hide_progress

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert hide_progress(False) and not hide_progress(True)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert hide_progress(True)
