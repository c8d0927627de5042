"""The terminal UI: spinner and todo list, outro panels, CI output. The only rich importer."""
