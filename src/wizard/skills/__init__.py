"""Skills: folders with a SKILL.md the agent follows, from bundled, local or remote sources."""
