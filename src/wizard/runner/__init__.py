"""The run pipeline: switchboard, sequences and harnesses."""
