"""The detectors' settings against real agent transcripts."""
