"""The offline demo: a bundled sample project, recorded transcripts, a scripted model."""
