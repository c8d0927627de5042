"""The terminal UI: spinner and task list, outro panels, CI output. The only rich importer."""
