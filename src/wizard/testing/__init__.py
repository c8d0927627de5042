"""Strict fakes shipped with `wizard`: the scripted gateway and a fake pi session."""
