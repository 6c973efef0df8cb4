"""Tests of the transcript and trace-file readers."""

from pathlib import Path

TESTDATA = Path(__file__).resolve().parent / "testdata"
